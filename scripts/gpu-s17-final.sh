#!/usr/bin/env bash
# Session-17 final device run (one call): gpu-s16-final.sh (conformance report and Vulkan package tests, issue #4's
# acceptance command, the huff bench of issue #10) with huff encode workgroup and batch variants; PROFILES=1 adds
# huff decode profiles. Files in $OUT.
set -uo pipefail
VARIANTS=${VARIANTS:-"VKZIP_HUFF_ENCODE_WG=512| VKZIP_HUFF_ENCODE_WG=128| VKZIP_HUFF_BATCH=4| VKZIP_HUFF_BATCH=16|"} \
  bash "$(dirname "$0")/gpu-s16-final.sh"
[ -n "${PROFILES:-}" ] && VARIANTS="|--profile,1 |--profile,2 |--profile,16" ITERS=5 bash "$(dirname "$0")/gpu-huff.sh"
exit 0
