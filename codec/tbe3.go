package codec

import (
	"encoding/binary"
	"math/bits"

	"github.com/vkzip/vkzip/codec/layout"
)

// TBE-3 reference codec (docs/FORMAT.md §12), one chunk at a time. A body of N values is laid out as
//
//	plane stream  24 bytes per 64-value tile   per chunk: plane 0 of its tiles, then plane 1, then plane 2
//	SM stream     N bytes, padded to 4         (sign<<7 | mantissa) of value i
//	chunk table   12 bytes per chunk           info (kind<<24 | window<<16 | fallbacks), side offset, CRC-32C
//	side section  per chunk: fallback exponents (coded) or the exponents past the plane piece (raw), padded to 4
//
// A chunk's value with exponent e in its window [w, w+6] has code e-w+1; code 0 marks a fallback whose exponent
// is the next byte of the chunk's side piece. Chunk c owns a fixed slice of both dense streams, so they are written
// without knowing any other chunk; only side offsets need the prefix sum of side sizes.

// tbe3Geom is the per-body geometry shared by the encoder, decoder and validator.
type tbe3Geom struct {
	layout.TBE3
	sm, table, side uint64 // stream offsets in the body (planes start at 0)
}

func newTBE3Geom(n uint64, shift uint) tbe3Geom {
	t := layout.TBE3{N: n, Shift: shift}
	return tbe3Geom{TBE3: t, sm: t.PlaneBytes(), table: t.TableOffset(), side: t.SideOffset()}
}

// planePiece is chunk c's byte range of the plane stream (absolute offsets in the body).
func (g *tbe3Geom) planePiece(c uint64) (lo, hi uint64) {
	lo = c * layout.TBE3PlanePiece(g.ChunkValues())
	return lo, lo + layout.TBE3PlanePiece(g.ChunkLen(c))
}

// smPiece is chunk c's byte range of the SM stream; the last chunk's runs to the padded end.
func (g *tbe3Geom) smPiece(c uint64) (lo, hi uint64) {
	lo = g.sm + c<<g.Shift
	if c == g.Chunks()-1 {
		return lo, g.sm + g.SMBytes()
	}
	return lo, lo + g.ChunkValues()
}

// tbe3SideSize is the side-piece size that a (structurally valid) info word implies.
func tbe3SideSize(info uint32, m uint64) uint64 {
	if info>>layout.KindShift == layout.ChunkRaw {
		return layout.TBE3RawSide(m)
	}
	return layout.Align4(uint64(info & layout.TBE3CountMask))
}

// tbe3Window returns the start of the 7-exponent window covering the most values of the histogram (the lowest
// start among equals) and how many values it covers.
func tbe3Window(h *[256]uint32) (start int, covered uint32) {
	var sum uint32
	for e := 0; e < layout.TBE3Window; e++ {
		sum += h[e]
	}
	covered = sum
	for s := 1; s <= layout.TBE3MaxWindowStart; s++ {
		sum += h[s+layout.TBE3Window-1] - h[s-1]
		if sum > covered { // strictly more: ties keep the lower start
			start, covered = s, sum
		}
	}
	return start, covered
}

// expHistogram counts the exponents of m BF16 values.
func expHistogram(src []byte, m int) *[256]uint32 {
	var h [256]uint32
	s := src[:2*m]
	for ; len(s) >= 8; s = s[8:] {
		x := binary.LittleEndian.Uint64(s)
		h[uint8(x>>7)]++
		h[uint8(x>>23)]++
		h[uint8(x>>39)]++
		h[uint8(x>>55)]++
	}
	for ; len(s) >= 2; s = s[2:] {
		h[uint8(binary.LittleEndian.Uint16(s)>>7)]++
	}
	return &h
}

