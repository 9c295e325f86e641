#!/usr/bin/env bash
# Session-19 final device run (one call): gpu-s16-final.sh (conformance report and Vulkan package tests, issue #4's
# acceptance command, the huff bench of issue #10), then the previous session's tree (.devbin/vkzip-old) and this
# one alternated on huff and splitzip4, and both on the other formats whose CRC tables changed (tbe3, zf12, auto).
# Files in $OUT.
set -uo pipefail
VARIANTS=${VARIANTS:-"VKZIP_HUFF_PLACE_WG=128|"} bash "$(dirname "$0")/gpu-s16-final.sh"
ROUNDS=1 ITERS=8 BINS="vkzip-old vkzip" bash "$(dirname "$0")/gpu-ab.sh" | grep -v '^ '
ROUNDS=1 ITERS=8 BINS="vkzip-old vkzip" bash "$(dirname "$0")/gpu-s18.sh" | grep -v '^ '
for f in tbe3 zf12 auto; do
  for b in vkzip-old vkzip; do
    BIN=.devbin/$b FORMAT=$f VARIANTS="VKZIP_X=$b,F=$f|" ITERS=5 bash "$(dirname "$0")/gpu-huff.sh"
  done
done
exit 0
