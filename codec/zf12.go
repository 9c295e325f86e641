package codec

import (
	"context"
	"encoding/binary"

	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
)

// zf12 reference codec (docs/FORMAT.md §10): ZipFusion's 12-bit coding of BF16 in independent 512-value blocks,
// laid out in vkzip's stream form. A BF16 value is a high byte h = sign<<7 | exponent>>1 and a low byte l =
// (exponent&1)<<7 | mantissa. A block whose 7-bit fields h&0x7F lie in [q, q+7] (q their minimum) is coded: each
// value keeps l and gets the nibble sign<<3 | (h&0x7F)-q; the block's header byte is q. Otherwise the block is raw:
// the nibble is h&15, the side section gets h>>4, and the header byte is 0xFF. The exponent's low bit travels in
// l, so nothing is lost. Body:
//
//	code stream    ceil(N/2) bytes, padded to 4   value i's nibble in byte i/2, low nibble for even i
//	low stream     N bytes, padded to 4           l of value i
//	header stream  max(4, n/512) bytes per chunk  one byte per block of the chunk, zero after its last block
//	chunk table    12 bytes per chunk             info (raw blocks), side offset, CRC-32C
//	side section   per chunk, the high nibbles of its raw blocks, block after block
//
// As in SplitZip-4, every value's 12 bits sit at offsets computed from its index alone; only raw blocks' side
// nibbles need the prefix sum over chunks.

type zf12Geom struct {
	layout.ZF12
	lows, heads, table, side uint64 // stream offsets in the body (codes start at 0)
}

func newZF12Geom(n uint64, shift uint) zf12Geom {
	z := layout.ZF12{N: n, Shift: shift}
	return zf12Geom{ZF12: z, lows: z.CodeBytes(), heads: z.HeaderOffset(), table: z.TableOffset(), side: z.SideOffset()}
}

// codePiece, lowPiece and headPiece are chunk c's byte ranges of the three dense streams (absolute offsets in the
// body); the last chunk's pieces run to the padded ends of their streams.
func (g *zf12Geom) codePiece(c uint64) (lo, hi uint64) {
	lo = c << g.Shift / 2
	if c == g.Chunks()-1 {
		return lo, g.CodeBytes()
	}
	return lo, lo + g.ChunkValues()/2
}

func (g *zf12Geom) lowPiece(c uint64) (lo, hi uint64) {
	lo = g.lows + c<<g.Shift
	if c == g.Chunks()-1 {
		return lo, g.lows + g.LowBytes()
	}
	return lo, lo + g.ChunkValues()
}

func (g *zf12Geom) headPiece(c uint64) (lo, hi uint64) {
	lo = g.heads + c*g.HeaderPiece()
	return lo, lo + g.HeaderPiece()
}

// zf12SideSize is the side piece of a chunk of m values with the given header bytes (structurally valid).
func zf12SideSize(heads []byte, m uint64) uint64 {
	var s uint64
	for b := uint64(0); b*layout.ZF12Block < m; b++ {
		if heads[b] == layout.ZF12RawHeader {
			s += layout.ZF12BlockSide(min(layout.ZF12Block, m-b*layout.ZF12Block))
		}
	}
	return s
}

// lanes16 is a uint64 holding four 16-bit lanes, the SWAR form of four BF16 values.
const (
	lanesOne  = 0x0001000100010001
	lanesLow7 = 0x007F007F007F007F
)

// lanesMinMax folds four 16-bit lanes of values below 0x8000 into per-lane minima and maxima.
func lanesMinMax(f, lo, hi uint64) (uint64, uint64) {
	const top = 0x8000800080008000
	geLo := ((f | top) - lo) & top >> 15 * 0xFFFF // lanes where f ≥ lo (no borrows: every lane of f|top exceeds lo's)
	geHi := ((hi | top) - f) & top >> 15 * 0xFFFF // lanes where hi ≥ f
	return f&^geLo | lo&geLo, f&^geHi | hi&geHi
}

// foldLanes reduces per-lane minima and maxima to one minimum and maximum.
func foldLanes(lo, hi uint64) (uint8, uint8) {
	l, h := uint8(0x7F), uint8(0)
	for k := 0; k < 4; k++ {
		l, h = min(l, uint8(lo>>(16*k))), max(h, uint8(hi>>(16*k)))
	}
	return l, h
}

