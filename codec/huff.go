package codec

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"sync"

	"github.com/vkzip/vkzip/codec/layout"
)

// huff reference codec (docs/FORMAT.md §14), one chunk at a time. A body of N BF16 values is laid out as
//
//	low stream    N bytes, padded to 4   (sign<<7 | mantissa) of value i, at a fixed offset
//	chunk table   12 bytes per chunk     info (kind<<24 | coded piece words), piece offset in words, CRC-32C
//	pieces        per chunk, variable    coded: code table, 32 lane word counts, 32 lane streams; raw: exponents
//
// A coded chunk's exponents are Huffman-coded with a canonical code of its own (at most 11 bits per code). Value j of
// the chunk is in lane j mod 32; each lane is a stream of little-endian 32-bit words with codes packed from the
// least-significant bit, each code most-significant code bit first (DEFLATE's order), so a decoder peeks 11 bits
// and looks them up in a 2048-entry table. 32 lanes let a GPU decode a chunk with one lane per invocation.

// huffGeom is the per-body geometry shared by the encoder, decoder and validator.
type huffGeom struct {
	layout.Huff
	table, pieces uint64
}

func newHuffGeom(n uint64, shift uint) huffGeom {
	h := layout.Huff{N: n, Shift: shift}
	return huffGeom{Huff: h, table: h.TableOffset(), pieces: h.PieceOffset()}
}

// lowPiece is chunk c's byte range of the low stream; the last chunk's runs to the padded end.
func (g *huffGeom) lowPiece(c uint64) (lo, hi uint64) {
	lo = c << g.Shift
	if c == g.Chunks()-1 {
		return lo, g.LowBytes()
	}
	return lo, lo + g.ChunkValues()
}

// huffPieceSize is the piece size (bytes) that a structurally valid info word implies for a chunk of m values.
func huffPieceSize(info uint32, m uint64) uint64 {
	if info>>layout.KindShift == layout.ChunkRaw {
		return layout.HuffRawPiece(m)
	}
	return 4 * uint64(info&layout.HuffPieceMask)
}

// huffCode is a chunk's code: lengths (0: symbol absent) and, for the encoder, each symbol's code bit-reversed
// into the order it is emitted.
type huffCode struct {
	lens   [256]uint8
	lo, hi uint // smallest and largest symbol with a code
}

// huffLengths computes the code lengths of §14.3 from a histogram of m ≥ 1 values: Huffman's algorithm by two
// queues over the present symbols sorted by (count, symbol), a leaf winning ties against an internal node; while
// the longest code exceeds 11 bits, every count c becomes max(1, c>>1) and the code is built again. One symbol
// gets length 1.
func huffLengths(h *[256]uint32) huffCode {
	var hc huffCode
	cnt := *h
	var keyBuf [256]uint32
	for {
		keys := keyBuf[:0]
		for s := range cnt {
			if cnt[s] != 0 {
				keys = append(keys, cnt[s]<<8|uint32(s)) // counts ≤ 2^16: the key orders by (count, symbol)
			}
		}
		slices.Sort(keys)
		n := len(keys)
		hc.lens = [256]uint8{}
		if n == 0 {
			return hc
		}
		if n == 1 {
			s := uint(keys[0] & 0xFF)
			hc.lens[s], hc.lo, hc.hi = 1, s, s
			return hc
		}
		var w [256]uint32         // internal node weights, in creation order
		var parent [512]uint16    // parent internal node of leaf i (i < n) and of internal node k (at 256+k)
		leaf, head := 0, 0        // next leaf, next internal node not yet merged
		take := func(k int) int { // k internal nodes exist; returns the picked node: leaf i as i, internal k as 256+k
			if leaf < n && (head >= k || keys[leaf]>>8 <= w[head]) {
				leaf++
				return leaf - 1
			}
			head++
			return 256 + head - 1
		}
		weight := func(x int) uint32 {
			if x < 256 {
				return keys[x] >> 8
			}
			return w[x-256]
		}
		for k := 0; k < n-1; k++ {
			a := take(k)
			b := take(k)
			w[k] = weight(a) + weight(b)
			parent[a], parent[b] = uint16(k), uint16(k)
		}
		var depth [256]uint8 // depth of internal node k; the root, n-2, is at 0
		for k := n - 3; k >= 0; k-- {
			depth[k] = depth[parent[256+k]] + 1
		}
		longest := uint8(0)
		hc.lo, hc.hi = 255, 0
		for i := 0; i < n; i++ {
			s := uint(keys[i] & 0xFF)
			l := depth[parent[i]] + 1
			hc.lens[s] = l
			longest = max(longest, l)
			hc.lo, hc.hi = min(hc.lo, s), max(hc.hi, s)
		}
		if longest <= layout.HuffMaxLen {
			return hc
		}
		for s := range cnt {
			if cnt[s] != 0 {
				cnt[s] = max(1, cnt[s]>>1)
			}
		}
	}
}

