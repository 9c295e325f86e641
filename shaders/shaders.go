// Package shaders holds vkzip's GLSL compute kernels and their SPIR-V, compiled by glslc and committed so that a
// Go build needs no shader compiler. layout.glsl is generated from codec/layout: the kernels never hold a
// hand-copied format number.
//
// Kernel contracts are declared once, in Go (contracts.go, push.go): for every kernel its storage buffers by name
// in binding order (with their GLSL blocks and readonly/writeonly/coherent qualifiers), its push-constant block as
// a struct (one exported type per kernel, each field tagged with its GLSL member name) and its specialization
// constants by name, with their IDs and defaults. `go generate ./shaders` runs shaders/gen, which writes every
// kernel's declarations into contracts.glsl (ContractsGLSL); a kernel source defines KERNEL_<NAME> and includes
// that file, declaring none of its own, then glslc compiles the kernels. The host gets everything by name: Lookup(kernel), Kernel.Binding,
// Kernel.SpecID, Kernel.PushSize, and PushBytes of the kernel's push struct. Tests keep the three in step: the
// generated files must equal a fresh generation, the committed SPIR-V a fresh compile, and every module's binding
// numbers, qualifiers, SpecIds and defaults, and push-member offsets and types (and, compiled with names, the
// constants' and members' names) must agree with the Go declaration.
//
// The shipped kernels carry no profiling switches that turn parts of a kernel off: their results are exact for
// every value of their specialization constants (DEBUG_BOUNDS, for tests, only also decodes corrupt chunks).
//
//	sz4_encode.comp  SplitZip-4 encode pass 1: dense pieces, escapes to scratch, per-chunk partial CRC
//	sz4_place.comp   pass 2: side offsets from pass 1's block sums, side pieces placed, chunk CRCs finished
//	                 (side_place.glsl, shared with tbe3_place)
//	sz4_scan.comp    prefix sum of side sizes: pass 2 of the other formats' encoders (zf12, xw, huff)
//	sz4_decode.comp  SplitZip-4 decode, validation and CRC check in one pass (sz4_decode.glsl)
//	zf12_encode.comp zf12 encode pass 1: block ranges, dense pieces, headers, raw side nibbles to scratch
//	zf12_place.comp  zf12 pass 3 (pass 2 is sz4_scan): side pieces to their offsets, chunk CRCs finished
//	zf12_decode.comp zf12 decode, validation and CRC check in one pass (zf12_decode.glsl)
//	sz4_decode_pieces.comp, zf12_decode_pieces.comp  the decoders over the pieces of an auto body, each checking
//	                 that its chunks' choice is the smallest candidate
//	auto_pick.comp   auto encode: each chunk's smallest candidate body, from the candidates' whole bodies
//	auto_gather.comp auto encode: chunk pieces copied into the auto body, table written
//	copy.comp        16-byte copy, the bandwidth roofline for benchmarks
//	tbe3_encode.comp TBE-3 encode pass 1: window, plane and SM pieces, side pieces to scratch, per-chunk partial CRC
//	tbe3_place.comp  pass 2 (side_place.glsl): side offsets from pass 1's block sums, side pieces placed, chunk CRCs
//	                 finished
//	tbe3_decode.comp TBE-3 decode, validation and CRC check in one pass
//	stored.comp      stored bodies on the device: values copied in or out, padding and CRC word written or checked
//	exphist.comp     exponent histogram of BF16 values: the counts a per-encode codebook is calibrated from
package shaders

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"sort"
)

//go:generate go run ./gen
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O sz4_encode.comp -o sz4_encode.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O sz4_scan.comp -o sz4_scan.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O sz4_place.comp -o sz4_place.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O sz4_decode.comp -o sz4_decode.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O zf12_encode.comp -o zf12_encode.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O zf12_place.comp -o zf12_place.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O zf12_decode.comp -o zf12_decode.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O sz4_decode_pieces.comp -o sz4_decode_pieces.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O zf12_decode_pieces.comp -o zf12_decode_pieces.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O auto_pick.comp -o auto_pick.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O auto_gather.comp -o auto_gather.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O copy.comp -o copy.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O tbe3_encode.comp -o tbe3_encode.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O tbe3_place.comp -o tbe3_place.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O tbe3_decode.comp -o tbe3_decode.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O tbe3_decode_pieces.comp -o tbe3_decode_pieces.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O stored.comp -o stored.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O exphist.comp -o exphist.spv

//go:embed *.spv
var spv embed.FS

// Names lists the kernels.
var Names = []string{"sz4_encode", "sz4_scan", "sz4_place", "sz4_decode", "zf12_encode", "zf12_place", "zf12_decode",
	"sz4_decode_pieces", "zf12_decode_pieces", "auto_pick", "auto_gather", "copy", "tbe3_encode", "tbe3_place", "tbe3_decode",
	"tbe3_decode_pieces", "stored", "exphist"}

// SPIRV returns the SPIR-V of a kernel.
func SPIRV(name string) ([]byte, error) { return spv.ReadFile(name + ".spv") }

// Hash is a SHA-256 over all kernels' SPIR-V, for reports: it names exactly the code that ran.
func Hash() string {
	names := append([]string{}, Names...)
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, _ := SPIRV(n)
		h.Write([]byte(n))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}
