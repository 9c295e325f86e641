package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/internal/spec"
)

func encTBE3(t testing.TB, src []byte, shift uint, checksums bool) []byte {
	t.Helper()
	n := uint64(len(src) / 2)
	body, err := encodeTBE3(make([]byte, layout.TBE3{N: n, Shift: shift}.MaxBodySize()), src, n, shift, checksums)
	require.NoError(t, err)
	return body
}

func decTBE3(body []byte, n uint64, shift uint, checksums bool) ([]byte, error) {
	dst := make([]byte, 2*n)
	return dst, decodeTBE3(dst, body, n, shift, checksums)
}

func TestTBE3MatchesSpecEncoder(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 41))
	for _, shift := range []uint{10, 11, 16} {
		cv := 1 << shift
		for _, n := range []int{1, 2, 3, 23, 24, 25, 26, 31, 63, 64, 65, 127, 128, 129, 1000, cv - 1, cv, cv + 1, 2*cv + 77} {
			for _, far := range []float64{0, 0.02, 0.3, 1} {
				for _, cs := range []bool{false, true} {
					src := kvLike(r, n, far)
					got := encTBE3(t, src, shift, cs)
					want := spec.TBE3Encode(src, shift, cs, nil)
					require.Equal(t, want, got, "shift %d n %d far %v checksums %v", shift, n, far, cs)
					require.LessOrEqual(t, uint64(len(got)), layout.TBE3{N: uint64(n), Shift: shift}.MaxBodySize())
					dec, err := decTBE3(got, uint64(n), shift, cs)
					require.NoError(t, err, "shift %d n %d far %v", shift, n, far)
					require.Equal(t, src, dec)
				}
			}
		}
	}
}

func TestTBE3RoundTripPatterns(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	mk := func(n int, f func(i int) uint16) []byte {
		b := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint16(b[2*i:], f(i))
		}
		return b
	}
	cases := map[string][]byte{
		"all-bit-patterns": mk(65536, func(i int) uint16 { return uint16(i) }),
		"uniform-random":   mk(5000, func(int) uint16 { return uint16(r.Uint32()) }),
		"zeros":            mk(3000, func(int) uint16 { return 0 }),
		"exp255":           mk(3000, func(i int) uint16 { return 0x7F80 | uint16(i&0x807F) }),
		// Window at exponent 0 with fallbacks above it, and at 249 with fallbacks below.
		"low":  mk(3000, func(i int) uint16 { return uint16(i%5+i%23/22*90)<<7 | uint16(i&0x807F) }),
		"high": mk(3000, func(i int) uint16 { return uint16(255-i%5-i%23/22*90)<<7 | uint16(i&0x807F) }),
		// Every value a fallback of a window that covers few: 7 common exponents spread over 14 values.
		"alternating": mk(4096, func(i int) uint16 { return uint16(10+i%14*17) << 7 }),
		// Chunks that sit right at the coded/raw boundary.
		"boundary": mk(8192, func(i int) uint16 {
			if i%1024 < 385 {
				return uint16(i%250) << 7
			}
			return uint16(120+i%7) << 7
		}),
	}
	for name, src := range cases {
		n := uint64(len(src) / 2)
		for _, shift := range []uint{10, 13, 16} {
			body := encTBE3(t, src, shift, true)
			require.Equal(t, spec.TBE3Encode(src, shift, true, nil), body, name)
			dec, err := decTBE3(body, n, shift, true)
			require.NoError(t, err, name)
			require.Equal(t, src, dec, name)
			require.LessOrEqual(t, uint64(len(body)), 2*n+12*layout.TBE3{N: n, Shift: shift}.Chunks()+26, name)
		}
	}
}

// TestTBE3BitFlips flips every bit of small bodies: with checksums every flip must be caught; without, a body
// that still decodes must be the canonical encoding of what it decodes to (so it is the original).
func TestTBE3BitFlips(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, n := range []int{300, 1500, 2100} {
		src := kvLike(r, n, 0.03)
		if n == 2100 {
			copy(src[2*1024:], kvLike(r, 1024, 0.9)) // a raw chunk in the middle
		}
		for _, cs := range []bool{true, false} {
			body := encTBE3(t, src, 10, cs)
			for bit := 0; bit < 8*len(body); bit += flipStride {
				bad := append([]byte{}, body...)
				bad[bit/8] ^= 1 << (bit % 8)
				dec, err := decTBE3(bad, uint64(n), 10, cs)
				if cs {
					require.Error(t, err, "n %d: flip of bit %d undetected", n, bit)
				}
				if err != nil {
					var e *Error
					require.True(t, errors.As(err, &e), "untyped error %v", err)
					continue
				}
				// Without checksums a flip of a sign or mantissa bit is another valid body; anything else is not.
				require.Equal(t, bad, encTBE3(t, dec, 10, cs), "n %d: flip of bit %d decodes to a non-canonical body", n, bit)
			}
		}
	}
}