// huffCanonical assigns canonical codes (RFC 1951 §3.2.2: shorter codes first, then by symbol) and returns each
// symbol's code bit-reversed over its length, the order in which its bits go into a lane.
func huffCanonical(lens *[256]uint8) (rev [256]uint16) {
	var blCount [layout.HuffMaxLen + 1]uint16
	for _, l := range lens {
		if l != 0 {
			blCount[l]++
		}
	}
	var next [layout.HuffMaxLen + 2]uint16
	code := uint16(0)
	for l := 1; l <= layout.HuffMaxLen; l++ {
		code = (code + blCount[l-1]) << 1
		next[l] = code
	}
	for s, l := range lens {
		if l != 0 {
			rev[s] = bits.Reverse16(next[l]) >> (16 - l)
			next[l]++
		}
	}
	return rev
}

// huffTableBytes is the size of a coded piece's code table.
func huffTableBytes(hc *huffCode) uint64 { return layout.HuffTableBytes(hc.lo, hc.hi) }

// huffLaneBits sums the code lengths of each lane's values (exps: the chunk's exponents).
func huffLaneBits(exps []byte, lens *[256]uint8) (lb [layout.HuffLanes]uint32) {
	m := len(exps)
	j := 0
	for ; j+layout.HuffLanes <= m; j += layout.HuffLanes {
		row := exps[j : j+layout.HuffLanes]
		for l := range lb {
			lb[l] += uint32(lens[row[l]])
		}
	}
	for l := 0; j+l < m; l++ {
		lb[l] += uint32(lens[exps[j+l]])
	}
	return lb
}

// huffCodedSize is the coded piece size of a chunk with code hc and lane bit counts lb.
func huffCodedSize(hc *huffCode, lb *[layout.HuffLanes]uint32) uint64 {
	s := huffTableBytes(hc) + layout.HuffCountsBytes
	for _, b := range lb {
		s += 4 * ((uint64(b) + 31) / 32)
	}
	return s
}

// huffScratch holds a chunk's exponent bytes between the passes of encode and decode.
var huffScratch = sync.Pool{New: func() any { return new([1 << layout.HuffMaxShift]byte) }}

// huffSplitCount writes the low bytes of m values (src: 2m bytes) to low and their exponents to exps, and counts
// the exponents in 8 histograms (value i in h[i%8], summed by the caller) so that runs of equal exponents do not
// chain one counter's increments.
func huffSplitCount(src []byte, m int, low, exps []byte, h *[8][256]uint32) {
	*h = [8][256]uint32{}
	i := 0
	for ; i+8 <= m; i += 8 {
		x := binary.LittleEndian.Uint64(src[2*i:])
		y := binary.LittleEndian.Uint64(src[2*i+8:])
		binary.LittleEndian.PutUint64(low[i:], uint64(lows4(x))|uint64(lows4(y))<<32)
		e0, e1, e2, e3 := uint8(x>>7), uint8(x>>23), uint8(x>>39), uint8(x>>55)
		e4, e5, e6, e7 := uint8(y>>7), uint8(y>>23), uint8(y>>39), uint8(y>>55)
		binary.LittleEndian.PutUint64(exps[i:], uint64(e0)|uint64(e1)<<8|uint64(e2)<<16|uint64(e3)<<24|
			uint64(e4)<<32|uint64(e5)<<40|uint64(e6)<<48|uint64(e7)<<56)
		h[0][e0]++
		h[1][e1]++
		h[2][e2]++
		h[3][e3]++
		h[4][e4]++
		h[5][e5]++
		h[6][e6]++
		h[7][e7]++
	}
	for ; i < m; i++ {
		v := binary.LittleEndian.Uint16(src[2*i:])
		e := uint8(v >> 7)
		low[i], exps[i] = lowByte(v), e
		h[0][e]++
	}
}

// huffLaneMaxWords bounds a lane's words: 2^16/32 positions of at most 11 bits.
const huffLaneMaxWords = (1 << layout.HuffMaxShift) / layout.HuffLanes * layout.HuffMaxLen / 32

// huffEncScratch is the encoder's per-call state beyond the exponents: histograms and every lane's words, packed
// before the piece's layout is known (so no pass over the exponents only to size the lanes).
type huffEncScratch struct {
	hist  [8][256]uint32
	lanes [layout.HuffLanes][4 * huffLaneMaxWords]byte
}

