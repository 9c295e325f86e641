package shaders

// (This file sorts after shaders.go so that `go generate` writes layout.glsl and contracts.glsl before it compiles
// these kernels.)

// The BF16 auto encode (docs/FORMAT.md §11): every chunk sized under every candidate in one pass over the values,
// then coded once, in its smallest candidate, directly at its piece offset.
//
//	auto_size.comp   pass 1: per chunk, the exponent histogram (splitzip4's escapes, tbe3's window) and zf12's
//	                 block ranges; the smallest candidate, its size, format and info word (and zf12 headers)
//	auto_sz4.comp, auto_zf12.comp, auto_tbe3.comp
//	                 pass 2, one kernel per candidate, side by side: each codes the chunks that chose it, in
//	                 place, at the offset it sums from pass 1's sizes
//	auto_common.glsl, auto_crc.glsl: geometry, size arithmetic and CRC helpers of these kernels

//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O auto_size.comp -o auto_size.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O auto_sz4.comp -o auto_sz4.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O auto_zf12.comp -o auto_zf12.spv
//go:generate glslc -fshader-stage=compute --target-env=vulkan1.1 -O auto_tbe3.comp -o auto_tbe3.spv

// AutoSizePush is auto_size's push-constant block.
type AutoSizePush struct {
	CB      [4]uint32 `glsl:"cb"`      // the tensor's codebook, 16 exponents
	Chunks  uint32    `glsl:"chunks"`  // chunks in the tensor
	LastLen uint32    `glsl:"lastLen"` // values in its last chunk
	SrcBase uint32    `glsl:"srcBase"` // uvec4 offset of the first value in binding 0
	ExpBase uint32    `glsl:"expBase"` // the exponents expBase .. expBase+15 are counted without atomics (≤ 240)
	CBFirst uint32    `glsl:"cbFirst"` // bit i: codebook entry i is its exponent's first entry (the ones counted)
}

// AutoPiecesPush is the push-constant block of the piece encoders auto_sz4, auto_zf12 and auto_tbe3.
type AutoPiecesPush struct {
	CB        [4]uint32 `glsl:"cb"` // the codebook (splitzip4)
	ChunkCRC            // the chunk CRC constants of the splitzip4 and zf12 dense pieces
	Checksums uint32    `glsl:"checksums"`
	SrcBase   uint32    `glsl:"srcBase"` // uvec4 offset of the first value in binding 0
	OutBase   uint32    `glsl:"outBase"` // word offset of the auto body in binding 1
}

var (
	autoWork = rw("work").with("[0,C) piece sizes, [2C] total, [2C+1,3C+1) format id, then sums of 64 and of 4,096 chunks")
	autoMeta = "[0,C) info word in the chunk's format, [C,...) zf12 header pieces"
	autoSpec = []Spec{specWG, specShift, specRepl, specCRCBits, specU} // auto_sz4, auto_zf12
)

func init() {
	Names = append(Names, "auto_size", "auto_sz4", "auto_zf12", "auto_tbe3")
	Kernels = append(Kernels,
		&Kernel{Name: "auto_size", Push: pushOf[AutoSizePush](),
			Bindings: []Binding{srcSeg, autoWork, wo("meta").with(autoMeta)},
			Spec:     []Spec{specWG, specShift, specU}},
		&Kernel{Name: "auto_sz4", Push: pushOf[AutoPiecesPush](), Bindings: autoPieceBindings(), Spec: autoSpec},
		&Kernel{Name: "auto_zf12", Push: pushOf[AutoPiecesPush](), Bindings: autoPieceBindings(), Spec: autoSpec},
		&Kernel{Name: "auto_tbe3", Push: pushOf[AutoPiecesPush](), Bindings: autoPieceBindings(),
			Spec: []Spec{specWG, specShift, specRepl, specCRCBits}},
	)
}

// autoPieceBindings are the piece encoders' bindings.
func autoPieceBindings() []Binding {
	return []Binding{srcSeg, co("out", view("Out", "outw", "uint"), view("OutV2", "outv2", "uvec2")).with("the auto body"),
		autoWork, ro("meta").with(autoMeta),
		ro("consts")}
}
