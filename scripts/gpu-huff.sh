#!/usr/bin/env bash
# huff kernel variants on the H200: one `vkzip bench --format huff` (512 MiB kvlike) per line of VARIANTS
# ("ENV=V,ENV=V|bench flags", commas for spaces in flags; BIN picks the binary). Profile bits: vkcodec.Options.Profile.
# FORMAT picks another format (default huff).
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh" # $OUT, the Vulkan loader, the NVIDIA ICD
for v in ${VARIANTS:-"|"}; do
  envs=${v%%|*}; flags=${v#*|}
  env ${envs//,/ } timeout 100 ${BIN:-.devbin/vkzip} bench --backend vulkan --format ${FORMAT:-huff} --size 512MiB --data kvlike --json \
    --latency=false --iters ${ITERS:-5} ${flags//,/ } > "$OUT/h.json" 2>"$OUT/h.err"
  rc=$?
  python3 -c "
import json,sys
r=json.load(open(sys.argv[1]))
print('%-45s enc %5.0f dec %5.0f (wall %5.0f %5.0f) copy %5.0f passes %s ratio %.4f exact %s' % (sys.argv[2], r['encode_gbps'], r['decode_gbps'], r['encode_wall_gbps'], r['decode_wall_gbps'], r.get('copy_gbps', 0), [round(x) for x in r.get('encode_pass_us') or []], r['ratio'], r['bit_exact']))
for k, v in sorted((r.get('kernel_stats') or {}).items()):
    if ('huff' in k or 'sz4_' in k or 'tbe3' in k) and sys.argv[3]:
        print('   ', k, [x for x in v if any(w in x.lower() for w in ('register', 'shared', 'spill', 'local', 'stack'))])
" "$OUT/h.json" "$v rc=$rc" "${STATS:-}" 2>&1 | tail -${STATS:+5}1
  [ $rc -ne 0 ] && tail -2 "$OUT/h.err"
done
