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
  VKZIP_LARGE_MIB=${VKZIP_LARGE_MIB:-4608} bash .devbin/gpu.sh test > "$OUT/tests.log" 2>&1
  echo "tests rc=$?"; grep -E '^(PASS|FAIL|=== summary)|--- FAIL' "$OUT/tests.log" | head -40
fi
if [[ $what == all || $what == bench ]]; then
  : > "$OUT/bench.jsonl"
  b() { bash .devbin/gpu.sh vkzip bench --backend vulkan --json "$@" 2>>"$OUT/bench.err" | tr -d '\n' >> "$OUT/bench.jsonl"; echo >> "$OUT/bench.jsonl"; }
  for v in "" "--repl 2" "--wg 128" "--wg 512" "--groups 1024" "--groups 16384"; do b --size 512MiB --data kvlike $v; done
  b --size 512MiB --data escapes=0.01
  b --size 512MiB --data gauss
  b --size 512MiB --data kvlike --no-checksum
  b --size 64MiB --data escapes=1 --iters 3
  python3 - "$OUT/bench.jsonl" <<'PY'
import json,sys
for l in open(sys.argv[1]):
    l=l.strip()
    if not l: continue
    try: r=json.loads(l)
    except Exception as e: print("bad line", l[:200]); continue
    lat=r.get("latency_1mib_us") or {}
    print(f"{r['data']:>14} {r.get('variant',''):>26} crc={int(r['checksums'])} ratio={r['ratio']:.4f} esc={r['escape_rate']*100:.3f}% "
          f"enc={r['encode_gbps']:.0f}/{r['encode_wall_gbps']:.0f} dec={r['decode_gbps']:.0f}/{r['decode_wall_gbps']:.0f} "
          f"copy={r.get('copy_gbps',0):.0f} lat={lat.get('median',0):.0f}us exact={r['bit_exact']} ref={r['matches_cpu']}")
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
