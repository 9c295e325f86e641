#!/usr/bin/env bash
# Session-17 device run: huff of the previous tree (.devbin/vkzip-old) against this one, alternated (gpu-ab.sh), then
# decode workgroup variants with compiler statistics.
set -uo pipefail
BINS="vkzip-old vkzip" bash "$(dirname "$0")/gpu-ab.sh"
STATS=1 VARIANTS=${VARIANTS:-"VKZIP_HUFF_DECODE_WG=128| VKZIP_HUFF_DECODE_WG=64| VKZIP_HUFF_DECODE_WG=96| VKZIP_HUFF_DECODE_WG=160|"} ITERS=5 bash "$(dirname "$0")/gpu-huff.sh"
