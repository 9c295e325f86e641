#!/usr/bin/env bash
# Session-22 final device run (one call): conformance report and Vulkan package tests (gpu-final.sh conf), issue
# #4's acceptance command, the huff bench of issue #10, benches of the escape-heavy rows (SplitZip-4, zf12, TBE-3
# at 1 % escapes), then the previous tree (.devbin/vkzip-old) and this one alternated on each of AB_FORMATS (default
# splitzip4; ROUNDS rounds). HUFF=0 skips the huff bench, RUNS= the escape rows. Files in $OUT.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
MODE=conf bash scripts/gpu-final.sh
bash .devbin/gpu.sh vkzip bench --backend vulkan --size 512MiB --data kvlike --json > "$OUT/acceptance4.json" 2>"$OUT/acceptance4.err"
echo "acceptance #4 rc=$?"; python3 -c "
import json,sys; t=open(sys.argv[1]).read(); r=json.loads(t[t.index('{'):])
print({k: r.get(k) for k in ('format','encode_gbps','encode_wall_gbps','decode_gbps','decode_wall_gbps','copy_gbps','ratio','escape_rate','checksums','device','bit_exact','matches_cpu','latency_1mib_us')})
" "$OUT/acceptance4.json"
[ "${HUFF:-1}" = 1 ] && .devbin/vkzip bench --backend vulkan --format huff --size 512MiB --data kvlike --json > "$OUT/huff.json" 2>"$OUT/huff.err" &&
echo "huff rc=$?" && python3 -c "
import json,sys; r=json.load(open(sys.argv[1]))
print({k: r.get(k) for k in ('format','chunk','encode_gbps','encode_wall_gbps','decode_gbps','decode_wall_gbps','copy_gbps','ratio','checksums','bit_exact','matches_cpu','encode_pass_us')})
" "$OUT/huff.json"
RUNS=${RUNS-"splitzip4:BF16:escapes=0.01 splitzip4:BF16:gauss zf12:BF16:escapes=0.01 tbe3:BF16:escapes=0.01"}
[ -n "$RUNS" ] && RUNS="$RUNS" MODE=bench bash scripts/gpu-final.sh
for f in ${AB_FORMATS:-splitzip4}; do FORMAT=$f TESTRUN= ROUNDS=${ROUNDS:-1} bash scripts/gpu-s22.sh; done
exit 0
