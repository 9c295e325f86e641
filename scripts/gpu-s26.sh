#!/usr/bin/env bash
# Session-26 device run (one call): the Vulkan package tests matching TESTRUN, the previous tree (.devbin/vkzip-old)
# and this one alternated on the huff bench (512 MiB kvlike, ROUNDS rounds, compiler statistics in the first; AB:
# "binary|ENV=V,..." entries), environment and flag variants of this tree (VARIANTS, gpu-huff.sh syntax), then with
# FINAL=1 the final checks of this tree (conformance, the Vulkan package tests, issue #4's acceptance command, the huff
# bench: gpu-s22-final.sh). VSTATS=1 prints the variants' compiler statistics too. Files in $OUT.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
if [ -n "${TESTRUN-}" ]; then
  (cd codec/vkcodec && timeout 300 ../../.devbin/tests/codec_vkcodec.test -test.count=1 -test.run "$TESTRUN" 2>&1 | tail -3)
fi
for r in $(seq ${ROUNDS:-2}); do
  s=; [ "$r" = 1 ] && s=1
  for v in ${AB:-"vkzip-old|" "vkzip|"}; do
    b=${v%%|*}; e=${v#*|}
    BIN=.devbin/$b VARIANTS="B=$b,R=$r${e:+,$e}|" ITERS=${ITERS:-8} STATS=$s bash scripts/gpu-huff.sh 2>&1 |
      grep -v "huff_encode\|huff_place\|sz4_scan"
  done
done
[ -n "${VARIANTS:-}" ] && ITERS=6 STATS=${VSTATS:-} VARIANTS="$VARIANTS" bash scripts/gpu-huff.sh 2>&1 | grep -v "huff_encode\|huff_place\|sz4_scan"
[ "${FINAL:-0}" = 1 ] && RUNS= AB_FORMATS=none ROUNDS=0 bash scripts/gpu-s22-final.sh
exit 0