// tbe3EncodeChunk encodes m values (src holds 2m bytes) into the chunk's plane piece (exactly TBE3PlanePiece(m)
// bytes), its SM piece (padding included) and its side piece, written to side (capacity ≥ TBE3RawSide(m)). It
// returns the info word and the side length; every byte of the pieces is written.
func tbe3EncodeChunk(src []byte, m int, planes, sm, side []byte) (info uint32, sideLen int) {
	h := expHistogram(src, m)
	w, covered := tbe3Window(h)
	k := m - int(covered)
	clear(sm[m:])
	if !layout.TBE3CodedFits(uint64(m), uint64(k)) {
		for i := 0; i < m; i++ {
			sm[i] = lowByte(binary.LittleEndian.Uint16(src[2*i:]))
		}
		// Raw: the exponents themselves, as many as fit in the plane piece there, the rest in the side piece.
		p := len(planes)
		sideLen = int(layout.TBE3RawSide(uint64(m)))
		clear(planes)
		clear(side[:sideLen])
		for i := 0; i < m; i++ {
			e := uint8(binary.LittleEndian.Uint16(src[2*i:]) >> 7)
			if i < p {
				planes[i] = e
			} else {
				side[i-p] = e
			}
		}
		return layout.ChunkRaw << layout.KindShift, sideLen
	}
	// code[e] is e's code, 0 outside the window (a fallback).
	var code [256]uint8
	for c := 1; c <= layout.TBE3Window; c++ {
		code[w+c-1] = uint8(c)
	}
	tiles := (m + layout.TBE3TileValues - 1) / layout.TBE3TileValues
	r := 0
	for t := 0; t < tiles; t++ {
		var p0, p1, p2 uint64
		base := t * layout.TBE3TileValues
		n := min(layout.TBE3TileValues, m-base)
		g := 0
		// Eight values at a time: their codes as the bytes of a word, whose bit-planes come out by multiplication.
		for vals, out := src[2*base:2*(base+n)], sm[base:base+n]; len(vals) >= 16; g += 8 {
			x := binary.LittleEndian.Uint64(vals)
			y := binary.LittleEndian.Uint64(vals[8:])
			cw := uint64(code[uint8(x>>7)]) | uint64(code[uint8(x>>23)])<<8 | uint64(code[uint8(x>>39)])<<16 |
				uint64(code[uint8(x>>55)])<<24 | uint64(code[uint8(y>>7)])<<32 | uint64(code[uint8(y>>23)])<<40 |
				uint64(code[uint8(y>>39)])<<48 | uint64(code[uint8(y>>55)])<<56
			p0 |= bitsOf(cw, 0) << g
			p1 |= bitsOf(cw, 1) << g
			p2 |= bitsOf(cw, 2) << g
			if hasZeroByte(cw) {
				for j := 0; j < 8; j++ {
					if cw>>(8*j)&0xFF == 0 {
						side[r] = uint8(binary.LittleEndian.Uint16(vals[2*j:]) >> 7)
						r++
					}
				}
			}
			binary.LittleEndian.PutUint64(out, uint64(lows4(x))|uint64(lows4(y))<<32)
			vals, out = vals[16:], out[8:]
		}
		for ; g < n; g++ {
			v := binary.LittleEndian.Uint16(src[2*(base+g):])
			sm[base+g] = lowByte(v)
			e := uint8(v >> 7)
			c := uint64(code[e])
			p0 |= (c & 1) << g
			p1 |= (c >> 1 & 1) << g
			p2 |= (c >> 2) << g
			if c == 0 {
				side[r] = e
				r++
			}
		}
		binary.LittleEndian.PutUint64(planes[8*t:], p0)
		binary.LittleEndian.PutUint64(planes[8*(tiles+t):], p1)
		binary.LittleEndian.PutUint64(planes[8*(2*tiles+t):], p2)
	}
	sideLen = int(layout.Align4(uint64(k)))
	clear(side[k:sideLen])
	return uint32(w)<<layout.TBE3WindowShift | uint32(k), sideLen
}

const ones = 0x0101010101010101

// bitsOf gathers bit b of each byte of x into one byte (byte i gives bit i): the eight products of the multiply
// land on distinct bits, so nothing carries into the top byte.
func bitsOf(x uint64, b uint) uint64 { return (x >> b & ones) * 0x0102040810204080 >> 56 }

// hasZeroByte reports whether any byte of x is zero.
func hasZeroByte(x uint64) bool { return (x-ones)&^x&0x8080808080808080 != 0 }

