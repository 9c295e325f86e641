#!/usr/bin/env bash
# Session-25 device run (one call): the huff Vulkan tests (TESTRUN, a -test.run pattern), then the previous tree
# (.devbin/vkzip-old) and this one alternated on the huff bench (512 MiB kvlike, ROUNDS rounds, compiler statistics
# in the first; AB: "binary|ENV=V,..." entries), then environment and flag variants of this tree (VARIANTS,
# gpu-huff.sh syntax). Files in $OUT. The same steps as scripts/gpu-s26.sh without FINAL, which runs them.
exec env FINAL=0 bash "$(dirname "$0")/gpu-s26.sh" "$@"
