package crc32c

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCombineMatchesWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		a := make([]byte, r.IntN(300))
		b := make([]byte, r.IntN(300))
		for j := range a {
			a[j] = byte(r.Uint32())
		}
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		whole := Checksum(append(append([]byte{}, a...), b...))
		require.Equal(t, whole, Combine(Checksum(a), Checksum(b), uint64(len(b))))
	}
}

func TestLinearAndFinish(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200; i++ {
		p := make([]byte, r.IntN(1000))
		for j := range p {
			p[j] = byte(r.Uint32())
		}
		// Split at a random point, checksum the halves linearly, shift the first half over the second.
		k := 0
		if len(p) > 0 {
			k = r.IntN(len(p) + 1)
		}
		lin := Shift(Linear(0, p[:k]), uint64(len(p)-k)) ^ Linear(0, p[k:])
		require.Equal(t, Checksum(p), Finish(lin, uint64(len(p))))
	}
}

func TestKnownVector(t *testing.T) {
	// The CRC-32C check value of "123456789" from the Castagnoli catalogue.
	require.Equal(t, uint32(0xE3069283), Checksum([]byte("123456789")))
}

func TestXPowIsMultiplicative(t *testing.T) {
	require.Equal(t, uint32(1)<<31, XPow(0))
	for _, n := range []uint64{1, 7, 8, 31, 32, 33, 1000, 1 << 40} {
		require.Equal(t, XPow(n+5), MulMod(XPow(n), XPow(5)), "n=%d", n)
	}
}
