#!/usr/bin/env bash
# Session of 2026-12-01 (seventh): splitzip4 A/B of binaries in .devbin (BINS), alternated ROUNDS times, one
# `vkzip bench --backend vulkan --size 512MiB --data kvlike --json` each, with compiler statistics.
set -uo pipefail
for r in $(seq ${ROUNDS:-2}); do
  for b in ${BINS:-vkzip-old vkzip}; do
    BIN=.devbin/$b FORMAT=splitzip4 STATS=${STATS:-} VARIANTS="VKZIP_X=$b|${FLAGS:-}" ITERS=${ITERS:-10} bash scripts/gpu-huff.sh
  done
done
