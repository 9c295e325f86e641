#!/usr/bin/env bash
# The GPU machine's checks, one script for every device call. Prepare here with ../shared/device/prepare.sh (it
# builds .devbin/vkzip and the test binaries; ONLY="./codec/vkcodec" keeps the carry small), then call the device
# tool from the repo root with carry [".gl", ".devbin"] and one of:
#
#   bash scripts/gpu.sh conformance NAME    conformance report into $OUT/NAME.json, then the Vulkan package tests
#   bash scripts/gpu.sh bench [RUN ...]     vkzip bench of each RUN (default: every format), 512 MiB, checksums on,
#                                           one JSON object per line in $OUT/bench.jsonl and a summary table
#   bash scripts/gpu.sh ab OLD NEW [ROUNDS] the same runs with two binaries (.devbin/OLD, .devbin/NEW), interleaved,
#                                           ROUNDS times (default 3), into $OUT/ab.jsonl, and each binary's medians
#   bash scripts/gpu.sh files OLD NEW [ROUNDS]  whole-file encode + decode (Vulkan host path) of a SIZE_MIB raw BF16
#                                           file with two binaries, timed, outputs compared
#   bash scripts/gpu.sh tests [ARGS]        every carried test binary in its package folder
#
# A RUN is format[:dtype[:data[:extra flags, commas for spaces]]], e.g. xw3:F16 or splitzip4:BF16:kvlike:--no-checksum.
# Every step is bounded by `timeout`, and every figure comes with the card it ran on (nvidia-smi's line first).
set -uo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
bash .devbin/gpu.sh true 2>&1 | head -3 # unpacks the Vulkan loader carried in .gl, prints the card
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
export VKZIP_REQUIRE_VULKAN=1 PATH="$PWD/.devbin:$PATH"
DEFAULT_RUNS="splitzip4 zf12 tbe3 huff auto auto:BF16:spread xw3:F8_E5M2 xw3:F16"

