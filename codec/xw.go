package codec

import (
	"context"
	"encoding/binary"

	"github.com/vkzip/vkzip/codec/layout"
)

// Exponent-window formats xw2, xw3, xw4 (ids 9, 8, 10) for F8_E5M2, F8_E4M3, F16 and F32: the reference codec, one
// chunk at a time (docs/FORMAT.md §13). A value of B = 1+E+M bits has exponent field x and rest
// r = sign<<M | mantissa (K = M+1 bits). A body of N values is:
//
//	plane stream  P words per group of 32 values: W code planes, then the top KP bits of r as planes
//	byte stream   KB bytes per value (the low 8·KB bits of r), padded to 4
//	chunk table   12 bytes per chunk: info (kind<<24 | base<<16 | escapes), side offset, CRC-32C
//	side section  per chunk: escaped exponents as E planes per 32 escapes (coded), or the high E-W bits of every
//	              exponent as planes (raw)
//
// A coded chunk's code is x-base+1 for x in its window [base, base+2^W-2] and 0 (escape) otherwise; escapes are
// kept in value order, so a decoder finds escape j's exponent by counting the zero codes before it.

// xwGeom is the per-body geometry shared by encoder, decoder and validator.
type xwGeom struct {
	layout.XW
	size                      int // dtype bytes
	planes, lows, table, side uint64
}

func newXWGeom(f uint8, dt layout.DType, n uint64, shift uint) (xwGeom, bool) {
	x, ok := layout.NewXW(f, dt, n, shift)
	if !ok {
		return xwGeom{}, false
	}
	return xwGeom{XW: x, size: dt.Size(), planes: 0, lows: x.PlaneBytes(), table: x.TableOffset(),
		side: x.SideOffset()}, true
}

// planePiece is chunk c's byte range of the plane stream (absolute offsets in the body).
func (g *xwGeom) planePiece(c uint64) (lo, hi uint64) {
	pg := 4 * uint64(g.Planes()) // bytes per group
	lo = c << g.Shift / layout.XWGroup * pg
	if c == g.Chunks()-1 {
		return lo, g.PlaneBytes()
	}
	return lo, lo + g.ChunkValues()/layout.XWGroup*pg
}

// lowPiece is chunk c's byte range of the byte stream (absolute offsets in the body; empty when KB is 0).
func (g *xwGeom) lowPiece(c uint64) (lo, hi uint64) {
	kb := uint64(g.KB())
	lo = g.lows + c<<g.Shift*kb
	if c == g.Chunks()-1 {
		return lo, g.lows + g.LowBytes()
	}
	return lo, lo + g.ChunkValues()*kb
}

// sideSize is the side-piece size that a table entry's info word implies.
func (g *xwGeom) sideSize(info uint32, m uint64) uint64 {
	if info>>layout.KindShift == layout.ChunkRaw {
		return g.RawSide(m)
	}
	return g.CodedSide(uint64(info & layout.XWCountMask))
}

func loadValue(src []byte, i, size int) uint32 {
	switch size {
	case 1:
		return uint32(src[i])
	case 2:
		return uint32(binary.LittleEndian.Uint16(src[2*i:]))
	}
	return binary.LittleEndian.Uint32(src[4*i:])
}

func storeValue(dst []byte, i, size int, v uint32) {
	switch size {
	case 1:
		dst[i] = uint8(v)
	case 2:
		binary.LittleEndian.PutUint16(dst[2*i:], uint16(v))
	default:
		binary.LittleEndian.PutUint32(dst[4*i:], v)
	}
}

// expHistogram counts the exponent fields of m values.
func (g *xwGeom) expHistogram(src []byte, m int) *[256]uint32 {
	var h [256]uint32
	emask, sh := uint32(1)<<g.E-1, g.M
	switch g.size {
	case 1:
		for _, v := range src[:m] {
			h[uint32(v)>>sh&emask]++
		}
	case 2:
		for i := 0; i < 2*m; i += 2 {
			h[uint32(binary.LittleEndian.Uint16(src[i:]))>>sh&emask]++
		}
	default:
		for i := 0; i < 4*m; i += 4 {
			h[binary.LittleEndian.Uint32(src[i:])>>sh&emask]++
		}
	}
	return &h
}

