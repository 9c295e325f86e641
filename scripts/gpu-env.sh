# Sourced by the scripts/gpu-*.sh device scripts (run from the repo root with carry [".gl", ".devbin"]): $OUT exists
# (default /tmp/out), the Vulkan loader carried in .gl is unpacked (.devbin/gpu.sh does that), and the NVIDIA ICD is
# named when the image has it.
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
bash .devbin/gpu.sh true >/dev/null 2>&1
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
