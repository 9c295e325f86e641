package codec

import (
	"encoding/binary"
	"math/bits"

	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
)

// SplitZip-4 reference codec, one chunk at a time. A body of N values is laid out as (docs/FORMAT.md §5):
//
//	code stream  ceil(N/2) bytes, padded to 4   value i's 4-bit code in byte i/2, low nibble for even i
//	low stream   N bytes, padded to 4           (sign<<7 | mantissa) of value i
//	chunk table  12 bytes per chunk             info (kind<<24 | escape count), side offset, CRC-32C
//	side section per chunk: escape words (coded) or the second half of the exponents (raw), padded to 4
//
// Chunk c owns a fixed slice of each dense stream (the last chunk also owns the padding), so the dense streams
// are written without knowing any other chunk; only side offsets need the prefix sum of side sizes.

// sz4Geom is the per-body geometry shared by the encoder, decoder and validator.
type sz4Geom struct {
	layout.SZ4
	codes, lows, table, side uint64 // stream offsets in the body
}

func newSZ4Geom(n uint64, shift uint) sz4Geom {
	s := layout.SZ4{N: n, Shift: shift}
	return sz4Geom{SZ4: s, codes: 0, lows: s.CodeBytes(), table: s.TableOffset(), side: s.SideOffset()}
}

// codePiece is chunk c's byte range [lo, hi) of the code stream (absolute offsets in the body).
func (g *sz4Geom) codePiece(c uint64) (lo, hi uint64) {
	lo = c << g.Shift / 2
	if c == g.Chunks()-1 {
		return lo, g.codes + g.CodeBytes()
	}
	return lo, lo + g.ChunkValues()/2
}

// lowPiece is chunk c's byte range of the low stream (absolute offsets in the body).
func (g *sz4Geom) lowPiece(c uint64) (lo, hi uint64) {
	lo = g.lows + c<<g.Shift
	if c == g.Chunks()-1 {
		return lo, g.lows + g.LowBytes()
	}
	return lo, lo + g.ChunkValues()
}

// sideSize is the side-piece size that a table entry's info word implies.
func sideSize(info uint32, m uint64) uint64 {
	if info>>layout.KindShift == layout.ChunkRaw {
		return layout.RawSide(m)
	}
	return uint64(info&layout.CountMask) * layout.EscapeSize
}

// lowByte is the kept sign+mantissa byte of a BF16 value.
func lowByte(v uint16) uint8 { return uint8(v>>8)&0x80 | uint8(v)&0x7F }

// encTables holds, for each of the 8 value slots of a 32-bit code word, the exponent → code table with the code
// already shifted into its nibble and bit 32+slot set for exponents that must be escaped: a code word and its
// escape test are then 8 lookups and ORs.
type encTables [8][256]uint64

// encodeTable builds the encoder's tables for a codebook.
func encodeTable(cb *Codebook) *encTables {
	var t encTables
	for j := range t {
		for e := range t[j] {
			t[j][e] = 1 << (32 + j)
		}
		for i, e := range cb {
			t[j][e] = uint64(i) << (4 * j)
		}
	}
	return &t
}

// lows4 packs the sign+mantissa bytes of the four BF16 values in x into 32 bits.
func lows4(x uint64) uint32 {
	l := x&0x007F007F007F007F | (x>>8)&0x0080008000800080
	l = (l | l>>8) & 0x0000FFFF0000FFFF
	return uint32(l | l>>16)
}

// escapes8 records the escapes among 8 values starting at value i (word w holds their codes, bit 32+j set for an
// escaped value j, whose code bits are zero) and returns the new escape count. Escapes beyond what a coded chunk
// can hold are counted but not written: the chunk will be raw.
func escapes8(i int, x, y, w uint64, side []byte, k, m int) int {
	for j := 0; j < 8; j++ {
		if w>>(32+j)&1 == 0 {
			continue
		}
		v := x
		if j >= 4 {
			v = y
		}
		e := uint8(v >> (7 + 16*(j&3)))
		if layout.CodedFits(uint64(m), uint64(k+1)) {
			binary.LittleEndian.PutUint32(side[4*k:], uint32(i+j)|uint32(e)<<layout.EscapeExpShift)
		}
		k++
	}
	return k
}

