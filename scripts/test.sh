#!/usr/bin/env bash
# The whole test suite, as `make test` and CI run it. Vulkan tests run on Mesa lavapipe at both vector widths
# (subgroups of 8 and 4) and must find a device: VKZIP_REQUIRE_VULKAN=1 turns "no device" into a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
export VKZIP_REQUIRE_VULKAN=1
t0=$(date +%s)
step() { echo; echo "=== $* ($(( $(date +%s) - t0 )) s)"; }

step "go vet"
go vet ./...
step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
[ -z "$unformatted" ] || { echo "gofmt needed: $unformatted"; exit 1; }
step "CGO_ENABLED=0 build: a CPU-only vkzip"
CGO_ENABLED=0 go build -o /tmp/vkzip-nocgo ./cmd/vkzip
/tmp/vkzip-nocgo devices
# conformance/vkdevices runs the whole conformance corpus on lavapipe at both widths, as the installed binary does in
# the conformance step below: the plain run leaves it to that step, and the race step runs its -short form.
step "go test ./... but conformance/vkdevices (lavapipe at LP_NATIVE_VECTOR_WIDTH=256: subgroups of 8)"
LP_NATIVE_VECTOR_WIDTH=256 go test -count=1 $(go list ./... | grep -v '/conformance/vkdevices$')
step "Vulkan packages again at LP_NATIVE_VECTOR_WIDTH=128 (subgroups of 4), -short, under the Khronos validation layers (any message fails)"
VKZIP_VALIDATE=1 LP_NATIVE_VECTOR_WIDTH=128 go test -count=1 -short ./vk/... ./codec/vkcodec/...
step "go test -race -short ./..."
go test -count=1 -race -short ./...
step "fuzz smoke (20,000 inputs per target)"
# A count, not a duration: with -fuzztime 5s, Go 1.26's fuzz coordinator can report "context deadline exceeded"
# at the deadline on a loaded machine with no failing input (golang/go#75804, fixed in Go 1.27).
scripts/fuzz.sh 20000x
step "corruption check: 1,000 damaged payloads through the built CLI"
scripts/corrupt-check.sh
step "C API (libvkzip.so, capi/test) and Python package (python/tests): cpu and lavapipe"
scripts/capi-test.sh
step "conformance suite from an installed binary (CPU + lavapipe at both widths), expectations untouched"
go build -o /tmp/vkzip-conf ./cmd/vkzip
(cd /tmp && /tmp/vkzip-conf conformance --quiet --out /tmp/vkzip-conformance.json)
git diff --exit-code -- conformance/
step "committed SPIR-V and generated files are fresh"
go generate ./shaders
git diff --exit-code -- shaders/
echo; echo "all tests passed in $(( $(date +%s) - t0 )) s"
