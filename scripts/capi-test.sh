#!/usr/bin/env bash
# The C API and Python package tests (scripts/test.sh runs this step): builds libvkzip.so, the CLI and the C test
# program, checks that the library exports every function of capi/include/vkzip.h, runs the C test on the CPU and
# Vulkan backends, then the Python tests (pytest, or unittest where pytest is missing) on both, comparing payloads
# with the CLI's. Usage: scripts/capi-test.sh   (env: BACKENDS="cpu vulkan")
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
BACKENDS=${BACKENDS:-cpu vulkan}
mkdir -p bin
go build -buildmode=c-shared -o bin/libvkzip.so ./capi
rm -f bin/libvkzip.h
go build -o bin/vkzip ./cmd/vkzip
cc -std=c11 -Wall -Wextra -Werror -O1 -Icapi/include capi/test/vkzip_test.c -Lbin -lvkzip -Wl,-rpath,"$PWD/bin" \
  -lpthread -ldl -o bin/vkzip_test

missing=$(comm -23 <(grep -oE '\bvkzip_[a-z_]+\(' capi/include/vkzip.h | tr -d '(' | sort -u) \
  <(nm -D --defined-only bin/libvkzip.so | awk '{print $3}' | sort -u))
[ -z "$missing" ] || { echo "libvkzip.so lacks: $missing"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin/vkzip encode -q --backend cpu -o "$work/cli.vkz" cmd/vkzip/testdata/kv-sample.safetensors
for b in $BACKENDS; do
  bin/vkzip_test "$b" cmd/vkzip/testdata/kv-sample.safetensors "$work/cli.vkz" "$work"
done

py=$(scripts/install-python.sh --pick)
echo "python tests with $py"
export VKZIP_LIB=$PWD/bin/libvkzip.so VKZIP_CLI=$PWD/bin/vkzip VKZIP_TEST_BACKENDS=$BACKENDS
if "$py" -c 'import pytest' 2>/dev/null; then
  "$py" -m pytest -q -p no:cacheprovider python/tests
else
  "$py" -m unittest discover -s python/tests
fi
