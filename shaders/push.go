package shaders

// The push-constant blocks of the kernels, member by member in the kernels' order; the glsl tag names each member
// in GLSL. [4]uint32 is a uvec4 (16-byte aligned).

// ChunkCRC is the head the chunk coders' push blocks share (the encoders of splitzip4 and zf12, and within
// ChunkSeg their decoders): the tensor's chunks, the segment dispatched, and the constants that finish a chunk's
// CRC over its code and low pieces.
type ChunkCRC struct {
	Chunks    uint32 `glsl:"chunks"`    // chunks in the tensor
	SegFirst  uint32 `glsl:"segFirst"`  // first chunk of the bound segment
	SegChunks uint32 `glsl:"segChunks"` // chunks in the segment
	LastLen   uint32 `glsl:"lastLen"`   // values in the tensor's last chunk
	InvC      uint32 `glsl:"invC"`      // x^(-8 zC): zero bytes the last chunk's code piece lacks for a full piece
	InvL      uint32 `glsl:"invL"`      // the same for its low piece
	ShLowFull uint32 `glsl:"shLowFull"` // x^(8 n): shifts a full chunk's code-piece CRC over its low piece
	ShLowLast uint32 `glsl:"shLowLast"` // x^(8 align4(lastLen)) for the last chunk
}

// SZ4EncodePush is sz4_encode's push-constant block.
type SZ4EncodePush struct {
	CB [4]uint32 `glsl:"cb"` // codebook, 16 exponents
	ChunkCRC
	Checksums uint32 `glsl:"checksums"`
	SrcBase   uint32 `glsl:"srcBase"`  // binding 0 starts this many uvec4s before the segment's first value
	CodeBase  uint32 `glsl:"codeBase"` // word offsets of the segment (codes, lows) and of the table within their bindings
	LowBase   uint32 `glsl:"lowBase"`
	TableBase uint32 `glsl:"tableBase"`
}

// SZ4ScanPush is sz4_scan's push-constant block.
type SZ4ScanPush struct {
	NB uint32 `glsl:"nb"` // 64-chunk blocks
}

// SZ4PlacePush is sz4_place's push-constant block.
type SZ4PlacePush struct {
	Chunks    uint32 `glsl:"chunks"`
	SegFirst  uint32 `glsl:"segFirst"`
	SegChunks uint32 `glsl:"segChunks"`
	LastLen   uint32 `glsl:"lastLen"`
	NB        uint32 `glsl:"nb"`     // block count
	KdFull    uint32 `glsl:"kdFull"` // x^(8·|dense pieces|) of a full chunk
	KdLast    uint32 `glsl:"kdLast"` // the same for the last chunk
	Checksums uint32 `glsl:"checksums"`
	TableBase uint32 `glsl:"tableBase"` // word offsets of the table and the side section within their bindings
	SideBase  uint32 `glsl:"sideBase"`
}

// ChunkSeg is the head the chunk decoders' push blocks share (sz4_decode, zf12_decode, and the piece decoders
// sz4_decode_pieces and zf12_decode_pieces after their codebook): the tensor's chunks and the segment dispatched,
// the CRC shift constants of a full and of the last chunk, and whether chunks carry checksums.
type ChunkSeg struct {
	ChunkCRC
	KdFull    uint32 `glsl:"kdFull"`
	KdLast    uint32 `glsl:"kdLast"`
	Checksums uint32 `glsl:"checksums"`
}

// SZ4DecodePush is sz4_decode's push-constant block.
type SZ4DecodePush struct {
	CB [4]uint32 `glsl:"cb"` // the container codebook
	ChunkSeg
	SideLen    uint32 `glsl:"sideLen"`    // bytes in the side section, or SIDE_LEN_RUNTIME: status word STATUS_SIDE_LEN holds it
	StatusBase uint32 `glsl:"statusBase"` // this job's first status word
	CodeBase   uint32 `glsl:"codeBase"`   // word offsets of the segment's code and low pieces, the table and the side section
	LowBase    uint32 `glsl:"lowBase"`
	TableBase  uint32 `glsl:"tableBase"`
	SideBase   uint32 `glsl:"sideBase"`
	DstBase    uint32 `glsl:"dstBase"` // uvec4 offset of the segment's output
}