func classOf(err error) error {
	for _, c := range []error{ErrCorrupt, ErrChecksum, ErrNonCanonical, ErrTooLarge, ErrInvalidInput} {
		if errors.Is(err, c) {
			return c
		}
	}
	return nil
}

func requireClass(t *testing.T, err error, cls error, chunk int64, msg string) {
	t.Helper()
	require.Error(t, err, msg)
	require.ErrorIs(t, err, cls, msg)
	var e *Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, chunk, e.Chunk, "%s: %v", msg, err)
}

// TestTBE3NonCanonical builds well-formed bodies (valid tables and checksums) with one rule of the canonical form
// broken and checks each is rejected as non-canonical at its chunk.
func TestTBE3NonCanonical(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 77))
	const shift = 10
	src := kvLike(r, 2999, 0.01) // three chunks, all coded; the SM stream has one padding byte
	canon := func(hist [256]int) int {
		w, best := 0, -1
		for s := 0; s <= 249; s++ {
			cov := 0
			for e := s; e <= s+6; e++ {
				cov += hist[e]
			}
			if cov > best {
				w, best = s, cov
			}
		}
		return w
	}
	for _, cs := range []bool{true, false} {
		// A worse window for chunk 1.
		body := spec.TBE3Encode(src, shift, cs, func(c int, h [256]int) (bool, int) {
			if c == 1 {
				return false, canon(h) + 1
			}
			return false, canon(h)
		})
		_, err := decTBE3(body, 2999, shift, cs)
		requireClass(t, err, ErrNonCanonical, 1, "shifted window")

		// Raw where coded fits.
		body = spec.TBE3Encode(src, shift, cs, func(c int, h [256]int) (bool, int) { return c == 2, canon(h) })
		_, err = decTBE3(body, 2999, shift, cs)
		requireClass(t, err, ErrNonCanonical, 2, "needless raw chunk")
	}
	// Coded where raw is required: exactly rawSide(1024) = 640 fallbacks, the tie that goes to raw (more would
	// not fit the body-size bound, which is corrupt).
	wide := make([]byte, 2*1024)
	for i := 0; i < 1024; i++ {
		e := 120
		if i >= 384 {
			e = i % 100
		}
		binary.LittleEndian.PutUint16(wide[2*i:], uint16(e)<<7)
	}
	require.Equal(t, uint32(1<<24), binary.LittleEndian.Uint32(encTBE3(t, wide, shift, true)[layout.TBE3{N: 1024, Shift: shift}.TableOffset():]))
	body := spec.TBE3Encode(wide, shift, true, func(c int, h [256]int) (bool, int) { return false, canon(h) })
	require.Len(t, body, int(layout.TBE3{N: 1024, Shift: shift}.MaxBodySize()))
	_, err := decTBE3(body, 1024, shift, true)
	requireClass(t, err, ErrNonCanonical, 0, "coded chunk that must be raw")

	// A tie between windows: the lower start is canonical, the higher one is not.
	tie := make([]byte, 2*1024)
	for i := 0; i < 1024; i++ {
		e := 100 + i%2*7 // exponents 100 and 107, equally often: windows [94,100]..[100,106] and [101,107]..
		binary.LittleEndian.PutUint16(tie[2*i:], uint16(e)<<7)
	}
	good := encTBE3(t, tie, shift, true)
	require.Equal(t, uint32(94)<<16|512, binary.LittleEndian.Uint32(good[layout.TBE3{N: 1024, Shift: shift}.TableOffset():]))
	body = spec.TBE3Encode(tie, shift, true, func(int, [256]int) (bool, int) { return false, 101 })
	_, err = decTBE3(body, 1024, shift, true)
	requireClass(t, err, ErrNonCanonical, 0, "higher of two tied windows")

	// Hand edits, checksums off so the edit itself is what is judged.
	base := encTBE3(t, src, shift, false)
	g := newTBE3Geom(2999, shift)
	edit := func(name string, chunk int64, f func(b []byte)) {
		b := append([]byte{}, base...)
		f(b)
		_, err := decTBE3(b, 2999, shift, false)
		requireClass(t, err, ErrNonCanonical, chunk, name)
	}
	edit("crc without checksums", 1, func(b []byte) { b[g.table+12+8] = 1 })
	edit("SM padding", 2, func(b []byte) { b[g.sm+2999] = 1 })
	lastPlane, _ := g.planePiece(2)
	// Chunk 2 has 951 values: tile 14 holds 55 of them; bit 60 of its plane 0 is padding.
	edit("plane padding", 2, func(b []byte) { b[lastPlane+8*14+7] |= 0x10 })
	_, _, _, side0, planes0, _ := g.pieces(base, 0)
	require.NotEmpty(t, side0, "chunk 0 has no fallbacks")
	edit("fallback inside the window", 0, func(b []byte) {
		w := int(binary.LittleEndian.Uint32(b[g.table:]) >> 16 & 0xFF)
		b[g.side] = byte(w + 3)
	})
	// Turn a fallback (code 0) into a coded value: one zero code fewer than the table declares.
	edit("count mismatch", 0, func(b []byte) {
		for j := 0; j < 64*len(planes0)/24; j++ {
			p0 := binary.LittleEndian.Uint64(b[8*(j/64):])
			p1 := binary.LittleEndian.Uint64(b[8*(16+j/64):])
			p2 := binary.LittleEndian.Uint64(b[8*(32+j/64):])
			if (p0|p1|p2)>>(j%64)&1 == 0 {
				b[8*(j/64)+j%64/8] |= 1 << (j % 8)
				return
			}
		}
		t.Fatal("no fallback in chunk 0")
	})
	for c := 0; c < 3; c++ {
		if k := binary.LittleEndian.Uint32(base[g.table+uint64(12*c):]) & 0xFFFF; k%4 != 0 {
			off := binary.LittleEndian.Uint32(base[g.table+uint64(12*c)+4:])
			edit("side padding", int64(c), func(b []byte) { b[g.side+uint64(off)+uint64(k)] = 0x55 })
		}
	}
}