// zf12Fields returns the smallest and largest 7-bit field h&0x7F of m values.
func zf12Fields(src []byte, m int) (lo, hi uint8) {
	lo4, hi4 := uint64(0x007F007F007F007F), uint64(0)
	i := 0
	for s := src[:2*m]; len(s) >= 8; s, i = s[8:], i+4 {
		lo4, hi4 = lanesMinMax(binary.LittleEndian.Uint64(s)>>8&lanesLow7, lo4, hi4)
	}
	lo, hi = foldLanes(lo4, hi4)
	for ; i < m; i++ {
		f := src[2*i+1] & 0x7F
		lo, hi = min(lo, f), max(hi, f)
	}
	return lo, hi
}

// zf12EncodeBlock writes the nibbles (codes, starting at a byte boundary: blocks hold an even number of values
// except the tensor's last) and low bytes of one block of m values, and for a raw block its side nibbles (side
// must be zero). It returns the header byte.
func zf12EncodeBlock(src []byte, m int, codes, lows, side []byte) uint8 {
	q, top := zf12Fields(src, m)
	raw := top-q > layout.ZF12Span
	qq := uint64(q) * lanesOne
	i := 0
	for ; i+8 <= m; i += 8 {
		x := binary.LittleEndian.Uint64(src[2*i:])
		y := binary.LittleEndian.Uint64(src[2*i+8:])
		if raw {
			binary.LittleEndian.PutUint32(codes[i/2:], uint32(packNibbles4(x>>8&0x000F000F000F000F))|
				uint32(packNibbles4(y>>8&0x000F000F000F000F))<<16)
			binary.LittleEndian.PutUint32(side[i/2:], uint32(packNibbles4(x>>12&0x000F000F000F000F))|
				uint32(packNibbles4(y>>12&0x000F000F000F000F))<<16)
		} else {
			binary.LittleEndian.PutUint32(codes[i/2:], uint32(zf12Nibbles(x, qq))|uint32(zf12Nibbles(y, qq))<<16)
		}
		binary.LittleEndian.PutUint64(lows[i:], uint64(lowBytes4(x))|uint64(lowBytes4(y))<<32)
	}
	for ; i < m; i++ {
		v := binary.LittleEndian.Uint16(src[2*i:])
		h := uint8(v >> 8)
		nib := h & 15
		if !raw {
			nib = h>>4&8 | (h&0x7F - q)
		} else {
			side[i/2] |= (h >> 4) << (4 * (i & 1))
		}
		codes[i/2] |= nib << (4 * (i & 1))
		lows[i] = uint8(v)
	}
	if raw {
		return layout.ZF12RawHeader
	}
	return q
}

// zf12Nibbles codes four values of a coded block (x holds them as lanes, qq the base in every lane) into 16 bits.
func zf12Nibbles(x, qq uint64) uint16 {
	return packNibbles4(((x>>8)&lanesLow7 - qq) | (x>>12)&0x0008000800080008)
}

// packNibbles4 packs the low nibbles of four 16-bit lanes (the rest of each lane zero) into 16 bits.
func packNibbles4(n uint64) uint16 {
	n |= n >> 12 // lanes 0,1 → bits 0-7; lanes 2,3 → bits 32-39
	n &= 0x000000FF000000FF
	return uint16(n | n>>24)
}

// lowBytes4 packs the low bytes of four BF16 lanes into 32 bits.
func lowBytes4(x uint64) uint32 {
	l := x & 0x00FF00FF00FF00FF
	l = (l | l>>8) & 0x0000FFFF0000FFFF
	return uint32(l | l>>16)
}

// zf12EncodeChunk encodes a chunk of m values (src holds 2m bytes) into its code, low and header pieces (their
// exact ranges, padding included) and its side piece, written to side (capacity ≥ the chunk's largest side). It
// returns the info word (raw blocks) and the side length.
func zf12EncodeChunk(src []byte, m int, codes, lows, heads, side []byte) (info uint32, sideLen int) {
	clear(codes)
	clear(heads)
	var k uint32
	for b, v0 := 0, 0; v0 < m; b, v0 = b+1, v0+layout.ZF12Block {
		mb := min(layout.ZF12Block, m-v0)
		hs := int(layout.ZF12BlockSide(uint64(mb)))
		clear(side[sideLen : sideLen+hs])
		heads[b] = zf12EncodeBlock(src[2*v0:], mb, codes[v0/2:], lows[v0:], side[sideLen:])
		if heads[b] == layout.ZF12RawHeader {
			k++
			sideLen += hs
		}
	}
	clear(lows[m:])
	return k, sideLen
}