// SZ4DecodePiecesPush is the push-constant block of sz4_decode_pieces and zf12_decode_pieces.
type SZ4DecodePiecesPush struct {
	CB [4]uint32 `glsl:"cb"` // the container codebook (zf12_decode_pieces does not use it)
	ChunkSeg
	PiecesLen  uint32 `glsl:"piecesLen"`  // bytes of the auto body's pieces
	StatusBase uint32 `glsl:"statusBase"` // this job's first status word
	AutoBase   uint32 `glsl:"autoBase"`   // word offset of the auto chunk table in its binding (table)
	PieceBase  uint32 `glsl:"pieceBase"`  // word offset of the first piece in the piece bindings (all but table)
	Cands      uint32 `glsl:"cands"`      // bit f set: format f is one of auto's candidates for the dtype
	Validate   uint32 `glsl:"validate"`   // 1: this dispatch also rejects chunks of no candidate format
	DstBase    uint32 `glsl:"dstBase"`    // uvec4 offset of the segment's output
}

// ZF12EncodePush is zf12_encode's push-constant block.
type ZF12EncodePush struct {
	ChunkCRC
	Checksums uint32 `glsl:"checksums"`
	SrcBase   uint32 `glsl:"srcBase"`  // binding 0 starts this many uvec4s before the segment's first value
	CodeBase  uint32 `glsl:"codeBase"` // word offsets of the segment's pieces and of the table within their bindings
	LowBase   uint32 `glsl:"lowBase"`
	HeadBase  uint32 `glsl:"headBase"`
	TableBase uint32 `glsl:"tableBase"`
}

// ZF12PlacePush is zf12_place's push-constant block.
type ZF12PlacePush struct {
	Chunks    uint32 `glsl:"chunks"`
	SegFirst  uint32 `glsl:"segFirst"`
	SegChunks uint32 `glsl:"segChunks"`
	LastLen   uint32 `glsl:"lastLen"`
	NB        uint32 `glsl:"nb"`     // 64-chunk block count (prefixes at work[nb + b])
	KdFull    uint32 `glsl:"kdFull"` // x^(8·|dense pieces|) of a full chunk
	KdLast    uint32 `glsl:"kdLast"` // the same for the last chunk
	Checksums uint32 `glsl:"checksums"`
	TableBase uint32 `glsl:"tableBase"` // word offsets of the table, the side section and the segment's headers within their bindings
	SideBase  uint32 `glsl:"sideBase"`
	HeadBase  uint32 `glsl:"headBase"`
}

// ZF12DecodePush is zf12_decode's push-constant block.
type ZF12DecodePush struct {
	ChunkSeg
	SideLen    uint32 `glsl:"sideLen"`    // bytes in the side section
	StatusBase uint32 `glsl:"statusBase"` // this job's first status word
	CodeBase   uint32 `glsl:"codeBase"`   // word offsets of the segment's pieces, the table and the side section
	LowBase    uint32 `glsl:"lowBase"`
	HeadBase   uint32 `glsl:"headBase"`
	TableBase  uint32 `glsl:"tableBase"`
	SideBase   uint32 `glsl:"sideBase"`
	DstBase    uint32 `glsl:"dstBase"` // uvec4 offset of the segment's output
}

// ZF12DecodePiecesPush is zf12_decode_pieces' push-constant block: the SplitZip-4 piece decoder's.
type ZF12DecodePiecesPush = SZ4DecodePiecesPush

// AutoPickPush is auto_pick's push-constant block.
type AutoPickPush struct {
	D      [4]uint32 `glsl:"d"` // table word offset, side-total word in its work, dense bytes of a full chunk, of the last
	Chunks uint32    `glsl:"chunks"`
	ID     uint32    `glsl:"id"`    // the candidate's format id
	First  uint32    `glsl:"first"` // 1: the first candidate (writes every chunk)
	Base   uint32    `glsl:"base"`  // word offset of the body within its binding
}

