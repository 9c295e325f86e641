#!/usr/bin/env bash
# Builds libvkzip.so (go build -buildmode=c-shared ./capi) and installs the vkzip Python package, with the library
# inside it, for a Python interpreter that has numpy: $PYTHON when set, else the first python3 on PATH, else
# Debian's /usr/bin/python3 (python3-numpy from apt: scripts/deps.sh). No network: the package is copied into that
# interpreter's site-packages (its first writable one; the user site when none is). Says which interpreter got it.
# Usage: scripts/install-python.sh          build and install
#        scripts/install-python.sh --pick   only print the interpreter it would use
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH

cands=()
[ -n "${PYTHON:-}" ] && cands+=("$PYTHON")
onpath=$(command -v python3 || true)
[ -n "$onpath" ] && cands+=("$onpath")
cands+=(/usr/bin/python3)
py=
skipped=()
for c in "${cands[@]}"; do
  if [ -x "$c" ] && "$c" -c 'import numpy' 2>/dev/null; then py=$c; break; fi
  [ -e "$c" ] && skipped+=("$c")
done
if [ -z "$py" ]; then
  echo "install-python: no python3 with numpy among: ${cands[*]} (install python3-numpy: scripts/deps.sh)" >&2
  exit 1
fi
if [ "${1:-}" = --pick ]; then echo "$py"; exit 0; fi

mkdir -p bin
go build -buildmode=c-shared -o bin/libvkzip.so ./capi
rm -f bin/libvkzip.h # cgo's header declares the internal vkzipgo_* exports: capi/include/vkzip.h is the header

site=$("$py" - <<'PY'
import os, site, sys
dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
for d in dirs:
    try:
        os.makedirs(d, exist_ok=True)
        if os.access(d, os.W_OK):
            print(d)
            sys.exit(0)
    except OSError:
        pass
d = site.getusersitepackages()
os.makedirs(d, exist_ok=True)
print(d)
PY
)
rm -rf "$site/vkzip"
mkdir -p "$site/vkzip"
cp python/vkzip/*.py "$site/vkzip/"
cp bin/libvkzip.so "$site/vkzip/libvkzip.so"
# Check the installed copy from outside the source tree, so the tree's python/ is not what gets imported.
got=$(cd / && env -u VKZIP_LIB "$py" -c 'import vkzip; print(vkzip.__file__, "| library", vkzip.library_path(), "|", vkzip.version())')
echo "install-python: installed the vkzip package for $py: $got"
if [ ${#skipped[@]} -gt 0 ]; then
  echo "install-python: skipped ${skipped[*]}: no numpy there"
fi
