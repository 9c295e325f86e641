#!/usr/bin/env bash
# The H200 checks of a session's final tree, in two device calls (each under 10 minutes):
#   MODE=conf  bash scripts/gpu-final.sh   conformance report ($OUT/h200.json) and the Vulkan package tests
#   MODE=bench bash scripts/gpu-final.sh   vkzip bench of every format (512 MiB, checksums on) into
#                                          $OUT/bench.jsonl, one JSON object per line, and a summary table
# Prepare here (../shared/device/prepare.sh, or build .devbin/vkzip and .devbin/tests/codec_vkcodec.test), run with
# carry [".gl", ".devbin"].
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh" # $OUT, the Vulkan loader, the NVIDIA ICD
export VKZIP_REQUIRE_VULKAN=1
if [ "${MODE:-bench}" = conf ]; then
  timeout 300 .devbin/vkzip conformance --quiet --out "$OUT/h200.json" 2>&1 | grep -E 'TOTAL|verdict|FAIL' | tail -40
  (cd codec/vkcodec && timeout 250 ../../.devbin/tests/codec_vkcodec.test -test.timeout 240s > "$OUT/vkcodec.log" 2>&1
   echo "vkcodec tests rc=$?"; grep -E -- '^(--- FAIL|FAIL|ok|PASS)' "$OUT/vkcodec.log" | head -12)
  exit 0
fi
: > "$OUT/bench.jsonl"
# "format[:dtype[:data[:extra flags, commas for spaces]]]"
RUNS=${RUNS:-"splitzip4:BF16:kvlike:--blocks,256,--depth,2 splitzip4:BF16:escapes=0.01 splitzip4:BF16:gauss zf12 tbe3 huff
auto:BF16:kvlike auto:BF16:spread
xw3:F8_E5M2 xw2:F8_E4M3 xw3:F16 xw3:F32"}
for r in $RUNS; do
  IFS=: read -r f d data extra <<< "$r"
  timeout 150 .devbin/vkzip bench --backend vulkan --format "$f" --dtype "${d:-BF16}" --data "${data:-kvlike}" \
    --size 512MiB --json ${extra//,/ } 2>>"$OUT/bench.err" | tr -d '\n' > "$OUT/one.json"
  echo "bench $r rc=$?"
  [ -s "$OUT/one.json" ] && { cat "$OUT/one.json"; echo; } >> "$OUT/bench.jsonl"
done
rm -f "$OUT/one.json"
python3 - "$OUT/bench.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    f = lambda k: round(r.get(k) or 0)
    lat = r.get("latency_1mib_us") or {}
    print("%-9s %-7s %-13s %-22s enc %5d/%5d dec %5d/%5d copy %4d ratio %.4f esc %.4f%% 1MiB %s us %s exact %s %s" % (
        r["format"], r["dtype"], r["data"], r.get("variant", "")[-22:], f("encode_gbps"), f("encode_wall_gbps"),
        f("decode_gbps"), f("decode_wall_gbps"), f("copy_gbps"), r["ratio"], 100 * (r.get("escape_rate") or 0),
        round(lat.get("median", 0), 1), [round(x, 1) for x in r.get("latency_1mib_gpu_us") or []], r["bit_exact"],
        r["matches_cpu"]))
    b = r.get("blocks")
    if b:
        print("   blocks %d x %d MiB depth %d: enc wall %d (%.0f%% of large), dec wall %d (%.0f%%), exact %s %s" % (
            b["blocks"], b["block_bytes"] >> 20, b["depth"], b["encode_wall_gbps"], 100 * b["encode_of_large"],
            b["decode_wall_gbps"], 100 * b["decode_of_large"], b["bit_exact"], b["matches_cpu"]))
PY
