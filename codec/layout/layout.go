// Package layout is the single source of truth for the vkzip payload format's numbers: magic, ids, field widths,
// bit positions and the size arithmetic of every stream. The Go codecs import it and `go generate ./shaders`
// turns the constants tagged below into shaders/layout.glsl, so GLSL never holds a hand-copied number.
//
// docs/FORMAT.md is the prose specification of the same format; this file is what both implementations compile.
package layout

// Container preamble.
const (
	Version1      = 1        // bodies carry only their own checksums
	Version2      = 2        // the directory opens with the stream sequence; a seal follows every tensor body
	Version       = Version2 // what encoders write unless told otherwise
	SequenceSize  = 8        // u64 sequence at the start of a version 2 directory
	SealSize      = 4        // u32 seal after each tensor body of a version 2 container
	MaxRecords    = 1 << 18  // most records a container may hold (bounds a reader's memory per container)
	PreambleSize  = 20       // magic(8) version(2) flags(2) metaCompressedLen(4) metaRawLen(4)
	MaxMetaRaw    = 1 << 27  // largest decompressed metadata block a reader accepts (128 MiB)
	MetaCRCSize   = 4
	BodyAlignment = 4 // every body, stream and table starts at a multiple of 4 bytes
)

// Magic opens every container (and every frame of a stream): PNG-style, so that text mangling is detected.
var Magic = [8]byte{0x89, 'V', 'K', 'Z', '\r', '\n', 0x1a, '\n'}

// Preamble flags.
const (
	FlagChecksums = 1 << 0 // chunk and stored-body CRC-32C fields are present and verified
	FlagFinal     = 1 << 1 // last container of a stream (a file is one final container)
	FlagsKnown    = FlagChecksums | FlagFinal
)

// Directory record types.
const (
	RecordBlob   = 1 // bytes stored inline in the metadata block
	RecordTensor = 2 // a tensor whose body follows the metadata block
)

// Codebook kinds.
const (
	CodebookExp8 = 1 // 16 distinct 8-bit exponents (BF16)
	CodebookSize = 16
)

// NoCodebook is the codebook index of a tensor that uses none.
const NoCodebook = 0xFFFFFFFF

// Formats.
const (
	FormatStored    = 0 // bytes as they are, with a CRC-32C
	FormatSplitZip4 = 1 // 4-bit exponent codes + sign/mantissa bytes + sparse escapes (BF16)
	FormatZF12      = 2 // 512-value blocks: 4-bit sign + exponent/2 offset from a per-block base, low bytes kept (BF16)
	FormatAuto      = 4 // per chunk the smallest candidate format, each chunk a one-chunk body of its format
	// 3 tbe3, 5 huff (huff.go), 8..15 exponent formats of other dtypes; others reserved.
)

// Chunking of coded formats.
const (
	MinChunkShift     = 10        // 1,024 values
	MaxChunkShift     = 16        // 65,536 values: a chunk-local position fits in 16 bits
	DefaultChunkShift = 16        // 65,536 values: fewest per-chunk costs on GPUs
	SmallChunkShift   = 13        // ChunkShiftFor's floor: 8,192 values
	MaxCodedValues    = 1<<32 - 1 // side offsets are 32-bit: larger tensors are stored
)

// Chunk table of SplitZip-4 (and of the later coded formats): ChunkEntryWords 32-bit little-endian words per chunk.
const (
	ChunkEntryWords = 3
	ChunkEntrySize  = 4 * ChunkEntryWords
	EntryInfo       = 0 // word index: kind<<KindShift | count
	EntrySideOff    = 1 // word index: byte offset of the chunk's side piece within the side section
	EntryCRC        = 2 // word index: CRC-32C of the chunk (0 when checksums are off)
	CountMask       = 0x00FFFFFF
	KindShift       = 24
	ChunkCoded      = 0 // codes + escapes
	ChunkRaw        = 1 // exponent bytes split between the code piece and the side piece
)

// Escape words of a coded chunk's side piece: chunk-local position and exponent; the top byte must be zero.
const (
	EscapePosMask  = 0xFFFF
	EscapeExpShift = 16
	EscapeSize     = 4
)

// CRC-32C (Castagnoli), reflected.
const CRC32CPoly = 0x82F63B78

// Status bits a GPU decoder reports; they map to the typed errors of package codec, in this precedence order.
const (
	StatusCorrupt      = 1 << 0 // chunk table does not describe the body
	StatusChecksum     = 1 << 1 // a chunk's CRC-32C does not match
	StatusNonCanonical = 1 << 2 // a valid-looking stream that the encoder would never produce
)

