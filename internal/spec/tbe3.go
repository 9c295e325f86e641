package spec

// TBE-3 (docs/FORMAT.md §12).

// TBE3Choice decides chunk c from its exponent histogram: raw, or coded with window start w.
type TBE3Choice func(c int, hist [256]int) (raw bool, w int)

// TBE3Encode is a deliberately naive TBE-3 encoder written from docs/FORMAT.md §12 value by value, with the
// window and chunk kind chosen by the caller (choose nil: the canonical choices). The reference encoder must
// produce exactly its bytes; with other choices it builds well-formed but non-canonical bodies for the tests.
func TBE3Encode(src []byte, shift uint, checksums bool, choose TBE3Choice) []byte {
	n := len(src) / 2
	val := func(i int) uint16 { return uint16(src[2*i]) | uint16(src[2*i+1])<<8 }
	cv := 1 << shift
	C := (n + cv - 1) / cv
	tiles := func(m int) int { return (m + 63) / 64 }
	planeBytes := 24 * tiles(n)
	smBytes := (n + 3) / 4 * 4
	planes := make([]byte, planeBytes)
	sm := make([]byte, smBytes)
	for i := 0; i < n; i++ {
		v := val(i)
		sm[i] = byte(v>>15)<<7 | byte(v&0x7F)
	}
	table := make([]byte, 12*C)
	var side []byte
	for c := 0; c < C; c++ {
		first, m := c*cv, min(cv, n-c*cv)
		var hist [256]int
		for i := first; i < first+m; i++ {
			hist[val(i)>>7&0xFF]++
		}
		// Best window by brute force: most values covered, lowest start among equals.
		w, best := 0, -1
		for s := 0; s+6 <= 255; s++ {
			cov := 0
			for e := s; e <= s+6; e++ {
				cov += hist[e]
			}
			if cov > best {
				w, best = s, cov
			}
		}
		k := m - best
		p := 24 * tiles(m)
		rawSide := 0
		if m > p {
			rawSide = (m - p + 3) / 4 * 4
		}
		raw := !((k+3)/4*4 < rawSide)
		if choose != nil {
			raw, w = choose(c, hist)
			k = 0
			for i := first; i < first+m; i++ {
				if e := int(val(i) >> 7 & 0xFF); e < w || e > w+6 {
					k++
				}
			}
		}
		piece := planes[c*(24*cv/64) : c*(24*cv/64)+p]
		var mySide []byte
		var info uint32
		if raw {
			mySide = make([]byte, rawSide)
			for j := 0; j < m; j++ {
				e := byte(val(first+j) >> 7)
				if j < p {
					piece[j] = e
				} else {
					mySide[j-p] = e
				}
			}
			info = 1 << 24
		} else {
			T := tiles(m)
			for j := 0; j < m; j++ {
				e := int(val(first+j) >> 7 & 0xFF)
				code := 0
				if e >= w && e <= w+6 {
					code = e - w + 1
				} else {
					mySide = append(mySide, byte(e))
				}
				for b := 0; b < 3; b++ {
					if code>>b&1 == 1 {
						bit := 64*(b*T+j/64) + j%64 // plane b of tile j/64, bit j%64
						piece[bit/8] |= 1 << (bit % 8)
					}
				}
			}
			for len(mySide)%4 != 0 {
				mySide = append(mySide, 0)
			}
			info = uint32(w)<<16 | uint32(k)
		}
		e := table[12*c:]
		put32(e, info)
		put32(e[4:], uint32(len(side)))
		if checksums {
			var msg []byte
			msg = append(msg, e[:8]...)
			msg = append(msg, mySide...)
			msg = append(msg, piece...)
			smHi := first + cv
			if c == C-1 {
				smHi = smBytes
			}
			msg = append(msg, sm[first:smHi]...)
			put32(e[8:], CRC32C(msg))
		}
		side = append(side, mySide...)
	}
	out := append(append(append(planes, sm...), table...), side...)
	return out
}
