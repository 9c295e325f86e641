#!/usr/bin/env bash
# The CUDA real-client test (examples/cuda_client.py) and `vkzip bench --source cuda|host`, bounded.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh" # $OUT, the Vulkan loader, the NVIDIA ICD
export VKZIP_REQUIRE_VULKAN=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
echo "== cuda client"
timeout -s KILL 75 python3 -X faulthandler examples/cuda_client.py --verbose --hang-dump 50 --timeout 40 \
  --server ".devbin/cudaserve --timeout 60s" --json-out "$OUT/cuda_client.json" > "$OUT/cudapy.log" 2>&1; echo "cuda client rc=$?"
grep -vE '^\s+["{}\[\]]' "$OUT/cudapy.log" | grep -vE '^\s*$' | head -70
echo "== bench --source"
for s in cuda copy host; do timeout 40 .devbin/vkzip bench --backend vulkan --source $s --size 512MiB --iters 10 2>&1 | tail -2; done
