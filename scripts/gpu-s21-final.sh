#!/usr/bin/env bash
# Session-21 final device run (one call): conformance report and Vulkan package tests (gpu-final.sh conf), issue
# #4's acceptance command, the huff bench of issue #10 (512 MiB: 2^16-value chunks) and at 2^14, then the previous
# session's tree (.devbin/vkzip-old) and this one alternated on huff at both chunk sizes. Files in $OUT.
set -uo pipefail
VARIANTS="|" ITERS=1 bash "$(dirname "$0")/gpu-s16-final.sh" | grep -v '^|'
cp "$OUT/huff.json" "$OUT/huff16.json"
.devbin/vkzip bench --backend vulkan --format huff --size 512MiB --data kvlike --chunk 16384 --json > "$OUT/huff14.json" 2>"$OUT/huff14.err"
echo "huff 2^14 rc=$?"
TESTRUN= ROUNDS=2 CHUNKS="65536 16384" ITERS=8 bash "$(dirname "$0")/gpu-s21.sh" 2>&1 | grep -v '^PASS\|^ok\|^---'
ITERS=8 VARIANTS="VKZIP_HUFF_TEAM_SYNC=0|--chunk,65536 VKZIP_HUFF_TEAM_SYNC=0|--chunk,16384 X=team|--chunk,65536 X=team|--chunk,16384" bash "$(dirname "$0")/gpu-huff.sh"
exit 0