var huffEncPool = sync.Pool{New: func() any { return new(huffEncScratch) }}

// huffPackLane writes the codes of lane l (exps: the chunk's m exponents) to w and returns its word count. Two codes
// are joined (at most 22 bits) before they enter the bit buffer, so a word is tested for once per two codes.
func huffPackLane(exps []byte, m, l int, code *[256]uint32, w []byte) int {
	const L = layout.HuffLanes
	var acc uint64
	var nb uint
	wi := 0
	j := l
	for ; j+L < m; j += 2 * L {
		c0, c1 := code[exps[j]], code[exps[j+L]]
		l0 := uint(c0 >> 16)
		acc |= (uint64(c0&0xFFFF) | uint64(c1&0xFFFF)<<(l0&63)) << (nb & 63)
		nb += l0 + uint(c1>>16)
		if nb >= 32 { // nb ≤ 31 + 22: one word at most
			binary.LittleEndian.PutUint32(w[4*wi:], uint32(acc))
			wi++
			acc >>= 32
			nb -= 32
		}
	}
	if j < m {
		c := code[exps[j]]
		acc |= uint64(c&0xFFFF) << (nb & 63)
		nb += uint(c >> 16)
		if nb >= 32 {
			binary.LittleEndian.PutUint32(w[4*wi:], uint32(acc))
			wi++
			acc >>= 32
			nb -= 32
		}
	}
	if nb > 0 {
		binary.LittleEndian.PutUint32(w[4*wi:], uint32(acc))
		wi++
	}
	return wi
}

// huffEncodeChunk encodes m values (src holds 2m bytes) into the chunk's low piece (padding included) and its
// piece, written to piece (capacity ≥ HuffRawPiece(m)). It returns the info word and the piece length.
func huffEncodeChunk(src []byte, m int, low, piece []byte) (info uint32, pieceLen int) {
	sc := huffScratch.Get().(*[1 << layout.HuffMaxShift]byte)
	defer huffScratch.Put(sc)
	es := huffEncPool.Get().(*huffEncScratch)
	defer huffEncPool.Put(es)
	exps := sc[:m]
	huffSplitCount(src, m, low, exps, &es.hist)
	clear(low[m:])
	var h [256]uint32
	hs := &es.hist
	for s := range h {
		h[s] = hs[0][s] + hs[1][s] + hs[2][s] + hs[3][s] + hs[4][s] + hs[5][s] + hs[6][s] + hs[7][s]
	}
	hc := huffLengths(&h)
	rev := huffCanonical(&hc.lens)
	// code[e] is e's bit-reversed code in the low 16 bits and its length above.
	var code [256]uint32
	for s := hc.lo; s <= hc.hi; s++ {
		code[s] = uint32(rev[s]) | uint32(hc.lens[s])<<16
	}
	tb := huffTableBytes(&hc)
	var nw [layout.HuffLanes]int
	size := tb + layout.HuffCountsBytes
	for l := range nw {
		nw[l] = huffPackLane(exps, m, l, &code, es.lanes[l][:])
		size += 4 * uint64(nw[l])
	}
	raw := layout.HuffRawPiece(uint64(m))
	if size >= raw {
		copy(piece, exps)
		clear(piece[m:raw])
		return layout.ChunkRaw << layout.KindShift, int(raw)
	}
	p := piece[:size]
	clear(p[:tb])
	p[0], p[1] = uint8(hc.lo), uint8(hc.hi)
	for s := hc.lo; s <= hc.hi; s++ {
		i := s - hc.lo
		p[2+i/2] |= hc.lens[s] << (4 * (i & 1))
	}
	out := tb + layout.HuffCountsBytes
	for l, n := range nw {
		binary.LittleEndian.PutUint16(p[tb+2*uint64(l):], uint16(n))
		out += uint64(copy(p[out:], es.lanes[l][:4*n]))
	}
	return layout.ChunkCoded<<layout.KindShift | uint32(size/4), int(size)
}

