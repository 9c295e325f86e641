#!/usr/bin/env bash
# Session-23 device run: the previous tree (.devbin/vkzip-old) and this one alternated on SplitZip-4 at 512 MiB
# (scripts/gpu-s22.sh: ROUNDS, DATAS, BINS), then VARIANTS of this one (gpu-huff.sh syntax, e.g. "VKZIP_CRC_BITS=5|"
# or "X=p2|--profile,2") with the compiler's register and shared-memory counts.
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
TESTRUN= STATS= bash "$(dirname "$0")/gpu-s22.sh"
[ -n "${VARIANTS:-}" ] && FORMAT=${FORMAT:-splitzip4} STATS=${STATS-1} ITERS=${ITERS:-10} bash "$(dirname "$0")/gpu-huff.sh" 2>&1 |
  grep -v 'place/\|scan/' | sed "s/CS: //g; s/'Stack Size = 0', //; s/'Local Memory Size = 68719476736', //"
exit 0
