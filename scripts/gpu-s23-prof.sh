#!/usr/bin/env bash
# Session-23 profile runs: SplitZip-4 bench variants (VARIANTS as in gpu-huff.sh; default: profile masks).
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
V=${V:-}
if [ -z "$V" ]; then for p in 0 9 18 27 59 123 187 251; do V="$V X=p$p|--profile,$p"; done; fi
FORMAT=${FORMAT:-splitzip4} STATS=${STATS-1} ITERS=${ITERS:-10} VARIANTS="$V" bash "$(dirname "$0")/gpu-huff.sh"
