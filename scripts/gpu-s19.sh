#!/usr/bin/env bash
# Session of 2026-12-01 (eighth): CRC shift tables by field width (VKZIP_CRC_BITS: 8 = the former byte tables,
# 5 = conflict-free 32-entry tables, 4, 6), huff and splitzip4, alternated over ROUNDS.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
for r in $(seq ${ROUNDS:-2}); do
  VARIANTS=${HV:-"VKZIP_CRC_BITS=8| VKZIP_CRC_BITS=5| VKZIP_CRC_BITS=4| VKZIP_CRC_BITS=6|"} bash scripts/gpu-huff.sh
  FORMAT=splitzip4 VARIANTS=${SV:-"VKZIP_CRC_BITS=8| VKZIP_CRC_BITS=5| VKZIP_CRC_BITS=4|"} bash scripts/gpu-huff.sh
  unset STATS
done