// TestTBE3Structure covers the structural (corrupt) rules and the precedence of classes and chunks.
func TestTBE3Structure(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	const shift, n = 10, 2999
	src := kvLike(r, n, 0.01)
	copy(src[2*1024:], kvLike(r, 1024, 0.95)) // chunk 1 raw
	body := encTBE3(t, src, shift, true)
	g := newTBE3Geom(n, shift)
	info := func(b []byte, c int) []byte { return b[g.table+uint64(12*c):] }
	require.Equal(t, uint32(1<<24), binary.LittleEndian.Uint32(info(body, 1)), "chunk 1 should be raw")
	edit := func(name string, cls error, chunk int64, f func(b []byte) []byte) {
		b := f(append([]byte{}, body...))
		_, err := decTBE3(b, n, shift, true)
		requireClass(t, err, cls, chunk, name)
	}
	edit("kind 2", ErrCorrupt, 2, func(b []byte) []byte { info(b, 2)[3] = 2; return b })
	edit("raw with a window", ErrCorrupt, 1, func(b []byte) []byte { info(b, 1)[2] = 1; return b })
	edit("window 250", ErrCorrupt, 0, func(b []byte) []byte { info(b, 0)[2] = 250; return b })
	edit("side offset", ErrCorrupt, 2, func(b []byte) []byte { info(b, 2)[4] += 4; return b })
	edit("short side", ErrCorrupt, 2, func(b []byte) []byte { return b[:len(b)-4] })
	edit("long side", ErrCorrupt, -1, func(b []byte) []byte { return append(b, 0, 0, 0, 0) })
	edit("count over m", ErrCorrupt, 2, func(b []byte) []byte {
		binary.LittleEndian.PutUint16(info(b, 2), 1000) // chunk 2 has 951 values
		return b
	})
	// Precedence: a corrupt entry at chunk 2 beats a checksum error at chunk 0; a checksum error at chunk 2 beats
	// a non-canonical chunk 0.
	edit("corrupt before checksum", ErrCorrupt, 2, func(b []byte) []byte {
		b[0] ^= 1
		info(b, 2)[3] = 7
		return b
	})
	edit("checksum before non-canonical", ErrChecksum, 2, func([]byte) []byte {
		// Chunk 0 raw although it codes (non-canonical, valid CRC), then chunk 2's SM padding set: its CRC fails.
		b := spec.TBE3Encode(src, shift, true, func(c int, h [256]int) (bool, int) {
			w, _ := tbe3Window(histOf(h))
			return c != 2, w // chunk 1 is raw anyway
		})
		b[g.sm+n] = 1
		return b
	})
	// Parameters.
	_, err := decTBE3(body, n, 9, true)
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = decTBE3(nil, 0, 10, true)
	require.ErrorIs(t, err, ErrNonCanonical)
	_, err = encodeTBE3(make([]byte, 100), nil, 0, 10, true)
	require.ErrorIs(t, err, ErrInvalidInput)
	_, err = encodeTBE3(make([]byte, 10), src, n, 10, true)
	require.ErrorIs(t, err, ErrInvalidInput)
	require.Equal(t, ErrNonCanonical, classOf(func() error { _, e := decTBE3(nil, 0, 10, false); return e }()))
}