// loadGroup reads n ≤ 32 values starting at value i0 into v, zeroing the rest.
func (g *xwGeom) loadGroup(src []byte, i0, n int, v *[layout.XWGroup]uint32) {
	switch g.size {
	case 1:
		for i, b := range src[i0 : i0+n] {
			v[i] = uint32(b)
		}
	case 2:
		s := src[2*i0 : 2*(i0+n)]
		for i := 0; i < n; i++ {
			v[i] = uint32(binary.LittleEndian.Uint16(s[2*i:]))
		}
	default:
		s := src[4*i0 : 4*(i0+n)]
		for i := 0; i < n; i++ {
			v[i] = binary.LittleEndian.Uint32(s[4*i:])
		}
	}
	clear(v[n:])
}

// transpose8 transposes the 8×8 bit matrix whose row i is byte i of x (Hacker's Delight 7-3): bit j of byte i
// moves to bit i of byte j. Eight values' P-bit symbols become P plane bytes, and back.
func transpose8(x uint64) uint64 {
	t := (x ^ x>>7) & 0x00AA00AA00AA00AA
	x ^= t ^ t<<7
	t = (x ^ x>>14) & 0x0000CCCC0000CCCC
	x ^= t ^ t<<14
	t = (x ^ x>>28) & 0x00000000F0F0F0F0
	return x ^ t ^ t<<28
}

// maxPlanes bounds P = W + KP over the defined (format, dtype) pairs (7: E5M2 with W = 4, E4M3 with W = 3, F16
// with W = 4), so a value's plane bits fit a byte.
const maxPlanes = 8

// bestWindow is the canonical window: the base b in [0, MaxBase] whose 2^W-1 exponents [b, b+2^W-2] hold the most
// values, the lowest such b on ties. It returns b and how many values the window holds.
func (g *xwGeom) bestWindow(h *[256]uint32) (base uint32, in uint64) {
	win := g.Window()
	var s uint64
	for e := uint(0); e < win; e++ {
		s += uint64(h[e])
	}
	in = s
	for b := uint(1); b <= g.MaxBase(); b++ {
		s += uint64(h[b+win-1]) - uint64(h[b-1])
		if s > in {
			base, in = uint32(b), s
		}
	}
	return base, in
}

func orBit(b []byte, word uint64, bit uint) {
	p := b[4*word:]
	binary.LittleEndian.PutUint32(p, binary.LittleEndian.Uint32(p)|1<<bit)
}

// encodeChunk encodes m values (src) into the chunk's plane and byte pieces (their exact ranges, padding
// included) and its side piece, written to side (capacity ≥ RawSide(m)). It returns the info word and the side
// length.
func (g *xwGeom) encodeChunk(src []byte, m int, planes, lows, side []byte) (info uint32, sideLen int) {
	h := g.expHistogram(src, m)
	base, in := g.bestWindow(h)
	k := uint64(m) - in
	coded := g.CodedFits(uint64(m), k)
	if coded {
		info, sideLen = uint32(base)<<layout.XWBaseShift|uint32(k), int(g.CodedSide(k))
	} else {
		info, sideLen = layout.ChunkRaw<<layout.KindShift, int(g.RawSide(uint64(m)))
	}
	clear(side[:sideLen])
	E, M, W, KB, P := g.E, g.M, g.W, int(g.KB()), int(g.Planes())
	emask, mmask, wmask := uint32(1)<<E-1, uint32(1)<<M-1, uint32(1)<<W-1
	win := uint32(g.Window())
	sbit, topShift := uint(8*g.size-1), 8*uint(KB)
	var j uint64 // escapes so far
	var v [layout.XWGroup]uint32
	var sym [layout.XWGroup]uint8 // code | top bits of r << W
	for g0 := 0; g0 < m; g0 += layout.XWGroup {
		gi := g0 / layout.XWGroup
		n := min(layout.XWGroup, m-g0)
		g.loadGroup(src, g0, n, &v)
		for i := 0; i < n; i++ {
			x := v[i] >> M & emask
			r := v[i]>>sbit<<M | v[i]&mmask
			var code uint32
			switch {
			case !coded:
				code = x & wmask
				for t, hi := uint64(0), x>>W; hi != 0; t, hi = t+1, hi>>1 {
					if hi&1 != 0 {
						orBit(side, uint64(gi)*uint64(E-W)+t, uint(i))
					}
				}
			case x-base < win:
				code = x - base + 1
			default:
				for t, e := uint64(0), x; e != 0; t, e = t+1, e>>1 {
					if e&1 != 0 {
						orBit(side, j/layout.XWGroup*uint64(E)+t, uint(j%layout.XWGroup))
					}
				}
				j++
			}
			sym[i] = uint8(code | r>>topShift<<W)
			switch KB {
			case 1:
				lows[g0+i] = uint8(r)
			case 3:
				lows[3*(g0+i)] = uint8(r)
				lows[3*(g0+i)+1] = uint8(r >> 8)
				lows[3*(g0+i)+2] = uint8(r >> 16)
			}
		}
		clear(sym[n:])
		var pw [maxPlanes]uint32
		for blk := 0; blk < 4; blk++ {
			t := transpose8(binary.LittleEndian.Uint64(sym[8*blk:]))
			for p := 0; p < P; p++ {
				pw[p] |= uint32(uint8(t>>(8*p))) << (8 * blk)
			}
		}
		out := planes[4*P*gi:]
		for p := 0; p < P; p++ {
			binary.LittleEndian.PutUint32(out[4*p:], pw[p])
		}
	}
	clear(lows[KB*m:])
	return info, sideLen
}