// zf12ChunkCRC is the CRC-32C of a chunk: info, side offset, header piece, side piece, code piece, low piece.
func zf12ChunkCRC(info, sideOff uint32, heads, side, codes, lows []byte) uint32 {
	var h [8]byte
	binary.LittleEndian.PutUint32(h[0:], info)
	binary.LittleEndian.PutUint32(h[4:], sideOff)
	c := crc32c.Checksum(h[:])
	c = crc32c.Update(c, heads)
	c = crc32c.Update(c, side)
	c = crc32c.Update(c, codes)
	return crc32c.Update(c, lows)
}

// spreadBytes4 places four bytes in the low bytes of four 16-bit lanes.
func spreadBytes4(l32 uint32) uint64 {
	l := uint64(l32)
	l = (l | l<<16) & 0x0000FFFF0000FFFF
	return (l | l<<8) & 0x00FF00FF00FF00FF
}

// spreadNibbles4 places four nibbles (16 bits) in the low nibbles of four 16-bit lanes.
func spreadNibbles4(c16 uint16) uint64 {
	t := uint64(c16)
	t = (t | t<<24) & 0x000000FF000000FF
	return (t | t<<12) & 0x000F000F000F000F
}

// zf12DecodeBlock decodes one block of m values into dst (2m bytes) and checks its canonical form. codes starts at
// the block's first nibble (a byte boundary), side at its side nibbles (raw blocks only).
func zf12DecodeBlock(dst []byte, m int, head uint8, codes, lows, side []byte) error {
	if head != layout.ZF12RawHeader {
		qq := uint64(head) * lanesOne
		var over, zero uint64 // a field past 127 in any lane; some lane with offset 0
		i := 0
		for ; i+4 <= m; i += 4 {
			n := spreadNibbles4(binary.LittleEndian.Uint16(codes[i/2:]))
			d := n & 0x0007000700070007
			f := d + qq
			over |= f
			zero |= (d - lanesOne) &^ d
			binary.LittleEndian.PutUint64(dst[2*i:], (n&0x0008000800080008)<<12|f<<8|
				spreadBytes4(binary.LittleEndian.Uint32(lows[i:])))
		}
		for ; i < m; i++ {
			n := uint64(codes[i/2] >> (4 * (i & 1)) & 15)
			d := n & 7
			f := d + uint64(head)
			over |= f
			if d == 0 {
				zero |= 0x8000
			}
			binary.LittleEndian.PutUint16(dst[2*i:], uint16((n&8)<<12|f<<8|uint64(lows[i])))
		}
		switch {
		case over&0x0080008000800080 != 0:
			return errorf(ErrNonCanonical, "coded block: base %d plus an offset exceeds 127", head)
		case zero&0x8000800080008000 == 0:
			return errorf(ErrNonCanonical, "coded block: base %d is not the smallest field", head)
		}
		return nil
	}
	lo4, hi4 := uint64(0x007F007F007F007F), uint64(0)
	i := 0
	for ; i+4 <= m; i += 4 {
		h := spreadNibbles4(binary.LittleEndian.Uint16(side[i/2:]))<<4 | spreadNibbles4(binary.LittleEndian.Uint16(codes[i/2:]))
		lo4, hi4 = lanesMinMax(h&lanesLow7, lo4, hi4)
		binary.LittleEndian.PutUint64(dst[2*i:], h<<8|spreadBytes4(binary.LittleEndian.Uint32(lows[i:])))
	}
	lo, hi := foldLanes(lo4, hi4)
	for ; i < m; i++ {
		h := side[i/2]>>(4*(i&1))&15<<4 | codes[i/2]>>(4*(i&1))&15
		f := h & 0x7F
		lo, hi = min(lo, f), max(hi, f)
		binary.LittleEndian.PutUint16(dst[2*i:], uint16(h)<<8|uint16(lows[i]))
	}
	if hi-lo <= layout.ZF12Span {
		return errorf(ErrNonCanonical, "raw block whose fields span %d: it should be coded", hi-lo)
	}
	return nil
}