// sz4EncodeChunk encodes m values (src holds 2m bytes) into the chunk's code and low pieces (their exact ranges,
// padding included) and its side piece, written to side (capacity ≥ RawSide(m)). It returns the info word and the
// side length; dense pieces are fully written, padding zeroed.
func sz4EncodeChunk(src []byte, m int, codes, lows []byte, t *encTables, at *avx2EncTables, side []byte) (info uint32,
	sideLen int) {
	k := 0 // escapes found
	i := 0
	if at != nil && m >= 32 {
		// 32 values at a time in assembly; its escape masks name the values to record here.
		var masks [1 << layout.MaxChunkShift / 32]uint32
		blocks := m / 32
		encodeAVX2(&src[0], blocks, &codes[0], &lows[0], &masks[0], at)
		for b, mask := range masks[:blocks] {
			for ; mask != 0; mask &= mask - 1 {
				j := 32*b + bits.TrailingZeros32(mask)
				if layout.CodedFits(uint64(m), uint64(k+1)) {
					e := uint8(binary.LittleEndian.Uint16(src[2*j:]) >> 7)
					binary.LittleEndian.PutUint32(side[4*k:], uint32(j)|uint32(e)<<layout.EscapeExpShift)
				}
				k++
			}
		}
		i = 32 * blocks
	}
	// Slices advance with the loop so the compiler can drop the bounds checks.
	s, c, l := src[2*i:2*m], codes[i/2:], lows[i:]
	for ; len(s) >= 16 && len(c) >= 4 && len(l) >= 8; i += 8 {
		x := binary.LittleEndian.Uint64(s)
		y := binary.LittleEndian.Uint64(s[8:])
		w := t[0][uint8(x>>7)] | t[1][uint8(x>>23)] | t[2][uint8(x>>39)] | t[3][uint8(x>>55)] |
			t[4][uint8(y>>7)] | t[5][uint8(y>>23)] | t[6][uint8(y>>39)] | t[7][uint8(y>>55)]
		if w>>32 != 0 {
			k = escapes8(i, x, y, w, side, k, m)
		}
		binary.LittleEndian.PutUint32(c, uint32(w))
		binary.LittleEndian.PutUint64(l, uint64(lows4(x))|uint64(lows4(y))<<32)
		s, c, l = s[16:], c[4:], l[8:]
	}
	for ; i < m; i++ {
		v := binary.LittleEndian.Uint16(src[2*i:])
		e := uint8(v >> 7)
		w := t[0][e]
		cd := uint8(w)
		if w>>32 != 0 {
			if layout.CodedFits(uint64(m), uint64(k+1)) {
				binary.LittleEndian.PutUint32(side[4*k:], uint32(i)|uint32(e)<<layout.EscapeExpShift)
			}
			k++
		}
		if i&1 == 0 {
			codes[i/2] = cd
		} else {
			codes[i/2] |= cd << 4
		}
		lows[i] = lowByte(v)
	}
	clear(codes[(m+1)/2:])
	clear(lows[m:])
	if layout.CodedFits(uint64(m), uint64(k)) {
		return uint32(k), k * layout.EscapeSize
	}
	// Raw: the exponents themselves, first half in the code piece, second half in the side piece.
	head := int(layout.RawHead(uint64(m)))
	for j := 0; j < m; j++ {
		e := uint8(binary.LittleEndian.Uint16(src[2*j:]) >> 7)
		if j < head {
			codes[j] = e
		} else {
			side[j-head] = e
		}
	}
	clear(codes[head:])
	sideLen = int(layout.RawSide(uint64(m)))
	clear(side[m-head : sideLen])
	return layout.ChunkRaw << layout.KindShift, sideLen
}

// chunkCRC is the standard CRC-32C of a chunk: info, side offset, side piece, code piece, low piece, in that order
// (the variable-length part first, so GPU kernels can checksum the fixed pieces before it is placed).
func chunkCRC(info, sideOff uint32, side, codes, lows []byte) uint32 {
	var h [8]byte
	binary.LittleEndian.PutUint32(h[0:], info)
	binary.LittleEndian.PutUint32(h[4:], sideOff)
	c := crc32c.Checksum(h[:])
	c = crc32c.Update(c, side)
	c = crc32c.Update(c, codes)
	return crc32c.Update(c, lows)
}

// decodeTable maps each code byte (two codes) to the exponent bits of the two values it covers, in place.
func decodeTable(cb *Codebook) *[256]uint32 {
	var t [256]uint32
	for b := range t {
		t[b] = uint32(cb[b&15])<<7 | uint32(cb[b>>4])<<23
	}
	return &t
}

// spread4 places four sign+mantissa bytes in the sign and mantissa bits of four BF16 lanes.
func spread4(l32 uint32) uint64 {
	l := uint64(l32)
	l = (l | l<<16) & 0x0000FFFF0000FFFF
	l = (l | l<<8) & 0x00FF00FF00FF00FF
	return l&0x007F007F007F007F | (l&0x0080008000800080)<<8
}

