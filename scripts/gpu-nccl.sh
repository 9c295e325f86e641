#!/usr/bin/env bash
# gpu-nccl.sh: KV transfer between the two GPUs of an nvidia-h200-x2 machine over NCCL, raw against compressed.
#
# Prepare on the Go machine, from the repo root: `bash scripts/gpu-nccl.sh prepare` builds what this script runs into
# .devbin (vkzip, the transfer/gpulink and cudabridge/nccl test binaries, gpu.sh), leaving other files there as they
# are; .gl (the Vulkan loader packages) must exist already (../shared/device/prepare.sh makes it). Then run it from
# the repo root on the GPU machine: device tool, kind nvidia-h200-x2, carry [".gl", ".devbin"], command
# `bash scripts/gpu-nccl.sh`. Steps there, each bounded by `timeout`, all output short (full logs in $OUT):
#   1. nvidia-smi topo -m (how the GPUs are linked)                          → $OUT/topo.txt
#   2. libnccl.so.2 from the Python package nvidia-nccl-cu13 (or $VKZIP_NCCL_LIB)
#   3. a 1 MiB NCCL sanity transfer with NCCL_DEBUG=INFO (first lines shown) → $OUT/check.log
#   4. the Go tests that need two GPUs (transfer/gpulink, cudabridge/nccl)   → $OUT/tests.log
#   5. vkzip transfer-bench --transport nccl at 256 MiB and 2 GiB, then, while time is left, variants: bigger chunks,
#      NCCL on the copy engines (NCCL_P2P_USE_CUDA_MEMCPY=1), and the best raw baseline (ordinary CUDA memory with
#      NCCL's direct P2P)                                                    → $OUT/nccl.jsonl (one JSON a run), $OUT/nccl.log
# Exit status: 0 when the sanity transfer and the 256 MiB and 2 GiB benches ran bit-exact, 1 otherwise, 2 when it
# cannot run (no vkzip with --transport nccl, no NCCL). DEADLINE (seconds, default 540) stops the optional steps.
set -uo pipefail
if [ "${1:-}" = prepare ]; then
  set -e
  [ -d .gl ] || { echo "no .gl here: run ../shared/device/prepare.sh (or /work/shared/device/prepare.sh) first"; exit 2; }
  mkdir -p .devbin/tests
  go build -ldflags='-s -w' -o .devbin/vkzip ./cmd/vkzip
  for p in transfer/gpulink cudabridge/nccl; do
    n=$(echo "$p" | tr '/.' '__')
    go test -c -ldflags='-s -w' -o ".devbin/tests/$n.test" "./$p"
    echo "$p" > ".devbin/tests/$n.dir"
  done
  here=$(dirname "$(git rev-parse --path-format=absolute --git-common-dir)")
  for g in "$here/../shared/device/gpu.sh" /work/shared/device/gpu.sh; do [ -f "$g" ] && { cp "$g" .devbin/gpu.sh; break; }; done
  [ -f .devbin/gpu.sh ] || { echo "no gpu.sh found to copy into .devbin"; exit 2; }
  du -sh .gl .devbin
  exit 0
fi
# NVLink multicast stays off in this process and every child (vkzip sets these itself too).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset NCCL_DEBUG # NCCL logs to stdout: only the sanity step turns it on
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
DEADLINE=${DEADLINE:-540}
VKZIP=$PWD/.devbin/vkzip
log=$OUT/nccl.log; : > "$log"; : > "$OUT/nccl.jsonl"

. "$(dirname "$0")/gpu-env.sh" # $OUT, the Vulkan loader, the NVIDIA ICD
if ! "$VKZIP" transfer-bench --help 2>/dev/null | grep -q -- '-transport'; then
  echo "gpu-nccl: $VKZIP has no --transport nccl: rebuild .devbin (../shared/device/prepare.sh) from this tree"; exit 2
fi

