#!/usr/bin/env bash
# Session-25 device run (one call): the huff Vulkan tests (TESTRUN, a -test.run pattern), then the previous tree
# (.devbin/vkzip-old) and this one (checksums in huff_check beside the decoder) alternated on the huff bench
# (512 MiB kvlike, ROUNDS rounds, compiler statistics in the first; AB: "binary|ENV=V,..." entries), then
# environment and flag variants of this tree (VARIANTS, gpu-huff.sh syntax). Files in $OUT.
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
[ -n "${VARIANTS:-}" ] && ITERS=6 VARIANTS="$VARIANTS" bash scripts/gpu-huff.sh 2>&1 | grep -v "huff_encode\|huff_place\|sz4_scan"
exit 0
