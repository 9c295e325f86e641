#!/usr/bin/env bash
# The GPU machine's checks, one script for every device call. Prepare here with ../shared/device/prepare.sh (it
# builds .devbin/vkzip and the test binaries; ONLY="./codec/vkcodec" keeps the carry small), then call the device
# tool from the repo root with carry [".gl", ".devbin"] and one of:
#
#   bash scripts/gpu.sh conformance NAME    conformance report into $OUT/NAME.json, then the Vulkan package tests
#   bash scripts/gpu.sh bench [RUN ...]     vkzip bench of each RUN (default: every format), 512 MiB, checksums on,
#                                           one JSON object per line in $OUT/bench.jsonl and a summary table
#   bash scripts/gpu.sh lab [RUN ...]       vkzip-lab bench of each RUN (tuning variants: the extra flags are the lab's
#                                           knobs, e.g. huff:BF16:kvlike:--huff-batch,4), into $OUT/lab.jsonl;
#                                           needs .devbin/vkzip-lab (go build -o .devbin/vkzip-lab ./cmd/vkzip-lab)
#   bash scripts/gpu.sh ab OLD NEW [ROUNDS] the same runs with two binaries (.devbin/OLD, .devbin/NEW), interleaved,
#                                           ROUNDS times (default 3), into $OUT/ab.jsonl, and each binary's medians
#   bash scripts/gpu.sh files OLD NEW [ROUNDS]  whole-file encode + decode (Vulkan host path) of a SIZE_MIB raw BF16
#                                           file with two binaries, timed, outputs compared
#   bash scripts/gpu.sh tests [ARGS]        every carried test binary in its package folder
#   bash scripts/gpu.sh tcp [RATES...]      TCP transfer, raw against compressed, between two network namespaces at
#                                           shaped rates (default 10gbit 25gbit 100gbit); carry .net too (see tcp_mode)
#   bash scripts/gpu.sh nccl                KV transfer between the two GPUs of an nvidia-h200-x2 machine over NCCL
#                                           (see nccl_mode); `bash scripts/gpu.sh nccl prepare` on the Go machine first
#
# A RUN is format[:dtype[:data[:extra flags, commas for spaces]]], e.g. xw3:F16 or splitzip4:BF16:kvlike:--no-checksum.
# Every step is bounded by `timeout`, and every figure comes with the card it ran on (nvidia-smi's line first).
set -uo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
# `nccl prepare` runs on the Go machine, before the device setup below (see nccl_mode).
if [ "${1:-}" = nccl ] && [ "${2:-}" = prepare ]; then
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
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
bash .devbin/gpu.sh true 2>&1 | head -3 # unpacks the Vulkan loader carried in .gl, prints the card
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
export VKZIP_REQUIRE_VULKAN=1 PATH="$PWD/.devbin:$PATH"
DEFAULT_RUNS="splitzip4 zf12 tbe3 huff auto auto:BF16:spread xw3:F8_E5M2 xw3:F16"
LAB_RUNS="splitzip4 zf12 tbe3 huff auto xw3:F8_E5M2 xw3:F16" # vkzip-lab data: kvlike or gauss

