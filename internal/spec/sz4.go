package spec

import (
	"fmt"
	"sort"
)

// SplitZip-4 (docs/FORMAT.md §5).

// Codebook is a SplitZip-4 codebook: code i stands for exponent Codebook[i].
type Codebook = [16]uint8

// Chunk shifts every chunked format allows (§5, §10.2, §11, §12).
const (
	MinShift = 10
	MaxShift = 16
)

// SZ4MaxValues is the most values a SplitZip-4 tensor holds (§5).
const SZ4MaxValues = 1<<32 - 1

// Calibrate is §5.1's codebook of BF16 data: the 16 exponents of highest count, count descending, ties (and
// exponents that never occur) by exponent ascending.
func Calibrate(src []byte) Codebook {
	var count [256]uint64
	for i := 0; i+1 < len(src); i += 2 {
		count[bf16(src, uint64(i/2))>>7&0xFF]++
	}
	order := make([]int, 256)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return count[order[a]] > count[order[b]] })
	var cb Codebook
	for i := range cb {
		cb[i] = uint8(order[i])
	}
	return cb
}

// ValidCodebook reports whether cb's 16 exponents are distinct (§3.1).
func ValidCodebook(cb Codebook) bool {
	var seen [256]bool
	for _, e := range cb {
		if seen[e] {
			return false
		}
		seen[e] = true
	}
	return true
}

func bf16(src []byte, i uint64) uint16 { return uint16(src[2*i]) | uint16(src[2*i+1])<<8 }

// lowByte is §5's lo: sign and mantissa.
func lowByte(v uint16) uint8 { return uint8(v>>8)&0x80 | uint8(v)&0x7F }

// sz4Geom is the layout of §5.2 for N values in chunks of 2^shift.
type sz4Geom struct {
	N, n, C, Lc, Ll, table, side uint64
}

func newSZ4Geom(N uint64, shift uint) sz4Geom {
	g := sz4Geom{N: N, n: 1 << shift}
	g.C = ceilDiv(N, g.n)
	g.Lc = align4(ceilDiv(N, 2))
	g.Ll = align4(N)
	g.table = g.Lc + g.Ll
	g.side = g.table + 12*g.C
	return g
}

// m is the number of values of chunk c.
func (g sz4Geom) m(c uint64) uint64 { return min(g.n, g.N-c*g.n) }

// codePiece and lowPiece are the byte ranges chunk c owns (the last chunk's run to the padded ends).
func (g sz4Geom) codePiece(c uint64) (uint64, uint64) {
	lo, hi := c*g.n/2, (c+1)*g.n/2
	if c == g.C-1 {
		hi = g.Lc
	}
	return lo, hi
}

func (g sz4Geom) lowPiece(c uint64) (uint64, uint64) {
	lo, hi := c*g.n, (c+1)*g.n
	if c == g.C-1 {
		hi = g.Ll
	}
	return lo, hi
}

// sz4RawSide is rawSide(m) = align4(floor(m/2)) (§5.3).
func sz4RawSide(m uint64) uint64 { return align4(m / 2) }

// SZ4BodyBounds are the smallest and largest SplitZip-4 body of n values (§5.2, §7).
func SZ4BodyBounds(n uint64, shift uint) (lo, hi uint64) {
	g := newSZ4Geom(n, shift)
	hi = g.side
	for c := uint64(0); c < g.C; c++ {
		hi += sz4RawSide(g.m(c))
	}
	return g.side, hi
}

func checkShift(shift uint) error {
	if shift < MinShift || shift > MaxShift {
		return classErr(ErrCorrupt, "chunk shift %d outside [%d, %d]", shift, MinShift, MaxShift)
	}
	return nil
}