// huffParseTable reads a coded piece's code table (piece holds at least its first 4 bytes): lengths, symbol range
// and table size. It returns a corrupt error for a table no encoder writes or a decoder cannot use (§14.4).
func huffParseTable(piece []byte) (hc huffCode, tb uint64, err error) {
	hc.lo, hc.hi = uint(piece[0]), uint(piece[1])
	if hc.lo > hc.hi {
		return hc, 0, errorf(ErrCorrupt, "code table's symbols run from %d down to %d", hc.lo, hc.hi)
	}
	tb = layout.HuffTableBytes(hc.lo, hc.hi)
	if uint64(len(piece)) < tb {
		return hc, 0, errorf(ErrCorrupt, "code table of %d bytes in a %d-byte piece", tb, len(piece))
	}
	var kraft uint32
	used := 0
	for s := hc.lo; s <= hc.hi; s++ {
		i := s - hc.lo
		l := piece[2+i/2] >> (4 * (i & 1)) & layout.HuffLenMask
		if l > layout.HuffMaxLen {
			return hc, 0, errorf(ErrCorrupt, "code length %d of exponent %d exceeds %d", l, s, layout.HuffMaxLen)
		}
		if l != 0 {
			kraft += 1 << (layout.HuffMaxLen - l)
			used++
		}
		hc.lens[s] = l
	}
	switch {
	case hc.lens[hc.lo] == 0 || hc.lens[hc.hi] == 0:
		return hc, 0, errorf(ErrCorrupt, "code table's first or last exponent has no code")
	case used == 1 && hc.lens[hc.lo] != 1:
		return hc, 0, errorf(ErrCorrupt, "a single exponent with a code of length %d", hc.lens[hc.lo])
	case used > 1 && kraft != 1<<layout.HuffMaxLen:
		return hc, 0, errorf(ErrCorrupt, "code lengths are not a complete prefix code (Kraft sum %d/2048)", kraft)
	}
	return hc, tb, nil
}

// huffCheckPiece checks a coded piece's header against its length (§14.4, corrupt): a valid code table and lane
// word counts that fill the piece exactly.
func huffCheckPiece(piece []byte) error {
	if len(piece) < 4+layout.HuffCountsBytes {
		return errorf(ErrCorrupt, "coded piece of %d bytes", len(piece))
	}
	_, tb, err := huffParseTable(piece)
	if err != nil {
		return err
	}
	if uint64(len(piece)) < tb+layout.HuffCountsBytes {
		return errorf(ErrCorrupt, "coded piece of %d bytes has no room for its lane counts", len(piece))
	}
	total := tb + layout.HuffCountsBytes
	for l := uint64(0); l < layout.HuffLanes; l++ {
		total += 4 * uint64(binary.LittleEndian.Uint16(piece[tb+2*l:]))
	}
	if total != uint64(len(piece)) {
		return errorf(ErrCorrupt, "lane word counts add up to a %d-byte piece, the table says %d", total, len(piece))
	}
	return nil
}

// huffDecodeTable fills t with the decoder's lookup table: entry i, for the next 11 bits of a lane as an integer
// (first bit lowest), is symbol | length<<8; 0 marks a bit pattern no code starts (a single-symbol code).
func huffDecodeTable(hc *huffCode, t *[1 << layout.HuffMaxLen]uint16) {
	clear(t[:])
	rev := huffCanonical(&hc.lens)
	for s := hc.lo; s <= hc.hi; s++ {
		l := hc.lens[s]
		if l == 0 {
			continue
		}
		e := uint16(s) | uint16(l)<<8
		for i := uint(rev[s]); i < 1<<layout.HuffMaxLen; i += 1 << l {
			t[i] = e
		}
	}
}

// huffLane is one lane's bit reader: acc holds nb unread bits, the next word to load is wp of the lane's nw.
type huffLane struct {
	acc    uint64
	nb     uint
	wp, nw int
	words  []byte
}

func newHuffLane(words []byte) huffLane { return huffLane{words: words, nw: len(words) / 4} }

// refill loads the next word (zero past the lane's end, which the caller detects from used) when fewer than 32
// bits are buffered, so that two codes of at most 11 bits can be taken without another check.
func (r *huffLane) refill() {
	if r.nb < 32 {
		var w uint32
		if r.wp < r.nw {
			w = binary.LittleEndian.Uint32(r.words[4*r.wp:])
		}
		r.wp++
		r.acc |= uint64(w) << r.nb
		r.nb += 32
	}
}

// used is the number of bits consumed so far.
func (r *huffLane) used() uint64 { return 32*uint64(r.wp) - uint64(r.nb) }

// seek puts the reader at bit pos of its lane, as if the bits before it had been taken.
func (r *huffLane) seek(pos uint) {
	r.wp, r.acc, r.nb = int(pos>>5), 0, 0
	if s := pos & 31; s != 0 {
		var w uint32
		if r.wp < r.nw {
			w = binary.LittleEndian.Uint32(r.words[4*r.wp:])
		}
		r.acc, r.nb = uint64(w>>s), 32-s
		r.wp++
	}
}

