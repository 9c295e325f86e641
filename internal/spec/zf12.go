package spec

// zf12 (docs/FORMAT.md §10).

const zf12Block = 512

// ZF12Encode is a plain per-value model of zf12 written from docs/FORMAT.md §10, independently of the reference
// codec's streams and SWAR loops: the body the reference produces must be exactly this.
func ZF12Encode(src []byte, shift uint, checksums bool) []byte {
	n := uint64(len(src) / 2)
	cv := uint64(1) << shift
	C := ceilDiv(n, cv)
	H := max(4, cv/zf12Block)
	Lc, Ll := align4(ceilDiv(n, 2)), align4(n)
	head := Lc + Ll
	table := head + C*H
	body := make([]byte, table+12*C)
	val := func(i uint64) uint16 { return uint16(src[2*i]) | uint16(src[2*i+1])<<8 }
	var side []byte
	for c := uint64(0); c < C; c++ {
		m := min(cv, n-c*cv)
		v0 := c << shift
		var piece []byte
		var raw uint32
		for b := uint64(0); b*zf12Block < m; b++ {
			lo, hi := uint16(127), uint16(0)
			first := v0 + b*zf12Block
			last := min(first+zf12Block, n)
			for i := first; i < last; i++ {
				f := val(i) >> 8 & 0x7F
				lo, hi = min(lo, f), max(hi, f)
			}
			coded := hi-lo <= 7
			hb := uint8(0xFF)
			if coded {
				hb = uint8(lo)
			} else {
				raw++
			}
			body[head+c*H+b] = hb
			nib := make([]byte, (last-first+1)/2)
			for i := first; i < last; i++ {
				v := val(i)
				var code uint8
				if coded {
					code = uint8(v>>15)<<3 | uint8(v>>8&0x7F-lo)
				} else {
					code = uint8(v>>8) & 15
					nib[(i-first)/2] |= uint8(v>>12) << (4 * ((i - first) & 1))
				}
				body[i/2] |= code << (4 * (i & 1))
				body[Lc+i] = uint8(v)
			}
			if !coded {
				piece = append(piece, nib...)
			}
		}
		for len(piece)%4 != 0 {
			piece = append(piece, 0)
		}
		e := body[table+12*c:]
		put32(e, raw)
		put32(e[4:], uint32(len(side)))
		side = append(side, piece...)
	}
	sideAt := uint64(len(body))
	body = append(body, side...)
	if checksums {
		// §10.4: info || sideOffset || header piece || side piece || code piece || low piece.
		for c := uint64(0); c < C; c++ {
			e := body[table+12*c:]
			s0 := sideAt + uint64(le32(e[4:]))
			s1 := uint64(len(body))
			if c+1 < C {
				s1 = sideAt + uint64(le32(e[16:]))
			}
			c0, c1 := c*cv/2, (c+1)*cv/2
			l0, l1 := c*cv, (c+1)*cv
			if c == C-1 {
				c1, l1 = Lc, Ll
			}
			put32(e[8:], CRC32C(e[:8], body[head+c*H:head+(c+1)*H], body[s0:s1], body[c0:c1], body[Lc+l0:Lc+l1]))
		}
	}
	return body
}