// decodeChunk decodes one chunk into dst (m values) and checks that it is canonical. The table entry has been
// validated structurally (side has exactly the size the info word implies). It returns nil or a non-canonical
// error; checksums are verified by the caller.
func (g *xwGeom) decodeChunk(dst []byte, m int, info uint32, planes, lows, side []byte) error {
	raw := info>>layout.KindShift == layout.ChunkRaw
	base := info >> layout.XWBaseShift & layout.XWBaseMask
	k := uint64(info & layout.XWCountMask)
	if !raw && !g.CodedFits(uint64(m), k) {
		return errorf(ErrNonCanonical, "coded chunk with %d escapes should be raw", k)
	}
	E, M, W, KB, P := g.E, g.M, g.W, int(g.KB()), int(g.Planes())
	wmask, mmask := uint32(1)<<W-1, uint32(1)<<M-1
	win := uint32(g.Window())
	sbit, topShift := uint(8*g.size-1), 8*uint(KB)
	var h [256]uint32
	var j uint64 // escapes so far
	le := binary.LittleEndian
	var sym [layout.XWGroup]uint8
	for g0 := 0; g0 < m; g0 += layout.XWGroup {
		gi := g0 / layout.XWGroup
		n := min(layout.XWGroup, m-g0)
		valid := ^uint32(0) >> (layout.XWGroup - n)
		in := planes[4*P*gi:]
		var pw [maxPlanes]uint32
		for p := 0; p < P; p++ {
			pw[p] = le.Uint32(in[4*p:])
			if pw[p]&^valid != 0 {
				return errorf(ErrNonCanonical, "plane bits past the last value are not zero")
			}
		}
		for blk := 0; blk < 4; blk++ {
			var x uint64
			for p := 0; p < P; p++ {
				x |= uint64(uint8(pw[p]>>(8*blk))) << (8 * p)
			}
			le.PutUint64(sym[8*blk:], transpose8(x))
		}
		var hi [8]uint32 // raw: the high exponent planes of the group
		if raw {
			for t := uint(0); t < E-W; t++ {
				hi[t] = le.Uint32(side[4*(uint(gi)*(E-W)+t):])
				if hi[t]&^valid != 0 {
					return errorf(ErrNonCanonical, "raw side bits past the last value are not zero")
				}
			}
		}
		for i := 0; i < n; i++ {
			s := uint32(sym[i])
			code := s & wmask
			r := s >> W << topShift
			switch KB {
			case 1:
				r |= uint32(lows[g0+i])
			case 3:
				r |= uint32(lows[3*(g0+i)]) | uint32(lows[3*(g0+i)+1])<<8 | uint32(lows[3*(g0+i)+2])<<16
			}
			var x uint32
			switch {
			case raw:
				x = code
				for t := uint(0); t < E-W; t++ {
					x |= hi[t] >> i & 1 << (W + t)
				}
			case code != 0:
				x = base + code - 1
			default:
				if j >= k {
					return errorf(ErrNonCanonical, "more zero codes than the %d escapes", k)
				}
				blk := side[4*(j/layout.XWGroup*uint64(E)):]
				for t := uint(0); t < E; t++ {
					x |= le.Uint32(blk[4*t:]) >> (j % layout.XWGroup) & 1 << t
				}
				if x-base < win {
					return errorf(ErrNonCanonical, "escape %d carries exponent %d, which has a code", j, x)
				}
				j++
			}
			h[x]++
			v := r>>M<<sbit | x<<M | r&mmask
			switch g.size {
			case 1:
				dst[g0+i] = uint8(v)
			case 2:
				le.PutUint16(dst[2*(g0+i):], uint16(v))
			default:
				le.PutUint32(dst[4*(g0+i):], v)
			}
		}
	}
	if !allZero(lows[KB*m:]) {
		return errorf(ErrNonCanonical, "byte stream padding is not zero")
	}
	best, in := g.bestWindow(&h)
	if raw {
		if g.CodedFits(uint64(m), uint64(m)-in) {
			return errorf(ErrNonCanonical, "raw chunk with %d escapes should be coded", uint64(m)-in)
		}
		return nil
	}
	if j != k {
		return errorf(ErrNonCanonical, "%d zero codes for %d escapes", j, k)
	}
	if k%layout.XWGroup != 0 {
		last := k / layout.XWGroup * uint64(E)
		for t := uint64(0); t < uint64(E); t++ {
			if le.Uint32(side[4*(last+t):])>>(k%layout.XWGroup) != 0 {
				return errorf(ErrNonCanonical, "escape bits past the last escape are not zero")
			}
		}
	}
	if best != base {
		return errorf(ErrNonCanonical, "window base %d, the canonical window starts at %d", base, best)
	}
	return nil
}

