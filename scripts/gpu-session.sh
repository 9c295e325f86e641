#!/usr/bin/env bash
# One device-tool call on the GPU machine: the whole test suite, then the benchmark variants, then the CLI on the
# real KV file. Run there as `bash scripts/gpu-session.sh [tests|bench|cli|all]` with carry [".gl", ".devbin",
# ".gpudata"] (prepare with ../shared/device/prepare.sh and `mkdir -p .gpudata && cp ../shared/data/*kv* .gpudata/`).
# Outputs land in $OUT: tests.log, bench.jsonl, cli.log.
set -uo pipefail
what=${1:-all}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export VKZIP_REQUIRE_VULKAN=1 VKZIP_TEST_BIN=$PWD/.devbin/vkzip
if [[ $what == all || $what == tests ]]; then
  VKZIP_LARGE_MIB=${VKZIP_LARGE_MIB:-4608} bash .devbin/gpu.sh test ${TEST_ARGS:-} > "$OUT/tests.log" 2>&1
  echo "tests rc=$?"; grep -E '^(PASS|FAIL|=== summary)|--- FAIL' "$OUT/tests.log" | head -40
fi
if [[ $what == all || $what == bench ]]; then
  : > "$OUT/bench.jsonl"
  . "$(dirname "$0")/gpu-env.sh" # $OUT, the Vulkan loader, the NVIDIA ICD
  b() { echo "bench $*" >> "$OUT/bench.err"; .devbin/vkzip bench --backend vulkan --json "$@" 2>>"$OUT/bench.err" | tr -d '\n' >> "$OUT/bench.jsonl"; echo >> "$OUT/bench.jsonl"; }
  IFS=';' read -ra variants <<< "${BENCH_VARIANTS:---size 512MiB --data kvlike}"
  for v in "${variants[@]}"; do b $v; done
  python3 - "$OUT/bench.jsonl" <<'PY'
import json,sys
for l in open(sys.argv[1]):
    i=l.find('{')
    if i<0: continue
    r=json.loads(l[i:])
    lat=r.get("latency_1mib_us") or {}
    ps=r.get("encode_pass_us") or []
    print(f"{r['data']:>12} c{r['chunk']:<6}{r.get('variant',''):>24} crc={int(r['checksums'])} ratio={r['ratio']:.4f} esc={r['escape_rate']*100:.3f}% "
          f"enc={r['encode_gbps']:.0f}/{r['encode_wall_gbps']:.0f} dec={r['decode_gbps']:.0f}/{r['decode_wall_gbps']:.0f} "
          f"copy={r.get('copy_gbps',0):.0f} ceil={r.get('ceiling_gbps',0):.0f} lat={lat.get('median',0):.0f}us "
          f"pass={'/'.join(f'{x:.0f}' for x in ps)} ok={r['bit_exact'] and r['matches_cpu']}")
    for k, v in sorted((r.get("kernel_stats") or {}).items()):
        if "shared" in str(v).lower() or "regist" in str(v).lower():
            print("   ", k, [x for x in v if any(w in x.lower() for w in ("regist", "shared", "spill", "local", "occup", "stack"))][:6])
PY
fi
if [[ $what == all || $what == cli ]]; then
  {
    v=.devbin/vkzip; d=.gpudata
    bash .devbin/gpu.sh true >/dev/null 2>&1
    $v devices
    $v calibrate -o /tmp/cb.json $d/stories260k-kv-calib.safetensors
    $v encode --backend vulkan --codebook /tmp/cb.json -o /tmp/g.vkz $d/stories260k-kv-test.safetensors
    $v encode --backend cpu --codebook /tmp/cb.json -o /tmp/c.vkz $d/stories260k-kv-test.safetensors
    cmp /tmp/g.vkz /tmp/c.vkz && echo "CLI: vulkan payload == cpu payload"
    $v decode --backend vulkan -o /tmp/g.st /tmp/c.vkz && cmp /tmp/g.st $d/stories260k-kv-test.safetensors && echo "CLI: vulkan decode byte-identical"
    $v demo
  } > "$OUT/cli.log" 2>&1
  tail -20 "$OUT/cli.log"
fi
