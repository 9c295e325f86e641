package codec

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
)

// sealOf equals the CRC-32C of its input serialised as little-endian words, on both of its paths (a few words, and a
// block at a time) and across block boundaries.
func TestSealOfLengths(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 2, 100, sealBlock/8 - 1, sealBlock / 8, sealBlock/4 - 3, sealBlock/4 - 2, sealBlock/4 - 1,
		sealBlock / 4, sealBlock/4 + 1, 2*sealBlock/4 - 2, 4096, 4099} {
		words := make([]uint32, n)
		for i := range words {
			words[i] = rng.Uint32()
		}
		meta, index := rng.Uint32(), rng.Uint32()
		b := binary.LittleEndian.AppendUint32(nil, meta)
		b = binary.LittleEndian.AppendUint32(b, index)
		for _, w := range words {
			b = binary.LittleEndian.AppendUint32(b, w)
		}
		if got, want := sealOf(meta, index, words), crc32c.Checksum(b); got != want {
			t.Errorf("%d words: seal %08x, CRC-32C of the bytes %08x", n, got, want)
		}
	}
}

// sealOfTable, reading crc words in place from chunk-table entries, equals sealOf of the words tableCRCWords
// lists, across the block boundaries of both paths.
func TestSealOfTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 1, 2, sealBlock/8 - 1, sealBlock / 8, sealBlock/4 - 3, sealBlock/4 - 2, sealBlock/4 - 1,
		sealBlock / 4, 2*sealBlock/4 - 2, 4096, 4099} {
		tab := make([]byte, n*layout.ChunkEntrySize)
		for i := range tab {
			tab[i] = byte(rng.Uint32())
		}
		words, err := tableCRCWords(tab, 0, uint64(n), nil)
		if err != nil {
			t.Fatal(err)
		}
		meta, index := rng.Uint32(), rng.Uint32()
		if got, want := sealOfTable(meta, index, tab), sealOf(meta, index, words); got != want {
			t.Errorf("%d entries: seal from the table %08x, from its words %08x", n, got, want)
		}
	}
}