// checkTable validates the chunk table structurally: known kinds, raw entries with zero base and count, coded
// counts within the chunk, windows within the exponent range, side offsets that are the running sum of the side
// sizes, and a side section that ends exactly at the body's end. After it passes, every piece of every chunk lies
// inside the body.
func (g *xwGeom) checkTable(body []byte) error {
	if uint64(len(body)) < g.side {
		return errorf(ErrCorrupt, "body of %d bytes is shorter than its %d-byte dense streams and table", len(body), g.side)
	}
	sideLen := uint64(len(body)) - g.side
	var off uint64
	for c := uint64(0); c < g.Chunks(); c++ {
		e := body[g.table+c*layout.ChunkEntrySize:]
		info := binary.LittleEndian.Uint32(e[4*layout.EntryInfo:])
		so := binary.LittleEndian.Uint32(e[4*layout.EntrySideOff:])
		kind := info >> layout.KindShift
		base := info >> layout.XWBaseShift & layout.XWBaseMask
		m := g.ChunkLen(c)
		switch {
		case kind > layout.ChunkRaw:
			return chunkErr(ErrCorrupt, c, "unknown chunk kind %d", kind)
		case kind == layout.ChunkRaw && info&(1<<layout.KindShift-1) != 0:
			return chunkErr(ErrCorrupt, c, "raw chunk with a non-zero window base or escape count")
		case kind == layout.ChunkCoded && uint64(info&layout.XWCountMask) > m:
			return chunkErr(ErrCorrupt, c, "%d escapes in a chunk of %d values", info&layout.XWCountMask, m)
		case kind == layout.ChunkCoded && uint(base) > g.MaxBase():
			return chunkErr(ErrCorrupt, c, "window base %d beyond the largest, %d", base, g.MaxBase())
		case uint64(so) != off:
			return chunkErr(ErrCorrupt, c, "side offset %d, expected %d", so, off)
		}
		off += g.sideSize(info, m)
		if off > sideLen {
			return chunkErr(ErrCorrupt, c, "side pieces overrun the %d-byte side section", sideLen)
		}
	}
	if off != sideLen {
		return errorf(ErrCorrupt, "side section is %d bytes, chunk table accounts for %d", sideLen, off)
	}
	return nil
}

