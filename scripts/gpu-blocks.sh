#!/usr/bin/env bash
# H200 checks of the block API (issue #4 item 3): the vkcodec block tests, then `bench --blocks` (256 blocks of
# 2 MiB against the 512 MiB tensor of the same run) at several depths and block sizes. Results in $OUT.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh" # $OUT, the Vulkan loader, the NVIDIA ICD
export VKZIP_REQUIRE_VULKAN=1
(cd codec/vkcodec && timeout 120 ../../.devbin/tests/codec_vkcodec.test -test.run "${TESTS:-Block|DeviceOps|DecodeMatches|Corruption}" -test.v > "$OUT/vkcodec.log" 2>&1; echo "vkcodec tests rc=$?"; grep -E -- '^(--- |FAIL|ok|PASS)' "$OUT/vkcodec.log" | head -12)
summ() { python3 -c "
import json,sys
r=json.load(open(sys.argv[1])); b=r.get('blocks') or {}
f=lambda d,k: round(d[k],3) if isinstance(d.get(k),float) else d.get(k)
print(sys.argv[2], 'large', {k:f(r,k) for k in ['encode_gbps','encode_wall_gbps','decode_gbps','decode_wall_gbps','copy_gbps','ratio','escape_rate','bit_exact','matches_cpu']}, 'lat1MiB', (r.get('latency_1mib_us') or {}).get('median'))
print(sys.argv[2], 'blocks', {k:f(b,k) for k in ['blocks','block_bytes','depth','encode_wall_gbps','encode_gbps','decode_wall_gbps','decode_gbps','encode_of_large','decode_of_large','bit_exact','matches_cpu']})
" "$1" "$2" 2>&1 | tail -2; }
i=0
for spec in ${SPECS:-"256 2MiB 2" "256 2MiB 1" "256 2MiB 4" "1024 512KiB 2"}; do
  set -- $spec; i=$((i+1))
  timeout 120 .devbin/vkzip bench --backend vulkan --size 512MiB --data kvlike --json --blocks "$1" --block-size "$2" --depth "$3" ${EXTRA:-} > "$OUT/bench-$i.json" 2>"$OUT/bench-$i.err"
  echo "bench blocks=$1 size=$2 depth=$3 rc=$?"; summ "$OUT/bench-$i.json" "#$i"; tail -2 "$OUT/bench-$i.err"
done