// AutoGatherPush is auto_gather's push-constant block.
type AutoGatherPush struct {
	Streams   [4]uint32 `glsl:"streams"` // word offsets of up to three dense streams (unused: ~0u), table word offset
	Full      [4]uint32 `glsl:"full"`    // bytes of a full chunk's piece of each stream, side section word offset
	LastP     [4]uint32 `glsl:"lastP"`   // bytes of the last chunk's piece of each stream
	Chunks    uint32    `glsl:"chunks"`
	Checksums uint32    `glsl:"checksums"`
	OutBase   uint32    `glsl:"outBase"` // word offset of the auto body in binding 0
	Base      uint32    `glsl:"base"`    // word offset of the candidate body in binding 1
	ID        uint32    `glsl:"id"`      // the candidate's format id: chunks that chose another are left alone
}

// CopyPush is copy's push-constant block.
type CopyPush struct {
	Count uint32 `glsl:"count"` // units
}

// TBE3EncodePush is tbe3_encode's push-constant block.
type TBE3EncodePush struct {
	Chunks    uint32 `glsl:"chunks"`    // chunks in the tensor
	SegFirst  uint32 `glsl:"segFirst"`  // first chunk of the bound segment
	SegChunks uint32 `glsl:"segChunks"` // chunks in the segment
	LastLen   uint32 `glsl:"lastLen"`   // values in the tensor's last chunk
	Checksums uint32 `glsl:"checksums"`
	SrcBase   uint32 `glsl:"srcBase"`   // uvec4 offset of the segment's first value in binding 0
	PlaneBase uint32 `glsl:"planeBase"` // word offset of the segment's plane stream
	SMBase    uint32 `glsl:"smBase"`    // word offset of the segment's SM stream (uvec4 stores when it is a multiple of 4)
	TableBase uint32 `glsl:"tableBase"` // word offset of the table
}

// TBE3PlacePush is tbe3_place's push-constant block: sz4_place's (side_place.glsl serves both), KdFull and KdLast
// over TBE-3's dense pieces.
type TBE3PlacePush SZ4PlacePush

// TBE3DecodePush is tbe3_decode's push-constant block.
type TBE3DecodePush struct {
	Chunks     uint32 `glsl:"chunks"`    // chunks in the tensor
	SegFirst   uint32 `glsl:"segFirst"`  // first chunk of the bound segment
	SegChunks  uint32 `glsl:"segChunks"` // chunks in the segment
	LastLen    uint32 `glsl:"lastLen"`   // values in the tensor's last chunk
	Checksums  uint32 `glsl:"checksums"`
	SideLen    uint32 `glsl:"sideLen"`    // bytes in the side section
	StatusBase uint32 `glsl:"statusBase"` // this job's first status word
	PlaneBase  uint32 `glsl:"planeBase"`  // word offsets of the segment's plane and SM streams, the table and the side section
	SMBase     uint32 `glsl:"smBase"`     //   within their bindings (uvec4 loads of SM when smBase is a multiple of 4)
	TableBase  uint32 `glsl:"tableBase"`
	SideBase   uint32 `glsl:"sideBase"`
	DstBase    uint32 `glsl:"dstBase"` // uvec4 offset of the segment's output
}

// TBE3DecodePiecesPush is tbe3_decode_pieces' push-constant block.
type TBE3DecodePiecesPush struct {
	CB         [4]uint32 `glsl:"cb"` // the container codebook (unused here: the piece decoders share one push layout)
	Chunks     uint32    `glsl:"chunks"`
	SegFirst   uint32    `glsl:"segFirst"`
	SegChunks  uint32    `glsl:"segChunks"`
	LastLen    uint32    `glsl:"lastLen"`
	Checksums  uint32    `glsl:"checksums"`
	PiecesLen  uint32    `glsl:"piecesLen"`  // bytes of the auto body's pieces
	StatusBase uint32    `glsl:"statusBase"` // this job's first status word
	AutoBase   uint32    `glsl:"autoBase"`   // word offset of the auto chunk table in binding 2
	PieceBase  uint32    `glsl:"pieceBase"`  // word offset of the first piece in bindings 0, 1 and 3
	Cands      uint32    `glsl:"cands"`      // bit f set: format f is one of auto's candidates for the dtype
	Validate   uint32    `glsl:"validate"`   // 1: this dispatch also rejects chunks of no candidate format
	DstBase    uint32    `glsl:"dstBase"`    // uvec4 offset of the segment's output
}

