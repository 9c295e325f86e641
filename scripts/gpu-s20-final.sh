#!/usr/bin/env bash
# Session-20 final device run (one call): conformance report and Vulkan package tests (gpu-final.sh conf), issue
# #4's acceptance command and the huff bench (gpu-s16-final.sh without its variants), then an earlier tree's build
# (.devbin/vkzip-old: the previous session's, or the tree before a review commit) and this one alternated on the
# formats whose kernels changed: tbe3, zf12 and auto (speed mode; KV-like data picks TBE-3). Files in $OUT.
set -uo pipefail
VARIANTS="|" ITERS=1 bash "$(dirname "$0")/gpu-s16-final.sh" | grep -v '^|'
for round in 1 2; do
  for f in tbe3 zf12 auto; do
    for b in vkzip-old vkzip; do
      BIN=.devbin/$b FORMAT=$f VARIANTS="VKZIP_X=$b,F=$f,R=$round|" ITERS=5 bash "$(dirname "$0")/gpu-huff.sh"
    done
  done
done
exit 0