bench_one() { # BIN RUN -> one JSON line on stdout (empty when the run failed)
  local bin=$1 f d data extra
  IFS=: read -r f d data extra <<< "$2"
  timeout 150 "$bin" bench --backend vulkan --format "$f" --dtype "${d:-BF16}" --data "${data:-kvlike}" \
    --size "${SIZE:-512MiB}" --json ${extra//,/ } 2>>"$OUT/bench.err" | tr -d '\n'
  echo
}

summary() { # FILE: one line per JSON object, then the medians per (binary, run) when the objects carry "bin"
  python3 - "$1" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def g(r, k):
    v = r.get(k)
    return 0 if v is None else v
groups = {}
for r in rows:
    lat = r.get("latency_1mib_us") or {}
    print("%-6s %-9s %-7s %-7s enc %6.1f (%.2f) dec %6.1f (%.2f) copy %6.1f ratio %.4f 1MiB %s us exact %s" % (
        r.get("bin", ""), r["format"], r.get("dtype", ""), r.get("data", ""), g(r, "encode_gbps"),
        g(r, "encode_of_ceiling"), g(r, "decode_gbps"), g(r, "decode_of_ceiling"), g(r, "copy_gbps"), g(r, "ratio"),
        round(lat.get("median", 0), 1) if isinstance(lat, dict) else lat, r.get("bit_exact")))
    key = (r.get("format"), r.get("dtype"), r.get("data"))
    groups.setdefault(key, {}).setdefault(r.get("bin", ""), []).append(r)
if any(r.get("bin") for r in rows):
    print("\nmedians (encode GB/s, decode GB/s, 1 MiB us):")
    for key, bins in groups.items():
        parts = []
        for b, rs in bins.items():
            med = lambda k: statistics.median(g(r, k) for r in rs)
            lat = statistics.median((r.get("latency_1mib_us") or {}).get("median", 0) for r in rs)
            parts.append("%s %.1f / %.1f / %.1f" % (b, med("encode_gbps"), med("decode_gbps"), lat))
        print("  %-28s %s" % (" ".join(str(k) for k in key), "   ".join(parts)))
PY
}

cmd=${1:-}
shift || true
case "$cmd" in
conformance)
  name=${1:?conformance NAME}
  timeout 400 vkzip conformance --quiet --out "$OUT/$name.json" 2>&1 | tail -30
  echo "conformance rc=${PIPESTATUS[0]}"
  for t in .devbin/tests/*.test; do
    dir=$(cat "${t%.test}.dir")
    (cd "$dir" && timeout 250 "$OLDPWD/$t" -test.timeout 240s > "$OUT/$(basename "$t").log" 2>&1)
    echo "$dir tests rc=$?"
    grep -E -- '^(--- FAIL|FAIL|ok|PASS)' "$OUT/$(basename "$t").log" | head -8
  done
  ;;
bench)
  : > "$OUT/bench.jsonl"
  for r in ${*:-$DEFAULT_RUNS}; do bench_one .devbin/vkzip "$r" >> "$OUT/bench.jsonl"; done
  summary "$OUT/bench.jsonl"
  ;;
ab)
  old=${1:?ab OLD NEW}; new=${2:?ab OLD NEW}; rounds=${3:-3}
  : > "$OUT/ab.jsonl"
  for i in $(seq "$rounds"); do
    for r in ${RUNS:-$DEFAULT_RUNS}; do
      for b in "$old" "$new"; do
        line=$(bench_one ".devbin/$b" "$r")
        [ -n "$line" ] && python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d["bin"]=sys.argv[2]; print(json.dumps(d))' \
          "$line" "$b" >> "$OUT/ab.jsonl"
      done
    done
  done
  summary "$OUT/ab.jsonl"
  ;;
files)
  # Whole-file encode and decode through the Vulkan backend's host path (the container layer included), each
  # binary ROUNDS times on one raw BF16 file of SIZE_MIB MiB (standard normal values), outputs compared.
  old=${1:?files OLD NEW}; new=${2:?files OLD NEW}; rounds=${3:-3}
  f=$OUT/kv.raw
  python3 -c 'import numpy as np, sys
n = int(sys.argv[2]) << 19
x = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
(x.view(np.uint32) >> 16).astype(np.uint16).tofile(sys.argv[1])' "$f" "${SIZE_MIB:-1024}"
  for i in $(seq "$rounds"); do
    for b in "$old" "$new"; do
      rm -f "$OUT/$b.vkz" "$OUT/$b.out"
      t0=$(date +%s.%N)
      timeout 120 ".devbin/$b" encode -q --backend vulkan --dtype bf16 -o "$OUT/$b.vkz" "$f" || echo "$b encode failed"
      t1=$(date +%s.%N)
      timeout 120 ".devbin/$b" decode -q --backend vulkan -o "$OUT/$b.out" "$OUT/$b.vkz" || echo "$b decode failed"
      t2=$(date +%s.%N)
      cmp -s "$f" "$OUT/$b.out" && same=identical || same=DIFFERENT
      python3 -c 'import sys; s=int(sys.argv[5]); e=float(sys.argv[3])-float(sys.argv[2]); d=float(sys.argv[4])-float(sys.argv[3])
print("%-10s encode %.3f s (%.2f GB/s)  decode %.3f s (%.2f GB/s)  %s bytes  %s" % (sys.argv[1], e, s/e/1e9, d, s/d/1e9, sys.argv[6], sys.argv[7]))' \
        "$b" "$t0" "$t1" "$t2" "$(stat -c %s "$f")" "$(stat -c %s "$OUT/$b.vkz")" "$same"
    done
  done
  rm -f "$f" "$OUT"/*.vkz "$OUT"/*.out
  ;;
tests)
  bash .devbin/gpu.sh test "$@"
  ;;
*)
  sed -n '2,16p' "$0"
  exit 2
  ;;
esac
