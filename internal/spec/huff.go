package spec

import (
	"errors"
	"fmt"
	"sort"
)

// huff (docs/FORMAT.md §14).

// HuffDecode decodes a huff body of n values from the text of §14 alone: the table entry and piece, codes matched
// bit by bit against canonical codes assigned by sorting (length, symbol), no lookup tables. It checks what it
// needs to decode (the pieces lie in the body, every code is found within 11 bits, each lane's word count is its
// codes' length), not the rest of §14.4–§14.6.
func HuffDecode(body []byte, n uint64, shift uint) ([]byte, error) {
	cv := uint64(1) << shift
	C := ceilDiv(n, cv)
	Ll := align4(n)
	pieces := Ll + 12*C
	if uint64(len(body)) < pieces {
		return nil, classErr(ErrCorrupt, "body of %d bytes, its low stream and table need %d", len(body), pieces)
	}
	out := make([]byte, 2*n)
	for c := uint64(0); c < C; c++ {
		e := body[Ll+12*c:]
		info, po := le32(e), uint64(le32(e[4:]))
		if pieces+4*po > uint64(len(body)) {
			return nil, chunkErr(ErrCorrupt, c, "piece offset %d outside the body", po)
		}
		piece := body[pieces+4*po:]
		m := min(cv, n-c*cv)
		exps := make([]byte, m)
		if info>>24 == 1 {
			if uint64(len(piece)) < m {
				return nil, chunkErr(ErrCorrupt, c, "raw piece outside the body")
			}
			copy(exps, piece[:m])
		} else if err := huffLanes(piece, exps); err != nil {
			return nil, chunkErr(ErrCorrupt, c, "%v", err)
		}
		for j := uint64(0); j < m; j++ {
			lo := uint16(body[c*cv+j])
			v := (lo&0x80)<<8 | uint16(exps[j])<<7 | lo&0x7F
			out[2*(c*cv+j)], out[2*(c*cv+j)+1] = byte(v), byte(v>>8)
		}
	}
	return out, nil
}

var errHuffPiece = errors.New("coded piece outside the body")

// huffLanes decodes a coded piece's exponents into exps.
func huffLanes(piece []byte, exps []byte) error {
	m := len(exps)
	if len(piece) < 2 {
		return errHuffPiece
	}
	lo, hi := int(piece[0]), int(piece[1])
	if hi < lo {
		return fmt.Errorf("symbols %d..%d", lo, hi)
	}
	tb := int(align4(uint64(2 + (hi-lo+2)/2)))
	if len(piece) < tb+64 {
		return errHuffPiece
	}
	type sc struct{ sym, l int }
	var syms []sc
	for s := lo; s <= hi; s++ {
		l := int(piece[2+(s-lo)/2]>>(4*((s-lo)%2))) & 15
		if l > 0 {
			syms = append(syms, sc{s, l})
		}
	}
	if len(syms) == 0 {
		return errors.New("no symbol has a code")
	}
	sort.Slice(syms, func(i, j int) bool {
		return syms[i].l < syms[j].l || syms[i].l == syms[j].l && syms[i].sym < syms[j].sym
	})
	codes := map[[2]int]int{} // (length, code) -> symbol
	code, prev := 0, syms[0].l
	for i, s := range syms {
		if i > 0 {
			code = (code + 1) << (s.l - prev)
		}
		prev = s.l
		codes[[2]int{s.l, code}] = s.sym
	}
	off := tb + 64
	for l := 0; l < 32; l++ {
		nw := int(piece[tb+2*l]) | int(piece[tb+2*l+1])<<8
		if off+4*nw > len(piece) {
			return errHuffPiece
		}
		bit := 0
		for j := l; j < m; j += 32 {
			v, ln := 0, 0
			for {
				if bit >= 32*nw {
					return fmt.Errorf("lane %d ends inside a code", l)
				}
				b := int(piece[off+bit/8]>>(bit%8)) & 1
				bit++
				v, ln = v<<1|b, ln+1
				if s, ok := codes[[2]int{ln, v}]; ok {
					exps[j] = uint8(s)
					break
				}
				if ln >= 11 {
					return fmt.Errorf("lane %d: no code within 11 bits", l)
				}
			}
		}
		if (bit+31)/32 != nw {
			return fmt.Errorf("lane %d: %d words for %d bits", l, nw, bit)
		}
		off += 4 * nw
	}
	return nil
}
