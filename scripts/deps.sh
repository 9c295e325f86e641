#!/usr/bin/env bash
# Installs what vkzip's build and tests need on a Debian/Ubuntu machine, only what is missing:
#   Go (the version go.mod asks for, from the Go module proxy's toolchain zip when no recent Go is present),
#   gcc (cgo, and the C API's test program), python3 with numpy and pytest (the Python package's tests), and for
#   the Vulkan backend and its tests: the Vulkan loader, Mesa lavapipe (a CPU Vulkan driver), glslc, spirv-tools
#   and the Khronos validation layers.
# Usage: scripts/deps.sh [--no-vulkan]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
want_go=$(awk '/^go /{print $2; exit}' "$root/go.mod")

sudo_cmd() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
  echo "deps: need root to run: $*" >&2; return 1; fi; }

pkgs="gcc libc6-dev ca-certificates curl unzip python3 python3-numpy python3-pytest"
if [ "${1:-}" != "--no-vulkan" ]; then
  pkgs="$pkgs libvulkan1 mesa-vulkan-drivers glslc spirv-tools vulkan-validationlayers"
fi
missing=
for p in $pkgs; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"; done
if [ -n "$missing" ]; then
  echo "deps: installing$missing" >&2
  sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
  sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# Go: any go ≥ 1.21 fetches the exact toolchain go.mod names by itself; otherwise install that toolchain from the
# module proxy (the same zip `go` itself would download) into /usr/local/go.
have_go() { command -v go >/dev/null && [ "$(go env GOVERSION 2>/dev/null | sed 's/^go//' | awk -F. '{print ($1*1000+$2 >= 1021)}')" = 1 ]; }
if ! have_go && [ -x /usr/local/go/bin/go ]; then export PATH=/usr/local/go/bin:$PATH; fi
if ! have_go; then
  arch=$(dpkg --print-architecture)
  url="https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go${want_go}.linux-${arch}.zip"
  echo "deps: installing Go $want_go from $url" >&2
  tmp=$(mktemp -d)
  curl -fsSL "$url" -o "$tmp/go.zip"
  (cd "$tmp" && unzip -q go.zip)
  sudo_cmd rm -rf /usr/local/go
  sudo_cmd mv "$tmp/golang.org/toolchain@v0.0.1-go${want_go}.linux-${arch}" /usr/local/go
  sudo_cmd chmod -R a+rX /usr/local/go
  chmod +x /usr/local/go/bin/* /usr/local/go/pkg/tool/*/* 2>/dev/null || sudo_cmd chmod +x /usr/local/go/bin/* /usr/local/go/pkg/tool/*/*
  rm -rf "$tmp"
  echo "deps: Go installed in /usr/local/go (add /usr/local/go/bin to PATH)" >&2
fi
