#!/usr/bin/env bash
# Host-path Vulkan benchmarks with block/mutex profiles, and TCP with the GPU codec on one end only.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh" # $OUT, the Vulkan loader, the NVIDIA ICD
export VKZIP_REQUIRE_VULKAN=1
(cd codec/vkcodec && timeout 150 ../../.devbin/tests/codec_vkcodec.test -test.run '^$' -test.bench Host -test.benchtime 40x -test.cpu 1,4,8 \
  -test.blockprofile "$OUT/block.prof" -test.mutexprofile "$OUT/mutex.prof" -test.cpuprofile "$OUT/cpu.prof" -test.outputdir "$OUT") 2>&1 | grep -E 'Benchmark|ok|FAIL'
PAIRS="vulkan/cpu cpu/vulkan" bash scripts/gpu-tcp.sh 10gbit 25gbit 2>&1 | grep -E "^===|^rc|^(raw|vkzip) |^rate"
