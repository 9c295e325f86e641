#!/usr/bin/env bash
# Session-28 device run (one call): the Vulkan package tests (TESTRUN), then the binaries of AB (.devbin names)
# alternated over ROUNDS rounds on the SplitZip-4 bench (512 MiB) for each data kind of DATA, compiler statistics of
# the last binary first; then VARIANTS of this tree (gpu-huff.sh syntax). Files in $OUT.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
if [ -n "${TESTRUN-}" ]; then
  (cd codec/vkcodec && timeout 300 ../../.devbin/tests/codec_vkcodec.test -test.count=1 -test.run "$TESTRUN" 2>&1 | tail -3)
fi
FORMAT=splitzip4 ITERS=10 STATS=1 VARIANTS="|" bash scripts/gpu-huff.sh 2>&1 | grep -v "sz4_place"
for r in $(seq ${ROUNDS:-2}); do for b in ${AB:-vkzip-old vkzip}; do for d in ${DATA:-kvlike escapes=0.01}; do
  BIN=.devbin/$b FORMAT=splitzip4 ITERS=10 VARIANTS="B=$b,D=$d|--data,$d" bash scripts/gpu-huff.sh 2>&1 |
    sed 's/ratio.*exact/exact/'
done; done; done
[ -n "${VARIANTS:-}" ] && FORMAT=splitzip4 ITERS=10 VARIANTS="$VARIANTS" bash scripts/gpu-huff.sh 2>&1 | sed 's/ratio.*exact/exact/'
exit 0
