package calib

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bf16 is the little-endian BF16 value with the given sign, exponent and mantissa.
func bf16(sign, exp, mant uint16) []byte {
	return binary.LittleEndian.AppendUint16(nil, sign<<15|exp<<7|mant&0x7F)
}

// values encodes the exponents as BF16 values with varied signs and mantissas.
func values(exps ...uint8) []byte {
	var b []byte
	for i, e := range exps {
		b = append(b, bf16(uint16(i&1), uint16(e), uint16(i*37))...)
	}
	return b
}

// reference counts exponents one value at a time.
func reference(b []byte) Histogram {
	var h Histogram
	for i := 0; i+1 < len(b); i += 2 {
		h[(uint16(b[i])|uint16(b[i+1])<<8)>>7&0xFF]++
	}
	return h
}

func TestHistogramKnown(t *testing.T) {
	var h Histogram
	h.Add(values(127, 127, 0, 255, 128, 127))
	assert.Equal(t, uint64(3), h[127])
	assert.Equal(t, uint64(1), h[0])
	assert.Equal(t, uint64(1), h[255])
	assert.Equal(t, uint64(1), h[128])
	assert.Equal(t, uint64(6), h.Total())
	assert.Equal(t, 4, h.Distinct())

	// 1.0 is 0x3F80: exponent 127. -2.0 is 0xC000: exponent 128. The sign bit must not leak into the exponent.
	var g Histogram
	g.Add([]byte{0x80, 0x3F, 0x00, 0xC0, 0xFF}) // the odd trailing byte is ignored
	assert.Equal(t, uint64(1), g[127])
	assert.Equal(t, uint64(1), g[128])
	assert.Equal(t, uint64(2), g.Total())
}

func TestHistogramMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 7, 8, 9, 254, 255, 256, 257, 263, 1000, 4097, 1 << 16} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		var h Histogram
		h.Add(b)
		assert.Equal(t, reference(b), h, "n=%d", n)
		assert.Equal(t, uint64(n/2), h.Total())
	}
}

func TestAddParallel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, 5*parallelMin+13)
	for i := range b {
		b[i] = byte(r.Uint32() >> 24 & 0x83) // few exponents: long runs
	}
	want := reference(b)
	for _, workers := range []int{0, 1, 2, 3, 5, 64} {
		var h Histogram
		h.AddParallel(b, workers)
		assert.Equal(t, want, h, "workers=%d", workers)
	}
	var h Histogram
	h.AddParallel(b[:3], 8)
	assert.Equal(t, reference(b[:3]), h)
}

func TestMerge(t *testing.T) {
	a, b := reference(values(1, 2, 2)), reference(values(2, 3))
	a.Merge(&b)
	assert.Equal(t, reference(values(1, 2, 2, 2, 3)), a)
}

func TestEntropy(t *testing.T) {
	var h Histogram
	assert.Zero(t, h.Entropy())

	h[42] = 1000
	assert.Zero(t, h.Entropy())

	for e := range h {
		h[e] = 7
	}
	assert.InDelta(t, 8, h.Entropy(), 1e-12)

	h = Histogram{10: 5, 20: 5, 30: 5, 40: 5}
	assert.InDelta(t, 2, h.Entropy(), 1e-12)

	h = Histogram{1: 3, 2: 1}
	want := -(0.75*math.Log2(0.75) + 0.25*math.Log2(0.25))
	assert.InDelta(t, want, h.Entropy(), 1e-12)
}

func TestAddDoesNotAllocate(t *testing.T) {
	b := make([]byte, 1<<16)
	var h Histogram
	require.Zero(t, testing.AllocsPerRun(10, func() { h.Add(b) }))
}

func BenchmarkHistogramAdd(b *testing.B) {
	for _, bc := range []struct {
		name string
		gen  func(r *rand.Rand) byte
	}{
		{"random", func(r *rand.Rand) byte { return byte(r.Uint32()) }},
		{"kvlike", func(r *rand.Rand) byte { return 0x3C | byte(r.IntN(4)) }}, // few exponents, long runs
	} {
		r := rand.New(rand.NewPCG(5, 6))
		data := make([]byte, 16<<20)
		for i := range data {
			if i%2 == 1 {
				data[i] = bc.gen(r)
			} else {
				data[i] = byte(r.Uint32())
			}
		}
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			var h Histogram
			for b.Loop() {
				h.Add(data)
			}
		})
		b.Run(bc.name+"-parallel", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			var h Histogram
			for b.Loop() {
				h.AddParallel(data, 0)
			}
		})
	}
}
