package synth

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
)

func TestKVLikeMatchesHistogram(t *testing.T) {
	b := KVLike(1<<20, 1)
	var h codec.ExpHistogram
	h.Add(b)
	cb := KVCodebook()
	got := codec.CodebookFromHistogram(&h)
	for _, e := range got { // the same 16 exponents; near-equal counts (115 vs 130) may swap places
		require.True(t, cb.Has(e), "exponent %d", e)
	}
	var esc uint64
	for e, c := range h {
		if !cb.Has(uint8(e)) {
			esc += c
		}
	}
	rate := float64(esc) / float64(1<<20)
	require.Greater(t, rate, 0.0)
	require.Less(t, rate, 0.001)
	require.Equal(t, b, KVLike(1<<20, 1), "deterministic")
}

func TestMixedEscapeRate(t *testing.T) {
	cb := KVCodebook()
	b := Mixed(1<<20, 2, 0.01, &cb)
	var h codec.ExpHistogram
	h.Add(b)
	var esc uint64
	for e, c := range h {
		if !cb.Has(uint8(e)) {
			esc += c
		}
	}
	rate := float64(esc) / float64(1<<20)
	require.InDelta(t, 0.0102, rate, 0.001)
}

func TestBF16(t *testing.T) {
	require.Equal(t, uint16(0x3F80), BF16(1))
	require.Equal(t, uint16(0xC000), BF16(-2))
	require.Equal(t, uint16(0x3F80), BF16(1.0019531)) // ties to even
}