// XWCRC are the CRC-32C constants of an exponent-window chunk's dense pieces (docs/FORMAT.md §13.2.5): the kernels
// sum each piece's linear CRC as if every chunk were full, so the last chunk's sums are shifted back over the bytes
// it lacks, and the pieces are joined by shifts over their lengths.
type XWCRC struct {
	InvPlaneLast uint32 `glsl:"invPlaneLast"` // x^-(8·bytes the last chunk's plane piece lacks for a full one)
	InvLowLast   uint32 `glsl:"invLowLast"`   // the same for its byte piece
	ShLowFull    uint32 `glsl:"shLowFull"`    // x^(8·|byte piece|) of a full chunk
	ShLowLast    uint32 `glsl:"shLowLast"`    // of the last chunk
	ShDenseFull  uint32 `glsl:"shDenseFull"`  // x^(8·(|plane piece| + |byte piece|)) of a full chunk
	ShDenseLast  uint32 `glsl:"shDenseLast"`  // of the last chunk
}

// XWEncodePush is xw_encode's push-constant block.
type XWEncodePush struct {
	Chunks    uint32 `glsl:"chunks"`
	LastLen   uint32 `glsl:"lastLen"`   // values in the last chunk
	SrcWords  uint32 `glsl:"srcWords"`  // words of the source that hold values
	LowWords  uint32 `glsl:"lowWords"`  // words of the byte stream (align4(KB·N)/4)
	SrcBase   uint32 `glsl:"srcBase"`   // word offsets of the values, planes, byte stream and table in their bindings (a caller's
	PlaneBase uint32 `glsl:"planeBase"` //   buffers put them anywhere)
	LowBase   uint32 `glsl:"lowBase"`
	TableBase uint32 `glsl:"tableBase"`
	Checksums uint32 `glsl:"checksums"` // 1: the CRC word gets the dense pieces' linear CRC for xw_place
	XWCRC
}

// XWPlacePush is xw_place's push-constant block.
type XWPlacePush struct {
	Chunks      uint32 `glsl:"chunks"`
	LastLen     uint32 `glsl:"lastLen"`
	NB          uint32 `glsl:"nb"` // 64-chunk blocks
	Checksums   uint32 `glsl:"checksums"`
	TableBase   uint32 `glsl:"tableBase"` // word offsets of the table and side section in their bindings
	SideBase    uint32 `glsl:"sideBase"`
	ShDenseFull uint32 `glsl:"shDenseFull"` // x^(8·(|plane piece| + |byte piece|)) of a full chunk
	ShDenseLast uint32 `glsl:"shDenseLast"` // of the last chunk
}

// XWDecodePush is xw_decode's push-constant block.
type XWDecodePush struct {
	Chunks     uint32 `glsl:"chunks"`
	LastLen    uint32 `glsl:"lastLen"`
	Checksums  uint32 `glsl:"checksums"`
	SideLen    uint32 `glsl:"sideLen"` // bytes in the side section
	PlaneWords uint32 `glsl:"planeWords"`
	LowWords   uint32 `glsl:"lowWords"`
	DstWords   uint32 `glsl:"dstWords"`  // words of the output (align4(N·SIZE)/4)
	PlaneBase  uint32 `glsl:"planeBase"` // word offsets of the planes, byte stream, table, side section and output in their bindings
	LowBase    uint32 `glsl:"lowBase"`
	TableBase  uint32 `glsl:"tableBase"`
	SideBase   uint32 `glsl:"sideBase"`
	DstBase    uint32 `glsl:"dstBase"`
	XWCRC
}

