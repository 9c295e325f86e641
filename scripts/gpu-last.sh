#!/usr/bin/env bash
# Last device call of a session: CUDA bridge diagnostics (bounded, with stack dumps on timeout) and the benchmarks.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh" # $OUT, the Vulkan loader, the NVIDIA ICD
export VKZIP_REQUIRE_VULKAN=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
(cd cudabridge && VKZIP_REQUIRE_CUDA=1 timeout -s QUIT 35 ../.devbin/tests/cudabridge.test -test.v -test.run CUDA -test.timeout 30s) > "$OUT/cudago.log" 2>&1; echo "cuda go tests rc=$?"
grep -E -- '^--- |^\s+cuda_test|ok|FAIL' "$OUT/cudago.log" | head -20
timeout -s ABRT 40 python3 -X faulthandler examples/cuda_client.py --server .devbin/cudaserve --json-out "$OUT/cuda_client.json" > "$OUT/cudapy.log" 2>&1; echo "cuda client rc=$?"
grep -E 'PASS|FAIL|enqueued|File "|Thread|Current' "$OUT/cudapy.log" | head -30
for v in "--data kvlike" "--data escapes=0.01"; do
  timeout 25 .devbin/vkzip bench --backend vulkan --size 512MiB --json $v > "$OUT/b-${v##*=}.json" 2>&1
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['data'], 'enc', round(r['encode_gbps']), round(r['encode_wall_gbps']), 'dec', round(r['decode_gbps']), round(r['decode_wall_gbps']), 'copy', round(r['copy_gbps']), 'lat', round(r['latency_1mib_us']['median']), r['bit_exact'], r['matches_cpu'])" "$OUT/b-${v##*=}.json" 2>&1 | tail -1
done
for s in host copy; do timeout 20 .devbin/vkzip bench --source $s --size 256MiB --iters 5 2>&1 | tail -1; done