// zf12DecodeChunk decodes a structurally valid chunk and checks its canonical form; checksums are the caller's.
func zf12DecodeChunk(dst []byte, m int, codes, lows, heads, side []byte) error {
	so := 0
	for b, v0 := 0, 0; v0 < m; b, v0 = b+1, v0+layout.ZF12Block {
		mb := min(layout.ZF12Block, m-v0)
		var s []byte
		if heads[b] == layout.ZF12RawHeader {
			n := int(layout.ZF12BlockSide(uint64(mb)))
			s = side[so : so+n]
			if !allZero(s[(mb+1)/2:]) || (mb&1 == 1 && s[mb/2]>>4 != 0) {
				return errorf(ErrNonCanonical, "raw block side padding is not zero")
			}
			so += n
		}
		if err := zf12DecodeBlock(dst[2*v0:2*(v0+mb)], mb, heads[b], codes[v0/2:], lows[v0:], s); err != nil {
			err.(*Error).Detail = "block " + itoa(b) + ": " + err.(*Error).Detail
			return err
		}
	}
	// Padding after the last value: the high nibble of an odd count, then whole bytes of both streams, and the
	// header bytes after the last block.
	if m&1 == 1 && codes[m/2]>>4 != 0 {
		return errorf(ErrNonCanonical, "code padding nibble is not zero")
	}
	if !allZero(codes[(m+1)/2:]) || !allZero(lows[m:]) {
		return errorf(ErrNonCanonical, "stream padding is not zero")
	}
	if !allZero(heads[(m+layout.ZF12Block-1)/layout.ZF12Block:]) {
		return errorf(ErrNonCanonical, "header padding is not zero")
	}
	return nil
}

// zf12CheckTable validates the chunk table and header stream structurally: zero kind bits, header bytes that are a
// base (≤ 127) or 0xFF, a raw-block count that matches them, side offsets that are the running sum of the side
// sizes and a side section that ends exactly at the body's end. After it passes, every piece lies inside the body.
func zf12CheckTable(body []byte, g *zf12Geom) error {
	return checkSideChain(body, g.table, g.side, g.Chunks(), g.ChunkLen, func(c uint64, info uint32, m uint64) (uint64, error) {
		hl, _ := g.headPiece(c)
		heads := body[hl : hl+(m+layout.ZF12Block-1)/layout.ZF12Block]
		var k uint32
		for b, h := range heads {
			switch {
			case h == layout.ZF12RawHeader:
				k++
			case h > layout.ZF12MaxBase:
				return 0, chunkErr(ErrCorrupt, c, "block %d has header byte %#x", b, h)
			}
		}
		switch {
		case info>>layout.KindShift != 0:
			return 0, chunkErr(ErrCorrupt, c, "unknown chunk kind %d", info>>layout.KindShift)
		case info != k:
			return 0, chunkErr(ErrCorrupt, c, "%d raw blocks in the table, %d in the headers", info, k)
		}
		return zf12SideSize(heads, m), nil
	})
}

// checkZF12Table validates a zf12 body's chunk table and headers structurally (docs/FORMAT.md §10.3): what a GPU
// backend checks on the host before it dispatches, so its errors read like the reference's.
func checkZF12Table(body []byte, n uint64, shift uint) error {
	g := newZF12Geom(n, shift)
	return zf12CheckTable(body, &g)
}

// zf12CPU is zf12's reference codec on the CPU backend: every chunk of every job in parallel.
type zf12CPU struct{}