func histOf(h [256]int) *[256]uint32 {
	var u [256]uint32
	for i, x := range h {
		u[i] = uint32(x)
	}
	return &u
}

// TestTBE3ChunkAPI encodes chunks out of order through the per-chunk functions and gets the sequential bytes.
func TestTBE3ChunkAPI(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	const shift, n = 10, 5000
	src := kvLike(r, n, 0.05)
	want := encTBE3(t, src, shift, true)
	g := layout.TBE3{N: n, Shift: shift}
	body := make([]byte, g.MaxBodySize())
	chunks := make([]tbe3Chunk, g.Chunks())
	for _, c := range r.Perm(len(chunks)) {
		chunks[c] = encodeTBE3Chunk(body, src, n, shift, uint64(c), make([]byte, layout.TBE3RawSide(1<<shift)))
	}
	require.Equal(t, want, finishTBE3(body, n, shift, chunks, true))
	require.NoError(t, checkTBE3Table(want, n, shift))
	dst := make([]byte, 2*n)
	for _, c := range r.Perm(len(chunks)) {
		require.NoError(t, tbe3ChunkChecksum(want, n, shift, uint64(c)))
		require.NoError(t, decodeTBE3Chunk(dst, want, n, shift, uint64(c), true))
	}
	require.Equal(t, src, dst)
}

// FuzzTBE3Body drives the TBE-3 body decoder with arbitrary bodies: nil or a typed error, never a panic; a body
// that decodes is the one the encoder produces for the decoded values.
func FuzzTBE3Body(f *testing.F) {
	for _, n := range []int{1, 30, 100, 1024, 1500, 2100} {
		r := rand.New(rand.NewPCG(uint64(n), 10))
		src := kvLike(r, n, 0.03)
		if n == 2100 {
			copy(src[2*1024:], kvLike(r, 1024, 0.9))
		}
		f.Add(encTBE3(f, src, 10, n%2 == 0), uint32(n), n%2 == 0)
	}
	f.Fuzz(func(t *testing.T, body []byte, n32 uint32, checksums bool) {
		n := uint64(n32 % 100000)
		dst := make([]byte, 2*n)
		err := decodeTBE3(dst, body, n, 10, checksums)
		if err != nil {
			var e *Error
			require.True(t, errors.As(err, &e), "untyped error %v", err)
			return
		}
		again, err := encodeTBE3(make([]byte, layout.TBE3{N: n, Shift: 10}.MaxBodySize()), dst, n, 10, checksums)
		require.NoError(t, err)
		if !bytes.Equal(body, again) { // not require.Equal: its diff of large bodies takes minutes
			t.Fatalf("a body of %d bytes (n %d) decodes but is not canonical: re-encoded to %d bytes, first difference at %d",
				len(body), n, len(again), firstDiff(body, again))
		}
	})
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// tbe3BenchInput is KV-like data whose best window covers about 97% of values, like the shared KV test file.
var tbe3BenchInput = sync.OnceValue(func() []byte {
	r := rand.New(rand.NewPCG(3, 1))
	b := make([]byte, 16<<20)
	for i := 0; i < len(b)/2; i++ {
		e := min(max(121+int(math.Round(r.NormFloat64()*1.6)), 0), 255)
		binary.LittleEndian.PutUint16(b[2*i:], uint16(r.Uint32()&0x807F)|uint16(e)<<7)
	}
	return b
})

// The reference codec on one core (go test -run '^$' -bench TBE3 ./codec/): 8 MiB tensors, default chunks, checksums.
func BenchmarkTBE3Encode(b *testing.B) {
	src := tbe3BenchInput()[:8<<20]
	n := uint64(len(src) / 2)
	dst := make([]byte, layout.TBE3{N: n, Shift: layout.DefaultChunkShift}.MaxBodySize())
	var body []byte
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		var err error
		if body, err = encodeTBE3(dst, src, n, layout.DefaultChunkShift, true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(src))/float64(len(body)), "ratio")
}

func BenchmarkTBE3Decode(b *testing.B) {
	src := tbe3BenchInput()[:8<<20]
	n := uint64(len(src) / 2)
	body := encTBE3(b, src, layout.DefaultChunkShift, true)
	dst := make([]byte, len(src))
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		if err := decodeTBE3(dst, body, n, layout.DefaultChunkShift, true); err != nil {
			b.Fatal(err)
		}
	}
}
