#!/usr/bin/env bash
# After the multi-queue change: Vulkan package tests, CUDA bridge tests and client, conformance, the bench and the
# in-process transfer bench on the GPU backend. Bounded; results in $OUT.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh" # $OUT, the Vulkan loader, the NVIDIA ICD
export VKZIP_REQUIRE_VULKAN=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
t() { local d=$1; shift; (cd "$d" && timeout 200 "$OLDPWD/.devbin/tests/$(echo "$d" | tr / _).test" "$@") > "$OUT/$(echo "$d" | tr / _).log" 2>&1; echo "$d rc=$?"; grep -E -- '^(--- FAIL|FAIL|ok|PASS)|compute queues|mutations through|MiB tensor' "$OUT/$(echo "$d" | tr / _).log" | head -12; }
t vk -test.v
VKZIP_LARGE_MIB=4608 VKZIP_MUTATIONS=10000 t codec/vkcodec -test.v
VKZIP_REQUIRE_CUDA=1 t cudabridge -test.v -test.run 'CUDA'
timeout -s KILL 75 python3 examples/cuda_client.py --hang-dump 50 --timeout 40 --server ".devbin/cudaserve --timeout 60s" --json-out "$OUT/cuda_client.json" > "$OUT/cudapy.log" 2>&1; echo "cuda client rc=$?"; grep -cE 'PASS ' "$OUT/cudapy.log"; grep -E 'FAIL|ALL CHECKS' "$OUT/cudapy.log"
timeout 150 .devbin/vkzip conformance --quiet --out "$OUT/conformance.json" 2>&1 | tail -4
timeout 60 .devbin/vkzip bench --backend vulkan --size 512MiB --data kvlike --json > "$OUT/bench.json" 2>"$OUT/bench.err"; echo "bench rc=$?"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print({k:round(r.get(k),1) if isinstance(r.get(k),float) else r.get(k) for k in ['encode_gbps','encode_wall_gbps','decode_gbps','decode_wall_gbps','copy_gbps','ratio','escape_rate','checksums','bit_exact','matches_cpu']}, r.get('latency_1mib_us',{}).get('median'))" "$OUT/bench.json"
for w in 6 12; do timeout 60 .devbin/vkzip transfer-bench --backend vulkan --size 4GiB --chunk 16MiB --workers $w --chunk-hash --codebook .devbin/cb.json 2>&1 | grep -E '^  (raw|vkzip)|speedup'; done
