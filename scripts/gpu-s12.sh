#!/usr/bin/env bash
# One bounded device call: CUDA bridge client (with step logging and a stack dump on a hang), the CUDA Go tests,
# the vkcodec memory-budget test, a network-namespace/tc capability check (for the transfer issue), and the bench.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh" # $OUT, the Vulkan loader, the NVIDIA ICD
export VKZIP_REQUIRE_VULKAN=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
echo "== cuda client"
timeout -s KILL 75 python3 -X faulthandler examples/cuda_client.py --verbose --hang-dump 50 --timeout 40 \
  --server ".devbin/cudaserve --timeout 60s" --json-out "$OUT/cuda_client.json" > "$OUT/cudapy.log" 2>&1; echo "cuda client rc=$?"
grep -vE '^\s+"' "$OUT/cudapy.log" | grep -E 'cuda_client|PASS|FAIL|File "|Thread|Current|Error|error|round' | head -60
echo "== cuda go tests"
(cd cudabridge && VKZIP_REQUIRE_CUDA=1 timeout -s QUIT 60 ../.devbin/tests/cudabridge.test -test.v -test.run CUDA -test.timeout 55s) > "$OUT/cudago.log" 2>&1; echo "cuda go tests rc=$?"
grep -E -- '^(---|===|ok|FAIL|PASS)|cuda_test' "$OUT/cudago.log" | head -30
echo "== vkcodec memory budget"
(cd codec/vkcodec && timeout 90 ../../.devbin/tests/codec_vkcodec.test -test.run 'MemoryBudget' -test.v) > "$OUT/vkcodec.log" 2>&1; echo "rc=$?"; grep -E -- '^(---|ok|FAIL|PASS)' "$OUT/vkcodec.log"
echo "== netns/tc capability"
nproc; (ip netns add vkzt && ip link add vkza type veth peer name vkzb && ip link set vkzb netns vkzt && tc qdisc add dev vkza root tbf rate 10gbit burst 1mb latency 50ms && echo "netns+veth+tbf OK"; tc qdisc del dev vkza root; ip link del vkza; ip netns del vkzt) 2>&1 | tail -3
command -v iperf3 python3 ip tc | tr '\n' ' '; echo
echo "== bench"
timeout 60 .devbin/vkzip bench --backend vulkan --size 512MiB --data kvlike --json > "$OUT/bench.json" 2>"$OUT/bench.err"; echo "bench rc=$?"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print({k:r.get(k) for k in ['encode_gbps','encode_wall_gbps','decode_gbps','decode_wall_gbps','copy_gbps','ratio','escape_rate','checksums','bit_exact','matches_cpu','device']}, r.get('latency_1mib_us'))" "$OUT/bench.json"