// huffMultiBits is the peek of the fast reader's table: 9 bits hold about three codes of KV exponents (2.8 bits on
// average), and 512 entries are cheap to build for every chunk (all 2048 cost a quarter of the decode); a longer
// first code goes to the full table.
const huffMultiBits = 9

// huffMultiTable builds the fast reader's table from the decoder's table t: for the next huffMultiBits lane bits,
// as many codes as lie wholly inside them, up to three: symbols in bits 6-13, 14-21 and 22-29, their count in bits
// 4-5 and their total length in bits 0-3 (bit 31 stays clear). Entry 0: the first code is longer than
// huffMultiBits, or no code starts there.
func huffMultiTable(t *[1 << layout.HuffMaxLen]uint16, mt *[1 << huffMultiBits]uint32) {
	const bits, mask = huffMultiBits, 1<<huffMultiBits - 1
	// Branch-free: a code is taken when it ends within the bits looked at (its entry, from the zero-filled rest,
	// is then right). t is indexed by 11 bits; a shorter pattern, zero-extended, is a valid index.
	for x := range uint(len(mt)) {
		e1 := uint32(t[x])
		l1 := e1 >> 8
		ok1 := b2u32(l1 != 0 && l1 <= bits)
		e2 := uint32(t[(x>>(l1&15))&mask])
		l2 := l1 + e2>>8
		ok2 := ok1 & b2u32(e2>>8 != 0 && l2 <= bits)
		e3 := uint32(t[(x>>(l2&15))&mask])
		l3 := l2 + e3>>8
		ok3 := ok2 & b2u32(e3>>8 != 0 && l3 <= bits)
		l := l1 + ok2*(e2>>8) + ok3*(e3>>8)
		v := (e1&0xFF)<<6 | ok2*(e2&0xFF)<<14 | ok3*(e3&0xFF)<<22 | (1+ok2+ok3)<<4 | l
		mt[x] = v * ok1
	}
}

// huffMultiAt is the fast table's entry for the bits of x, or for a first code longer than huffMultiBits, a
// one-code entry from the full table (length 0 where no code starts).
func huffMultiAt(x uint64, mt *[1 << huffMultiBits]uint32, t *[1 << layout.HuffMaxLen]uint16) uint32 {
	e := mt[x&(1<<huffMultiBits-1)]
	if e == 0 {
		// No code at all gives one code of length 0: the lane moves on (no loop can stall on corrupt bits) and the
		// caller sees the length.
		f := uint32(t[x&(1<<layout.HuffMaxLen-1)])
		e = (f&0xFF)<<6 | 1<<4 | f>>8
	}
	return e
}

func b2u32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// huffDecodeFast decodes the first codes of lanes a and a+1 (a even), with ca and cb codes, which start at byte
// offsets sa and sb of buf, into exps[32j+a] and exps[32j+a+1]: four lookups of up to three codes each (mt, see
// huffMultiTable) per unaligned 64-bit load (≥ 57 bits from the lane's bit position; four lookups take ≤ 44). It
// stops while at least 12 codes are left in each lane (the symbols written past a lookup's codes land on codes yet to
// come) or before a load would pass buf's end; the exact reader finishes the lanes. It returns the codes decoded
// and the bit position of each lane, and false when a bit pattern was no code. Bits past a lane's end come from the
// next lane or piece here and are zero in the exact reader; a code is decided by its own bits only, so both decode
// the same, and a lane that needs more bits than it has is corrupt either way.
func huffDecodeFast(buf []byte, sa, sb int, t *[1 << layout.HuffMaxLen]uint16, mt *[1 << huffMultiBits]uint32,
	exps *[1 << layout.HuffMaxShift]byte, a, ca, cb int) (ia, ib int, pa, pb uint, ok bool) {
	limA, limB := (len(buf)-8-sa)*8, (len(buf)-8-sb)*8
	var bad uint32
	// Output index of each lane's next code, and its bound: 12 codes before the lane's end.
	oa, ob := a, a+1
	endA, endB := a+layout.HuffLanes*(ca-12), a+1+layout.HuffLanes*(cb-12)
	for oa <= endA && ob <= endB && int(pa) <= limA && int(pb) <= limB {
		xa := binary.LittleEndian.Uint64(buf[sa+int(pa>>3):]) >> (pa & 7)
		xb := binary.LittleEndian.Uint64(buf[sb+int(pb>>3):]) >> (pb & 7)
		for range 4 { // four lookups take at most 44 of the ≥ 57 bits loaded
			ea, eb := huffMultiAt(xa, mt, t), huffMultiAt(xb, mt, t)
			xa >>= ea & 15
			xb >>= eb & 15
			pa += uint(ea & 15)
			pb += uint(eb & 15)
			bad |= (ea&15 - 1) | (eb&15 - 1) // a length of 0 (no code) sets bit 31
			// Symbols past the entry's count land on codes yet to come, written again later.
			exps[uint16(oa)], exps[uint16(oa+32)], exps[uint16(oa+64)] = uint8(ea>>6), uint8(ea>>14), uint8(ea>>22)
			exps[uint16(ob)], exps[uint16(ob+32)], exps[uint16(ob+64)] = uint8(eb>>6), uint8(eb>>14), uint8(eb>>22)
			oa += 32 * int(ea>>4&3)
			ob += 32 * int(eb>>4&3)
		}
	}
	ia, ib = (oa-a)/layout.HuffLanes, (ob-a-1)/layout.HuffLanes
	return ia, ib, pa, pb, bad&0x80000000 == 0
}

