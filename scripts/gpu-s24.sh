#!/usr/bin/env bash
# Session-24 device run (one call): the previous tree (.devbin/vkzip-old), the tree with spread lane loads and
# 16-bit tables (.devbin/vkzip-t16) and this one (two codes per window move) alternated on the huff bench (512 MiB
# kvlike, ROUNDS rounds, compiler statistics in the first; BINS overrides the list), then huff profile masks
# (PROFILES; none: no masks) and environment variants (VARIANTS, gpu-huff.sh syntax) of this tree, SplitZip-4
# alternated on SZ4_DATAS, and with FINAL=1 the final checks (gpu-s22-final.sh with HUFF=1, no escape rows, no A/B).
# Files in $OUT.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
for r in $(seq ${ROUNDS:-2}); do
  s=; [ "$r" = 1 ] && s=1
  for b in ${BINS:-vkzip-old vkzip-t16 vkzip}; do
    BIN=.devbin/$b VARIANTS="B=$b,R=$r|" ITERS=${ITERS:-8} STATS=$s bash scripts/gpu-huff.sh 2>&1 | grep -v "huff_encode\|huff_place\|sz4_scan"
  done
done
pv=""; for p in ${PROFILES:-1 2 128 16 64}; do [ "$p" != none ] && pv="$pv P=$p|--profile,$p"; done
[ -n "${pv}${VARIANTS:-}" ] && ITERS=6 VARIANTS="$pv ${VARIANTS:-}" bash scripts/gpu-huff.sh
[ -n "${SZ4_DATAS:-}" ] && FORMAT=splitzip4 DATAS="$SZ4_DATAS" ROUNDS=${ROUNDS:-2} bash scripts/gpu-s22.sh
[ "${FINAL:-0}" = 1 ] && RUNS= AB_FORMATS=none ROUNDS=0 bash scripts/gpu-s22-final.sh
exit 0
