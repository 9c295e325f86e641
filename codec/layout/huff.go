package layout

// huff (format 5, docs/FORMAT.md §14): sign+mantissa bytes kept, exponents Huffman-coded with a canonical code per
// chunk, in 32 interleaved lanes of 32-bit words. Tagged for GLSL generation: shaders/gen writes these into
// layout.glsl.
const (
	FormatHuff       = 5
	HuffMinShift     = 12 // 4,096 values: a piece's ~150 bytes of table, counts and lane padding stay below 4 %
	HuffMaxShift     = 16
	HuffDefaultShift = 16 // 65,536 values for large tensors (HuffShiftFor): per-chunk work amortised, fewer tables
	HuffSmallShift   = 14 // 16,384 values at least: codes adapt to small tensors, which may mix distributions
	HuffLanes        = 32 // value j of a chunk is in lane j mod 32 at position j div 32
	HuffMaxLen       = 11 // longest code: a decoder peeks 11 bits and looks them up in a 2048-entry table
	HuffLenMask      = 0xF
	HuffCountsBytes  = 2 * HuffLanes // 32 u16 lane word counts after the code table
	HuffCountsWords  = HuffCountsBytes / 4
	HuffPieceMask    = 0xFFFFFF // info word bits 0-23: the coded piece's length in 32-bit words (raw: 0)
)

// HuffShiftFor is the chunk shift vkzip's encoders use for a huff tensor of n values when the caller sets none:
// HuffDefaultShift, or smaller down to HuffSmallShift so that a tensor has at least 64 chunks to spread over a GPU
// (as ChunkShiftFor). Large tensors code faster and, when stationary, smaller at 2^16 (fewer tables: KV-like data
// 1.4675x against 1.4604x, H200 encode 524 against 485 GB/s); a small one keeps per-16,384-value codes, which adapt
// when it mixes distributions (the K and V of one layer in one tensor: 1.4968x at 2^14, 1.4684x at 2^16).
func HuffShiftFor(n uint64) uint { return spreadShift(n, HuffDefaultShift, HuffSmallShift) }

// Huff is the size arithmetic of a huff body of N values with chunks of 1<<Shift values:
//
//	offset 0          low stream    align4(N) bytes (byte i: sign<<7 | mantissa of value i)
//	offset Ll         chunk table   C × 12 bytes (info, piece offset in words, CRC-32C)
//	offset Ll + 12C   pieces        chunk c's piece at 4·pieceOffset[c], back to back
type Huff struct {
	N     uint64
	Shift uint
}

// ChunkValues is the chunk size in values.
func (h Huff) ChunkValues() uint64 { return 1 << h.Shift }

// Chunks is the number of chunks, the last possibly partial.
func (h Huff) Chunks() uint64 { return (h.N + h.ChunkValues() - 1) >> h.Shift }

// ChunkLen is the number of values in chunk c.
func (h Huff) ChunkLen(c uint64) uint64 {
	start := c << h.Shift
	if start >= h.N {
		return 0
	}
	return min(h.ChunkValues(), h.N-start)
}

// LowBytes is the padded length of the low (sign+mantissa) stream.
func (h Huff) LowBytes() uint64 { return Align4(h.N) }

// TableOffset is where the chunk table starts.
func (h Huff) TableOffset() uint64 { return h.LowBytes() }

// PieceOffset is where the piece section starts.
func (h Huff) PieceOffset() uint64 { return h.TableOffset() + ChunkEntrySize*h.Chunks() }

// MinBodySize is the smallest body the directory accepts (no chunk can actually have an empty piece).
func (h Huff) MinBodySize() uint64 { return h.PieceOffset() }

// MaxBodySize bounds the body of N values for any data: raw pieces everywhere.
func (h Huff) MaxBodySize() uint64 {
	full := h.N >> h.Shift
	pieces := full * HuffRawPiece(h.ChunkValues())
	if rest := h.N - full<<h.Shift; rest > 0 {
		pieces += HuffRawPiece(rest)
	}
	return h.PieceOffset() + pieces
}

// HuffRawPiece is the piece of a raw chunk of m values: its exponent bytes, padded to 4.
func HuffRawPiece(m uint64) uint64 { return Align4(m) }

// HuffTableBytes is the code table of a piece whose symbols run from lo to hi: two bytes, then a 4-bit length per
// symbol, padded to 4.
func HuffTableBytes(lo, hi uint) uint64 { return Align4(2 + (uint64(hi-lo)+2)/2) }

// HuffLaneValues is the number of values of lane l in a chunk of m values.
func HuffLaneValues(m uint64, l uint) uint64 {
	if uint64(l) >= m {
		return 0
	}
	return (m - uint64(l) + HuffLanes - 1) / HuffLanes
}
