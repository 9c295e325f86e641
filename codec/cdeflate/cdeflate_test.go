package cdeflate

import (
	"bytes"
	"compress/flate"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func inflate(t *testing.T, b []byte) []byte {
	out, err := io.ReadAll(flate.NewReader(bytes.NewReader(b)))
	require.NoError(t, err)
	return out
}

func TestRoundTripStdlib(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	inputs := [][]byte{nil, {0}, []byte("ab"), []byte("abcabcabcabcabcabc"), bytes.Repeat([]byte{0}, 100000),
		[]byte(`{"seq0.layer0.k":{"dtype":"BF16","shape":[512,4,8],"data_offsets":[0,32768]},"seq0.layer0.v":{}}`)}
	for i := 0; i < 50; i++ {
		b := make([]byte, r.IntN(70000))
		alpha := 1 + r.IntN(255)
		for j := range b {
			b[j] = byte(r.IntN(alpha))
		}
		inputs = append(inputs, b)
	}
	for _, in := range inputs {
		c := Compress(nil, in)
		require.Equal(t, len(in), len(inflate(t, c)))
		require.True(t, bytes.Equal(in, inflate(t, c)))
		out, err := Decompress(c, len(in))
		require.NoError(t, err)
		require.True(t, bytes.Equal(in, out))
	}
}

func TestDecompressRejects(t *testing.T) {
	in := []byte("hello hello hello hello, canonical world")
	c := Compress(nil, in)
	_, err := Decompress(c, len(in)+1)
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = Decompress(c, len(in)-1)
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = Decompress(c[:len(c)-2], len(in))
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = Decompress(append(append([]byte{}, c...), 0), len(in))
	require.ErrorIs(t, err, ErrNonCanonical)
	// A valid but different DEFLATE encoding of the same bytes (the stdlib's) is refused.
	var b bytes.Buffer
	fw, _ := flate.NewWriter(&b, flate.BestCompression)
	fw.Write(in)
	fw.Close()
	_, err = Decompress(b.Bytes(), len(in))
	require.ErrorIs(t, err, ErrNonCanonical)
}

func FuzzDecompress(f *testing.F) {
	f.Add(Compress(nil, []byte("abcabcabc")), 9)
	f.Add([]byte{3, 0}, 0)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 0 || n > 1<<20 {
			return
		}
		out, err := Decompress(b, n)
		if err == nil {
			require.Equal(t, b, Compress(nil, out))
		}
	})
}

// TestDenseTableSameStream: the direct table Compress uses for large inputs records exactly what the map does, so
// both give the same canonical stream.
func TestDenseTableSameStream(t *testing.T) {
	src := make([]byte, 3<<20)
	x := uint32(1)
	for i := range src {
		x = x*1664525 + 1013904223
		src[i] = byte(x>>29) + 'a' // a small alphabet: many matches at every distance
		if i%4096 < 300 {
			src[i] = 0
		}
	}
	dense := compress(nil, src, positions{dense: make([]int32, 1<<24)})
	sparse := compress(nil, src, positions{m: map[uint32]int{}})
	if !bytes.Equal(dense, sparse) {
		t.Fatalf("dense table: %d bytes, map: %d bytes, streams differ", len(dense), len(sparse))
	}
	out, err := Decompress(dense, len(src))
	if err != nil || !bytes.Equal(out, src) {
		t.Fatalf("round trip: %v", err)
	}
}
