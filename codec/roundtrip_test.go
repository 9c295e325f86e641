package codec

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
)

// kvLike draws BF16 values whose exponents follow a KV-cache-like distribution (most mass on ~12 exponents around
// 120, a thin tail) with random signs and mantissas.
func kvLike(r *rand.Rand, n int, escapeRate float64) []byte {
	b := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		e := 121 + int(r.NormFloat64()*2.2)
		if r.Float64() < escapeRate {
			e = 10 + r.IntN(60) // far outside any KV codebook
		}
		e = min(max(e, 0), 255)
		v := uint16(r.Uint32()&0x807F) | uint16(e)<<7
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	return b
}

func newCPU(t testing.TB, opts ...Option) *Codec {
	c, err := New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRoundTripLengthsAndChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for shift := layout.MinChunkShift; shift <= layout.MaxChunkShift; shift++ {
		n := 1 << shift
		c := newCPU(t, WithChunkSize(n))
		for _, length := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, n - 1, n, n + 1, 2*n + 3, 3*n - 5} {
			for _, esc := range []float64{0, 0.001, 0.3, 1} {
				src := kvLike(r, length, esc)
				enc, err := c.EncodeAll(src, nil)
				require.NoError(t, err)
				dec, err := c.DecodeAll(enc, nil)
				require.NoError(t, err, "shift %d len %d esc %v", shift, length, esc)
				require.Equal(t, string(src), string(dec))
				// Bounded growth: never more than the dense streams' worst case plus headers.
				require.LessOrEqual(t, len(enc), 2*length+12*(length/n+1)+200)
			}
		}
	}
}

func TestAllBitPatterns(t *testing.T) {
	src := make([]byte, 2*65536)
	for v := 0; v < 65536; v++ {
		binary.LittleEndian.PutUint16(src[2*v:], uint16(v))
	}
	for _, cs := range []int{1024, 16384, 65536} {
		c := newCPU(t, WithChunkSize(cs))
		enc, err := c.EncodeAll(src, nil)
		require.NoError(t, err)
		dec, err := c.DecodeAll(enc, nil)
		require.NoError(t, err)
		require.Equal(t, src, dec)
	}
}

func TestOddTrailingByte(t *testing.T) {
	c := newCPU(t)
	src := []byte{1, 2, 3, 4, 5}
	enc, err := c.EncodeAll(src, nil)
	require.NoError(t, err)
	dec, err := c.DecodeAll(enc, nil)
	require.NoError(t, err)
	require.Equal(t, src, dec)
}

func TestChecksumsOff(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	src := kvLike(r, 50000, 0.01)
	c := newCPU(t, WithChecksums(false))
	enc, err := c.EncodeAll(src, nil)
	require.NoError(t, err)
	dec, err := c.DecodeAll(enc, nil)
	require.NoError(t, err)
	require.Equal(t, src, dec)
}

func TestEveryBitFlipDetected(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	src := kvLike(r, 3000, 0.01)
	c := newCPU(t, WithChunkSize(1024))
	enc, err := c.EncodeAll(src, nil)
	require.NoError(t, err)
	bad := make([]byte, len(enc))
	for bit := 0; bit < 8*len(enc); bit += flipStride {
		copy(bad, enc)
		bad[bit/8] ^= 1 << (bit % 8)
		_, err := c.DecodeAll(bad, nil)
		require.Error(t, err, "flip of bit %d undetected", bit)
		var e *Error
		require.True(t, errors.As(err, &e), "bit %d: untyped error %v", bit, err)
	}
}

func TestTruncationsRejected(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	src := kvLike(r, 5000, 0.01)
	c := newCPU(t, WithChunkSize(1024))
	enc, err := c.EncodeAll(src, nil)
	require.NoError(t, err)
	for n := 0; n < len(enc); n++ {
		_, err := c.DecodeAll(enc[:n], nil)
		require.Error(t, err, "truncation to %d accepted", n)
	}
	_, err = c.DecodeAll(append(enc, 0), nil)
	require.ErrorIs(t, err, ErrCorrupt)
}