// next decodes one code into out[0]; false when the bits are no code.
func (r *huffLane) next(t *[1 << layout.HuffMaxLen]uint16, out []byte) bool {
	r.refill()
	e := t[r.acc&(1<<layout.HuffMaxLen-1)]
	r.acc >>= (e >> 8) & 63
	r.nb -= uint(e >> 8)
	out[0] = uint8(e)
	return e>>8 != 0
}

// huffLaneTail reports whether the bits of a lane after the first used ones are zero.
func huffLaneTail(words []byte, used uint64) bool {
	w := used / 32
	if r := used % 32; r != 0 {
		if binary.LittleEndian.Uint32(words[4*w:])>>r != 0 {
			return false
		}
		w++
	}
	return allZero(words[4*w:])
}

// huffDecodeChunk decodes one chunk into dst (2m bytes) and checks it (the table entry and piece header have
// passed huffCheckTable). Errors: corrupt for lane streams that do not decode (a bit pattern that is no code, a
// lane needing more words than it has), then non-canonical (§14.6); checksums are verified by the caller.
func huffDecodeChunk(dst []byte, m int, info uint32, low, piece []byte) error {
	sc := huffScratch.Get().(*[1 << layout.HuffMaxShift]byte)
	defer huffScratch.Put(sc)
	exps := sc[:m]
	raw := info>>layout.KindShift == layout.ChunkRaw
	if raw {
		copy(exps, piece)
	} else {
		hc, tb, _ := huffParseTable(piece)
		var t [1 << layout.HuffMaxLen]uint16
		huffDecodeTable(&hc, &t)
		var mt [1 << huffMultiBits]uint32
		huffMultiTable(&t, &mt)
		var lanes [layout.HuffLanes]huffLane
		var start [layout.HuffLanes]int
		off := tb + layout.HuffCountsBytes
		for l := range lanes {
			nw := uint64(binary.LittleEndian.Uint16(piece[tb+2*uint64(l):]))
			lanes[l] = newHuffLane(piece[off : off+4*nw])
			start[l] = int(off)
			off += 4 * nw
		}
		var used [layout.HuffLanes]uint64
		for l := 0; l < layout.HuffLanes; l += 2 {
			ca := int(layout.HuffLaneValues(uint64(m), uint(l)))
			cb := int(layout.HuffLaneValues(uint64(m), uint(l+1)))
			// Most codes through the fast reader; the lane ends through the exact one, from where it stopped.
			ia, ib, pa, pb, ok := huffDecodeFast(piece, start[l], start[l+1], &t, &mt, sc, l, ca, cb)
			lanes[l].seek(pa)
			lanes[l+1].seek(pb)
			for j := ia; j < ca; j++ {
				ok = lanes[l].next(&t, exps[layout.HuffLanes*j+l:]) && ok
			}
			for j := ib; j < cb; j++ {
				ok = lanes[l+1].next(&t, exps[layout.HuffLanes*j+l+1:]) && ok
			}
			if !ok {
				return errorf(ErrCorrupt, "lane %d or %d holds a bit pattern that is no code", l, l+1)
			}
			for _, k := range []int{l, l + 1} {
				used[k] = lanes[k].used()
				if used[k] > 32*uint64(lanes[k].nw) {
					return errorf(ErrCorrupt, "lane %d needs %d bits, it has %d words", k, used[k], lanes[k].nw)
				}
			}
		}
		off = tb + layout.HuffCountsBytes
		for l := 0; l < layout.HuffLanes; l++ {
			nw := uint64(binary.LittleEndian.Uint16(piece[tb+2*uint64(l):]))
			words := piece[off : off+4*nw]
			off += 4 * nw
			switch {
			case (used[l]+31)/32 != nw:
				return errorf(ErrNonCanonical, "lane %d has %d words for %d bits", l, nw, used[l])
			case !huffLaneTail(words, used[l]):
				return errorf(ErrNonCanonical, "lane %d's unused bits are not zero", l)
			}
		}
		if n := hc.hi - hc.lo + 1; n%2 == 1 && piece[2+n/2]>>4 != 0 || !allZero(piece[2+(n+1)/2:tb]) {
			return errorf(ErrNonCanonical, "code table padding is not zero")
		}
		if uint64(len(piece)) >= layout.HuffRawPiece(uint64(m)) {
			return errorf(ErrNonCanonical, "coded piece of %d bytes is not smaller than the raw one", len(piece))
		}
	}
	i := 0
	for ; i+8 <= m; i += 8 {
		l := binary.LittleEndian.Uint64(low[i:])
		e := binary.LittleEndian.Uint64(exps[i:])
		binary.LittleEndian.PutUint64(dst[2*i:], spread4(uint32(l))|bytesTo16(uint32(e))<<7)
		binary.LittleEndian.PutUint64(dst[2*i+8:], spread4(uint32(l>>32))|bytesTo16(uint32(e>>32))<<7)
	}
	for ; i < m; i++ {
		l := uint16(low[i])
		binary.LittleEndian.PutUint16(dst[2*i:], (l&0x80)<<8|uint16(exps[i])<<7|l&0x7F)
	}
	if !allZero(low[m:]) {
		return errorf(ErrNonCanonical, "low-stream padding is not zero")
	}
	if raw {
		if !allZero(piece[m:]) {
			return errorf(ErrNonCanonical, "raw piece padding is not zero")
		}
		var h [256]uint32
		for _, e := range exps {
			h[e]++
		}
		hc := huffLengths(&h)
		lb := huffLaneBits(exps, &hc.lens)
		if huffCodedSize(&hc, &lb) < layout.HuffRawPiece(uint64(m)) {
			return errorf(ErrNonCanonical, "raw chunk whose coded piece would be smaller")
		}
	}
	return nil
}

