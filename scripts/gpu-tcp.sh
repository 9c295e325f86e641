#!/usr/bin/env bash
# TCP transfer on the GPU machine: raw against compressed (GPU codec) between two network namespaces, at shaped
# rates. The device image has no iproute2: carry its Debian packages in .net/ (apt-get download iproute2 and its
# libraries there) and this script unpacks them into /opt/net, with ip/tc wrappers on PATH.
# Usage (repo root, device machine, carry .gl .devbin .net): [PAIRS="vulkan/cpu ..."] [EXTRA="--hash xxh3"] bash scripts/gpu-tcp.sh [RATES...]
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh" # $OUT, the Vulkan loader, the NVIDIA ICD
if ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  mkdir -p /opt/net /opt/net/wrap
  for f in .net/*.deb; do dpkg -x "$f" /opt/net; done
  lib=/opt/net/usr/lib/x86_64-linux-gnu:/opt/net/lib/x86_64-linux-gnu
  for t in ip:bin/ip tc:sbin/tc; do
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec /opt/net/%s "$@"\n' "$lib" "${t#*:}" > /opt/net/wrap/${t%%:*}
    chmod +x /opt/net/wrap/${t%%:*}
  done
  export PATH=/opt/net/wrap:$PATH
fi
ip -V; nproc; grep -m1 'model name' /proc/cpuinfo
ip netns add vkzcheck && ip netns del vkzcheck && echo "netns OK" || { echo "no netns here"; exit 2; }
export VKZIP=$PWD/.devbin/vkzip SIZE=${SIZE:-4GiB} CHUNK=${CHUNK:-16MiB}
W=${W:-6}
rates=("$@"); [ ${#rates[@]} -gt 0 ] || rates=(10gbit 25gbit 100gbit)
# PAIRS: sender/receiver backends, e.g. "vulkan/cpu" (the GPU codec on the sending end only).
for rate in "${rates[@]}"; do
  for pair in ${PAIRS:-vulkan/vulkan cpu/cpu}; do
    sb=${pair%/*} rb=${pair#*/}
    echo "=== $rate send $sb recv $rb"
    SEND_FLAGS="--backend $sb --chunk-hash --codebook $PWD/.devbin/cb.json --workers $W ${EXTRA:-}" RECV_FLAGS="--backend $rb --workers $W" \
      timeout 75 bash scripts/transfer-netns.sh "$rate" > "$OUT/tcp-$rate-$sb-$rb.log" 2>&1; echo "rc=$?"
    grep -E '^(raw|vkzip) |^rate |FAIL|warning|failed' "$OUT/tcp-$rate-$sb-$rb.log" | head -8
  done
done
