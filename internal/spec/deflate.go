package spec

// Canonical DEFLATE of docs/FORMAT.md §3: one fixed-Huffman block, greedy matches against the most recent recorded
// position of each 3-byte string.

// bitWriter packs bits into bytes from the least-significant bit (RFC 1951 §3.1.1).
type bitWriter struct {
	out   []byte
	acc   uint64
	nbits uint
}

// bits writes the n low bits of v, least-significant bit first (header fields and extra bits).
func (w *bitWriter) bits(v uint32, n uint) {
	w.acc |= uint64(v) << w.nbits
	w.nbits += n
	for w.nbits >= 8 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.nbits -= 8
	}
}

// code writes an n-bit Huffman code, most-significant bit first.
func (w *bitWriter) code(c uint32, n uint) {
	var r uint32
	for i := uint(0); i < n; i++ {
		r = r<<1 | c>>i&1
	}
	w.bits(r, n)
}

func (w *bitWriter) flush() []byte {
	if w.nbits > 0 {
		w.out = append(w.out, byte(w.acc))
	}
	return w.out
}

// litLen writes literal/length symbol s with the fixed code of RFC 1951 §3.2.6.
func (w *bitWriter) litLen(s int) {
	switch {
	case s <= 143:
		w.code(uint32(0x30+s), 8)
	case s <= 255:
		w.code(uint32(0x190+s-144), 9)
	case s <= 279:
		w.code(uint32(s-256), 7)
	default:
		w.code(uint32(0xC0+s-280), 8)
	}
}

// Length codes 257..285 and distance codes 0..29 (RFC 1951 §3.2.5): base values and extra bits.
var (
	lenBase  = [29]int{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lenExtra = [29]uint{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	dstBase  = [30]int{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	dstExtra = [30]uint{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
)

func (w *bitWriter) match(length, dist int) {
	// The last code whose base is at most length: 258 gets symbol 285 (its own code), not 284 + 31.
	l := 28
	for lenBase[l] > length {
		l--
	}
	w.litLen(257 + l)
	w.bits(uint32(length-lenBase[l]), lenExtra[l])
	d := 29
	for dstBase[d] > dist {
		d--
	}
	w.code(uint32(d), 5)
	w.bits(uint32(dist-dstBase[d]), dstExtra[d])
}

// Deflate is §3's canonical DEFLATE of data.
func Deflate(data []byte) []byte {
	var w bitWriter
	w.bits(1, 1) // BFINAL
	w.bits(1, 2) // BTYPE 01, fixed codes
	n := len(data)
	last := map[[3]byte]int{}
	key := func(i int) [3]byte { return [3]byte{data[i], data[i+1], data[i+2]} }
	for p := 0; p < n; {
		if p+3 <= n {
			if q, ok := last[key(p)]; ok && p-q <= 32768 {
				L := 0
				for L < 258 && p+L < n && data[q+L] == data[p+L] {
					L++
				}
				w.match(L, p-q)
				for i := p; i < p+L; i++ {
					if i+3 <= n {
						last[key(i)] = i
					}
				}
				p += L
				continue
			}
		}
		w.litLen(int(data[p]))
		if p+3 <= n {
			last[key(p)] = p
		}
		p++
	}
	w.litLen(256)
	return w.flush()
}
