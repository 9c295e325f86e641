#!/bin/sh
# Regenerates the committed SPIR-V test shaders (tests embed the .spv files
# and never need glslc at run time).
set -e
cd "$(dirname "$0")"
for f in *.comp; do
	glslc -fshader-stage=compute --target-env=vulkan1.1 -O "$f" -o "${f%.comp}.spv"
	spirv-val --target-env vulkan1.1 "${f%.comp}.spv"
done
