package shaders

// (This file sorts after shaders.go so that `go generate` writes layout.glsl before it compiles these kernels.)

// The huff kernels (docs/FORMAT.md §14): per-chunk canonical Huffman codes of BF16 exponents in 32 lanes.
//
//	huff_encode.comp  pass 1: low bytes, histogram, the chunk's code, lane sizes, the piece to a scratch slot
//	                  (pass 2 is sz4_scan: prefix sum of piece sizes)
//	huff_place.comp   pass 3: pieces to their offsets, chunk table offsets and CRCs
//	huff_decode.glsl  decode and validation in one pass, one lane per invocation: huff_decode.comp, and
//	                  huff_decode_i64.comp for devices with 64- and 16-bit integers in shaders
//	huff_check.comp   the chunk checksums of a decode, recorded beside the decoder

//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O huff_encode.comp -o huff_encode.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O huff_place.comp -o huff_place.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O huff_decode.comp -o huff_decode.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O huff_decode_i64.comp -o huff_decode_i64.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O huff_check.comp -o huff_check.spv

func init() {
	Names = append(Names, "huff_encode", "huff_place", "huff_decode", "huff_decode_i64", "huff_check")
}