// XWDecodePiecesPush is xw_decode_pieces' push-constant block.
type XWDecodePiecesPush struct {
	Chunks    uint32 `glsl:"chunks"`
	LastLen   uint32 `glsl:"lastLen"`
	Checksums uint32 `glsl:"checksums"`
	PiecesLen uint32 `glsl:"piecesLen"` // bytes of the auto body's pieces
	DstWords  uint32 `glsl:"dstWords"`  // words of the output (align4(N·SIZE)/4)
	AutoBase  uint32 `glsl:"autoBase"`  // word offset of the auto chunk table in binding 2
	PieceBase uint32 `glsl:"pieceBase"` // word offset of the first piece in bindings 0, 1 and 3
	Cands     uint32 `glsl:"cands"`     // bit f set: format f is one of auto's candidates for the dtype
	Validate  uint32 `glsl:"validate"`  // 1: this dispatch also rejects chunks of no candidate format
	Self      uint32 `glsl:"self"`      // this kernel's format id
	DstBase   uint32 `glsl:"dstBase"`   // word offset of the output in its binding
	XWCRC
}

// HuffEncodePush is huff_encode's push-constant block.
type HuffEncodePush struct {
	Chunks    uint32 `glsl:"chunks"`
	LastLen   uint32 `glsl:"lastLen"`  // values in the last chunk
	SrcWords  uint32 `glsl:"srcWords"` // words of the source that hold values
	LowWords  uint32 `glsl:"lowWords"` // words of the low stream
	SrcBase   uint32 `glsl:"srcBase"`  // words from each binding's start to its data (device-resident buffers at any offset)
	LowBase   uint32 `glsl:"lowBase"`
	TableBase uint32 `glsl:"tableBase"`
}

// HuffPlacePush is huff_place's push-constant block.
type HuffPlacePush struct {
	Chunks    uint32 `glsl:"chunks"`
	LastLen   uint32 `glsl:"lastLen"`
	NB        uint32 `glsl:"nb"` // 64-chunk blocks
	Checksums uint32 `glsl:"checksums"`
	LowWords  uint32 `glsl:"lowWords"`  // words of the low stream
	TableBase uint32 `glsl:"tableBase"` // words from each binding's start to its data
	PieceBase uint32 `glsl:"pieceBase"`
	LowBase   uint32 `glsl:"lowBase"`
}

// HuffDecodePush is the push-constant block of huff_decode and huff_decode_i64.
type HuffDecodePush struct {
	Chunks    uint32 `glsl:"chunks"`
	LastLen   uint32 `glsl:"lastLen"`
	Checksums uint32 `glsl:"checksums"`
	PieceLen  uint32 `glsl:"pieceLen"` // bytes in the piece section
	LowWords  uint32 `glsl:"lowWords"`
	DstWords  uint32 `glsl:"dstWords"` // words of the output (ceil(N/2))
	LowBase   uint32 `glsl:"lowBase"`  // words from each binding's start to its data (device-resident buffers at any offset)
	TableBase uint32 `glsl:"tableBase"`
	PieceBase uint32 `glsl:"pieceBase"`
	DstBase   uint32 `glsl:"dstBase"`
}

// HuffDecodeI64Push is huff_decode_i64's push-constant block: huff_decode's.
type HuffDecodeI64Push = HuffDecodePush

// HuffCheckPush is huff_check's push-constant block.
type HuffCheckPush struct {
	Chunks    uint32 `glsl:"chunks"`
	LastLen   uint32 `glsl:"lastLen"`
	PieceLen  uint32 `glsl:"pieceLen"` // bytes in the piece section
	LowWords  uint32 `glsl:"lowWords"` // words of the low stream
	LowBase   uint32 `glsl:"lowBase"`  // words from each binding's start to its data (device-resident buffers at any offset)
	TableBase uint32 `glsl:"tableBase"`
	PieceBase uint32 `glsl:"pieceBase"`
}

// StoredPush is stored's push-constant block.
type StoredPush struct {
	Words     uint32 `glsl:"words"` // data words: ceil(bytes / 4)
	Bytes     uint32 `glsl:"bytes"` // data bytes
	Checksums uint32 `glsl:"checksums"`
	SrcBase   uint32 `glsl:"srcBase"` // word offsets of the data within bindings 0 and 1
	DstBase   uint32 `glsl:"dstBase"`
}

// ExpHistPush is exphist's push-constant block.
type ExpHistPush struct {
	N       uint32 `glsl:"n"`       // values counted
	SrcBase uint32 `glsl:"srcBase"` // word offset of the first value within binding 0
}