// A GPU decode job's status block: StatusWords words (flags, lowest chunk per class, clamps, ...). A prepared
// block decode, whose body lengths change from run to run, passes SideLenRuntime as the side length and writes
// it into word StatusSideLen before each run.
const (
	StatusWords    = 8
	StatusSideLen  = 7
	SideLenRuntime = 0xFFFFFFFF
)

// DType identifies an element type.
type DType uint8

// DTypes. Unknown safetensors dtypes are carried as DTypeOpaque byte ranges.
const (
	DTypeOpaque DType = 0
	DTypeBF16   DType = 1
	DTypeF16    DType = 2
	DTypeF32    DType = 3
	DTypeF64    DType = 4
	DTypeF8E5M2 DType = 5
	DTypeF8E4M3 DType = 6
	DTypeBool   DType = 7
	DTypeU8     DType = 8
	DTypeI8     DType = 9
	DTypeU16    DType = 10
	DTypeI16    DType = 11
	DTypeU32    DType = 12
	DTypeI32    DType = 13
	DTypeU64    DType = 14
	DTypeI64    DType = 15
	numDTypes         = 16
)

var dtypeInfo = [numDTypes]struct {
	name string
	size int
}{
	{"OPAQUE", 1}, {"BF16", 2}, {"F16", 2}, {"F32", 4}, {"F64", 8}, {"F8_E5M2", 1}, {"F8_E4M3", 1},
	{"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"U16", 2}, {"I16", 2}, {"U32", 4}, {"I32", 4}, {"U64", 8}, {"I64", 8},
}

// Valid reports whether d is a defined dtype.
func (d DType) Valid() bool { return int(d) < numDTypes }

// Size is the element size in bytes (1 for unknown ids).
func (d DType) Size() int {
	if !d.Valid() {
		return 1
	}
	return dtypeInfo[d].size
}

// String is the safetensors spelling of the dtype.
func (d DType) String() string {
	if !d.Valid() {
		return "INVALID"
	}
	return dtypeInfo[d].name
}

// ParseDType maps a safetensors dtype name to a DType; ok is false for names it does not know.
func ParseDType(s string) (d DType, ok bool) {
	for i := 1; i < numDTypes; i++ {
		if dtypeInfo[i].name == s {
			return DType(i), true
		}
	}
	return DTypeOpaque, false
}

// Align4 rounds n up to a multiple of 4.
func Align4(n uint64) uint64 { return (n + 3) &^ 3 }

// SZ4 is the size arithmetic of a SplitZip-4 body of N values with chunks of 1<<Shift values.
type SZ4 struct {
	N     uint64
	Shift uint
}

// ChunkValues is the chunk size in values.
func (s SZ4) ChunkValues() uint64 { return 1 << s.Shift }

// Chunks is the number of chunks, the last possibly partial.
func (s SZ4) Chunks() uint64 { return (s.N + s.ChunkValues() - 1) >> s.Shift }

// CodeBytes is the padded length of the 4-bit code stream.
func (s SZ4) CodeBytes() uint64 { return Align4((s.N + 1) / 2) }

// LowBytes is the padded length of the sign+mantissa byte stream.
func (s SZ4) LowBytes() uint64 { return Align4(s.N) }

// TableOffset is where the chunk table starts in the body.
func (s SZ4) TableOffset() uint64 { return s.CodeBytes() + s.LowBytes() }

// SideOffset is where the side section starts in the body.
func (s SZ4) SideOffset() uint64 { return s.TableOffset() + ChunkEntrySize*s.Chunks() }

// ChunkLen is the number of values in chunk c.
func (s SZ4) ChunkLen(c uint64) uint64 {
	start := c << s.Shift
	if start >= s.N {
		return 0
	}
	return min(s.ChunkValues(), s.N-start)
}

// RawSide is the side-piece size of a raw chunk of m values: the exponents of its second half, padded.
func RawSide(m uint64) uint64 { return Align4(m / 2) }

// RawHead is how many exponents of a raw chunk of m values sit in its code piece.
func RawHead(m uint64) uint64 { return (m + 1) / 2 }

// CodedFits reports whether a chunk of m values with k escapes is stored coded (else it must be raw):
// coded only when its escapes take strictly fewer bytes than the raw side piece.
func CodedFits(m, k uint64) bool { return EscapeSize*k < RawSide(m) }

// MaxBodySize bounds the body of N values for any data: raw chunks everywhere.
func (s SZ4) MaxBodySize() uint64 {
	full := s.N >> s.Shift
	side := full * RawSide(s.ChunkValues())
	if rest := s.N - full<<s.Shift; rest > 0 {
		side += RawSide(rest)
	}
	return s.SideOffset() + side
}

// MinBodySize is the body size with no escapes at all.
func (s SZ4) MinBodySize() uint64 { return s.SideOffset() }

// StoredBody is the body size of a stored tensor of n bytes: data, zero padding to 4, CRC-32C.
func StoredBody(n uint64) uint64 { return Align4(n) + 4 }

// zf12 (docs/FORMAT.md §10): independent blocks of ZF12Block values. A block is coded when the 7-bit high fields
// (exponent>>1) of its values span at most ZF12Span: each value is then a nibble sign<<3 | (field - base) and its low
// byte; otherwise it is raw, and the high nibble of every value goes to the side section.
const (
	ZF12Block     = 512  // values per block
	ZF12BlockLog  = 9    // log2(ZF12Block)
	ZF12Span      = 7    // largest field - base of a coded block (exponents within [2·base, 2·base+15])
	ZF12RawHeader = 0xFF // header byte of a raw block; coded blocks have their base, 0..127
	ZF12MaxBase   = 127
	ZF12RawSide   = ZF12Block / 2 // side bytes of a full raw block: one nibble per value
)

// ZF12 is the size arithmetic of a zf12 body of N values with chunks of 1<<Shift values (Shift ≥ ZF12BlockLog+1).
type ZF12 struct {
	N     uint64
	Shift uint
}

// TBE-3 (format 3, docs/FORMAT.md §12): ZipServ's triple bitmap encoding over a flat mapping of values to tiles.
// Tagged for GLSL generation: shaders/gen writes these into layout.glsl.
const (
	FormatTBE3         = 3   // 3-bit window codes in three bit-planes + sign/mantissa bytes + fallback exponents
	TBE3TileValues     = 64  // values per tile: one 64-bit word per bit-plane
	TBE3Planes         = 3   // bit-planes per tile (code bits 0, 1, 2)
	TBE3TileBytes      = 24  // plane bytes per tile
	TBE3Window         = 7   // exponents a window covers: codes 1..7; code 0 is a fallback
	TBE3MaxWindowStart = 249 // the highest window start (its window ends at exponent 255)
	TBE3WindowShift    = 16  // info word: window start in bits 16..23 (coded chunks)
	TBE3WindowMask     = 0xFF
	TBE3CountMask      = 0xFFFF // info word: fallback count (coded chunks; always below 2^16)
)

// TBE3 is the size arithmetic of a TBE-3 body of N values with chunks of 1<<Shift values.
type TBE3 struct {
	N     uint64
	Shift uint
}

func (z ZF12) sz4() SZ4 { return SZ4(z) }

// ChunkValues is the chunk size in values.
func (z ZF12) ChunkValues() uint64 { return 1 << z.Shift }

// Chunks is the number of chunks, the last possibly partial.
func (z ZF12) Chunks() uint64 { return z.sz4().Chunks() }

// ChunkLen is the number of values in chunk c.
func (z ZF12) ChunkLen(c uint64) uint64 { return z.sz4().ChunkLen(c) }

// Blocks is the number of blocks, the last possibly partial.
func (z ZF12) Blocks() uint64 { return (z.N + ZF12Block - 1) >> ZF12BlockLog }

// ChunkBlocks is the number of blocks of a full chunk.
func (z ZF12) ChunkBlocks() uint64 { return z.ChunkValues() >> ZF12BlockLog }

// HeaderPiece is the bytes of the header stream each chunk owns: one per block, at least 4.
func (z ZF12) HeaderPiece() uint64 { return max(4, z.ChunkBlocks()) }

// CodeBytes is the padded length of the nibble stream.
func (z ZF12) CodeBytes() uint64 { return Align4((z.N + 1) / 2) }

// LowBytes is the padded length of the low-byte stream.
func (z ZF12) LowBytes() uint64 { return Align4(z.N) }

// HeaderOffset is where the header stream starts in the body.
func (z ZF12) HeaderOffset() uint64 { return z.CodeBytes() + z.LowBytes() }

// TableOffset is where the chunk table starts.
func (z ZF12) TableOffset() uint64 { return z.HeaderOffset() + z.Chunks()*z.HeaderPiece() }

// SideOffset is where the side section starts.
func (z ZF12) SideOffset() uint64 { return z.TableOffset() + ChunkEntrySize*z.Chunks() }

// MinBodySize is the body with every block coded.
func (z ZF12) MinBodySize() uint64 { return z.SideOffset() }

// MaxBodySize is the body with every block raw.
func (z ZF12) MaxBodySize() uint64 {
	full := z.N >> ZF12BlockLog
	side := full * ZF12RawSide
	if rest := z.N - full<<ZF12BlockLog; rest > 0 {
		side += ZF12BlockSide(rest)
	}
	return z.SideOffset() + side
}

// ZF12BlockSide is the side bytes of a raw block of m values: its high nibbles, padded to 4 (only the tensor's
// last block can be partial, so the padding is the side section's last).
func ZF12BlockSide(m uint64) uint64 { return Align4((m + 1) / 2) }

// ChunkValues is the chunk size in values.
func (t TBE3) ChunkValues() uint64 { return 1 << t.Shift }

// Chunks is the number of chunks, the last possibly partial.
func (t TBE3) Chunks() uint64 { return (t.N + t.ChunkValues() - 1) >> t.Shift }

// ChunkLen is the number of values in chunk c.
func (t TBE3) ChunkLen(c uint64) uint64 {
	start := c << t.Shift
	if start >= t.N {
		return 0
	}
	return min(t.ChunkValues(), t.N-start)
}

// PlaneBytes is the length of the plane stream: 24 bytes per tile of 64 values (the last tile padded).
func (t TBE3) PlaneBytes() uint64 {
	return TBE3TileBytes * ((t.N + TBE3TileValues - 1) / TBE3TileValues)
}

// SMBytes is the padded length of the sign+mantissa byte stream.
func (t TBE3) SMBytes() uint64 { return Align4(t.N) }

// TableOffset is where the chunk table starts in the body.
func (t TBE3) TableOffset() uint64 { return t.PlaneBytes() + t.SMBytes() }

// SideOffset is where the side section starts in the body.
func (t TBE3) SideOffset() uint64 { return t.TableOffset() + ChunkEntrySize*t.Chunks() }

// TBE3PlanePiece is the plane-piece size of a chunk of m values: three planes of ceil(m/64) 64-bit words.
func TBE3PlanePiece(m uint64) uint64 {
	return TBE3TileBytes * ((m + TBE3TileValues - 1) / TBE3TileValues)
}

// TBE3RawSide is the side-piece size of a raw chunk of m values: the exponents that do not fit its plane piece.
func TBE3RawSide(m uint64) uint64 {
	if p := TBE3PlanePiece(m); m > p {
		return Align4(m - p)
	}
	return 0
}

// TBE3CodedFits reports whether a chunk of m values with k fallbacks is stored coded (else raw): only when its
// padded fallback bytes are strictly fewer than a raw chunk's side piece.
func TBE3CodedFits(m, k uint64) bool { return Align4(k) < TBE3RawSide(m) }

// MaxBodySize bounds the body of N values for any data: raw chunks everywhere.
func (t TBE3) MaxBodySize() uint64 {
	full := t.N >> t.Shift
	side := full * TBE3RawSide(t.ChunkValues())
	if rest := t.N - full<<t.Shift; rest > 0 {
		side += TBE3RawSide(rest)
	}
	return t.SideOffset() + side
}

// MinBodySize is the body size with no fallbacks at all.
func (t TBE3) MinBodySize() uint64 { return t.SideOffset() }

// ---- Exponent-window formats for the other float dtypes (docs/FORMAT.md §13): F8_E5M2, F8_E4M3, F16, F32.
//
// A value's exponent field becomes a W-bit code over the chunk's best window of 2^W-1 consecutive exponents (code 0
// escapes: the exponent is kept whole, in order, in the chunk's side piece); sign and mantissa are kept exactly.
// Codes and the top bits of sign+mantissa are bit planes of 32-value groups; whole bytes of the mantissa form a
// byte stream.

// Exponent-window format ids (8..15 are this family's; 11..15 reserved).
const (
	FormatXW3 = 8  // 3-bit exponent-window codes
	FormatXW2 = 9  // 2-bit
	FormatXW4 = 10 // 4-bit
)

// Exponent-window layout numbers.
const (
	XWGroup       = 32     // values per plane group (one bit of each 32-bit plane word per value)
	XWCountMask   = 0xFFFF // info word bits 0-15: escape count of a coded chunk
	XWBaseShift   = 16     // info word bits 16-23: window base (lowest exponent field with a code)
	XWBaseMask    = 0xFF
	XWMaxCodeBits = 4
)

// ChunkShiftFor is the chunk shift vkzip suggests for a tensor of n values on a GPU: DefaultChunkShift for large
// tensors, smaller ones for small tensors so that one has at least 64 chunks to spread over the device (a 1 MiB
// tensor: 8 chunks of 2^16, or 64 of 2^13), never below SmallChunkShift. Any shift in [MinChunkShift,
// MaxChunkShift] is valid; the 12-byte table entry per chunk costs 0.07 % at 2^13.
func ChunkShiftFor(n uint64) uint { return spreadShift(n, DefaultChunkShift, SmallChunkShift) }

// spreadShift is the largest chunk shift from hi down to lo that gives a tensor of n values at least 64 chunks (lo
// when none does): enough workgroups to spread over a GPU.
func spreadShift(n uint64, hi, lo uint) uint {
	s := hi
	for s > lo && n>>s < 64 {
		s--
	}
	return s
}
