package vkcodec

import (
	"fmt"
	"reflect"
	"unsafe"
)

// The contract of every kernel, declared once: its bindings by name (binding i is Bindings[i]), its push-constant
// block as a Go struct whose fields match the GLSL block member by member, and its specialization constants by
// name with the IDs the GLSL gives them. The pipeline cache (pipeline.go) builds pipelines from these declarations,
// and the formats fill the push structs by field name: no positional push writer, no bare spec ID.
//
// The shape is that of package shaders' declarations (Binding, Spec, Kernel, Lookup, PushBytes), so that these
// declarations can move there unchanged.

// binding is one storage buffer of a kernel, at set 0 and binding number its index.
type binding struct {
	Name     string
	ReadOnly bool
}

// specConst is a specialization constant of a kernel.
type specConst struct {
	Name string
	ID   uint32
}

// kernelDecl is a kernel's contract.
type kernelDecl struct {
	Name     string
	Bindings []binding
	Push     reflect.Type // a struct of uint32 or [N]uint32 fields; nil when the kernel has no push constants
	Spec     []specConst
}

// PushSize is the push-constant block's size in bytes.
func (k *kernelDecl) PushSize() uint32 {
	if k.Push == nil {
		return 0
	}
	return uint32(k.Push.Size())
}

// SpecID is the ID of the named specialization constant; an unknown name is a programming error and panics.
func (k *kernelDecl) SpecID(name string) uint32 {
	for _, s := range k.Spec {
		if s.Name == name {
			return s.ID
		}
	}
	panic(fmt.Sprintf("vkcodec: kernel %s has no specialization constant %s", k.Name, name))
}

// hasSpec reports whether the kernel declares the named specialization constant.
func (k *kernelDecl) hasSpec(name string) bool {
	for _, s := range k.Spec {
		if s.Name == name {
			return true
		}
	}
	return false
}

