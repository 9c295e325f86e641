#!/usr/bin/env bash
# Session-16 device run: the CPU huff codec's throughput on one and on 16 cores of the device machine (issue #10's
# per-core target), then a SplitZip-4 sweep of CRC table replication now that only the two hot tables sit in shared
# memory (issue #4). Run from the repo root with carry [".gl", ".devbin"].
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
lscpu | grep -E 'Model name|^CPU\(s\)'
(cd codec && timeout 200 ../.devbin/tests/codec.test -test.run '^$' -test.bench 'Huff(En|De)code' -test.cpu 1,16 \
  -test.count 3 2>&1 | grep -E 'Benchmark|cpu:')
VARIANTS=${VARIANTS:-"--wg=256 --repl=2 --repl=4 --repl=2,--wg=512"} ITERS=${ITERS:-10} bash scripts/gpu-sweep.sh
if [ -x .devbin/codec_old.test ]; then # the previous tree's CPU codec, same machine, for the before/after
  (cd codec && timeout 120 ../.devbin/codec_old.test -test.run '^$' -test.bench 'Huff(En|De)code' -test.cpu 1 \
    -test.count 3 2>&1 | grep -E 'Benchmark' | sed 's/^/old /')
fi
