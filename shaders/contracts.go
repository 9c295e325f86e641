package shaders

import (
	"fmt"
	"reflect"
	"unsafe"
)

// Binding is one storage buffer of a kernel, at descriptor set 0, binding = its index in Kernel.Bindings.
type Binding struct {
	Name     string // the host's name for the buffer
	ReadOnly bool   // the kernel never writes it (GLSL readonly)
	// WriteOnly: the kernel never reads it (GLSL writeonly). Coherent: its writes are visible to the other
	// invocations of the dispatch (GLSL coherent).
	WriteOnly, Coherent bool
	// Views are the GLSL blocks declared on the binding, one per element type the kernel reads or writes it as;
	// empty means one block of uint words named after the binding (block Title-cased, array Name).
	Views []View
	Doc   string // what the buffer holds, for the generated GLSL
}

// View is one GLSL block over a binding: `buffer Block { Elem Array[]; };`.
type View struct {
	Block, Array string
	Elem         string // GLSL element type: uint, uvec2 or uvec4
}

// Spec is one specialization constant: `layout(constant_id = ID) const uint Name = Default;`.
type Spec struct {
	Name    string
	ID      uint32
	Default uint32 // the value a pipeline gets when the host does not set the constant
	Doc     string // its meaning, for the generated GLSL
}

// Kernel is the contract between a kernel's GLSL and the host: the GLSL declarations are generated from it
// (shaders/gen writes contracts.glsl) and a test checks the committed SPIR-V against it.
type Kernel struct {
	Name     string
	Bindings []Binding // by binding number
	// Push is the push-constant block: a struct whose fields are uint32 or [N]uint32, each tagged
	// `glsl:"member"` with its GLSL name, laid out as in the kernel (std430: 4-byte members, [2]uint32 and
	// [4]uint32 as uvec2 and uvec4, which must be aligned to 8 and 16 bytes). nil if the kernel has none.
	Push reflect.Type
	Spec []Spec
}

// PushSize is the size in bytes of the push-constant block (0 if none).
func (k *Kernel) PushSize() uint32 {
	if k.Push == nil {
		return 0
	}
	return uint32(k.Push.Size())
}

// SpecID returns the constant_id of the kernel's specialization constant name. An unknown name is a programming
// error: it panics.
func (k *Kernel) SpecID(name string) uint32 {
	for _, s := range k.Spec {
		if s.Name == name {
			return s.ID
		}
	}
	panic(fmt.Sprintf("shaders: kernel %s has no specialization constant %q", k.Name, name))
}

// Binding returns the binding number of the buffer name. An unknown name is a programming error: it panics.
func (k *Kernel) Binding(name string) uint32 {
	for i, b := range k.Bindings {
		if b.Name == name {
			return uint32(i)
		}
	}
	panic(fmt.Sprintf("shaders: kernel %s has no binding %q", k.Name, name))
}

// Lookup returns the contract of the kernel name, nil if there is none.
func Lookup(name string) *Kernel {
	for _, k := range Kernels {
		if k.Name == name {
			return k
		}
	}
	return nil
}