echo "== topology"
{ nvidia-smi --query-gpu=index,name,pci.bus_id,uuid --format=csv,noheader; nvidia-smi topo -m; } > "$OUT/topo.txt" 2>&1
grep -v '^$' "$OUT/topo.txt" | head -n 16

echo "== NCCL library"
find_nccl() {
  if [ -n "${VKZIP_NCCL_LIB:-}" ] && [ -f "$VKZIP_NCCL_LIB" ]; then echo "$VKZIP_NCCL_LIB"; return 0; fi
  timeout 30 python3 - <<'PY' && return 0
import glob, os, site, sys
cands = []
try:
    import nvidia.nccl as m
    dirs = list(getattr(m, "__path__", []))
    if getattr(m, "__file__", None):
        dirs.append(os.path.dirname(m.__file__))
    cands += [os.path.join(d, "lib", "libnccl.so.2") for d in dirs]
except Exception:
    pass
for sp in site.getsitepackages() + [site.getusersitepackages()]:
    cands += sorted(glob.glob(os.path.join(sp, "nvidia", "**", "libnccl.so.2"), recursive=True))
    cands += glob.glob(os.path.join(sp, "torch", "lib", "libnccl.so.2"))
for c in cands:
    if os.path.isfile(c):
        print(c)
        sys.exit(0)
sys.exit(1)
PY
  ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; f=1; exit} END{exit !f}'
}
lib=$(find_nccl) || { echo "gpu-nccl: libnccl.so.2 not found (pip package nvidia-nccl-cu13?); set VKZIP_NCCL_LIB"; exit 2; }
export VKZIP_NCCL_LIB=$lib
echo "$lib"

echo "== sanity: 1 MiB GPU0 → GPU1 through NCCL (NCCL_DEBUG=INFO)"
NCCL_DEBUG=INFO timeout -s KILL 90 "$VKZIP" transfer-bench --transport nccl --check > "$OUT/check.log" 2>&1
check_rc=$?
head -n 12 "$OUT/check.log" | cut -c1-200
echo "..."
grep -E 'NVLS|P2P/|via P2P|via SHM|Connected all|comm 0x.*rank|transfer-bench --check|Error|WARN' "$OUT/check.log" | grep -v '^transfer-bench --check' | head -n 12 | cut -c1-200
grep -E '^transfer-bench --check|vkzip: transfer-bench:' "$OUT/check.log" | tail -n 3 | cut -c1-400
echo "check rc=$check_rc"
if [ $check_rc -ne 0 ]; then
  echo "gpu-nccl: the NCCL sanity transfer failed; not going further (see check.log)"; exit 1
fi

echo "== Go tests on two GPUs"
: > "$OUT/tests.log"
gotest() { # dir binary regex seconds
  local bin=.devbin/tests/$2.test
  [ -x "$bin" ] || { echo "(no $bin)"; return; }
  (cd "$1" && VKZIP_REQUIRE_NCCL=1 VKZIP_REQUIRE_VULKAN=1 timeout -s QUIT "$4" "$OLDPWD/$bin" -test.v -test.run "$3" \
    -test.timeout "$(( $4 - 5 ))s") >> "$OUT/tests.log" 2>&1
  echo "$2 rc=$?"
}
gotest transfer/gpulink transfer_gpulink 'OnTwoGPUs|NoLibraries' 120
gotest cudabridge/nccl cudabridge_nccl . 60
grep -E -- '^--- (PASS|FAIL|SKIP)|raw .* ms, vkzip|^(ok|FAIL|PASS)$' "$OUT/tests.log" | head -n 20 | cut -c1-200