func (zf12CPU) Encode(b *CPUBackend, ctx context.Context, jobs []EncodeJob) error {
	gs := make([]zf12Geom, len(jobs))
	type pass struct {
		info, sideLen []uint32
	}
	ps := make([]pass, len(jobs))
	for j := range jobs {
		job := &jobs[j]
		g := newZF12Geom(job.N, job.Shift)
		if uint64(len(job.Src)) < 2*job.N {
			return errorf(ErrInvalidInput, "source holds %d bytes for %d values", len(job.Src), job.N)
		}
		if uint64(cap(job.Dst)) < g.MaxBodySize() {
			return errorf(ErrInvalidInput, "destination capacity %d below the %d-byte worst case", cap(job.Dst), g.MaxBodySize())
		}
		job.Dst = job.Dst[:g.MaxBodySize()]
		gs[j] = g
		ps[j] = pass{make([]uint32, g.Chunks()), make([]uint32, g.Chunks())}
	}
	// Dense pieces in place; each chunk's side piece first at its worst-case spot (n/2 bytes per chunk), moved down
	// to its final offset once the prefix sum is known.
	us := units(len(jobs), func(j int) uint64 { return gs[j].Chunks() })
	err := b.forEach(ctx, uint64(len(us)), func(_ int, i uint64) {
		u := us[i]
		g, job := &gs[u.job], &jobs[u.job]
		m := g.ChunkLen(u.chunk)
		v0 := u.chunk << g.Shift
		cl, ch := g.codePiece(u.chunk)
		ll, lh := g.lowPiece(u.chunk)
		hl, hh := g.headPiece(u.chunk)
		worst := g.side + u.chunk*g.ChunkValues()/2
		out := job.Dst
		info, sl := zf12EncodeChunk(job.Src[2*v0:2*(v0+m)], int(m), out[cl:ch], out[ll:lh], out[hl:hh], out[worst:])
		ps[u.job].info[u.chunk], ps[u.job].sideLen[u.chunk] = info, uint32(sl)
	})
	if err != nil {
		return err
	}
	for j := range jobs {
		g, p, job := &gs[j], &ps[j], &jobs[j]
		out := job.Dst
		var off uint64
		for c := uint64(0); c < g.Chunks(); c++ {
			sl := uint64(p.sideLen[c])
			worst := g.side + c*g.ChunkValues()/2
			copy(out[g.side+off:], out[worst:worst+sl]) // moves down, never over a later piece
			e := out[g.table+c*layout.ChunkEntrySize:]
			binary.LittleEndian.PutUint32(e[4*layout.EntryInfo:], p.info[c])
			binary.LittleEndian.PutUint32(e[4*layout.EntrySideOff:], uint32(off))
			off += sl
		}
		job.Out = out[:g.side+off]
	}
	// Checksums once every piece is in place, again chunk-parallel.
	return b.forEach(ctx, uint64(len(us)), func(_ int, i uint64) {
		u := us[i]
		g, job := &gs[u.job], &jobs[u.job]
		e := job.Out[g.table+u.chunk*layout.ChunkEntrySize:]
		var crc uint32
		if job.Checksums {
			crc = zf12CRCOf(job.Out, g, u.chunk, uint64(ps[u.job].sideLen[u.chunk]))
		}
		binary.LittleEndian.PutUint32(e[4*layout.EntryCRC:], crc)
	})
}

// zf12CRCOf computes chunk c's CRC from a body whose table entry (info, side offset) is written.
func zf12CRCOf(body []byte, g *zf12Geom, c, sideLen uint64) uint32 {
	e := body[g.table+c*layout.ChunkEntrySize:]
	info := binary.LittleEndian.Uint32(e[4*layout.EntryInfo:])
	so := uint64(binary.LittleEndian.Uint32(e[4*layout.EntrySideOff:]))
	cl, ch := g.codePiece(c)
	ll, lh := g.lowPiece(c)
	hl, hh := g.headPiece(c)
	return zf12ChunkCRC(info, uint32(so), body[hl:hh], body[g.side+so:g.side+so+sideLen], body[cl:ch], body[ll:lh])
}

func (zf12CPU) Decode(b *CPUBackend, ctx context.Context, jobs []DecodeJob) error {
	gs := make([]zf12Geom, len(jobs))
	errs := make([]jobErrs, len(jobs))
	for j := range jobs {
		job := &jobs[j]
		gs[j] = newZF12Geom(job.N, job.Shift)
		if uint64(len(job.Dst)) != 2*job.N {
			return errorf(ErrInvalidInput, "destination holds %d bytes for %d values", len(job.Dst), job.N)
		}
		job.Err = nil
		if err := zf12CheckTable(job.Body, &gs[j]); err != nil {
			job.Err = withTensor(err, job.Name)
		}
	}
	us := units(len(jobs), func(j int) uint64 {
		if jobs[j].Err != nil {
			return 0
		}
		return gs[j].Chunks()
	})
	err := b.forEach(ctx, uint64(len(us)), func(_ int, i uint64) {
		u := us[i]
		if e := zf12DecodeOne(&jobs[u.job], &gs[u.job], u.chunk); e != nil {
			errs[u.job].record(e)
		}
	})
	if err != nil {
		return err
	}
	for j := range jobs {
		if e := errs[j].first(); e != nil && jobs[j].Err == nil {
			jobs[j].Err = withTensor(e, jobs[j].Name)
		}
	}
	return nil
}

