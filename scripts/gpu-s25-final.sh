#!/usr/bin/env bash
# Session-25 last device run (one call): with AB=1 the previous tree (.devbin/vkzip-old) and this one (checksums in
# huff_check beside the decoder) alternated on the huff bench first; then the final checks of this tree
# (conformance, the Vulkan package tests, issue #4's acceptance command, the huff bench: gpu-s22-final.sh). Files
# in $OUT.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
if [ "${AB:-0}" = 1 ]; then
  for b in vkzip-old vkzip; do
    BIN=.devbin/$b VARIANTS="B=$b|" ITERS=8 STATS=1 bash scripts/gpu-huff.sh 2>&1 | grep -v "huff_encode\|huff_place\|sz4_scan"
  done
fi
RUNS= AB_FORMATS=none ROUNDS=0 bash scripts/gpu-s22-final.sh
exit 0