// huffCheckTable validates the chunk table and every coded piece's header (§14.4, corrupt): known kinds, raw
// entries with no other bits, piece offsets that are the running sum of the piece sizes in words, pieces that end
// exactly at the body's end, and code tables and lane counts that describe their pieces. After it passes, every
// lane of every chunk lies inside the body.
func huffCheckTable(body []byte, g *huffGeom) error {
	if uint64(len(body)) < g.pieces {
		return errorf(ErrCorrupt, "body of %d bytes is shorter than its %d-byte low stream and table", len(body), g.pieces)
	}
	total := uint64(len(body)) - g.pieces
	var off uint64
	for c := uint64(0); c < g.Chunks(); c++ {
		e := body[g.table+c*layout.ChunkEntrySize:]
		info := binary.LittleEndian.Uint32(e[4*layout.EntryInfo:])
		po := binary.LittleEndian.Uint32(e[4*layout.EntrySideOff:])
		kind := info >> layout.KindShift
		switch {
		case kind > layout.ChunkRaw:
			return chunkErr(ErrCorrupt, c, "unknown chunk kind %d", kind)
		case kind == layout.ChunkRaw && info&layout.HuffPieceMask != 0:
			return chunkErr(ErrCorrupt, c, "raw chunk with a piece length")
		case 4*uint64(po) != off:
			return chunkErr(ErrCorrupt, c, "piece offset %d words, expected %d", po, off/4)
		}
		size := huffPieceSize(info, g.ChunkLen(c))
		if off+size > total {
			return chunkErr(ErrCorrupt, c, "pieces overrun the %d-byte piece section", total)
		}
		if kind == layout.ChunkCoded {
			if err := huffCheckPiece(body[g.pieces+off : g.pieces+off+size]); err != nil {
				err.(*Error).Chunk = int64(c)
				return err
			}
		}
		off += size
	}
	if off != total {
		return errorf(ErrCorrupt, "piece section is %d bytes, chunk table accounts for %d", total, off)
	}
	return nil
}

// checkHuffTable validates a huff body's chunk table and piece headers: what a GPU backend checks on the host
// before it dispatches, so its errors read like the reference's.
func checkHuffTable(body []byte, n uint64, shift uint) error {
	g := newHuffGeom(n, shift)
	return huffCheckTable(body, &g)
}

// checkHuffParams refuses value counts and chunk sizes no huff body has; cls is the class to report.
func checkHuffParams(n uint64, shift uint, cls error) error {
	switch {
	case shift < layout.HuffMinShift || shift > layout.HuffMaxShift:
		return errorf(cls, "chunk shift %d outside [%d, %d]", shift, layout.HuffMinShift, layout.HuffMaxShift)
	case n > layout.MaxCodedValues:
		return errorf(ErrTooLarge, "%d values exceed the coded-tensor limit", n)
	}
	return nil
}