// sz4DecodeChunk decodes one chunk into dst (2m bytes) and checks that it is canonical. The table entry has been
// validated structurally (side has exactly the size the info word implies). It returns nil or a non-canonical
// error; checksums are verified by the caller.
func sz4DecodeChunk(dst []byte, m int, info uint32, codes, lows, side []byte, cb *Codebook, ct *[256]uint8,
	dt *[256]uint32, cb32 *[32]byte, stream bool) error {
	if info>>layout.KindShift == layout.ChunkRaw {
		return sz4DecodeRaw(dst, m, codes, lows, side, ct)
	}
	i := 0
	if cb32 != nil && m >= 32 {
		decodeAVX2(&codes[0], &lows[0], m/32, &dst[0], cb32, stream)
		i = m &^ 31
	}
	d, cs, ls := dst[2*i:2*m], codes[i/2:], lows[i:]
	for ; len(d) >= 16 && len(cs) >= 4 && len(ls) >= 8; i += 8 {
		cw := binary.LittleEndian.Uint32(cs)
		l := binary.LittleEndian.Uint64(ls)
		x := uint64(dt[uint8(cw)]) | uint64(dt[uint8(cw>>8)])<<32
		y := uint64(dt[uint8(cw>>16)]) | uint64(dt[cw>>24])<<32
		binary.LittleEndian.PutUint64(d, x|spread4(uint32(l)))
		binary.LittleEndian.PutUint64(d[8:], y|spread4(uint32(l>>32)))
		d, cs, ls = d[16:], cs[4:], ls[8:]
	}
	for ; i < m; i++ {
		c := codes[i/2] >> (4 * (i & 1)) & 15
		l := uint16(lows[i])
		binary.LittleEndian.PutUint16(dst[2*i:], (l&0x80)<<8|uint16(cb[c])<<7|l&0x7F)
	}
	// Padding: the high nibble after an odd count, then whole bytes, in both streams.
	if m&1 == 1 && codes[m/2]>>4 != 0 {
		return errorf(ErrNonCanonical, "code padding nibble is not zero")
	}
	if !allZero(codes[(m+1)/2:]) || !allZero(lows[m:]) {
		return errorf(ErrNonCanonical, "stream padding is not zero")
	}
	k := int(info & layout.CountMask)
	if !layout.CodedFits(uint64(m), uint64(k)) {
		return errorf(ErrNonCanonical, "coded chunk with %d escapes should be raw", k)
	}
	prev := -1
	for j := 0; j < k; j++ {
		w := binary.LittleEndian.Uint32(side[4*j:])
		pos, e := int(w&layout.EscapePosMask), uint8(w>>layout.EscapeExpShift)
		switch {
		case w>>24 != 0:
			return errorf(ErrNonCanonical, "escape %d has a non-zero reserved byte", j)
		case pos >= m:
			return errorf(ErrNonCanonical, "escape %d at position %d beyond the chunk's %d values", j, pos, m)
		case pos <= prev:
			return errorf(ErrNonCanonical, "escape %d at position %d is not after position %d", j, pos, prev)
		case ct[e] != NoCode:
			return errorf(ErrNonCanonical, "escape %d carries exponent %d, which has a code", j, e)
		case codes[pos/2]>>(4*(pos&1))&15 != 0:
			return errorf(ErrNonCanonical, "escaped value %d has a non-zero code", pos)
		}
		prev = pos
		v := binary.LittleEndian.Uint16(dst[2*pos:])
		binary.LittleEndian.PutUint16(dst[2*pos:], v&^(0xFF<<7)|uint16(e)<<7)
	}
	return nil
}