// pushBytes is the bytes of a push-constant struct, in place (no copy, no allocation): the struct's fields are
// uint32s, laid out as the GLSL std430 push block.
func pushBytes[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// Specialization constants every chunk kernel shares.
var (
	specWG      = specConst{"WG", 0}
	specShift   = specConst{"SHIFT", 1}
	specRepl    = specConst{"REPL", 2}
	specUnroll  = specConst{"U", 5}
	specCRCBits = specConst{"CRC_BITS", crcBitsSpecID}
)

func ro(names ...string) []binding {
	out := make([]binding, len(names))
	for i, n := range names {
		out[i] = binding{Name: n, ReadOnly: true}
	}
	return out
}

func rw(name string) binding { return binding{Name: name} }

func bindings(bs ...[]binding) []binding {
	var out []binding
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

func one(b binding) []binding { return []binding{b} }

func pushOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// Push-constant blocks, one per kernel (the *_pieces kernels of auto's decode share theirs by family).
type (
	sz4EncodePush struct {
		Codebook                                                    [4]uint32
		Chunks, SegFirst, SegChunks, LastLen, InvC, InvL            uint32
		ShLowFull, ShLowLast, Checksums, SrcBase, CodeBase, LowBase uint32
		TableBase                                                   uint32
	}
	scanPush     struct{ NB uint32 }
	sz4PlacePush struct {
		Chunks, SegFirst, SegChunks, LastLen, NB, KdFull, KdLast, Checksums, TableBase, SideBase uint32
	}
	sz4DecodePush struct {
		Codebook                                                    [4]uint32
		Chunks, SegFirst, SegChunks, LastLen, InvC, InvL, ShLowFull uint32
		ShLowLast, KdFull, KdLast, Checksums, SideLen, StatusBase   uint32
		CodeBase, LowBase, TableBase, SideBase, DstBase             uint32
	}
	// piecesPush is sz4_decode_pieces' and zf12_decode_pieces' block (zf12 ignores the codebook).
	piecesPush struct {
		Codebook                                                    [4]uint32
		Chunks, SegFirst, SegChunks, LastLen, InvC, InvL, ShLowFull uint32
		ShLowLast, KdFull, KdLast, Checksums, PiecesLen, StatusBase uint32
		AutoBase, PieceBase, Cands, Validate, DstBase               uint32
	}
	zf12EncodePush struct {
		Chunks, SegFirst, SegChunks, LastLen, InvC, InvL, ShLowFull, ShLowLast uint32
		Checksums, SrcBase, CodeBase, LowBase, HeadBase, TableBase             uint32
	}
	zf12PlacePush struct {
		Chunks, SegFirst, SegChunks, LastLen, NB, KdFull, KdLast, Checksums, TableBase, SideBase, HeadBase uint32
	}
	zf12DecodePush struct {
		Chunks, SegFirst, SegChunks, LastLen, InvC, InvL, ShLowFull, ShLowLast, KdFull, KdLast uint32
		Checksums, SideLen, StatusBase, CodeBase, LowBase, HeadBase, TableBase, SideBase       uint32
		DstBase                                                                                uint32
	}
	tbe3EncodePush struct {
		Chunks, SegFirst, SegChunks, LastLen, Checksums, SrcBase, PlaneBase, SMBase, TableBase uint32
	}
	tbe3PlacePush struct {
		Chunks, SegFirst, SegChunks, LastLen, NB, Checksums, SrcBase, PlaneBase, TableBase, SideBase uint32
	}
	tbe3DecodePush struct {
		Chunks, SegFirst, SegChunks, LastLen, Checksums, SideLen, StatusBase, PlaneBase, SMBase uint32
		TableBase, SideBase, DstBase                                                            uint32
	}
	tbe3PiecesPush struct {
		Codebook                                                   [4]uint32
		Chunks, SegFirst, SegChunks, LastLen, Checksums, PiecesLen uint32
		StatusBase, AutoBase, PieceBase, Cands, Validate, DstBase  uint32
	}
	xwEncodePush struct {
		Chunks, LastLen, SrcWords, LowWords, SrcBase, PlaneBase, LowBase, TableBase uint32
	}
	xwPlacePush struct {
		Chunks, LastLen, NB, Checksums, LowWords, PlaneWords, TableBase, SideBase, PlaneBase, LowBase uint32
	}
	xwDecodePush struct {
		Chunks, LastLen, Checksums, SideLen, PlaneWords, LowWords, DstWords, PlaneBase, LowBase uint32
		TableBase, SideBase, DstBase                                                            uint32
	}
	xwPiecesPush struct {
		Chunks, LastLen, Checksums, PiecesLen, DstWords, AutoBase, PieceBase, Cands, Validate, Self, DstBase uint32
	}
	pickPush struct {
		// D: table word offset, side-total word in the candidate's work, dense bytes of a full and of the last chunk
		D                       [4]uint32
		Chunks, ID, First, Base uint32
	}
	gatherPush struct {
		Streams, Full, LastP                 [4]uint32
		Chunks, Checksums, OutBase, Base, ID uint32
	}
	copyPush       struct{ Count uint32 }
	storedPush     struct{ Words, Bytes, Checksums, SrcBase, DstBase uint32 }
	huffEncodePush struct {
		Chunks, LastLen, SrcWords, LowWords, SrcBase, LowBase, TableBase uint32
	}
	huffPlacePush struct {
		Chunks, LastLen, NB, Checksums, LowWords, TableBase, PieceBase, LowBase uint32
	}
	huffDecodePush struct {
		Chunks, LastLen, Checksums, PieceLen, LowWords, DstWords, LowBase, TableBase, PieceBase, DstBase uint32
	}
	huffCheckPush struct {
		Chunks, LastLen, PieceLen, LowWords, LowBase, TableBase, PieceBase uint32
	}
)

// The chunk kernels' specialization constants: workgroup, chunk size, CRC table replication, unrolling, CRC
// table bits.
var chunkSpec = []specConst{specWG, specShift, specRepl, specUnroll, specCRCBits}

var decodeSpec = append(append([]specConst{}, chunkSpec...), specConst{"ESC_CAP", 3}, specConst{"DEBUG_BOUNDS", 4})

var xwSpec = []specConst{specWG, specShift, {"E", 2}, {"M", 3}, {"W", 4}, {"SIZE", 5}}

var tbe3Spec = []specConst{specWG, specShift, specRepl, specCRCBits}

var huffSpec = []specConst{specWG, specShift, specCRCBits, {"BATCH", 2}}

// The kernels, by name.
var (
	kSZ4Encode = &kernelDecl{Name: "sz4_encode", Push: pushOf[sz4EncodePush](),
		Bindings: bindings(ro("src"), []binding{rw("codes"), rw("lows"), rw("table"), rw("scratch")}, ro("consts"),
			one(rw("work"))),
		Spec: append(append([]specConst{}, chunkSpec...), specConst{"PROF", 7})}
	kSZ4Scan  = &kernelDecl{Name: "sz4_scan", Push: pushOf[scanPush](), Bindings: one(rw("work")), Spec: []specConst{specWG}}
	kSZ4Place = &kernelDecl{Name: "sz4_place", Push: pushOf[sz4PlacePush](),
		Bindings: bindings(one(rw("table")), ro("scratch"), one(rw("side")), ro("consts"), one(rw("work"))),
		Spec:     chunkSpec}
	kSZ4Decode = &kernelDecl{Name: "sz4_decode", Push: pushOf[sz4DecodePush](),
		Bindings: bindings(ro("codes", "lows", "table", "side"), one(rw("dst")), ro("consts"), one(rw("status"))),
		Spec:     append(append([]specConst{}, decodeSpec...), specConst{"PROF", 7})}
	kSZ4Pieces = &kernelDecl{Name: "sz4_decode_pieces", Push: pushOf[piecesPush](),
		Bindings: bindings(ro("codes", "lows", "table", "side"), one(rw("dst")), ro("consts"), one(rw("status"))),
		Spec:     decodeSpec}
	kZF12Encode = &kernelDecl{Name: "zf12_encode", Push: pushOf[zf12EncodePush](),
		Bindings: bindings(ro("src"), []binding{rw("codes"), rw("lows"), rw("heads"), rw("table"), rw("scratch")},
			ro("consts"), one(rw("work"))),
		Spec: chunkSpec}
	kZF12Place = &kernelDecl{Name: "zf12_place", Push: pushOf[zf12PlacePush](),
		Bindings: bindings(one(rw("table")), ro("scratch"), one(rw("side")), ro("consts"), one(rw("work")),
			one(rw("heads"))),
		Spec: chunkSpec}
	kZF12Decode = &kernelDecl{Name: "zf12_decode", Push: pushOf[zf12DecodePush](),
		Bindings: bindings(ro("codes", "lows", "heads", "table", "side"), one(rw("dst")), ro("consts"),
			one(rw("status"))),
		Spec: decodeSpec}
	kZF12Pieces = &kernelDecl{Name: "zf12_decode_pieces", Push: pushOf[piecesPush](),
		Bindings: bindings(ro("codes", "lows", "heads", "table", "side"), one(rw("dst")), ro("consts"),
			one(rw("status"))),
		Spec: decodeSpec}
	kTBE3Encode = &kernelDecl{Name: "tbe3_encode", Push: pushOf[tbe3EncodePush](),
		Bindings: bindings(ro("src"), []binding{rw("planes"), rw("sm"), rw("table")}, ro("consts"), one(rw("work"))),
		Spec:     tbe3Spec}
	kTBE3Place = &kernelDecl{Name: "tbe3_place", Push: pushOf[tbe3PlacePush](),
		Bindings: bindings(ro("src", "planes"), []binding{rw("table"), rw("side")}, ro("consts", "work")),
		Spec:     tbe3Spec}
	kTBE3Decode = &kernelDecl{Name: "tbe3_decode", Push: pushOf[tbe3DecodePush](),
		Bindings: bindings(ro("planes", "sm", "table", "side"), one(rw("dst")), ro("consts"), one(rw("status"))),
		Spec:     tbe3Spec}
	kTBE3Pieces = &kernelDecl{Name: "tbe3_decode_pieces", Push: pushOf[tbe3PiecesPush](),
		Bindings: bindings(ro("planes", "sm", "table", "side"), one(rw("dst")), ro("consts"), one(rw("status"))),
		Spec:     tbe3Spec}
	kXWEncode = &kernelDecl{Name: "xw_encode", Push: pushOf[xwEncodePush](),
		Bindings: bindings(ro("src"), []binding{rw("planes"), rw("lows"), rw("table"), rw("scratch"), rw("work")}),
		Spec:     xwSpec}
	kXWPlace = &kernelDecl{Name: "xw_place", Push: pushOf[xwPlacePush](),
		Bindings: bindings(one(rw("table")), ro("scratch"), one(rw("side")), ro("planes", "lows", "work")),
		Spec:     xwSpec}
	kXWDecode = &kernelDecl{Name: "xw_decode", Push: pushOf[xwDecodePush](),
		Bindings: bindings(ro("planes", "lows", "table", "side"), []binding{rw("dst"), rw("status")}), Spec: xwSpec}
	kXWPieces = &kernelDecl{Name: "xw_decode_pieces", Push: pushOf[xwPiecesPush](),
		Bindings: bindings(ro("planes", "lows", "table", "side"), []binding{rw("dst"), rw("status")}), Spec: xwSpec}
	kAutoPick = &kernelDecl{Name: "auto_pick", Push: pushOf[pickPush](),
		Bindings: bindings(one(rw("work")), ro("body", "cwork")), Spec: []specConst{specWG}}
	kAutoGather = &kernelDecl{Name: "auto_gather", Push: pushOf[gatherPush](),
		Bindings: bindings(one(rw("out")), ro("body", "work", "consts")), Spec: []specConst{specWG, specCRCBits}}
	kCopy = &kernelDecl{Name: "copy", Push: pushOf[copyPush](), Bindings: bindings(ro("src"), one(rw("dst"))),
		Spec: []specConst{specWG, {"R", 1}, {"W", 2}, {"CONTIGUOUS", 3}, {"U", 4}}}
	kStored = &kernelDecl{Name: "stored", Push: pushOf[storedPush](),
		Bindings: bindings(ro("src"), []binding{rw("dst"), rw("status")}), Spec: []specConst{specWG, {"DECODE", 1}}}
	kHuffEncode = &kernelDecl{Name: "huff_encode", Push: pushOf[huffEncodePush](),
		Bindings: bindings(ro("src"), []binding{rw("lows"), rw("table"), rw("scratch"), rw("work")}),
		Spec:     append(append([]specConst{}, huffSpec...), specConst{"PROF", 3}, specConst{"CACHE_SHIFT", 4})}
	kHuffPlace = &kernelDecl{Name: "huff_place", Push: pushOf[huffPlacePush](),
		Bindings: bindings(one(rw("table")), ro("scratch"), one(rw("pieces")), ro("lows", "work", "consts")),
		Spec:     huffSpec}
	kHuffCheck = &kernelDecl{Name: "huff_check", Push: pushOf[huffCheckPush](),
		Bindings: bindings(ro("lows", "table", "pieces"), one(rw("status")), ro("consts")), Spec: huffSpec}
	kHuffDecode    = huffDecodeDecl("huff_decode")
	kHuffDecodeI64 = huffDecodeDecl("huff_decode_i64")
)

func huffDecodeDecl(name string) *kernelDecl {
	return &kernelDecl{Name: name, Push: pushOf[huffDecodePush](),
		Bindings: bindings(ro("lows", "table", "pieces"), []binding{rw("dst"), rw("status")}),
		Spec: []specConst{specWG, specShift, specCRCBits, {"PROF", 3}, {"TEAM_SYNC", 4}, {"L1MIN", 5},
			{"ONE_READ", 6}, {"TABN", 7}, {"RFILL", 10}, {"LOWPF", 11}}}
}

// kernels lists every declaration, for lookupKernel and the contract tests.
var kernels = []*kernelDecl{kSZ4Encode, kSZ4Scan, kSZ4Place, kSZ4Decode, kSZ4Pieces, kZF12Encode, kZF12Place,
	kZF12Decode, kZF12Pieces, kTBE3Encode, kTBE3Place, kTBE3Decode, kTBE3Pieces, kXWEncode, kXWPlace, kXWDecode,
	kXWPieces, kAutoPick, kAutoGather, kCopy, kStored, kHuffEncode, kHuffPlace, kHuffCheck, kHuffDecode,
	kHuffDecodeI64}

// lookupKernel is the declaration of the named kernel (nil if none).
func lookupKernel(name string) *kernelDecl {
	for _, k := range kernels {
		if k.Name == name {
			return k
		}
	}
	return nil
}
