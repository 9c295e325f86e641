// Package cdeflate is the canonical DEFLATE of vkzip metadata: a fully specified compressor (one fixed-Huffman
// block, greedy parse against the most recent earlier occurrence of the next three bytes) whose output is a
// standard RFC 1951 stream, so any inflater reads it, and whose output is unique, so a reader can demand it:
// recompressing what it inflated must give back the exact bytes it read. docs/FORMAT.md §3 states the algorithm.
package cdeflate

import (
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"sync"
)

const (
	window    = 32768
	minMatch  = 3
	maxMatch  = 258
	endOfBlck = 256
)

// Length symbols 257..285: base length and extra bits.
var lenBase = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115,
	131, 163, 195, 227, 258}
var lenExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}

// Distance symbols 0..29: base distance and extra bits.
var distBase = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
	2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
var distExtra = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}

type bitWriter struct {
	out   []byte
	acc   uint64
	nbits uint
}

// bits appends the n low bits of v, least significant first (DEFLATE's order for everything but Huffman codes).
func (w *bitWriter) bits(v uint32, n uint) {
	w.acc |= uint64(v) << w.nbits
	w.nbits += n
	for w.nbits >= 8 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.nbits -= 8
	}
}

// code appends an n-bit Huffman code, most significant bit first.
func (w *bitWriter) code(c uint32, n uint) {
	var r uint32
	for i := uint(0); i < n; i++ {
		r = r<<1 | (c>>i)&1
	}
	w.bits(r, n)
}

func (w *bitWriter) flush() []byte {
	if w.nbits > 0 {
		w.out = append(w.out, byte(w.acc))
	}
	w.acc, w.nbits = 0, 0
	return w.out
}

// litLen writes literal/length symbol s with the fixed Huffman code of RFC 1951 §3.2.6.
func (w *bitWriter) litLen(s int) {
	switch {
	case s < 144:
		w.code(uint32(0x30+s), 8)
	case s < 256:
		w.code(uint32(0x190+s-144), 9)
	case s < 280:
		w.code(uint32(s-256), 7)
	default:
		w.code(uint32(0xC0+s-280), 8)
	}
}

func (w *bitWriter) match(length, dist int) {
	ls := 28
	if length < maxMatch {
		for ls = 0; ls < 28 && int(lenBase[ls+1]) <= length; ls++ {
		}
	}
	w.litLen(257 + ls)
	w.bits(uint32(length-int(lenBase[ls])), uint(lenExtra[ls]))
	ds := 0
	for ds < 29 && int(distBase[ds+1]) <= dist {
		ds++
	}
	w.code(uint32(ds), 5)
	w.bits(uint32(dist-int(distBase[ds])), uint(distExtra[ds]))
}

// positions is Compress's last[k]: the most recent recorded position of each 3-byte string k. Small inputs use a
// map sized by their length; from denseFrom bytes on, a direct table of all 2^24 strings (64 MiB) costs less than
// the map would (about 16 bytes per input byte), so memory stays bounded by a constant for any input.
type positions struct {
	m     map[uint32]int
	dense []int32 // position + 1, 0 for none
}

const denseFrom = 1 << 22

func newPositions(n int) positions {
	if n >= denseFrom && n < 1<<31 {
		return positions{dense: make([]int32, 1<<24)}
	}
	return positions{m: make(map[uint32]int, n/4+1)}
}

func (p *positions) get(k uint32) (int, bool) {
	if p.dense != nil {
		v := p.dense[k]
		return int(v) - 1, v != 0
	}
	q, ok := p.m[k]
	return q, ok
}

func (p *positions) set(k uint32, i int) {
	if p.dense != nil {
		p.dense[k] = int32(i + 1) // inputs are at most 2^27 bytes (layout.MaxMetaRaw): no overflow
		return
	}
	p.m[k] = i
}

// Compress appends the canonical DEFLATE stream of src to dst.
func Compress(dst, src []byte) []byte { return compress(dst, src, newPositions(len(src))) }

func compress(dst, src []byte, last positions) []byte {
	w := bitWriter{out: dst}
	w.bits(1, 1) // BFINAL
	w.bits(1, 2) // BTYPE = 01, fixed Huffman
	key := func(i int) uint32 { return uint32(src[i]) | uint32(src[i+1])<<8 | uint32(src[i+2])<<16 }
	n := len(src)
	for p := 0; p < n; {
		if p+minMatch <= n {
			k := key(p)
			if q, ok := last.get(k); ok && p-q <= window {
				l := minMatch
				for l < maxMatch && p+l < n && src[q+l] == src[p+l] {
					l++
				}
				w.match(l, p-q)
				for i := p; i < p+l && i+minMatch <= n; i++ {
					last.set(key(i), i)
				}
				p += l
				continue
			}
			last.set(k, p)
		}
		w.litLen(int(src[p]))
		p++
	}
	w.litLen(endOfBlck)
	return w.flush()
}

var inflaters sync.Pool // io.ReadCloser from flate.NewReader

// Errors from Decompress.
var (
	ErrCorrupt      = errors.New("metadata is not a valid DEFLATE stream of the declared length")
	ErrNonCanonical = errors.New("metadata DEFLATE stream is not canonical")
)

// Decompress inflates src, which must hold exactly rawLen bytes once inflated and must be the canonical stream of
// them. It never allocates more than rawLen plus a small constant.
func Decompress(src []byte, rawLen int) ([]byte, error) {
	// Inflaters carry a 32 KiB window: reuse them, streams decode one small metadata block per frame.
	br := bytes.NewReader(src)
	r, _ := inflaters.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReader(br)
	} else if err := r.(flate.Resetter).Reset(br, nil); err != nil {
		return nil, ErrCorrupt
	}
	defer inflaters.Put(r)
	out := make([]byte, rawLen)
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, ErrCorrupt
	}
	var one [1]byte
	if n, err := r.Read(one[:]); n != 0 || err != io.EOF {
		return nil, ErrCorrupt
	}
	if !bytes.Equal(Compress(make([]byte, 0, len(src)), out), src) {
		return nil, ErrNonCanonical
	}
	return out, nil
}