// checkXWRecord validates the directory fields of a tensor record of an exponent-window format (docs/FORMAT.md
// §13.3): what container parsing checks before any body is read. It returns an *Error without tensor name.
func checkXWRecord(format uint8, dt layout.DType, shift uint8, codebook uint32, elements, bodyLen uint64) error {
	w, _ := layout.XWCodeBits(format)
	x, ok := layout.NewXW(format, dt, elements, uint(shift))
	switch {
	case !ok:
		return errorf(ErrCorrupt, "%s does not code %v", formatNameXW(format), dt)
	case shift < layout.MinChunkShift || shift > layout.MaxChunkShift:
		return errorf(ErrCorrupt, "chunk shift %d outside [%d, %d]", shift, layout.MinChunkShift, layout.MaxChunkShift)
	case elements > layout.MaxCodedValues:
		return errorf(ErrTooLarge, "%d values exceed the coded-tensor limit", elements)
	case codebook != layout.NoCodebook:
		return errorf(ErrNonCanonical, "%d-bit exponent-window tensor with a codebook", w)
	case bodyLen < x.MinBodySize() || bodyLen > x.MaxBodySize() || bodyLen%4 != 0:
		return errorf(ErrCorrupt, "body of %d bytes outside [%d, %d] for %d values", bodyLen, x.MinBodySize(),
			x.MaxBodySize(), elements)
	}
	return nil
}

// checkXWTable validates an exponent-window body's chunk table structurally (docs/FORMAT.md §13.2.2): what a
// GPU backend checks on the host before it dispatches, so its errors read like the reference's.
func checkXWTable(body []byte, format uint8, dt layout.DType, n uint64, shift uint) error {
	g, ok := newXWGeom(format, dt, n, shift)
	if !ok {
		return errorf(ErrInvalidInput, "%s does not code %v", formatNameXW(format), dt)
	}
	return g.checkTable(body)
}

// xwMaxBodySize is the largest body of n values of dtype dt in format f: the capacity an encoder's destination
// needs.
func xwMaxBodySize(format uint8, dt layout.DType, n uint64, shift uint) (uint64, error) {
	x, ok := layout.NewXW(format, dt, n, shift)
	if !ok {
		return 0, errorf(ErrInvalidInput, "%s does not code %v", formatNameXW(format), dt)
	}
	return x.MaxBodySize(), nil
}

// formatNameXW names the exponent-window formats ("" for other ids).
func formatNameXW(f uint8) string {
	switch f {
	case layout.FormatXW2:
		return "xw2"
	case layout.FormatXW3:
		return "xw3"
	case layout.FormatXW4:
		return "xw4"
	}
	return ""
}

// xwFormatByName maps "xw2", "xw3" and "xw4" to their ids.
func xwFormatByName(name string) (uint8, bool) {
	for _, f := range []uint8{layout.FormatXW2, layout.FormatXW3, layout.FormatXW4} {
		if formatNameXW(f) == name {
			return f, true
		}
	}
	return 0, false
}

func xwArgs(format uint8, dt layout.DType, n uint64, shift uint) (xwGeom, error) {
	g, ok := newXWGeom(format, dt, n, shift)
	switch {
	case !ok:
		return g, errorf(ErrInvalidInput, "%s does not code %v", formatNameXW(format), dt)
	case shift < layout.MinChunkShift || shift > layout.MaxChunkShift:
		return g, errorf(ErrInvalidInput, "chunk shift %d outside [%d, %d]", shift, layout.MinChunkShift, layout.MaxChunkShift)
	case n > layout.MaxCodedValues:
		return g, errorf(ErrTooLarge, "%d values exceed the coded-tensor limit", n)
	}
	return g, nil
}

