#!/usr/bin/env bash
# Session-18 final device run (one call): gpu-s16-final.sh (conformance report and Vulkan package tests, issue #4's
# acceptance command, the huff bench of issue #10) with the previous place workgroup as a variant, then the session's
# first binary (.devbin/vkzip-old) and this one alternated on the huff bench. Files in $OUT.
set -uo pipefail
VARIANTS=${VARIANTS:-"VKZIP_HUFF_PLACE_WG=128| VKZIP_HUFF_ENCODE_WG=512|"} bash "$(dirname "$0")/gpu-s16-final.sh"
ROUNDS=2 BINS="vkzip-old vkzip" bash "$(dirname "$0")/gpu-ab.sh"
ROUNDS=1 BINS="vkzip-old vkzip" bash "$(dirname "$0")/gpu-s18.sh"
exit 0
