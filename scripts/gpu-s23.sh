#!/usr/bin/env bash
# Session-23 device run: the previous tree (.devbin/vkzip-old) and this one alternated (ROUNDS, DATAS) on SplitZip-4 at
# 512 MiB, then VARIANTS of this one (gpu-huff.sh syntax, e.g. "VKZIP_CRC_BITS=5|" or "X=p2|--profile,2").
set -uo pipefail
. "$(dirname "$0")/gpu-env.sh"
for round in $(seq ${ROUNDS:-2}); do
  for b in ${BINS:-vkzip-old vkzip}; do
    for d in ${DATAS:-kvlike escapes=0.01}; do
      BIN=.devbin/$b FORMAT=${FORMAT:-splitzip4} VARIANTS="X=$b|--data,$d" STATS= ITERS=${ITERS:-10} bash "$(dirname "$0")/gpu-huff.sh"
    done
  done
done
[ -n "${VARIANTS:-}" ] && FORMAT=${FORMAT:-splitzip4} STATS=${STATS-1} ITERS=${ITERS:-10} bash "$(dirname "$0")/gpu-huff.sh" 2>&1 |
  grep -v 'place/\|scan/' | sed "s/CS: //g; s/'Stack Size = 0', //; s/'Local Memory Size = 68719476736', //"
exit 0
