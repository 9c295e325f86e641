#!/usr/bin/env bash
# Session of 2026-12-01 (seventh): huff encode A/B (previous tree, place pass only, place + probe merges), then
# profiles of the new encoder. Binaries in .devbin: vkzip-old, vkzip-p, vkzip.
set -uo pipefail
ROUNDS=${ROUNDS:-3} BINS=${BINS:-"vkzip-old vkzip-p vkzip"} bash scripts/gpu-ab.sh
VARIANTS=${PROFILES:-"|--profile,512 |--profile,1024 |--profile,2048 |--profile,8192"} bash scripts/gpu-huff.sh
