package codec

import (
	"encoding/binary"
	"sort"
)

// ExpHistogram counts BF16 exponents.
type ExpHistogram [256]uint64

// blockBytes bounds the bytes counted into Add's 32-bit lane counters before they are flushed: each of the 4 lanes
// then counts at most blockBytes/8 < 2^32 values.
const blockBytes = 1 << 30

// Add counts the exponents of little-endian BF16 values (a trailing odd byte is ignored), without allocating.
func (h *ExpHistogram) Add(b []byte) {
	for len(b) >= 256 {
		n := min(len(b), blockBytes)
		h.addBlock(b[:n])
		b = b[n&^7:]
	}
	for ; len(b) >= 2; b = b[2:] {
		h[uint8(binary.LittleEndian.Uint16(b)>>7)]++
	}
}

// addBlock counts whole 8-byte words of b. The 4 values of a word go to 4 separate tables, so that runs of equal
// exponents, the common case in KV caches, do not serialise on incrementing one counter.
func (h *ExpHistogram) addBlock(b []byte) {
	var lanes [4][256]uint32
	for ; len(b) >= 8; b = b[8:] {
		w := binary.LittleEndian.Uint64(b)
		lanes[0][uint8(w>>7)]++
		lanes[1][uint8(w>>23)]++
		lanes[2][uint8(w>>39)]++
		lanes[3][uint8(w>>55)]++
	}
	for e := range h {
		h[e] += uint64(lanes[0][e]) + uint64(lanes[1][e]) + uint64(lanes[2][e]) + uint64(lanes[3][e])
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
