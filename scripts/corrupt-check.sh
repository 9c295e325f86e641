#!/usr/bin/env bash
# Corruption check: builds vkzip, makes a payload (or takes the one given), writes 1,000 random corruptions of it
# (bit flips, byte overwrites, truncations, splices of two places) and runs the built `vkzip decode` and `vkzip test`
# on each. Every run must exit with status 1 and exactly one line on stderr, leave no output file and print no Go
# stack trace.
# Usage: scripts/corrupt-check.sh [payload.vkz]    (env: N=1000, BACKEND=cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
N=${N:-1000}
BACKEND=${BACKEND:-cpu}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/vkzip" ./cmd/vkzip
payload=${1:-}
if [ -z "$payload" ]; then
  payload=$work/sample.vkz
  "$work/vkzip" encode -q --chunk 1024 -o "$payload" cmd/vkzip/testdata/kv-sample.safetensors
fi
python3 - "$payload" "$work" "$N" <<'PY'
import os, random, sys
src, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(src, 'rb').read()
rng = random.Random(20261201)
os.makedirs(os.path.join(work, 'bad'), exist_ok=True)
for i in range(n):
    b = bytearray(data)
    kind = i % 4
    if kind == 0:                       # bit flips
        for _ in range(rng.randint(1, 4)):
            p = rng.randrange(len(b)); b[p] ^= 1 << rng.randrange(8)
    elif kind == 1:                     # overwritten bytes
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif kind == 2:                     # truncation
        b = b[:rng.randrange(len(b))]
    else:                               # splice: a range copied over another place
        a = rng.randrange(len(b)); l = rng.randint(1, 256); d = rng.randrange(len(b))
        piece = bytes(b[a:a+l]); b[d:d+len(piece)] = piece
        if b == bytearray(data):
            b[rng.randrange(len(b))] ^= 0xFF
    open(os.path.join(work, 'bad', '%04d.vkz' % i), 'wb').write(bytes(b))
PY
ok=0; bad=0; traces=0
for f in "$work"/bad/*.vkz; do
  out=$work/out.bin
  set +e
  "$work/vkzip" decode --backend "$BACKEND" -o "$out" "$f" 2>"$work/err" >/dev/null
  rc=$?
  set -e
  lines=$(wc -l < "$work/err")
  if grep -qE 'goroutine [0-9]+|panic:|runtime error|SIGSEGV' "$work/err"; then traces=$((traces+1)); fi
  set +e
  "$work/vkzip" test --backend "$BACKEND" "$f" 2>"$work/terr" >/dev/null
  trc=$?
  set -e
  tlines=$(wc -l < "$work/terr")
  if grep -qE 'goroutine [0-9]+|panic:|runtime error|SIGSEGV' "$work/terr"; then traces=$((traces+1)); fi
  if [ "$trc" != 1 ] || [ "$tlines" != 1 ]; then
    echo "FAIL $(basename "$f"): vkzip test: exit $trc, $tlines stderr lines"
    head -3 "$work/terr"
    rc=test-failed
  fi
  if [ "$rc" = 1 ] && [ "$lines" = 1 ] && [ ! -e "$out" ]; then
    ok=$((ok+1))
  else
    bad=$((bad+1))
    echo "FAIL $(basename "$f"): exit $rc, $lines stderr lines, output $( [ -e "$out" ] && echo present || echo absent)"
    head -3 "$work/err"
    rm -f "$out"
  fi
done
echo "$N corruptions: $ok clean errors (decode and test), $bad failures, $traces stack traces"
[ "$bad" = 0 ] && [ "$traces" = 0 ]
