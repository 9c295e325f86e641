package shaders

// The exponent-window kernels (docs/FORMAT.md §13), one source each for every (format, dtype) pair:
// specialization constants carry the exponent, mantissa and code widths and the value size.
//
//	xw_encode.comp  pass 1: window choice, plane words and bytes, escapes to scratch, per-chunk info and side size
//	                (pass 2 is sz4_scan: prefix sum of side sizes)
//	xw_place.comp   pass 3: side pieces to their offsets, chunk table offsets and CRCs
//	xw_decode.comp  decode, validation and CRC check in one pass
//	xw_decode_pieces.comp  the same over the pieces of an auto body (docs/FORMAT.md §11), checking auto's choice

//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O xw_encode.comp -o xw_encode.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O xw_place.comp -o xw_place.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O xw_decode.comp -o xw_decode.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O xw_decode_pieces.comp -o xw_decode_pieces.spv

func init() { Names = append(Names, "xw_encode", "xw_place", "xw_decode", "xw_decode_pieces") }