// spreadBits[b] has bit i of b in bit 0 of byte i: one byte of a bit-plane as eight code bits.
var spreadBits = func() (t [256]uint64) {
	for b := range t {
		for i := 0; i < 8; i++ {
			t[b] |= uint64(b>>i&1) << (8 * i)
		}
	}
	return t
}()

// bytesTo16 widens four bytes to the low bytes of four 16-bit lanes.
func bytesTo16(x uint32) uint64 {
	l := uint64(x)
	l = (l | l<<16) & 0x0000FFFF0000FFFF
	return (l | l<<8) & 0x00FF00FF00FF00FF
}

// tbe3DecodeChunk decodes one chunk into dst (2m bytes) and checks that it is canonical. The table entry has been
// validated structurally (side has exactly the size the info word implies). It returns nil or a non-canonical
// error; checksums are verified by the caller.
func tbe3DecodeChunk(dst []byte, m int, info uint32, planes, sm, side []byte) error {
	var h [256]uint32
	if info>>layout.KindShift == layout.ChunkRaw {
		p := len(planes)
		for i := 0; i < m; i++ {
			var e uint8
			if i < p {
				e = planes[i]
			} else {
				e = side[i-p]
			}
			h[e]++
			l := uint16(sm[i])
			binary.LittleEndian.PutUint16(dst[2*i:], (l&0x80)<<8|uint16(e)<<7|l&0x7F)
		}
		if m < p && !allZero(planes[m:]) || m > p && !allZero(side[m-p:]) || !allZero(sm[m:]) {
			return errorf(ErrNonCanonical, "raw chunk padding is not zero")
		}
		if _, covered := tbe3Window(&h); layout.TBE3CodedFits(uint64(m), uint64(m)-uint64(covered)) {
			return errorf(ErrNonCanonical, "raw chunk with %d fallbacks should be coded", uint64(m)-uint64(covered))
		}
		return nil
	}
	w := int(info >> layout.TBE3WindowShift & layout.TBE3WindowMask)
	k := int(info & layout.TBE3CountMask)
	if !layout.TBE3CodedFits(uint64(m), uint64(k)) {
		return errorf(ErrNonCanonical, "coded chunk with %d fallbacks should be raw", k)
	}
	// Exponent bytes of eight coded values are their codes plus w-1, added bytewise without carries (codes are
	// 1..7 and w ≤ 249); w = 0 subtracts 1 instead.
	add, sub := uint64(max(w-1, 0))*ones, uint64(0)
	if w == 0 {
		sub = ones
	}
	tiles := (m + layout.TBE3TileValues - 1) / layout.TBE3TileValues
	r := 0
	for t := 0; t < tiles; t++ {
		p0 := binary.LittleEndian.Uint64(planes[8*t:])
		p1 := binary.LittleEndian.Uint64(planes[8*(tiles+t):])
		p2 := binary.LittleEndian.Uint64(planes[8*(2*tiles+t):])
		base := t * layout.TBE3TileValues
		n := min(layout.TBE3TileValues, m-base)
		valid := ^uint64(0)
		if n < layout.TBE3TileValues {
			valid = 1<<n - 1
		}
		if (p0|p1|p2)&^valid != 0 {
			return errorf(ErrNonCanonical, "plane bits past the chunk's last value")
		}
		// Fallbacks of the tile: the zero codes among its n values.
		z := ^(p0 | p1 | p2) & valid
		if r+bits.OnesCount64(z) > k {
			return errorf(ErrNonCanonical, "more zero codes than the %d fallbacks the table declares", k)
		}
		// The histogram of coded values, by code.
		for c := 1; c <= layout.TBE3Window; c++ {
			mc := valid
			for b, p := range [3]uint64{p0, p1, p2} {
				if c>>b&1 == 0 {
					p = ^p
				}
				mc &= p
			}
			h[w+c-1] += uint32(bits.OnesCount64(mc))
		}
		out := dst[2*base : 2*(base+n)]
		lows := sm[base : base+n]
		g := 0
		for ; g+8 <= n; g += 8 {
			cw := spreadBits[uint8(p0>>g)] | spreadBits[uint8(p1>>g)]<<1 | spreadBits[uint8(p2>>g)]<<2
			zb := uint8(z >> g)
			// Fallback bytes become code 1 for the bytewise add, then take their exponents from the side piece.
			ew := (cw | spreadBits[zb]) + add - sub
			for ; zb != 0; zb &= zb - 1 {
				j := bits.TrailingZeros8(zb)
				e := int(side[r])
				r++
				if e >= w && e < w+layout.TBE3Window {
					return errorf(ErrNonCanonical, "fallback %d carries exponent %d, inside the window [%d, %d]",
						r-1, e, w, w+layout.TBE3Window-1)
				}
				h[e]++
				ew = ew&^(0xFF<<(8*j)) | uint64(e)<<(8*j)
			}
			l := binary.LittleEndian.Uint64(lows[g:])
			binary.LittleEndian.PutUint64(out[2*g:], spread4(uint32(l))|bytesTo16(uint32(ew))<<7)
			binary.LittleEndian.PutUint64(out[2*g+8:], spread4(uint32(l>>32))|bytesTo16(uint32(ew>>32))<<7)
		}
		for ; g < n; g++ {
			c := int(p0>>g&1 | (p1>>g&1)<<1 | (p2>>g&1)<<2)
			var e int
			if c == 0 {
				e = int(side[r])
				r++
				if e >= w && e < w+layout.TBE3Window {
					return errorf(ErrNonCanonical, "fallback %d carries exponent %d, inside the window [%d, %d]",
						r-1, e, w, w+layout.TBE3Window-1)
				}
				h[e]++
			} else {
				e = w + c - 1
			}
			l := uint16(lows[g])
			binary.LittleEndian.PutUint16(out[2*g:], (l&0x80)<<8|uint16(e)<<7|l&0x7F)
		}
	}
	switch {
	case r != k:
		return errorf(ErrNonCanonical, "%d zero codes for %d declared fallbacks", r, k)
	case !allZero(side[k:]) || !allZero(sm[m:]):
		return errorf(ErrNonCanonical, "padding is not zero")
	}
	if best, _ := tbe3Window(&h); best != w {
		return errorf(ErrNonCanonical, "window starts at %d; the best window starts at %d", w, best)
	}
	return nil
}

