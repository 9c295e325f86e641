package codec

import (
	"encoding/binary"
	"sort"
)

// ExpHistogram counts BF16 exponents.
type ExpHistogram [256]uint64

// Add counts the exponents of little-endian BF16 values (a trailing odd byte is ignored).
func (h *ExpHistogram) Add(b []byte) {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		h[uint8(x>>7)]++
		h[uint8(x>>23)]++
		h[uint8(x>>39)]++
		h[uint8(x>>55)]++
	}
	for ; i+2 <= len(b); i += 2 {
		h[uint8(binary.LittleEndian.Uint16(b[i:])>>7)]++
	}
}

// CodebookFromHistogram is the format's canonical codebook choice (docs/FORMAT.md §5.1): the 16 exponents with the
// highest counts, ordered by count descending and then by exponent ascending, so that every implementation
// calibrating on the same data derives the same codebook, byte for byte.
func CodebookFromHistogram(h *ExpHistogram) Codebook {
	idx := make([]int, 256)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return h[idx[a]] > h[idx[b]] })
	var cb Codebook
	for i := range cb {
		cb[i] = uint8(idx[i])
	}
	return cb
}