// PushBytes returns the bytes of a push-constant struct as the kernel reads them (little-endian: every Vulkan
// host vkzip supports is), without copying: the slice aliases *p.
func PushBytes[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// Binding constructors: rw reads and writes, ro is readonly, wo writeonly, co coherent.
func rw(name string, v ...View) Binding { return Binding{Name: name, Views: v} }
func ro(name string, v ...View) Binding { return Binding{Name: name, ReadOnly: true, Views: v} }
func wo(name string, v ...View) Binding { return Binding{Name: name, WriteOnly: true, Views: v} }
func co(name string, v ...View) Binding { return Binding{Name: name, Coherent: true, Views: v} }

func view(block, array, elem string) View { return View{block, array, elem} }

// with returns b documented.
func (b Binding) with(doc string) Binding { b.Doc = doc; return b }

func pushOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// Specialization constants shared by several kernels.
var (
	specWG      = Spec{"WG", 0, 256, "invocations per workgroup"}
	specShift   = Spec{"SHIFT", 1, 14, "chunk = 2^SHIFT values"}
	specRepl    = Spec{"REPL", 2, 1, "CRC table replication in shared memory"}
	specU       = Spec{"U", 5, 2, "slots per thread loaded together (memory-level parallelism)"}
	specCRCBits = Spec{"CRC_BITS", 8, 5, "register bits per CRC shift-table field (crc_fields.glsl)"}
	specEscCap  = Spec{"ESC_CAP", 3, 1024, "escapes staged in shared memory; more are searched in place"}
	specDebug   = Spec{"DEBUG_BOUNDS", 4, 0,
		"1: count clamped indices, and decode corrupt chunks anyway, so tests see the clamps keep them in bounds"}
	specHuffWG    = Spec{"WG", 0, 32, "invocations per workgroup (a multiple of 32)"}
	specHuffBatch = Spec{"BATCH", 2, 8, "message words loaded together by each invocation"}
	specHuffCRC   = Spec{"CRC_BITS", 8, 8, "register bits per CRC table field (crc_fields.glsl)"}
)

// The views of the bindings read or written in more than one element type.
var (
	srcViews  = []View{view("SrcV", "srcv", "uvec4"), view("SrcW", "srcw", "uint")}
	lowsViews = []View{view("Lows", "lows", "uint"), view("LowsV", "lowsv", "uvec2")}
	dstViews  = []View{view("DstV", "dstv", "uvec4"), view("DstW", "dstw", "uint")}
	smViews   = []View{view("SMV", "smv", "uvec4"), view("SMW", "smw", "uint")}
	blockSums = view("Work", "blockSum", "uint")
)

// What the bindings of several kernels hold.
const (
	codesSeg  = "segment's code stream"
	lowsSeg   = "segment's low stream"
	headsSeg  = "segment's header stream"
	planesSeg = "segment's plane stream"
	smSeg     = "segment's SM stream"
	tableAll  = "the whole chunk table"
	sideAll   = "the whole side section"
	sideMin   = "the whole side section (≥ 1 word)"
	dstSeg    = "segment's output"
	scratchSl = "segment's scratch slots"
	zeroed    = "per 64 chunks, zeroed by the host"
	prefixes  = "[nb, 2nb): block prefixes"
	statusJob = "per job: flags, lowest chunk per class, clamps"
	oneWord   = "≥ 1 word"
)

// Bindings and constants of several kernels.
var (
	srcSeg     = ro("src", srcViews...).with("segment's values, 8 per uvec4")
	sz4Decodes = []Binding{ro("codes").with(codesSeg), ro("lows", lowsViews...).with(lowsSeg),
		ro("table").with(tableAll), ro("side").with(sideMin), wo("dst", dstViews...).with(dstSeg), ro("consts"),
		rw("status").with(statusJob)}
	zf12Decodes = []Binding{ro("codes").with(codesSeg), ro("lows", lowsViews...).with(lowsSeg),
		ro("heads").with(headsSeg), ro("table").with(tableAll), ro("side").with(sideMin),
		wo("dst", dstViews...).with(dstSeg), ro("consts"), rw("status").with(statusJob)}
	// The placement passes of side_place.glsl (sz4_place, tbe3_place).
	sidePlaces = []Binding{rw("table"), ro("scratch").with(scratchSl), wo("side").with(sideAll), ro("consts"),
		rw("work").with("[0,nb) block side sums (pass 1), [2nb] the total")}
	tbe3Decodes = []Binding{ro("planes").with(planesSeg), ro("sm", smViews...).with(smSeg),
		ro("table").with(tableAll), ro("side").with(sideMin), wo("dst", dstViews...).with(dstSeg), ro("consts"),
		rw("status").with("flags, lowest chunk per class")}
	xwSpecs = []Spec{{"WG", 0, 256, "invocations per workgroup"}, {"SHIFT", 1, 16, "chunk = 2^SHIFT values"},
		{"E", 2, 5, "exponent bits"}, {"M", 3, 2, "mantissa bits"}, {"W", 4, 3, "code bits"},
		{"SIZE", 5, 1, "bytes per value: 1, 2 or 4"}, specCRCBits}
	xwConsts = []Binding{ro("consts").with("CRC tables for workgroups of P·WG (plane piece)"),
		ro("lconsts").with("CRC tables for workgroups of LW·WG/2 (byte piece; the plane tables for 1-byte values)"),
		ro("hconsts").with("CRC tables for workgroups of 32 (header and side piece)")}
	xwLows    = []View{view("Lows", "lows", "uint"), view("LowsV", "lowsv", "uvec4")}
	xwDecodes = []Binding{ro("planes"), ro("lows", xwLows...).with(oneWord), ro("table"), ro("side").with(oneWord),
		wo("dst", view("Dst", "dst", "uint"), view("DstV", "dstv", "uvec4")),
		rw("status").with("flags, lowest chunk per class"), xwConsts[0], xwConsts[1], xwConsts[2]}
	huffDecodes = []Binding{ro("lows", view("Lows", "lows", "uint"), view("LowsV", "lowsv", "uvec4")).with(oneWord),
		ro("table"), ro("pieces").with(oneWord),
		wo("dst", view("Dst", "dst", "uint"), view("DstV", "dstv", "uvec4")), rw("status")}
	// huff_decode.glsl describes these constants where it uses them.
	huffDecodeSpecs = []Spec{specHuffWG, specShift, {"TEAM_SYNC", 4, 0, ""}, {"L1MIN", 5, 6, ""},
		{"ONE_READ", 6, 1, ""}, {"TABN", 7, 1024, ""}, {"RFILL", 10, 2, ""}, {"LOWPF", 11, 1, ""}}
)

// Kernels holds every kernel's contract.
var Kernels = []*Kernel{
	{Name: "sz4_encode", Push: pushOf[SZ4EncodePush](),
		Bindings: []Binding{srcSeg, wo("codes").with(codesSeg), wo("lows", lowsViews...).with(lowsSeg),
			rw("table").with(tableAll), wo("scratch").with(scratchSl), ro("consts"), rw("work", blockSums).with(zeroed)},
		Spec: []Spec{specWG, specShift, specRepl, specU, specCRCBits}},
	{Name: "sz4_scan", Push: pushOf[SZ4ScanPush](),
		Bindings: []Binding{rw("work").with("[0,nb) sums, [nb,2nb) prefixes, [2nb] total")}, Spec: []Spec{specWG}},
	{Name: "sz4_place", Push: pushOf[SZ4PlacePush](), Bindings: sidePlaces,
		Spec: []Spec{specWG, specShift, specRepl, specCRCBits}},
	{Name: "sz4_decode", Push: pushOf[SZ4DecodePush](), Bindings: sz4Decodes,
		Spec: []Spec{specWG, specShift, specRepl, specEscCap, specDebug, specU, specCRCBits}},
	{Name: "sz4_decode_pieces", Push: pushOf[SZ4DecodePiecesPush](), Bindings: sz4Decodes,
		Spec: []Spec{specWG, specShift, specRepl, specEscCap, specDebug, specU, specCRCBits}},
	{Name: "zf12_encode", Push: pushOf[ZF12EncodePush](),
		Bindings: []Binding{srcSeg, wo("codes").with(codesSeg), wo("lows", lowsViews...).with(lowsSeg),
			wo("heads").with(headsSeg), rw("table").with(tableAll), wo("scratch").with(scratchSl), ro("consts"),
			rw("work", blockSums).with(zeroed)},
		Spec: []Spec{specWG, specShift, specRepl, specU, specCRCBits}},
	{Name: "zf12_place", Push: pushOf[ZF12PlacePush](),
		Bindings: []Binding{rw("table"), ro("scratch").with(scratchSl), wo("side").with(sideAll), ro("consts"),
			ro("work").with(prefixes), ro("heads").with(headsSeg)},
		Spec: []Spec{specWG, specShift, specRepl, specCRCBits}},
	{Name: "zf12_decode", Push: pushOf[ZF12DecodePush](), Bindings: zf12Decodes,
		Spec: []Spec{specWG, specShift, specRepl, specDebug, specU, specCRCBits}},
	{Name: "zf12_decode_pieces", Push: pushOf[ZF12DecodePiecesPush](), Bindings: zf12Decodes,
		Spec: []Spec{specWG, specShift, specRepl, specDebug, specU, specCRCBits}},
	{Name: "auto_pick", Push: pushOf[AutoPickPush](),
		Bindings: []Binding{rw("work").with("[0,C) sizes, [C,2C) offsets, [2C] total, [2C+1,3C+1) format id"),
			ro("body").with("the candidate's whole body"),
			ro("cwork", view("CWork", "cwork", "uint")).with("its prefix-sum words: side total")},
		Spec: []Spec{specWG}},
	{Name: "auto_gather", Push: pushOf[AutoGatherPush](),
		Bindings: []Binding{wo("out", view("Out", "outw", "uint")).with("the auto body"),
			ro("body").with("the candidate's whole body"),
			ro("work").with("sizes, offsets, total, choice (auto_pick)"), ro("consts")},
		Spec: []Spec{specWG, specCRCBits}},
	{Name: "copy", Push: pushOf[CopyPush](),
		Bindings: []Binding{ro("src", view("Src", "src", "uvec4")), wo("dst", view("Dst", "dst", "uvec4"))},
		Spec: []Spec{specWG, {"R", 1, 1, "vectors read per unit"}, {"W", 2, 1, "vectors written per unit"},
			{"CONTIGUOUS", 3, 0, "1: a unit's vectors are consecutive; 0: one stream per vector"},
			{"U", 4, 1, "units per thread loaded together"}}},
	{Name: "tbe3_encode", Push: pushOf[TBE3EncodePush](),
		Bindings: []Binding{srcSeg, wo("planes").with(planesSeg), wo("sm", smViews...).with(smSeg),
			rw("table").with(tableAll), co("scratch").with(scratchSl), ro("consts"), rw("work", blockSums).with(zeroed)},
		Spec: []Spec{specWG, specShift, specRepl, specCRCBits}},
	{Name: "tbe3_place", Push: pushOf[TBE3PlacePush](), Bindings: sidePlaces,
		Spec: []Spec{specWG, specShift, specRepl, specCRCBits}},
	{Name: "tbe3_decode", Push: pushOf[TBE3DecodePush](), Bindings: tbe3Decodes,
		Spec: []Spec{specWG, specShift, specRepl, specCRCBits}},
	{Name: "tbe3_decode_pieces", Push: pushOf[TBE3DecodePiecesPush](), Bindings: tbe3Decodes,
		Spec: []Spec{specWG, specShift, specRepl, specCRCBits}},
	{Name: "xw_encode", Push: pushOf[XWEncodePush](),
		Bindings: []Binding{ro("src", view("SrcV", "srcv", "uvec4"), view("Src", "src", "uint")).with("the tensor's values"),
			wo("planes"), wo("lows", xwLows...).with("byte stream (≥ 1 word)"),
			wo("table"), co("scratch").with("HP·GPC words per chunk"), rw("work", blockSums).with("per 64 chunks, zeroed"),
			xwConsts[0], xwConsts[1]},
		Spec: xwSpecs},
	{Name: "xw_place", Push: pushOf[XWPlacePush](),
		Bindings: []Binding{rw("table"), ro("scratch"), wo("side"), ro("work").with(prefixes), xwConsts[2]},
		Spec:     xwSpecs},
	{Name: "xw_decode", Push: pushOf[XWDecodePush](), Bindings: xwDecodes, Spec: xwSpecs},
	{Name: "xw_decode_pieces", Push: pushOf[XWDecodePiecesPush](), Bindings: xwDecodes, Spec: xwSpecs},
	{Name: "huff_encode", Push: pushOf[HuffEncodePush](),
		Bindings: []Binding{ro("src").with("the tensor's values"), wo("lows"), wo("table"),
			wo("scratch").with("N/4 words per chunk"), rw("work", blockSums).with("per 64 chunks, zeroed")},
		Spec: []Spec{specHuffWG, specShift, {"BATCH", 2, 8, "source words loaded together by each invocation"},
			{"CACHE_SHIFT", 4, 14, "chunks of up to 2^CACHE_SHIFT values keep their exponents in shared memory"}}},
	{Name: "huff_place", Push: pushOf[HuffPlacePush](),
		Bindings: []Binding{rw("table"), ro("scratch"), wo("pieces"), ro("lows"), ro("work").with(prefixes),
			ro("consts").with("CRC tables (huff_common.glsl)")},
		Spec: []Spec{specHuffWG, specShift, specHuffBatch, specHuffCRC}},
	{Name: "huff_decode", Push: pushOf[HuffDecodePush](), Bindings: huffDecodes, Spec: huffDecodeSpecs},
	{Name: "huff_decode_i64", Push: pushOf[HuffDecodeI64Push](), Bindings: huffDecodes, Spec: huffDecodeSpecs},
	{Name: "stored", Push: pushOf[StoredPush](),
		Bindings: []Binding{ro("src").with("values (encode) or body (decode)"),
			wo("dst").with("body (encode) or values (decode)"),
			rw("status").with("decode: flags (STATUS_*), as the other kernels")},
		Spec: []Spec{specWG, {"DECODE", 1, 0, "0: values to body; 1: body to values"}}},
	{Name: "exphist", Push: pushOf[ExpHistPush](),
		Bindings: []Binding{ro("src").with("BF16 values, 2 per word"),
			rw("hist").with("256 counts, one per exponent, zeroed by the host")},
		Spec: []Spec{specWG}},
	{Name: "huff_check", Push: pushOf[HuffCheckPush](),
		Bindings: []Binding{ro("lows").with(oneWord), ro("table"), ro("pieces").with(oneWord), rw("status"),
			ro("consts").with("CRC tables (huff_common.glsl)")},
		Spec: []Spec{specHuffWG, specShift, specHuffBatch, specHuffCRC}},
}