// tbe3CheckTable validates the chunk table structurally: known kinds, raw entries with no other bits, coded
// entries with a window that fits and a count within the chunk, side offsets that are the running sum of the side
// sizes, and a side section that ends exactly at the body's end. After it passes, every piece of every chunk lies
// inside the body.
func tbe3CheckTable(body []byte, g *tbe3Geom) error {
	return checkSideChain(body, g.table, g.side, g.Chunks(), g.ChunkLen, func(c uint64, info uint32, m uint64) (uint64, error) {
		kind := info >> layout.KindShift
		w := info >> layout.TBE3WindowShift & layout.TBE3WindowMask
		switch {
		case kind > layout.ChunkRaw:
			return 0, chunkErr(ErrCorrupt, c, "unknown chunk kind %d", kind)
		case kind == layout.ChunkRaw && info&^(0xFF<<layout.KindShift) != 0:
			return 0, chunkErr(ErrCorrupt, c, "raw chunk with a window or fallback count")
		case kind == layout.ChunkCoded && w > layout.TBE3MaxWindowStart:
			return 0, chunkErr(ErrCorrupt, c, "window start %d beyond %d", w, layout.TBE3MaxWindowStart)
		case kind == layout.ChunkCoded && uint64(info&layout.TBE3CountMask) > m:
			return 0, chunkErr(ErrCorrupt, c, "%d fallbacks in a chunk of %d values", info&layout.TBE3CountMask, m)
		}
		return tbe3SideSize(info, m), nil
	})
}

// checkTBE3Table validates a TBE-3 body's chunk table structurally: what a GPU backend checks on the host before
// it dispatches, so its errors read like the reference's.
func checkTBE3Table(body []byte, n uint64, shift uint) error {
	g := newTBE3Geom(n, shift)
	return tbe3CheckTable(body, &g)
}

