#!/usr/bin/env bash
# Session-21 device run: the huff Vulkan tests, then the previous tree (.devbin/vkzip-old) and this one alternated
# on huff at 2^14 (the default) and 2^16 values per chunk, with the kernels' compiler statistics. Files in $OUT.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
[ -n "${TESTRUN-Huff}" ] && (cd codec/vkcodec && timeout 200 ../../.devbin/tests/codec_vkcodec.test -test.count=1 -test.run "${TESTRUN-Huff}" 2>&1 | tail -5)
for round in $(seq ${ROUNDS:-2}); do
  for ch in ${CHUNKS:-16384 65536}; do
    for b in ${BINS:-vkzip-old vkzip}; do
      BIN=.devbin/$b VARIANTS="VKZIP_X=$b,C=$ch,R=$round|--chunk,$ch" STATS=${STATS:-} ITERS=${ITERS:-8} \
        bash "$(dirname "$0")/gpu-huff.sh"
    done
  done
done
exit 0
