#!/usr/bin/env bash
# Session-24 last device run (one call): the previous tree (.devbin/vkzip-old) and this one alternated on the huff
# bench and SplitZip-4 (kvlike, 1 % escapes), then the final checks of this tree (conformance, the Vulkan package
# tests, issue #4's acceptance command, the huff bench: gpu-s22-final.sh) only when its huff decode is not slower
# (FORCE=1 runs them anyway). Files in $OUT.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
declare -A dec
for b in vkzip-old vkzip; do
  BIN=.devbin/$b VARIANTS="B=$b|" ITERS=8 STATS=1 bash scripts/gpu-huff.sh 2>&1 | grep -v "huff_encode\|huff_place\|sz4_scan"
  dec[$b]=$(python3 -c "import json; print(round(json.load(open('$OUT/h.json'))['decode_gbps']))")
done
FORMAT=splitzip4 DATAS="kvlike escapes=0.01" ROUNDS=1 ITERS=8 bash scripts/gpu-s22.sh
echo "huff decode: old ${dec[vkzip-old]} new ${dec[vkzip]}"
if [ "${FORCE:-0}" = 1 ] || [ "${dec[vkzip]}" -ge "${dec[vkzip-old]}" ]; then
  RUNS= AB_FORMATS=none ROUNDS=0 bash scripts/gpu-s22-final.sh
fi
exit 0