// checkTBE3Params refuses value counts and chunk sizes no TBE-3 body has; cls is the class to report.
func checkTBE3Params(n uint64, shift uint, cls error) error {
	switch {
	case shift < layout.MinChunkShift || shift > layout.MaxChunkShift:
		return errorf(cls, "chunk shift %d outside [%d, %d]", shift, layout.MinChunkShift, layout.MaxChunkShift)
	case n > layout.MaxCodedValues:
		return errorf(ErrTooLarge, "%d values exceed the coded-tensor limit", n)
	}
	return nil
}

// tbe3Chunk is what one chunk's encoding produced: its table entry (side offset still to be set) and its side
// piece, which goes to the side section once the side offsets (a prefix sum over chunks) are known.
type tbe3Chunk struct {
	Info uint32
	Side []byte
}

// encodeTBE3Chunk encodes chunk c of n values (src: all 2n bytes of the tensor) into its fixed pieces of body
// (capacity for the dense streams at least) and into side (capacity ≥ TBE3RawSide of its length). Chunks are
// independent: call it for every chunk in parallel, then place the side pieces with finishTBE3.
func encodeTBE3Chunk(body, src []byte, n uint64, shift uint, c uint64, side []byte) tbe3Chunk {
	g := newTBE3Geom(n, shift)
	m := g.ChunkLen(c)
	pl, ph := g.planePiece(c)
	sl, sh := g.smPiece(c)
	v := c << shift
	info, sideLen := tbe3EncodeChunk(src[2*v:2*(v+m)], int(m), body[pl:ph], body[sl:sh], side)
	return tbe3Chunk{Info: info, Side: side[:sideLen]}
}

// finishTBE3 writes the chunk table and side section behind the dense streams (body needs capacity
// TBE3.MaxBodySize) and the chunk checksums (0 without checksums), and returns the body.
func finishTBE3(body []byte, n uint64, shift uint, chunks []tbe3Chunk, checksums bool) []byte {
	g := newTBE3Geom(n, shift)
	body = body[:cap(body)]
	off := uint64(0)
	for c := range chunks {
		ch := &chunks[c]
		e := body[g.table+uint64(c)*layout.ChunkEntrySize:]
		copy(body[g.side+off:], ch.Side)
		binary.LittleEndian.PutUint32(e[4*layout.EntryInfo:], ch.Info)
		binary.LittleEndian.PutUint32(e[4*layout.EntrySideOff:], uint32(off))
		var crc uint32
		if checksums {
			pl, ph := g.planePiece(uint64(c))
			sl, sh := g.smPiece(uint64(c))
			crc = chunkCRC(ch.Info, uint32(off), ch.Side, body[pl:ph], body[sl:sh])
		}
		binary.LittleEndian.PutUint32(e[4*layout.EntryCRC:], crc)
		off += uint64(len(ch.Side))
	}
	return body[:g.side+off]
}

// encodeTBE3 encodes n BF16 values (src, little-endian, 2n bytes) as a TBE-3 body with chunks of 2^shift values
// into dst (capacity ≥ layout.TBE3.MaxBodySize) and returns the body, a prefix of dst.
func encodeTBE3(dst, src []byte, n uint64, shift uint, checksums bool) ([]byte, error) {
	if err := checkTBE3Params(n, shift, ErrInvalidInput); err != nil {
		return nil, err
	}
	g := newTBE3Geom(n, shift)
	switch {
	case n == 0:
		return nil, errorf(ErrInvalidInput, "an empty tensor has no TBE-3 body (it is stored)")
	case uint64(len(src)) < 2*n:
		return nil, errorf(ErrInvalidInput, "source of %d bytes for %d values", len(src), n)
	case uint64(cap(dst)) < g.MaxBodySize():
		return nil, errorf(ErrInvalidInput, "destination capacity %d below the %d-byte bound", cap(dst), g.MaxBodySize())
	}
	body := dst[:cap(dst)]
	// Side pieces go straight to their final place: sequentially, each offset is the running sum so far.
	chunks := make([]tbe3Chunk, g.Chunks())
	off := g.side
	for c := range chunks {
		chunks[c] = encodeTBE3Chunk(body, src, n, shift, uint64(c), body[off:])
		off += uint64(len(chunks[c].Side))
	}
	return finishTBE3(body, n, shift, chunks, checksums), nil
}

