#!/usr/bin/env bash
# Runs every Go fuzz target for DURATION (default 10m; CI's smoke run uses a count of inputs, e.g. 20000x, which has
# no wall-clock deadline to race: see scripts/test.sh) and, with --keep, copies
# the inputs the fuzzer found interesting into the package's testdata/fuzz/<Target>/ seed corpus (at most 100 per
# target), so `go test` replays them from then on.
# Usage: scripts/fuzz.sh [DURATION] [--keep]
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
dur=${1:-10m}
keep=${2:-}
targets="./codec:FuzzParseHeader ./codec:FuzzDecode ./codec:FuzzSZ4Body ./codec:FuzzZF12Body ./codec:FuzzAutoBody
./codec:FuzzTBE3Body ./codec:FuzzHuffBody ./codec:FuzzXWDecodeE5M2 ./codec:FuzzXWDecodeE4M3 ./codec:FuzzXWDecodeF16 ./codec:FuzzXWDecodeF32
./codec/cdeflate:FuzzDecompress
./tensorfile:FuzzParseSafetensors ./tensorfile:FuzzParseNPY ./calib:FuzzLoad ./cudabridge:FuzzHandshake"
cache=$(go env GOCACHE)/fuzz/$(go list -m)
rc=0
for t in $targets; do
  pkg=${t%%:*}; name=${t##*:}
  [ -d "$pkg" ] || continue
  grep -q "func $name(" "$pkg"/*_test.go 2>/dev/null || continue
  start=$(date +%s)
  if ! out=$(go test -run '^$' -fuzz "^$name\$" -fuzztime "$dur" -fuzzminimizetime 10s -parallel "${PARALLEL:-1}" "$pkg" 2>&1); then
    echo "$out" | tail -20; rc=1
  fi
  execs=$(echo "$out" | grep -oE 'execs: [0-9]+' | tail -1)
  echo "$pkg $name: $(( $(date +%s) - start )) s, ${execs:-?}, $(echo "$out" | tail -1)"
  if [ "$keep" = --keep ]; then
    src=$cache/${pkg#./}/$name
    dst=$pkg/testdata/fuzz/$name
    if [ -d "$src" ]; then
      mkdir -p "$dst"
      ls "$src" | head -100 | while read -r f; do cp -n "$src/$f" "$dst/$f"; done
    fi
  fi
done
exit $rc
