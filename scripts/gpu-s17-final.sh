#!/usr/bin/env bash
# Session-17 final device run (one call): conformance report and Vulkan package tests (gpu-final.sh conf), issue
# #4's acceptance command, the huff bench of issue #10, huff workgroup and batch variants, and (PROFILES=1) huff
# decode profiles. Files in $OUT.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
MODE=conf bash scripts/gpu-final.sh
bash .devbin/gpu.sh vkzip bench --backend vulkan --size 512MiB --data kvlike --json > "$OUT/acceptance4.json" 2>"$OUT/acceptance4.err"
echo "acceptance #4 rc=$?"; python3 -c "
import json,sys; r=json.loads(open(sys.argv[1]).read()[open(sys.argv[1]).read().index('{'):])
print({k: r.get(k) for k in ('format','encode_gbps','encode_wall_gbps','decode_gbps','decode_wall_gbps','copy_gbps','ratio','escape_rate','checksums','device','bit_exact','matches_cpu')})
" "$OUT/acceptance4.json"
.devbin/vkzip bench --backend vulkan --format huff --size 512MiB --data kvlike --json > "$OUT/huff.json" 2>"$OUT/huff.err"
echo "huff rc=$?"; python3 -c "
import json,sys; r=json.load(open(sys.argv[1]))
print({k: r.get(k) for k in ('format','encode_gbps','encode_wall_gbps','decode_gbps','decode_wall_gbps','copy_gbps','ratio','checksums','bit_exact','matches_cpu','encode_pass_us')})
" "$OUT/huff.json"
[ -n "${PROFILES:-}" ] && VARIANTS="|--profile,1 |--profile,2 |--profile,16" ITERS=5 bash scripts/gpu-huff.sh
VARIANTS=${VARIANTS:-"VKZIP_HUFF_ENCODE_WG=512| VKZIP_HUFF_ENCODE_WG=128| VKZIP_HUFF_BATCH=4| VKZIP_HUFF_BATCH=16|"} ITERS=5 bash scripts/gpu-huff.sh