// decodeTBE3 decodes and validates a TBE-3 body of n values into dst (2n bytes). Errors are *Error values of the
// classes of docs/FORMAT.md §12: structural table errors first, then checksums, then the canonical-form rules,
// each at the lowest chunk that has one.
func decodeTBE3(dst, body []byte, n uint64, shift uint, checksums bool) error {
	if uint64(len(dst)) != 2*n {
		return errorf(ErrInvalidInput, "destination of %d bytes for %d values", len(dst), n)
	}
	if err := checkTBE3Body(body, n, shift); err != nil {
		return err
	}
	g := newTBE3Geom(n, shift)
	if checksums {
		for c := uint64(0); c < g.Chunks(); c++ {
			if err := tbe3ChunkChecksum(body, n, shift, c); err != nil {
				return err
			}
		}
	}
	for c := uint64(0); c < g.Chunks(); c++ {
		if err := decodeTBE3Chunk(dst, body, n, shift, c, checksums); err != nil {
			return err
		}
	}
	return nil
}

// tbe3Pieces are chunk c's entry words and pieces in a body whose table has passed tbe3CheckTable.
func (g *tbe3Geom) pieces(body []byte, c uint64) (info, off, crc uint32, side, planes, sm []byte) {
	e := body[g.table+c*layout.ChunkEntrySize:]
	info = binary.LittleEndian.Uint32(e[4*layout.EntryInfo:])
	off = binary.LittleEndian.Uint32(e[4*layout.EntrySideOff:])
	crc = binary.LittleEndian.Uint32(e[4*layout.EntryCRC:])
	so := g.side + uint64(off)
	side = body[so : so+tbe3SideSize(info, g.ChunkLen(c))]
	pl, ph := g.planePiece(c)
	sl, sh := g.smPiece(c)
	return info, off, crc, side, body[pl:ph], body[sl:sh]
}

// tbe3ChunkChecksum verifies chunk c's CRC-32C (table already validated with checkTBE3Table).
func tbe3ChunkChecksum(body []byte, n uint64, shift uint, c uint64) error {
	g := newTBE3Geom(n, shift)
	info, off, crc, side, planes, sm := g.pieces(body, c)
	if got := chunkCRC(info, off, side, planes, sm); got != crc {
		return chunkErr(ErrChecksum, c, "chunk CRC-32C %08x, stored %08x", got, crc)
	}
	return nil
}

// decodeTBE3Chunk decodes chunk c into its values of dst (2n bytes) and checks its canonical-form rules (table
// already validated with checkTBE3Table; checksums verified separately). Chunks are independent.
func decodeTBE3Chunk(dst, body []byte, n uint64, shift uint, c uint64, checksums bool) error {
	g := newTBE3Geom(n, shift)
	info, _, crc, side, planes, sm := g.pieces(body, c)
	m := g.ChunkLen(c)
	v := c << shift
	if err := tbe3DecodeChunk(dst[2*v:2*(v+m)], int(m), info, planes, sm, side); err != nil {
		err.(*Error).Chunk = int64(c)
		return err
	}
	if !checksums && crc != 0 {
		return chunkErr(ErrNonCanonical, c, "CRC field %08x in a payload without checksums", crc)
	}
	return nil
}

// checkTBE3Body runs the checks of decodeTBE3 that need no chunk data — parameters, body length, the chunk table,
// an empty tensor — so a GPU backend reports those exactly as the reference does before it dispatches.
func checkTBE3Body(body []byte, n uint64, shift uint) error {
	if err := checkTBE3Params(n, shift, ErrCorrupt); err != nil {
		return err
	}
	g := newTBE3Geom(n, shift)
	if uint64(len(body)) > g.MaxBodySize() || len(body)%4 != 0 {
		return errorf(ErrCorrupt, "body of %d bytes for %d values (at most %d, a multiple of 4)", len(body), n,
			g.MaxBodySize())
	}
	if err := tbe3CheckTable(body, &g); err != nil {
		return err
	}
	if n == 0 {
		return errorf(ErrNonCanonical, "an empty tensor is stored, never TBE-3")
	}
	return nil
}