// zf12DecodeOne verifies (checksum or zero CRC field) and decodes chunk c of a structurally valid body.
func zf12DecodeOne(job *DecodeJob, g *zf12Geom, c uint64) *Error {
	body := job.Body
	e := body[g.table+c*layout.ChunkEntrySize:]
	so := uint64(binary.LittleEndian.Uint32(e[4*layout.EntrySideOff:]))
	stored := binary.LittleEndian.Uint32(e[4*layout.EntryCRC:])
	m := g.ChunkLen(c)
	cl, ch := g.codePiece(c)
	ll, lh := g.lowPiece(c)
	hl, hh := g.headPiece(c)
	sl := zf12SideSize(body[hl:hh], m)
	side := body[g.side+so : g.side+so+sl]
	if job.Checksums {
		if got := zf12CRCOf(body, g, c, sl); got != stored {
			return chunkErr(ErrChecksum, c, "CRC-32C %08x, stored %08x", got, stored)
		}
	} else if stored != 0 {
		return chunkErr(ErrNonCanonical, c, "CRC field %08x in a payload without checksums", stored)
	}
	v0 := c << g.Shift
	if err := zf12DecodeChunk(job.Dst[2*v0:2*(v0+m)], int(m), body[cl:ch], body[ll:lh], body[hl:hh], side); err != nil {
		ce := err.(*Error)
		ce.Chunk = int64(c)
		return ce
	}
	return nil
}

// zf12Chunks lists a zf12 body's chunk table for Inspect.
func zf12Chunks(body []byte, _ layout.DType, n uint64, shift uint) ([]ChunkInfo, error) {
	g := newZF12Geom(n, shift)
	if err := zf12CheckTable(body, &g); err != nil {
		return nil, err
	}
	out := make([]ChunkInfo, g.Chunks())
	for c := range out {
		e := body[g.table+uint64(c)*layout.ChunkEntrySize:]
		out[c] = ChunkInfo{Format: "zf12", Kind: "coded", Values: g.ChunkLen(uint64(c)),
			RawBlocks:  uint64(binary.LittleEndian.Uint32(e[4*layout.EntryInfo:])),
			SideOffset: binary.LittleEndian.Uint32(e[4*layout.EntrySideOff:]),
			CRC:        binary.LittleEndian.Uint32(e[4*layout.EntryCRC:])}
	}
	return out, nil
}

func init() {
	RegisterFormat(Format{ID: layout.FormatZF12, Name: "zf12",
		About: "BF16: ZipFusion's 12 bits per value in independent 512-value blocks (4-bit sign + exponent/2 " +
			"offset from a per-block base, low byte kept; raw blocks otherwise); no codebook, at most 1.33x",
		DTypes: []layout.DType{layout.DTypeBF16}, MinShift: layout.MinChunkShift, MaxShift: layout.MaxChunkShift,
		MaxValues: layout.MaxCodedValues,
		BodyBounds: func(n uint64, _ layout.DType, shift uint) (uint64, uint64) {
			z := layout.ZF12{N: n, Shift: shift}
			return z.MinBodySize(), z.MaxBodySize()
		},
		Table: func(_ layout.DType, n uint64, shift uint) (uint64, uint64, bool) {
			g := newZF12Geom(n, shift)
			return g.table, g.Chunks(), true
		},
		CPU: zf12CPU{}, Chunks: zf12Chunks, CheckBody: func(body []byte, _ layout.DType, n uint64, shift uint) error { return checkZF12Table(body, n, shift) }, ChunkBodySize: zf12ChunkBodySize})
}

// zf12ChunkBodySize is the zf12 body of one chunk of m values: dense streams, headers, entry and the side nibbles
// of its raw blocks.
func zf12ChunkBodySize(src []byte, _ layout.DType, m int, shift uint, _ *Codebook) uint64 {
	size := layout.ZF12{N: uint64(m), Shift: shift}.SideOffset()
	for v0 := 0; v0 < m; v0 += layout.ZF12Block {
		mb := min(layout.ZF12Block, m-v0)
		if lo, hi := zf12Fields(src[2*v0:], mb); hi-lo > layout.ZF12Span {
			size += layout.ZF12BlockSide(uint64(mb))
		}
	}
	return size
}
