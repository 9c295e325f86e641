#!/usr/bin/env bash
# Session-22 device run: the SplitZip-4 Vulkan tests, then the previous tree (.devbin/vkzip-old) and this one
# alternated on kvlike and 1 % escapes (512 MiB), then PROFILES (BIN:BITS, bench --profile) of a binary at 1 % escapes.
# Files in $OUT.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
if [ -n "${TESTRUN-}" ]; then
  (cd codec/vkcodec && timeout 200 ../../.devbin/tests/codec_vkcodec.test -test.count=1 -test.run "$TESTRUN" 2>&1 | tail -3)
fi
for round in $(seq ${ROUNDS:-2}); do
  for d in ${DATAS:-kvlike escapes=0.01}; do
    for b in ${BINS:-vkzip-old vkzip}; do
      BIN=.devbin/$b FORMAT=${FORMAT:-splitzip4} VARIANTS="X=$b,R=$round|--data,$d" STATS=${STATS:-} ITERS=${ITERS:-10} \
        bash "$(dirname "$0")/gpu-huff.sh"
    done
  done
done
for bp in ${PROFILES:-}; do # BIN:BITS
  BIN=.devbin/${bp%%:*} FORMAT=${FORMAT:-splitzip4} VARIANTS="X=$bp|--data,escapes=0.01,--profile,${bp#*:}" STATS= \
    ITERS=${ITERS:-10} bash "$(dirname "$0")/gpu-huff.sh"
done
exit 0