bench_one() { # BIN RUN -> one JSON line on stdout (empty when the run failed)
  local bin=$1 f d data extra
  IFS=: read -r f d data extra <<< "$2"
  timeout 150 "$bin" bench --backend vulkan --format "$f" --dtype "${d:-BF16}" --data "${data:-kvlike}" \
    --size "${SIZE:-512MiB}" --json ${extra//,/ } 2>>"$OUT/bench.err" | tr -d '\n'
  echo
}

lab_one() { # RUN -> one JSON line on stdout (empty when the run failed)
  local f d data extra
  IFS=: read -r f d data extra <<< "$1"
  timeout 150 .devbin/vkzip-lab bench --format "$f" --dtype "${d:-BF16}" --data "${data:-kvlike}" \
    --size "${SIZE:-512MiB}" --json ${extra//,/ } 2>>"$OUT/lab.err" | tr -d '\n'
  echo
}

summary() { # FILE: one line per bench result, then the medians per (binary, run) when the lines carry "bin"
  python3 - "$1" <<'PY'
import json, statistics, sys
rows = []
for l in open(sys.argv[1]):
    if not l.strip():
        continue
    d = json.loads(l)  # bench --json: {"results": [...]} (a binary before that: the result itself); ab lines add "bin"
    for r in d.get("results", [d]):
        if "bin" in d:
            r["bin"] = d["bin"]
        rows.append(r)
def g(r, k):
    v = r.get(k)
    return 0 if v is None else v
groups = {}
for r in rows:
    lat = r.get("latency_1mib_us") or {}
    print("%-6s %-9s %-7s %-7s enc %6.1f (%.2f) dec %6.1f (%.2f) copy %6.1f ratio %.4f 1MiB %s us exact %s" % (
        r.get("bin", ""), r["format"], r.get("dtype", ""), r.get("data", ""), g(r, "encode_gbps"),
        g(r, "encode_of_ceiling"), g(r, "decode_gbps"), g(r, "decode_of_ceiling"), g(r, "copy_gbps"), g(r, "ratio"),
        round(lat.get("median", 0), 1) if isinstance(lat, dict) else lat, r.get("bit_exact")))
    key = (r.get("format"), r.get("dtype"), r.get("data"))
    groups.setdefault(key, {}).setdefault(r.get("bin", ""), []).append(r)
if any(r.get("bin") for r in rows):
    print("\nmedians (encode GB/s, decode GB/s, 1 MiB us):")
    for key, bins in groups.items():
        parts = []
        for b, rs in bins.items():
            med = lambda k: statistics.median(g(r, k) for r in rs)
            lat = statistics.median((r.get("latency_1mib_us") or {}).get("median", 0) for r in rs)
            parts.append("%s %.1f / %.1f / %.1f" % (b, med("encode_gbps"), med("decode_gbps"), lat))
        print("  %-28s %s" % (" ".join(str(k) for k in key), "   ".join(parts)))
PY
}

# TCP transfer on the GPU machine: raw against compressed (GPU codec) between two network namespaces, at shaped
# rates. The device image has no iproute2: carry its Debian packages in .net/ (apt-get download iproute2 and its
# libraries there) and tcp_mode unpacks them into /opt/net, with ip/tc wrappers on PATH.
# Usage (repo root, device machine, carry .gl .devbin .net): [PAIRS="vulkan/cpu ..."] [EXTRA="--hash xxh3"] bash scripts/gpu.sh tcp [RATES...]
tcp_mode() {
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
}

# nccl_mode: KV transfer between the two GPUs of an nvidia-h200-x2 machine over NCCL, raw against compressed.
#
# Prepare on the Go machine, from the repo root: `bash scripts/gpu.sh nccl prepare` builds what nccl_mode runs into
# .devbin (vkzip, the transfer/gpulink and cudabridge/nccl test binaries, gpu.sh), leaving other files there as they
# are; .gl (the Vulkan loader packages) must exist already (../shared/device/prepare.sh makes it). Then run it from
# the repo root on the GPU machine: device tool, kind nvidia-h200-x2, carry [".gl", ".devbin"], command
# `bash scripts/gpu.sh nccl`. Steps there, each bounded by `timeout`, all output short (full logs in $OUT):
#   1. nvidia-smi topo -m (how the GPUs are linked)                          → $OUT/topo.txt
#   2. libnccl.so.2 from the Python package nvidia-nccl-cu13 (or $VKZIP_NCCL_LIB)
#   3. a 1 MiB NCCL sanity transfer with NCCL_DEBUG=INFO (first lines shown) → $OUT/check.log
#   4. the Go tests that need two GPUs (transfer/gpulink, cudabridge/nccl)   → $OUT/tests.log
#   5. vkzip transfer-bench --transport nccl at 256 MiB and 2 GiB, then, while time is left, variants: bigger chunks,
#      NCCL on the copy engines (NCCL_P2P_USE_CUDA_MEMCPY=1), and the best raw baseline (ordinary CUDA memory with
#      NCCL's direct P2P)                                                    → $OUT/nccl.jsonl (one JSON a run), $OUT/nccl.log
# Exit status: 0 when the sanity transfer and the 256 MiB and 2 GiB benches ran bit-exact, 1 otherwise, 2 when it
# cannot run (no vkzip with --transport nccl, no NCCL). DEADLINE (seconds, default 540) stops the optional steps.
nccl_mode() {
# NVLink multicast stays off in this process and every child (vkzip sets these itself too).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset NCCL_DEBUG # NCCL logs to stdout: only the sanity step turns it on
DEADLINE=${DEADLINE:-540}
VKZIP=$PWD/.devbin/vkzip
log=$OUT/nccl.log; : > "$log"; : > "$OUT/nccl.jsonl"

if ! "$VKZIP" transfer-bench --help 2>/dev/null | grep -q -- '-transport'; then
  echo "gpu.sh nccl: $VKZIP has no --transport nccl: rebuild .devbin (../shared/device/prepare.sh) from this tree"; exit 2
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
lib=$(find_nccl) || { echo "gpu.sh nccl: libnccl.so.2 not found (pip package nvidia-nccl-cu13?); set VKZIP_NCCL_LIB"; exit 2; }
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
  echo "gpu.sh nccl: the NCCL sanity transfer failed; not going further (see check.log)"; exit 1
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
nccl_summary() {
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
line = (f"{name}: {g('raw_bytes',0)/2**20:.0f} MiB, {g('frames')} frames of {g('frame_bytes',0)/2**20:.0f} MiB, "
        f"{g('inflight')} in flight, ratio {g('ratio',0):.4f}:")
if g("raw_seconds"):
    line += f" raw {g('raw_seconds')*1e3:.2f} ms ({g('raw_gbps',0):.0f} GB/s, from {g('raw_from')})"
if g("compressed_seconds"):
    line += f", vkzip {g('compressed_seconds')*1e3:.2f} ms ({g('compressed_gbps',0):.0f} GB/s)"
if g("speedup"):
    line += f", speedup {g('speedup'):.3f}x"
line += f", bit-exact {g('bit_exact')}"
print(line)
vk = sorted((x for x in g("runs", []) if x["mode"] == "vkzip"), key=lambda x: x["seconds"])
if vk:
    m = vk[(len(vk) - 1) // 2]
    print(f"    median vkzip run: GPU encode {m.get('encode_gpu_seconds',0)*1e3:.2f} ms, decode {m.get('decode_gpu_seconds',0)*1e3:.2f} ms; "
          f"host blocked on encodes {m.get('host_wait_encode_seconds',0)*1e3:.2f} ms, decodes {m.get('host_wait_decode_seconds',0)*1e3:.2f} ms, "
          f"enqueue {m.get('host_enqueue_seconds',0)*1e3:.2f} ms, decode prepares {m.get('decode_prepares',0)}")
env = g("env") or {}
print("    env:", " ".join(f"{k}={v}" for k, v in sorted(env.items()) if k.startswith("NCCL_P2P")))
sys.exit(0 if g("bit_exact") else 1)
PY
}
fails=0
nccl_bench() { # name required(1/0) seconds [VAR=value ...] -- flags...
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
  if nccl_summary "$name" "$j"; then cat "$j.line" >> "$OUT/nccl.jsonl"; else
    [ -f "$j.line" ] && cat "$j.line" >> "$OUT/nccl.jsonl"
    echo "$name: rc=$rc; $(grep -E 'vkzip: transfer-bench:' "$log" | tail -n 1 | cut -c1-300)"
    [ "$required" = 1 ] && fails=$((fails + 1))
  fi
  rm -f "$j" "$j.line"
}
nccl_bench nccl-256MiB 1 120 -- --size 256MiB --frame-size 16MiB --inflight 4
nccl_bench nccl-2GiB 1 180 -- --size 2GiB --frame-size 64MiB --inflight 4
nccl_bench nccl-2GiB-chunk128 0 150 -- --size 2GiB --frame-size 128MiB --inflight 3
nccl_bench nccl-2GiB-copyengine 0 150 NCCL_P2P_USE_CUDA_MEMCPY=1 -- --size 2GiB --frame-size 64MiB --inflight 4
nccl_bench raw-2GiB-cudamem-direct 0 120 NCCL_P2P_DIRECT_DISABLE=0 -- --size 2GiB --modes raw --raw-from cuda
grep -E 'vkzip: transfer-bench: (set-up|measured)' "$log" | tail -n 4 | cut -c1-200
echo "done in ${SECONDS}s; failures: $fails"
[ $fails -eq 0 ]
}

cmd=${1:-}
shift || true
case "$cmd" in
conformance)
  name=${1:?conformance NAME}
  timeout 400 vkzip conformance --quiet --out "$OUT/$name.json" 2>&1 | tail -30
  echo "conformance rc=${PIPESTATUS[0]}"
  for t in .devbin/tests/*.test; do
    dir=$(cat "${t%.test}.dir")
    (cd "$dir" && timeout 250 "$OLDPWD/$t" -test.timeout 240s > "$OUT/$(basename "$t").log" 2>&1)
    echo "$dir tests rc=$?"
    grep -E -- '^(--- FAIL|FAIL|ok|PASS)' "$OUT/$(basename "$t").log" | head -8
  done
  ;;
bench)
  : > "$OUT/bench.jsonl"
  for r in ${*:-$DEFAULT_RUNS}; do bench_one .devbin/vkzip "$r" >> "$OUT/bench.jsonl"; done
  summary "$OUT/bench.jsonl"
  ;;
lab)
  : > "$OUT/lab.jsonl"
  for r in ${*:-$LAB_RUNS}; do lab_one "$r" >> "$OUT/lab.jsonl"; done
  summary "$OUT/lab.jsonl"
  ;;
ab)
  old=${1:?ab OLD NEW}; new=${2:?ab OLD NEW}; rounds=${3:-3}
  : > "$OUT/ab.jsonl"
  for i in $(seq "$rounds"); do
    for r in ${RUNS:-$DEFAULT_RUNS}; do
      for b in "$old" "$new"; do
        line=$(bench_one ".devbin/$b" "$r")
        [ -n "$line" ] && python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d["bin"]=sys.argv[2]; print(json.dumps(d))' \
          "$line" "$b" >> "$OUT/ab.jsonl"
      done
    done
  done
  summary "$OUT/ab.jsonl"
  ;;
files)
  # Whole-file encode and decode through the Vulkan backend's host path (the container layer included), each
  # binary ROUNDS times on one raw BF16 file of SIZE_MIB MiB (standard normal values), outputs compared.
  old=${1:?files OLD NEW}; new=${2:?files OLD NEW}; rounds=${3:-3}
  f=$OUT/kv.raw
  python3 -c 'import numpy as np, sys
n = int(sys.argv[2]) << 19
x = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
(x.view(np.uint32) >> 16).astype(np.uint16).tofile(sys.argv[1])' "$f" "${SIZE_MIB:-1024}"
  for i in $(seq "$rounds"); do
    for b in "$old" "$new"; do
      rm -f "$OUT/$b.vkz" "$OUT/$b.out"
      t0=$(date +%s.%N)
      timeout 120 ".devbin/$b" encode -q --backend vulkan --dtype bf16 -o "$OUT/$b.vkz" "$f" || echo "$b encode failed"
      t1=$(date +%s.%N)
      timeout 120 ".devbin/$b" decode -q --backend vulkan -o "$OUT/$b.out" "$OUT/$b.vkz" || echo "$b decode failed"
      t2=$(date +%s.%N)
      cmp -s "$f" "$OUT/$b.out" && same=identical || same=DIFFERENT
      python3 -c 'import sys; s=int(sys.argv[5]); e=float(sys.argv[3])-float(sys.argv[2]); d=float(sys.argv[4])-float(sys.argv[3])
print("%-10s encode %.3f s (%.2f GB/s)  decode %.3f s (%.2f GB/s)  %s bytes  %s" % (sys.argv[1], e, s/e/1e9, d, s/d/1e9, sys.argv[6], sys.argv[7]))' \
        "$b" "$t0" "$t1" "$t2" "$(stat -c %s "$f")" "$(stat -c %s "$OUT/$b.vkz")" "$same"
    done
  done
  rm -f "$f" "$OUT"/*.vkz "$OUT"/*.out
  ;;
tests)
  bash .devbin/gpu.sh test "$@"
  ;;
tcp)
  tcp_mode "$@"
  ;;
nccl)
  nccl_mode
  ;;
*)
  sed -n '2,20p' "$0"
  exit 2
  ;;
esac