// SZ4Encode encodes BF16 values (little-endian, len(src)/2 of them) as a SplitZip-4 body.
func SZ4Encode(src []byte, shift uint, cb Codebook, checksums bool) ([]byte, error) {
	if len(src)%2 != 0 {
		return nil, fmt.Errorf("%w: %d bytes of BF16", ErrInput, len(src))
	}
	if shift < MinShift || shift > MaxShift {
		return nil, fmt.Errorf("%w: chunk shift %d", ErrInput, shift)
	}
	if !ValidCodebook(cb) {
		return nil, fmt.Errorf("%w: codebook entries not distinct", ErrInput)
	}
	N := uint64(len(src) / 2)
	if N > SZ4MaxValues {
		return nil, fmt.Errorf("%w: %d values", ErrTooLarge, N)
	}
	code := [256]int{}
	for e := range code {
		code[e] = -1
	}
	for i, e := range cb {
		code[e] = i
	}
	g := newSZ4Geom(N, shift)
	body := make([]byte, g.side)
	for i := uint64(0); i < N; i++ {
		body[g.Lc+i] = lowByte(bf16(src, i))
	}
	var side []byte
	for c := uint64(0); c < g.C; c++ {
		m, first := g.m(c), c*g.n
		var esc []uint32
		for j := uint64(0); j < m; j++ {
			e := uint8(bf16(src, first+j) >> 7)
			if code[e] < 0 {
				esc = append(esc, uint32(j)|uint32(e)<<16)
			}
		}
		var info uint32
		var piece []byte
		if 4*uint64(len(esc)) < sz4RawSide(m) {
			info = uint32(len(esc))
			for j := uint64(0); j < m; j++ {
				x := code[uint8(bf16(src, first+j)>>7)]
				if x < 0 {
					x = 0
				}
				i := first + j
				body[i/2] |= uint8(x) << (4 * (i & 1))
			}
			for _, w := range esc {
				piece = app32(piece, w)
			}
		} else {
			info = 1 << 24
			h := ceilDiv(m, 2)
			cl, _ := g.codePiece(c)
			piece = make([]byte, sz4RawSide(m))
			for j := uint64(0); j < m; j++ {
				e := uint8(bf16(src, first+j) >> 7)
				if j < h {
					body[cl+j] = e
				} else {
					piece[j-h] = e
				}
			}
		}
		ent := body[g.table+12*c:]
		put32(ent, info)
		put32(ent[4:], uint32(len(side)))
		side = append(side, piece...)
	}
	body = append(body, side...)
	if checksums {
		for c := uint64(0); c < g.C; c++ {
			put32(body[g.table+12*c+8:], sz4ChunkCRC(body, g, c))
		}
	}
	return body, nil
}

// sideRange is chunk c's side piece in a body whose table is structurally valid.
func (g sz4Geom) sideRange(body []byte, c uint64) (uint64, uint64) {
	ent := body[g.table+12*c:]
	info, off := le32(ent), uint64(le32(ent[4:]))
	size := 4 * uint64(info&0xFFFFFF)
	if info>>24 == 1 {
		size = sz4RawSide(g.m(c))
	}
	return g.side + off, g.side + off + size
}

// sz4ChunkCRC is §5.6's checksum of chunk c.
func sz4ChunkCRC(body []byte, g sz4Geom, c uint64) uint32 {
	ent := body[g.table+12*c:]
	s0, s1 := g.sideRange(body, c)
	c0, c1 := g.codePiece(c)
	l0, l1 := g.lowPiece(c)
	return CRC32C(ent[:8], body[s0:s1], body[c0:c1], body[g.Lc+l0:g.Lc+l1])
}

// SZ4ChecksumWords are the chunk-table crc words of a body, in chunk order (the words a v2 seal covers). The body
// must be structurally valid.
func SZ4ChecksumWords(body []byte, n uint64, shift uint) []uint32 {
	g := newSZ4Geom(n, shift)
	w := make([]uint32, g.C)
	for c := range w {
		w[c] = le32(body[g.table+12*uint64(c)+8:])
	}
	return w
}

