#!/usr/bin/env bash
# H200 figures for the device-resident tbe3 and exponent-window (xw2/xw3/xw4) operations: `vkzip bench` of each
# format over each dtype it codes (512 MiB kvlike, checksums on, GPU timestamps), the Vulkan package tests of these
# operations, and the conformance report of the four formats (vulkan and vulkan-resident). Prepare here with
# ../shared/device/prepare.sh, then run with carry [".gl", ".devbin"]: bash scripts/gpu-resident3.sh
# Writes to $OUT: bench-resident3.jsonl (one bench JSON object per line), bench-resident3.err, vkcodec-resident3.log
# and conformance-resident3.json. RUNS overrides the "format:dtype" list, SIZE the tensor size.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh" # $OUT, the Vulkan loader, the NVIDIA ICD
export VKZIP_REQUIRE_VULKAN=1
RUNS=${RUNS:-"splitzip4:BF16 tbe3:BF16 xw3:F8_E5M2 xw3:F8_E4M3 xw3:F16 xw3:F32 xw2:F8_E5M2 xw2:F8_E4M3 xw2:F16 xw2:F32
xw4:F8_E5M2 xw4:F16 xw4:F32"}
: > "$OUT/bench-resident3.jsonl"; : > "$OUT/bench-resident3.err"
for r in $RUNS; do
  f=${r%%:*} d=${r#*:}
  line=$(timeout 120 .devbin/vkzip bench --backend vulkan --format "$f" --dtype "$d" --size "${SIZE:-512MiB}" \
    --data kvlike --json 2>>"$OUT/bench-resident3.err" | tr -d '\n')
  echo "bench $f $d rc=$?"
  [ -n "$line" ] && echo "$line" >> "$OUT/bench-resident3.jsonl"
done
python3 - "$OUT/bench-resident3.jsonl" <<'PY'
import json, sys
print("format dtype path | enc GPU/wall GB/s | dec GPU/wall GB/s | copy GB/s | ratio | passes us | 1MiB us | exact cpu")
for l in open(sys.argv[1]):
    r = json.loads(l)
    f = lambda k: round(r.get(k) or 0, 1)
    print(r["format"], r["dtype"], r.get("path"), "|", f("encode_gbps"), f("encode_wall_gbps"), "|", f("decode_gbps"),
          f("decode_wall_gbps"), "|", f("copy_gbps"), "|", round(r["ratio"], 4), "|",
          [round(x) for x in r.get("encode_pass_us") or []], "|", round((r.get("latency_1mib_us") or {}).get("median", 0)),
          "|", r["bit_exact"], r["matches_cpu"])
PY
(cd codec/vkcodec && timeout 300 ../../.devbin/tests/codec_vkcodec.test -test.v -test.timeout 290s \
  -test.run 'TBE3|XW|DeviceOps|TypedOps' > "$OUT/vkcodec-resident3.log" 2>&1; echo "vkcodec tests rc=$?")
grep -E -- '^(--- FAIL|FAIL|ok|PASS)' "$OUT/vkcodec-resident3.log" | head -8
timeout 200 .devbin/vkzip conformance --quiet --backend vulkan --format tbe3,xw2,xw3,xw4 \
  --out "$OUT/conformance-resident3.json" 2>&1 | grep -E 'TOTAL|verdict'
