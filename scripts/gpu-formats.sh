#!/usr/bin/env bash
# H200 checks of every format: the conformance report, the Vulkan package tests, and `bench --format` for each
# format the binary knows (512 MiB kvlike, checksums on). Results in $OUT.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh" # $OUT, the Vulkan loader, the NVIDIA ICD
export VKZIP_REQUIRE_VULKAN=1
timeout 200 .devbin/vkzip conformance --quiet --out "$OUT/conformance.json" 2>&1 | tail -${CONF_TAIL:-6}
(cd codec/vkcodec && timeout 200 ../../.devbin/tests/codec_vkcodec.test -test.timeout 190s > "$OUT/vkcodec.log" 2>&1; echo "vkcodec tests rc=$?"; grep -E -- '^(--- FAIL|FAIL|ok|PASS)' "$OUT/vkcodec.log" | head -8)
for f in ${FORMATS:-splitzip4 zf12 auto}; do
  timeout 90 .devbin/vkzip bench --backend vulkan --format "$f" --size 512MiB --data kvlike --json > "$OUT/bench-$f.json" 2>"$OUT/bench-$f.err"
  echo "bench $f rc=$?"
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[2], {k:(round(r[k],4) if isinstance(r.get(k),float) else r.get(k)) for k in ['encode_gbps','encode_wall_gbps','decode_gbps','decode_wall_gbps','copy_gbps','ratio','escape_rate','bit_exact','matches_cpu'] if k in r}, (r.get('latency_1mib_us') or {}).get('median'))" "$OUT/bench-$f.json" "$f" 2>&1 | tail -1
done