// SZ4Decode validates a SplitZip-4 body of n values and decodes it: structure (§5.3, corrupt), then chunk
// checksums when checksums is set, then canonical form (§5.7); the lowest chunk of the deciding class is reported.
func SZ4Decode(body []byte, n uint64, shift uint, cb Codebook, checksums bool) ([]byte, error) {
	if err := checkShift(shift); err != nil {
		return nil, err
	}
	if n > SZ4MaxValues {
		return nil, classErr(ErrTooLarge, "%d values", n)
	}
	if !ValidCodebook(cb) {
		return nil, classErr(ErrCorrupt, "codebook entries not distinct")
	}
	g := newSZ4Geom(n, shift)
	if uint64(len(body)) < g.side {
		return nil, classErr(ErrCorrupt, "body of %d bytes, its streams and table need %d", len(body), g.side)
	}
	S := uint64(len(body)) - g.side
	// Structure.
	var run uint64
	for c := uint64(0); c < g.C; c++ {
		ent := body[g.table+12*c:]
		info, off := le32(ent), uint64(le32(ent[4:]))
		kind, count := info>>24, uint64(info&0xFFFFFF)
		m := g.m(c)
		var size uint64
		switch {
		case kind > 1:
			return nil, chunkErr(ErrCorrupt, c, "kind %d", kind)
		case kind == 1 && count != 0:
			return nil, chunkErr(ErrCorrupt, c, "raw chunk with count %d", count)
		case kind == 0 && count > m:
			return nil, chunkErr(ErrCorrupt, c, "%d escapes for %d values", count, m)
		case kind == 1:
			size = sz4RawSide(m)
		default:
			size = 4 * count
		}
		if off != run {
			return nil, chunkErr(ErrCorrupt, c, "side offset %d, running sum %d", off, run)
		}
		run += size
		if run > S {
			return nil, chunkErr(ErrCorrupt, c, "side piece ends at %d of a %d-byte side section", run, S)
		}
	}
	if run != S {
		// A body longer than its pieces: no chunk is at fault (§5.3 leaves the chunk open; the reference names none).
		return nil, classErr(ErrCorrupt, "side pieces fill %d of %d bytes", run, S)
	}
	// Checksums.
	for c := uint64(0); c < g.C && checksums; c++ {
		if want, got := le32(body[g.table+12*c+8:]), sz4ChunkCRC(body, g, c); want != got {
			return nil, chunkErr(ErrChecksum, c, "crc %08x, computed %08x", want, got)
		}
	}
	// Canonical form, and the values.
	var code [256]int
	for e := range code {
		code[e] = -1
	}
	for i, e := range cb {
		code[e] = i
	}
	out := make([]byte, 2*n)
	for c := uint64(0); c < g.C; c++ {
		ent := body[g.table+12*c:]
		info, crc := le32(ent), le32(ent[8:])
		m, first := g.m(c), c*g.n
		c0, c1 := g.codePiece(c)
		l0, l1 := g.lowPiece(c)
		s0, s1 := g.sideRange(body, c)
		if !checksums && crc != 0 {
			return nil, chunkErr(ErrNonCanonical, c, "crc %08x without checksums", crc)
		}
		for i := g.Lc + l0 + m; i < g.Lc+l1; i++ {
			if body[i] != 0 {
				return nil, chunkErr(ErrNonCanonical, c, "low-stream padding")
			}
		}
		exps := make([]uint8, m)
		if info>>24 == 1 {
			h := ceilDiv(m, 2)
			for j := uint64(0); j < m; j++ {
				if j < h {
					exps[j] = body[c0+j]
				} else {
					exps[j] = body[s0+j-h]
				}
			}
			for i := c0 + h; i < c1; i++ {
				if body[i] != 0 {
					return nil, chunkErr(ErrNonCanonical, c, "raw code-piece padding")
				}
			}
			for i := s0 + (m - h); i < s1; i++ {
				if body[i] != 0 {
					return nil, chunkErr(ErrNonCanonical, c, "raw side-piece padding")
				}
			}
			k := uint64(0)
			for _, e := range exps {
				if code[e] < 0 {
					k++
				}
			}
			if 4*k < sz4RawSide(m) {
				return nil, chunkErr(ErrNonCanonical, c, "raw chunk of %d escapes", k)
			}
		} else {
			count := uint64(info & 0xFFFFFF)
			if 4*count >= sz4RawSide(m) {
				return nil, chunkErr(ErrNonCanonical, c, "coded chunk of %d escapes", count)
			}
			nib := func(j uint64) uint8 { i := first + j; return body[i/2] >> (4 * (i & 1)) & 15 }
			for j := uint64(0); j < m; j++ {
				exps[j] = cb[nib(j)]
			}
			// Nibbles and bytes of the code piece after the last value.
			for i := first + m; i < 2*c1; i++ {
				if body[i/2]>>(4*(i&1))&15 != 0 {
					return nil, chunkErr(ErrNonCanonical, c, "code-stream padding")
				}
			}
			prev := int64(-1)
			for q := uint64(0); q < count; q++ {
				w := le32(body[s0+4*q:])
				pos, e := uint64(w&0xFFFF), uint8(w>>16)
				switch {
				case w>>24 != 0:
					return nil, chunkErr(ErrNonCanonical, c, "escape %d: bits 24-31 set", q)
				case pos >= m:
					return nil, chunkErr(ErrNonCanonical, c, "escape %d: position %d of %d values", q, pos, m)
				case int64(pos) <= prev:
					return nil, chunkErr(ErrNonCanonical, c, "escape %d: position %d not increasing", q, pos)
				case code[e] >= 0:
					return nil, chunkErr(ErrNonCanonical, c, "escape %d: exponent %d is in the codebook", q, e)
				case nib(pos) != 0:
					return nil, chunkErr(ErrNonCanonical, c, "escape %d: code %d at its position", q, nib(pos))
				}
				prev = int64(pos)
				exps[pos] = e
			}
		}
		for j := uint64(0); j < m; j++ {
			lo := uint16(body[g.Lc+first+j])
			v := (lo&0x80)<<8 | uint16(exps[j])<<7 | lo&0x7F
			out[2*(first+j)], out[2*(first+j)+1] = byte(v), byte(v>>8)
		}
	}
	return out, nil
}
