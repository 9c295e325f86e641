#!/usr/bin/env bash
# Session-17 device run: huff decode of the previous tree (.devbin/vkzip-old) against this one, alternated, then
# decode workgroup variants with compiler statistics.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
for r in 1 2; do
  BIN=.devbin/vkzip-old VARIANTS="VKZIP_X=old|" ITERS=${ITERS:-10} bash scripts/gpu-huff.sh
  VARIANTS="VKZIP_X=new|" ITERS=${ITERS:-10} bash scripts/gpu-huff.sh
done
STATS=1 VARIANTS=${VARIANTS:-"VKZIP_HUFF_DECODE_WG=128| VKZIP_HUFF_DECODE_WG=64| VKZIP_HUFF_DECODE_WG=96| VKZIP_HUFF_DECODE_WG=160|"} ITERS=5 bash scripts/gpu-huff.sh