func sz4DecodeRaw(dst []byte, m int, codes, lows, side []byte, ct *[256]uint8) error {
	head := int(layout.RawHead(uint64(m)))
	k := 0
	for j := 0; j < m; j++ {
		var e uint8
		if j < head {
			e = codes[j]
		} else {
			e = side[j-head]
		}
		if ct[e] == NoCode {
			k++
		}
		l := uint16(lows[j])
		binary.LittleEndian.PutUint16(dst[2*j:], (l&0x80)<<8|uint16(e)<<7|l&0x7F)
	}
	if !allZero(codes[head:]) || !allZero(lows[m:]) || !allZero(side[m-head:]) {
		return errorf(ErrNonCanonical, "raw chunk padding is not zero")
	}
	if layout.CodedFits(uint64(m), uint64(k)) {
		return errorf(ErrNonCanonical, "raw chunk with %d escapes should be coded", k)
	}
	return nil
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// sz4CheckTable validates the chunk table structurally: known kinds, raw entries with a zero count, side offsets
// that are the running sum of the side sizes, and a side section that ends exactly at the body's end. After it
// passes, every piece of every chunk lies inside the body.
func sz4CheckTable(body []byte, g *sz4Geom) error {
	return checkSideChain(body, g.table, g.side, g.Chunks(), g.ChunkLen, func(c uint64, info uint32, m uint64) (uint64, error) {
		switch kind := info >> layout.KindShift; {
		case kind > layout.ChunkRaw:
			return 0, chunkErr(ErrCorrupt, c, "unknown chunk kind %d", kind)
		case kind == layout.ChunkRaw && info&layout.CountMask != 0:
			return 0, chunkErr(ErrCorrupt, c, "raw chunk with a non-zero escape count")
		case kind == layout.ChunkCoded && uint64(info&layout.CountMask) > m:
			return 0, chunkErr(ErrCorrupt, c, "%d escapes in a chunk of %d values", info&layout.CountMask, m)
		}
		return sideSize(info, m), nil
	})
}

// checkSZ4Table validates a SplitZip-4 body's chunk table structurally (docs/FORMAT.md §5.3): what a GPU backend
// checks on the host before it dispatches, so its errors read like the reference's.
func checkSZ4Table(body []byte, n uint64, shift uint) error {
	g := newSZ4Geom(n, shift)
	return sz4CheckTable(body, &g)
}

func init() {
	RegisterFormat(Format{ID: layout.FormatSplitZip4, Name: "splitzip4", Aliases: []string{"sz4"},
		About: "BF16: 4-bit exponent codes from a calibrated top-16 codebook, sign+mantissa bytes kept, " +
			"rare exponents escaped (SplitZip); about 1.33x on KV caches",
		DTypes: []layout.DType{layout.DTypeBF16}, MinShift: layout.MinChunkShift, MaxShift: layout.MaxChunkShift,
		Codebook: true, MaxValues: layout.MaxCodedValues,
		BodyBounds: func(n uint64, _ layout.DType, shift uint) (uint64, uint64) {
			g := layout.SZ4{N: n, Shift: shift}
			return g.MinBodySize(), g.MaxBodySize()
		},
		Table: func(_ layout.DType, n uint64, shift uint) (uint64, uint64, bool) {
			g := newSZ4Geom(n, shift)
			return g.table, g.Chunks(), true
		},
		CPU: sz4CPU{}, Chunks: sz4Chunks, CheckBody: func(body []byte, _ layout.DType, n uint64, shift uint) error { return checkSZ4Table(body, n, shift) }, ChunkBodySize: sz4ChunkBodySize, planned: true})
}

// sz4Chunks lists a SplitZip-4 body's chunk table.
func sz4Chunks(body []byte, _ layout.DType, n uint64, shift uint) ([]ChunkInfo, error) {
	g := newSZ4Geom(n, shift)
	if err := sz4CheckTable(body, &g); err != nil {
		return nil, err
	}
	out := make([]ChunkInfo, g.Chunks())
	for c := range out {
		e := body[g.table+uint64(c)*layout.ChunkEntrySize:]
		info := binary.LittleEndian.Uint32(e[4*layout.EntryInfo:])
		out[c] = ChunkInfo{Format: "splitzip4", Kind: "coded", Values: g.ChunkLen(uint64(c)),
			Escapes:    uint64(info & layout.CountMask),
			SideOffset: binary.LittleEndian.Uint32(e[4*layout.EntrySideOff:]),
			CRC:        binary.LittleEndian.Uint32(e[4*layout.EntryCRC:])}
		if info>>layout.KindShift == layout.ChunkRaw {
			out[c].Kind = "raw"
		}
	}
	return out, nil
}

// sizeTables caches the escape tables of the codebooks chunk sizes are computed for.
var sizeTables CPUBackend

// sz4ChunkBodySize is the SplitZip-4 body of one chunk of m values: its dense streams and entry, plus the escapes
// or, when they do not fit, the raw side piece.
func sz4ChunkBodySize(src []byte, _ layout.DType, m int, shift uint, cb *Codebook) uint64 {
	g := layout.SZ4{N: uint64(m), Shift: shift}
	t := sizeTables.tablesFor(cb)
	k := uint64(countEscapes(src, m, t.et, t.at))
	if layout.CodedFits(uint64(m), k) {
		return g.SideOffset() + layout.EscapeSize*k
	}
	return g.SideOffset() + layout.RawSide(uint64(m))
}