func TestDeterministicAcrossWorkers(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	src := kvLike(r, 300000, 0.002)
	var first []byte
	for _, w := range []int{1, 2, 3, 8} {
		c := newCPU(t, WithWorkers(w), WithChunkSize(4096))
		enc, err := c.EncodeAll(src, nil)
		require.NoError(t, err)
		if first == nil {
			first = enc
		}
		require.Equal(t, first, enc, "workers=%d", w)
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	recs := []Record{
		{Blob: true, Data: []byte("header bytes")},
		{Name: "a", DType: layout.DTypeBF16, Shape: []uint64{3, 5, 7}, Data: kvLike(r, 105, 0.01)},
		{Name: "f32", DType: layout.DTypeF32, Shape: []uint64{3}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{Name: "empty", DType: layout.DTypeBF16, Shape: []uint64{0, 4}, Data: nil},
		{Name: "odd", DType: layout.DTypeOpaque, Data: []byte{9, 9, 9}},
	}
	c := newCPU(t)
	enc, err := c.Encode(context.Background(), nil, recs, true)
	require.NoError(t, err)
	var got []Record
	require.NoError(t, c.DecodeStream(context.Background(), enc, func(r *ParsedRecord, d []byte) error {
		got = append(got, Record{Name: r.Name, DType: r.DType, Shape: r.Shape, Data: append([]byte{}, d...), Blob: r.Blob})
		return nil
	}))
	require.Len(t, got, len(recs))
	for i := range recs {
		require.Equal(t, recs[i].Blob, got[i].Blob)
		require.Equal(t, string(recs[i].Data), string(got[i].Data))
		if !recs[i].Blob {
			require.Equal(t, recs[i].Name, got[i].Name)
			require.Equal(t, recs[i].DType, got[i].DType)
		}
	}
}

// TestPlannedMatchesOnePass: the two CPU encoding strategies (count escapes first and write in place, for large
// inputs; one pass then compaction, for small ones) produce identical bodies, and Codec.Encode's in-place path
// produces the same container as the staged one.
func TestPlannedMatchesOnePass(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	b := NewCPUBackend(2)
	cb := goldenCodebook
	for _, esc := range []float64{0, 0.001, 0.3, 1} {
		for _, n := range []int{1, 1000, 70000, 300001} {
			src := kvLike(r, n, esc)
			g := layout.SZ4{N: uint64(n), Shift: 12}
			mk := func() []EncodeJob {
				return []EncodeJob{{Format: layout.FormatSplitZip4, Src: src, N: g.N, Shift: 12, Codebook: &cb, Checksums: true,
					Dst: make([]byte, g.MaxBodySize())}}
			}
			one := mk()
			require.NoError(t, b.encodeOnePass(context.Background(), one))
			pl := mk()
			plans, err := b.PlanBodies(context.Background(), pl)
			require.NoError(t, err)
			pl[0].Dst = pl[0].Dst[:plans[0].Len]
			require.NoError(t, b.EncodePlanned(context.Background(), pl, plans))
			require.Equal(t, one[0].Out, pl[0].Out, "esc %v n %d", esc, n)
		}
	}
	// The container as a whole: in place (large input) versus staged through the interface-only path.
	src := kvLike(r, plannedMin/2+12345, 0.001)
	inPlace, err := newCPU(t, WithCodebook(cb)).EncodeAll(src, nil)
	require.NoError(t, err)
	staged, err := newCPU(t, WithCodebook(cb), WithBackend(onlyBackend{NewCPUBackend(2)})).EncodeAll(src, nil)
	require.NoError(t, err)
	require.Equal(t, staged, inPlace)
}

// onlyBackend hides every method but the Backend interface's.
type onlyBackend struct{ Backend }

// TestEncodePlacement: Codec.Encode writes the first coded body straight behind a header sized for worst-case
// lengths and moves it when the real header differs. Whatever the record mix, the caller's prefix and the capacity
// it left, the container is the same bytes, appended after an untouched prefix, and decodes to the records.
func TestEncodePlacement(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	c := newCPU(t, WithChunkSize(1024))
	for trial := 0; trial < 300; trial++ {
		var recs []Record
		for k := 1 + r.IntN(4); k > 0; k-- {
			switch r.IntN(5) {
			case 0:
				recs = append(recs, Record{Blob: true, Data: []byte("meta")})
			case 1:
				recs = append(recs, Record{Name: "f32", DType: layout.DTypeF32, Data: make([]byte, 4*r.IntN(5))})
			default:
				n := []int{0, 1, 2, 511, 1024, 1025, 3000}[r.IntN(7)]
				esc := []float64{0, 0.002, 0.05, 1}[r.IntN(4)]
				recs = append(recs, Record{Name: "t", DType: layout.DTypeBF16, Data: kvLike(r, n, esc)})
			}
		}
		ref, err := c.Encode(context.Background(), nil, recs, true)
		require.NoError(t, err)
		prefix := make([]byte, r.IntN(9))
		for i := range prefix {
			prefix[i] = byte(r.Uint32())
		}
		for _, extra := range []int{0, 1, len(ref) / 2, len(ref), 2 * len(ref)} {
			dst := append(make([]byte, 0, len(prefix)+extra), prefix...)
			got, err := c.Encode(context.Background(), dst, recs, true)
			require.NoError(t, err)
			require.Equal(t, prefix, got[:len(prefix)], "trial %d: prefix changed", trial)
			require.Equal(t, ref, got[len(prefix):], "trial %d extra %d", trial, extra)
		}
		i := 0
		require.NoError(t, c.DecodeStream(context.Background(), ref, func(rc *ParsedRecord, d []byte) error {
			require.Equal(t, string(recs[i].Data), string(d), "trial %d record %d", trial, i)
			i++
			return nil
		}))
		require.Equal(t, len(recs), i)
	}
}
