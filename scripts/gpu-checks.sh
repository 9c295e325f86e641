#!/usr/bin/env bash
# Device-tool checks on the GPU machine, from the repo root, carry [".gl", ".devbin"] (prepare with
# ../shared/device/prepare.sh plus `go build -o .devbin/cudaserve ./examples/cudaserve`). Writes to $OUT:
#   conformance.json   the conformance report of this device (commit as conformance/reports/h200.json)
#   checks.log         vkcodec tests (4.5 GiB tensor, 10,000 mutated payloads), vk tests, cudabridge client and tests
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh" # $OUT, the Vulkan loader, the NVIDIA ICD
export VKZIP_REQUIRE_VULKAN=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
log=$OUT/checks.log; : > "$log"
run() { echo "### $*" >> "$log"; "$@" >> "$log" 2>&1; local rc=$?; echo "### rc=$rc" >> "$log"; echo "$rc $*"; }
run timeout 120 .devbin/vkzip conformance --quiet --out "$OUT/conformance.json"
(cd codec/vkcodec && VKZIP_LARGE_MIB=4608 VKZIP_MUTATIONS=10000 run ../../.devbin/tests/codec_vkcodec.test -test.v -test.timeout 8m)
(cd vk && run ../.devbin/tests/vk.test -test.timeout 4m)
# Every step is bounded: a hung CUDA wait must not eat the session's device time (it did once).
run timeout -s KILL 120 python3 examples/cuda_client.py --verbose --hang-dump 90 --server .devbin/cudaserve --json-out "$OUT/cuda_client.json"
(cd cudabridge && VKZIP_REQUIRE_CUDA=1 run timeout -s QUIT 90 ../.devbin/tests/cudabridge.test -test.v -test.run CUDA -test.timeout 80s)
grep -E -- '^--- (FAIL|PASS)|mutations through|MiB tensor|goroutines,|cycles: RSS|verdict|PASS|FAIL|ordering|host.?staged' "$log" | head -80