echo "== transfer-bench --transport nccl"
summary() {
  python3 - "$1" "$2" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
try:
    text = open(path).read()
    i = 0 if text.startswith("{") else text.find("\n{") + 1  # skip any library chatter before the JSON
    r, _ = json.JSONDecoder().raw_decode(text[i:])
except Exception as e:
    print(f"{name}: no JSON ({e})"); sys.exit(1)
r["name"] = name
with open(sys.argv[2] + ".line", "w") as f:
    f.write(json.dumps(r, separators=(",", ":")) + "\n")
g = r.get
line = (f"{name}: {g('size_bytes',0)/2**20:.0f} MiB, {g('chunks')} chunks of {g('chunk_bytes',0)/2**20:.0f} MiB, "
        f"{g('inflight')} in flight, ratio {g('ratio',0):.4f}:")
if g("raw_seconds"):
    line += f" raw {g('raw_seconds')*1e3:.2f} ms ({g('raw_gb_per_s',0):.0f} GB/s, from {g('raw_from')})"
if g("compressed_seconds"):
    line += f", vkzip {g('compressed_seconds')*1e3:.2f} ms ({g('compressed_gb_per_s',0):.0f} GB/s)"
if g("speedup"):
    line += f", speedup {g('speedup'):.3f}x"
line += f", bit-exact {g('bit_exact')}"
print(line)
vk = sorted((x for x in g("runs", []) if x["mode"] == "vkzip"), key=lambda x: x["seconds"])
if vk:
    m = vk[(len(vk) - 1) // 2]
    print(f"    median vkzip run: GPU encode {m.get('encode_gpu_s',0)*1e3:.2f} ms, decode {m.get('decode_gpu_s',0)*1e3:.2f} ms; "
          f"host blocked on encodes {m.get('host_wait_encode_s',0)*1e3:.2f} ms, decodes {m.get('host_wait_decode_s',0)*1e3:.2f} ms, "
          f"enqueue {m.get('host_enqueue_s',0)*1e3:.2f} ms, decode prepares {m.get('decode_prepares',0)}")
env = g("env") or {}
print("    env:", " ".join(f"{k}={v}" for k, v in sorted(env.items()) if k.startswith("NCCL_P2P")))
sys.exit(0 if g("bit_exact") else 1)
PY
}
fails=0
bench() { # name required(1/0) seconds [VAR=value ...] -- flags...
  local name=$1 required=$2 secs=$3; shift 3
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local left=$(( DEADLINE - SECONDS ))
  if [ "$required" = 0 ] && [ $left -lt "$secs" ]; then echo "$name: skipped ($left s left)"; return; fi
  [ $left -lt "$secs" ] && secs=$(( left > 30 ? left : 30 ))
  local j=$OUT/.$name.json
  echo "### $name: ${envs[*]} transfer-bench --transport nccl $*" >> "$log"
  env "${envs[@]}" timeout -s KILL "$secs" "$VKZIP" transfer-bench --transport nccl --json "$@" > "$j" 2>> "$log"
  local rc=$?
  echo "### rc=$rc" >> "$log"
  if summary "$name" "$j"; then cat "$j.line" >> "$OUT/nccl.jsonl"; else
    [ -f "$j.line" ] && cat "$j.line" >> "$OUT/nccl.jsonl"
    echo "$name: rc=$rc; $(grep -E 'vkzip: transfer-bench:' "$log" | tail -n 1 | cut -c1-300)"
    [ "$required" = 1 ] && fails=$((fails + 1))
  fi
  rm -f "$j" "$j.line"
}
bench nccl-256MiB 1 120 -- --size 256MiB --chunk 16MiB --inflight 4
bench nccl-2GiB 1 180 -- --size 2GiB --chunk 64MiB --inflight 4
bench nccl-2GiB-chunk128 0 150 -- --size 2GiB --chunk 128MiB --inflight 3
bench nccl-2GiB-copyengine 0 150 NCCL_P2P_USE_CUDA_MEMCPY=1 -- --size 2GiB --chunk 64MiB --inflight 4
bench raw-2GiB-cudamem-direct 0 120 NCCL_P2P_DIRECT_DISABLE=0 -- --size 2GiB --modes raw --raw-from cuda
grep -E 'vkzip: transfer-bench: (set-up|measured)' "$log" | tail -n 4 | cut -c1-200
echo "done in ${SECONDS}s; failures: $fails"
[ $fails -eq 0 ]