// checkHuffBody runs the checks of decodeHuff that need no lane data — parameters, body length, the chunk table
// and piece headers, an empty tensor — so a GPU backend reports those exactly as the reference does.
func checkHuffBody(body []byte, n uint64, shift uint) error {
	if err := checkHuffParams(n, shift, ErrCorrupt); err != nil {
		return err
	}
	g := newHuffGeom(n, shift)
	if uint64(len(body)) > g.MaxBodySize() || len(body)%4 != 0 {
		return errorf(ErrCorrupt, "body of %d bytes for %d values (at most %d, a multiple of 4)", len(body), n,
			g.MaxBodySize())
	}
	if err := huffCheckTable(body, &g); err != nil {
		return err
	}
	if n == 0 {
		return errorf(ErrNonCanonical, "an empty tensor is stored, never huff")
	}
	return nil
}

// encodeHuff encodes n BF16 values (src, little-endian, 2n bytes) as a huff body with chunks of 2^shift values into
// dst (capacity ≥ layout.Huff.MaxBodySize) and returns the body, a prefix of dst. Sequential: the CPU backend runs
// the chunks in parallel.
func encodeHuff(dst, src []byte, n uint64, shift uint, checksums bool) ([]byte, error) {
	if err := checkHuffParams(n, shift, ErrInvalidInput); err != nil {
		return nil, err
	}
	g := newHuffGeom(n, shift)
	switch {
	case n == 0:
		return nil, errorf(ErrInvalidInput, "an empty tensor has no huff body (it is stored)")
	case uint64(len(src)) < 2*n:
		return nil, errorf(ErrInvalidInput, "source of %d bytes for %d values", len(src), n)
	case uint64(cap(dst)) < g.MaxBodySize():
		return nil, errorf(ErrInvalidInput, "destination capacity %d below the %d-byte bound", cap(dst), g.MaxBodySize())
	}
	body := dst[:cap(dst)]
	off := uint64(0)
	for c := uint64(0); c < g.Chunks(); c++ {
		m := g.ChunkLen(c)
		ll, lh := g.lowPiece(c)
		v := c << shift
		piece := body[g.pieces+off:]
		info, pl := huffEncodeChunk(src[2*v:2*(v+m)], int(m), body[ll:lh], piece)
		e := body[g.table+c*layout.ChunkEntrySize:]
		binary.LittleEndian.PutUint32(e[4*layout.EntryInfo:], info)
		binary.LittleEndian.PutUint32(e[4*layout.EntrySideOff:], uint32(off/4))
		var crc uint32
		if checksums {
			crc = chunkCRC(info, uint32(off/4), piece[:pl], body[ll:lh], nil)
		}
		binary.LittleEndian.PutUint32(e[4*layout.EntryCRC:], crc)
		off += uint64(pl)
	}
	return body[:g.pieces+off], nil
}

// decodeHuff decodes and validates a huff body of n values into dst (2n bytes), sequentially. Errors are *Error
// values of the classes of docs/FORMAT.md §14: structure first, then checksums, then the lane streams and
// canonical-form rules, each at the lowest chunk that has one.
func decodeHuff(dst, body []byte, n uint64, shift uint, checksums bool) error {
	if uint64(len(dst)) != 2*n {
		return errorf(ErrInvalidInput, "destination of %d bytes for %d values", len(dst), n)
	}
	if err := checkHuffBody(body, n, shift); err != nil {
		return err
	}
	g := newHuffGeom(n, shift)
	hb := huffBody{g}
	if checksums {
		for c := uint64(0); c < g.Chunks(); c++ {
			info, po, crc, piece, low := hb.chunkPieces(body, c)
			if got := chunkCRC(info, po, piece, low, nil); got != crc {
				return chunkErr(ErrChecksum, c, "chunk CRC-32C %08x, stored %08x", got, crc)
			}
		}
	}
	for c := uint64(0); c < g.Chunks(); c++ {
		info, _, crc, piece, low := hb.chunkPieces(body, c)
		m := g.ChunkLen(c)
		v := c << shift
		if err := huffDecodeChunk(dst[2*v:2*(v+m)], int(m), info, low, piece); err != nil {
			err.(*Error).Chunk = int64(c)
			return err
		}
		if !checksums && crc != 0 {
			return chunkErr(ErrNonCanonical, c, "CRC field %08x in a payload without checksums", crc)
		}
	}
	return nil
}
