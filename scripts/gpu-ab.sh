#!/usr/bin/env bash
# A/B of huff kernels on the H200: each binary of BINS (.devbin names) in turn, ROUNDS times, one `vkzip bench
# --format huff` (512 MiB kvlike) each through gpu-huff.sh.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
for r in $(seq ${ROUNDS:-2}); do
  for b in ${BINS:-vkzip-old vkzip}; do
    BIN=.devbin/$b VARIANTS="VKZIP_X=$b|${FLAGS:-}" ITERS=${ITERS:-10} bash scripts/gpu-huff.sh
  done
done
