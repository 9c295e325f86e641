#!/usr/bin/env bash
# Kernel-variant sweep on the H200: `vkzip bench` (512 MiB kvlike) once per variant in VARIANTS (flags separated by
# commas inside a variant, variants by spaces), one summary line each. Results in $OUT.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh" # $OUT, the Vulkan loader, the NVIDIA ICD
i=0
for v in ${VARIANTS:-"--wg=256"}; do
  i=$((i+1)); flags=${v//,/ }
  timeout 90 .devbin/vkzip bench --backend vulkan --size 512MiB --data kvlike --json --latency=${LATENCY:-false} --iters ${ITERS:-10} $flags > "$OUT/s$i.json" 2>"$OUT/s$i.err"
  rc=$?
  python3 -c "
import json,sys
r=json.load(open(sys.argv[1]))
print('%-40s enc %6.0f dec %6.0f (wall %6.0f %6.0f) copy %5.0f exact %s %s' % (sys.argv[2], r['encode_gbps'], r['decode_gbps'], r['encode_wall_gbps'], r['decode_wall_gbps'], r['copy_gbps'], r['bit_exact'], r['matches_cpu']))
if r.get('encode_pass_us'): print('    encode passes us', [round(x,1) for x in r['encode_pass_us']])
l=r.get('latency_1mib_us')
if l: print('    1 MiB enc+dec wall %.1f us (p90 %.1f), GPU enc %.1f dec %.1f us, chunk %d' % (l['median'], l['p90'], r['latency_1mib_gpu_us'][0], r['latency_1mib_gpu_us'][1], r['latency_chunk']))
ks=r.get('kernel_stats') or {}
for k in sorted(ks):
  if 'sz4_encode' in k or 'sz4_decode' in k: print('   ', k, [s for s in ks[k] if 'egister' in s or 'hared' in s][:2])
" "$OUT/s$i.json" "$flags rc=$rc" 2>&1 | tail -${TAIL:-6}
done
