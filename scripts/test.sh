#!/usr/bin/env bash
# The whole test suite, as `make test` and CI run it. Vulkan tests run on Mesa lavapipe at both vector widths
# (subgroups of 8 and 4), and must find a device: VKZIP_REQUIRE_VULKAN=1 turns "no device" into a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
export VKZIP_REQUIRE_VULKAN=1
step() { echo; echo "=== $*"; }

step "go vet"
go vet ./...
step "gofmt"
test -z "$(gofmt -l $(git ls-files '*.go'))" || { gofmt -l $(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
step "go build with CGO_ENABLED=0 (CPU-only vkzip)"
CGO_ENABLED=0 go build -o /dev/null ./...
step "go test (lavapipe, LP_NATIVE_VECTOR_WIDTH=256)"
LP_NATIVE_VECTOR_WIDTH=256 go test -count=1 ./...
step "go test of the Vulkan packages (lavapipe, LP_NATIVE_VECTOR_WIDTH=128)"
LP_NATIVE_VECTOR_WIDTH=128 go test -count=1 ./vk/... ./codec/vkcodec/...
step "committed SPIR-V and generated files are fresh"
go generate ./shaders
git diff --exit-code -- shaders/
echo; echo "all tests passed"