// EncodeXW encodes n values of dtype dt (src, little-endian) as an exponent-window body of format f, on the
// backend's goroutines. dst must have capacity for xwMaxBodySize; the body returned is a prefix of it.
func (b *CPUBackend) EncodeXW(ctx context.Context, format uint8, dt layout.DType, src []byte, n uint64, shift uint,
	checksums bool, dst []byte) ([]byte, error) {
	g, err := xwArgs(format, dt, n, shift)
	if err != nil {
		return nil, err
	}
	if uint64(len(src)) < n*uint64(g.size) {
		return nil, errorf(ErrInvalidInput, "source holds %d bytes for %d values", len(src), n)
	}
	if uint64(cap(dst)) < g.MaxBodySize() {
		return nil, errorf(ErrInvalidInput, "destination capacity %d below the %d-byte worst case", cap(dst), g.MaxBodySize())
	}
	out := dst[:g.MaxBodySize()]
	nc := g.Chunks()
	infos, sides := make([]uint32, nc), make([]uint32, nc)
	rs := g.RawSide(g.ChunkValues())
	sz := uint64(g.size)
	err = b.forEach(ctx, nc, func(_ int, c uint64) {
		m := g.ChunkLen(c)
		v0 := c << g.Shift
		pl, ph := g.planePiece(c)
		ll, lh := g.lowPiece(c)
		side := out[g.side+c*rs : g.side+c*rs+g.RawSide(m)]
		info, sl := g.encodeChunk(src[v0*sz:(v0+m)*sz], int(m), out[pl:ph], out[ll:lh], side)
		infos[c], sides[c] = info, uint32(sl)
	})
	if err != nil {
		return nil, err
	}
	// Side pieces move down to their final offsets (never over a later piece), then the table is written.
	offs := make([]uint32, nc)
	var off uint64
	for c := uint64(0); c < nc; c++ {
		copy(out[g.side+off:], out[g.side+c*rs:g.side+c*rs+uint64(sides[c])])
		offs[c] = uint32(off)
		off += uint64(sides[c])
	}
	out = out[:g.side+off]
	err = b.forEach(ctx, nc, func(_ int, c uint64) {
		e := out[g.table+c*layout.ChunkEntrySize:]
		binary.LittleEndian.PutUint32(e[4*layout.EntryInfo:], infos[c])
		binary.LittleEndian.PutUint32(e[4*layout.EntrySideOff:], offs[c])
		var crc uint32
		if checksums {
			pl, ph := g.planePiece(c)
			ll, lh := g.lowPiece(c)
			so := g.side + uint64(offs[c])
			crc = chunkCRC(infos[c], offs[c], out[so:so+uint64(sides[c])], out[pl:ph], out[ll:lh])
		}
		binary.LittleEndian.PutUint32(e[4*layout.EntryCRC:], crc)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeXW validates and decodes an exponent-window body of n values into dst (exactly n values of dt). An invalid
// body is reported as bodyErr (an *Error with the class of docs/FORMAT.md §13.2.7; the lowest chunk of the
// deciding class); err is for failures of the call (bad arguments, cancellation).
func (b *CPUBackend) DecodeXW(ctx context.Context, format uint8, dt layout.DType, body []byte, n uint64, shift uint,
	checksums bool, dst []byte) (bodyErr, err error) {
	g, err := xwArgs(format, dt, n, shift)
	if err != nil {
		return nil, err
	}
	if uint64(len(dst)) != n*uint64(g.size) {
		return nil, errorf(ErrInvalidInput, "destination holds %d bytes for %d values", len(dst), n)
	}
	if e := g.checkTable(body); e != nil {
		return e, nil
	}
	var errs jobErrs
	sz := uint64(g.size)
	err = b.forEach(ctx, g.Chunks(), func(_ int, c uint64) {
		e := body[g.table+c*layout.ChunkEntrySize:]
		info := binary.LittleEndian.Uint32(e[4*layout.EntryInfo:])
		so := uint64(binary.LittleEndian.Uint32(e[4*layout.EntrySideOff:]))
		stored := binary.LittleEndian.Uint32(e[4*layout.EntryCRC:])
		m := g.ChunkLen(c)
		pl, ph := g.planePiece(c)
		ll, lh := g.lowPiece(c)
		side := body[g.side+so : g.side+so+g.sideSize(info, m)]
		if checksums {
			if got := chunkCRC(info, uint32(so), side, body[pl:ph], body[ll:lh]); got != stored {
				errs.record(chunkErr(ErrChecksum, c, "CRC-32C %08x, stored %08x", got, stored))
				return
			}
		} else if stored != 0 {
			errs.record(chunkErr(ErrNonCanonical, c, "CRC field %08x in a payload without checksums", stored))
			return
		}
		v0 := c << g.Shift
		if err := g.decodeChunk(dst[v0*sz:(v0+m)*sz], int(m), info, body[pl:ph], body[ll:lh], side); err != nil {
			ce := err.(*Error)
			ce.Chunk = int64(c)
			errs.record(ce)
		}
	})
	if err != nil {
		return nil, err
	}
	if e := errs.first(); e != nil {
		return e, nil
	}
	return nil, nil
}
