#!/usr/bin/env bash
# Session-15 device run: huff kernel variants and profile (bench), the huff Vulkan tests, and the CPU codec's huff
# throughput on one core of the device machine. Run from the repo root with carry [".gl", ".devbin"].
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
(cd codec/vkcodec && timeout 120 ../../.devbin/tests/codec_vkcodec.test -test.run 'Huff' 2>&1 | tail -3)
STATS=1 VARIANTS="|" ITERS=${ITERS:-5} bash scripts/gpu-huff.sh
VARIANTS=${VARIANTS:-"VKZIP_HUFF_DECODE_WG=128| VKZIP_HUFF_DECODE_WG=32| VKZIP_HUFF_BATCH=4| VKZIP_HUFF_BATCH=16| VKZIP_HUFF_ENCODE_WG=256| VKZIP_HUFF_ENCODE_WG=512| |--profile,1 |--profile,2 |--profile,4 |--profile,8 |--profile,6 |--profile,15"} \
  ITERS=${ITERS:-5} bash scripts/gpu-huff.sh
if [ -n "${CPU:-}" ]; then
  (cd codec && timeout 120 ../.devbin/tests/codec.test -test.run '^$' -test.bench 'Huff(En|De)code' -test.cpu 1,16 -test.count 3 2>&1 | grep -E 'Benchmark|cpu:')
fi
