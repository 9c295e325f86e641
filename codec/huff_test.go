package codec

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/internal/spec"
)

func encHuff(t testing.TB, src []byte, shift uint, checksums bool) []byte {
	t.Helper()
	n := uint64(len(src) / 2)
	body, err := encodeHuff(make([]byte, layout.Huff{N: n, Shift: shift}.MaxBodySize()), src, n, shift, checksums)
	require.NoError(t, err)
	return body
}

// huffInputs are the data shapes the huff tests run on: KV-like, one exponent, every exponent (deep trees, the
// length limiter), skewed counts (Fibonacci-like, longest codes), and noise (raw chunks).
func huffInputs(r *rand.Rand, n int) map[string][]byte {
	out := map[string][]byte{"kv": kvLike(r, n, 0.01), "kvesc": kvLike(r, n, 0.3)}
	one := make([]byte, 2*n)
	all := make([]byte, 2*n)
	fib := make([]byte, 2*n)
	noise := make([]byte, 2*n)
	fa, fb, sym, left := 1, 1, 0, 0
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint16(one[2*i:], uint16(r.Uint32()&0x807F)|120<<7)
		binary.LittleEndian.PutUint16(all[2*i:], uint16(r.Uint32()&0x807F)|uint16(i%256)<<7)
		if left == 0 { // exponent sym repeats fib(sym) times: a maximally deep Huffman tree
			sym, left = (sym+1)%40, fa
			fa, fb = fb, fa+fb
			if sym == 0 {
				fa, fb, left = 1, 1, 1
			}
		}
		left--
		binary.LittleEndian.PutUint16(fib[2*i:], uint16(r.Uint32()&0x807F)|uint16(100+sym)<<7)
		binary.LittleEndian.PutUint16(noise[2*i:], uint16(r.Uint32()))
	}
	out["one"], out["all"], out["fib"], out["noise"] = one, all, fib, noise
	return out
}

func TestHuffRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 14))
	for shift := uint(layout.HuffMinShift); shift <= layout.HuffMaxShift; shift++ {
		cn := 1 << shift
		for _, n := range []int{1, 2, 31, 32, 33, 100, cn - 1, cn, cn + 1, 2*cn + 37} {
			for name, src := range huffInputs(r, n) {
				for _, crc := range []bool{true, false} {
					body := encHuff(t, src, shift, crc)
					dst := make([]byte, len(src))
					require.NoError(t, decodeHuff(dst, body, uint64(n), shift, crc), "%s n %d shift %d", name, n, shift)
					require.True(t, bytes.Equal(src, dst), "%s n %d shift %d", name, n, shift)
					// The CPU backend's chunk-parallel codec writes the same bytes and agrees on decoding.
					be := NewCPUBackend(3)
					jobs := []EncodeJob{{Format: layout.FormatHuff, DType: layout.DTypeBF16, Src: src, N: uint64(n),
						Shift: shift, Checksums: crc, Dst: make([]byte, layout.Huff{N: uint64(n), Shift: shift}.MaxBodySize())}}
					require.NoError(t, be.Encode(context.Background(), jobs))
					require.True(t, bytes.Equal(body, jobs[0].Out), "%s n %d shift %d: backend bytes differ", name, n, shift)
					dj := []DecodeJob{{Format: layout.FormatHuff, DType: layout.DTypeBF16, Body: body, N: uint64(n),
						Shift: shift, Checksums: crc, Dst: make([]byte, len(src))}}
					require.NoError(t, be.Decode(context.Background(), dj))
					require.NoError(t, dj[0].Err)
					require.True(t, bytes.Equal(src, dj[0].Dst))
				}
			}
		}
	}
}

func TestHuffIndependentDecoder(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 14))
	for _, n := range []int{5, 4096, 20000} {
		for name, src := range huffInputs(r, n) {
			body := encHuff(t, src, 12, true)
			got, err := spec.HuffDecode(body, uint64(n), 12)
			require.NoError(t, err, "%s n %d", name, n)
			require.True(t, bytes.Equal(src, got), "%s n %d", name, n)
		}
	}
}

// optimalCost is the total code length of an unrestricted Huffman code (container/heap), the textbook way.
type costHeap []uint64

func (h costHeap) Len() int           { return len(h) }
func (h costHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h costHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *costHeap) Push(x any)        { *h = append(*h, x.(uint64)) }
func (h *costHeap) Pop() any          { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

func optimalCost(h *[256]uint32) uint64 {
	var ch costHeap
	for _, c := range h {
		if c > 0 {
			ch = append(ch, uint64(c))
		}
	}
	if len(ch) == 1 {
		return ch[0]
	}
	heap.Init(&ch)
	var cost uint64
	for ch.Len() > 1 {
		a, b := heap.Pop(&ch).(uint64), heap.Pop(&ch).(uint64)
		cost += a + b
		heap.Push(&ch, a+b)
	}
	return cost
}

// The lengths are optimal when no code exceeds 11 bits, never exceed 11 bits, and always form a complete code.
func TestHuffLengths(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 14))
	limited := 0
	for it := 0; it < 3000; it++ {
		var h [256]uint32
		k := 1 + r.IntN(60)
		base := r.IntN(256 - k)
		for i := 0; i < k; i++ {
			switch it % 3 {
			case 0:
				h[base+i] = 1 + r.Uint32N(1000)
			case 1:
				h[base+i] = 1 + uint32(float64(i*i*i)*r.Float64())
			default:
				h[base+i] = 1 << min(i, 16) // geometric: deep trees
			}
		}
		hc := huffLengths(&h)
		var cost, kraft uint64
		used := 0
		for s, l := range hc.lens {
			require.LessOrEqual(t, l, uint8(layout.HuffMaxLen))
			require.Equal(t, h[s] != 0, l != 0)
			if l != 0 {
				cost += uint64(h[s]) * uint64(l)
				kraft += 1 << (layout.HuffMaxLen - l)
				used++
			}
		}
		if used == 1 {
			continue
		}
		require.Equal(t, uint64(2048), kraft)
		if opt := optimalCost(&h); cost != opt {
			limited++
			require.Greater(t, cost, opt)
		}
	}
	require.Greater(t, limited, 0, "no histogram exercised the length limiter")
}

// Every bit flip of a body gets nil (only possible without checksums, and then only with bits the format does not
// constrain) or a typed error, never a panic; with checksums every flip is an error.
func TestHuffBitFlips(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 14))
	for name, src := range huffInputs(r, 4096+300) {
		if name == "all" || name == "kvesc" {
			continue
		}
		n := uint64(len(src) / 2)
		for _, crc := range []bool{true, false} {
			body := encHuff(t, src, 12, crc)
			dst := make([]byte, len(src))
			mod := make([]byte, len(body))
			for bit := 0; bit < 8*len(body); bit += flipStride {
				copy(mod, body)
				mod[bit/8] ^= 1 << (bit % 8)
				err := decodeHuff(dst, mod, n, 12, crc)
				if err == nil {
					require.False(t, crc, "%s: flip of bit %d decodes with checksums on", name, bit)
					continue
				}
				var e *Error
				require.True(t, errors.As(err, &e), "untyped error %v", err)
			}
		}
	}
}

// A lane stream that asks for more words than it has, a bit pattern no code starts, lane padding and a wrong
// coded-or-raw choice each get their class.
func TestHuffErrorClasses(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 14))
	n := uint64(4096)
	src := kvLike(r, int(n), 0)
	body := encHuff(t, src, 12, false)
	g := layout.Huff{N: n, Shift: 12}
	piece := body[g.PieceOffset():]
	hc, tb, err := huffParseTable(piece)
	require.NoError(t, err)
	dst := make([]byte, 2*n)
	check := func(b []byte, cls error, what string) {
		t.Helper()
		err := decodeHuff(dst, b, n, 12, false)
		require.ErrorIs(t, err, cls, what)
		// The CPU backend's parallel decoder reports the same class.
		dj := []DecodeJob{{Format: layout.FormatHuff, DType: layout.DTypeBF16, Body: b, N: n, Shift: 12, Dst: dst}}
		require.NoError(t, NewCPUBackend(2).Decode(context.Background(), dj))
		require.ErrorIs(t, dj[0].Err, cls, what)
	}
	// Nonzero tail bit of lane 0's last word.
	nw0 := binary.LittleEndian.Uint16(piece[tb:])
	b := bytes.Clone(body)
	b[g.PieceOffset()+tb+64+4*uint64(nw0)-1] |= 0x80
	check(b, ErrNonCanonical, "lane padding")
	// Table padding.
	if (hc.hi-hc.lo+1)%2 == 1 || 2+(hc.hi-hc.lo+2)/2 < uint(tb) {
		b = bytes.Clone(body)
		b[g.PieceOffset()+tb-1] |= 0x80
		check(b, ErrNonCanonical, "table padding")
	}
	// Lengths that are no complete code.
	b = bytes.Clone(body)
	b[g.PieceOffset()+2] ^= 0x01
	check(b, ErrCorrupt, "Kraft sum")
	// Lane counts that do not fill the piece.
	b = bytes.Clone(body)
	b[g.PieceOffset()+tb] ^= 0x01
	check(b, ErrCorrupt, "lane counts")
	// Moving a word from lane 0 to lane 1: lane 0 runs out of words (corrupt).
	b = bytes.Clone(body)
	binary.LittleEndian.PutUint16(b[g.PieceOffset()+tb:], nw0-1)
	binary.LittleEndian.PutUint16(b[g.PieceOffset()+tb+2:], binary.LittleEndian.Uint16(piece[tb+2:])+1)
	check(b, ErrCorrupt, "lane overrun")
	// A raw chunk whose values code smaller: raw pieces are bigger, so build one by hand.
	raw := make([]byte, g.PieceOffset()+layout.HuffRawPiece(n))
	copy(raw, body[:g.PieceOffset()])
	binary.LittleEndian.PutUint32(raw[g.TableOffset():], layout.ChunkRaw<<layout.KindShift)
	for i := uint64(0); i < n; i++ {
		raw[g.PieceOffset()+i] = uint8(binary.LittleEndian.Uint16(src[2*i:]) >> 7)
	}
	check(raw, ErrNonCanonical, "raw chunk that codes smaller")
	// Structural: a piece offset off by one word.
	two := encHuff(t, kvLike(r, 5000, 0), 12, false)
	g2 := layout.Huff{N: 5000, Shift: 12}
	binary.LittleEndian.PutUint32(two[g2.TableOffset()+12+4:], binary.LittleEndian.Uint32(two[g2.TableOffset()+12+4:])+1)
	require.ErrorIs(t, decodeHuff(make([]byte, 10000), two, 5000, 12, false), ErrCorrupt)
}

// Real KV data (two tensors of the shared KV test file, codec/testdata/xw/README.md): round trip and a ratio floor
// at the chunk size vkzip picks for it (the whole file gives 1.4993x, bench/RESULTS.md). K and V in one tensor: one
// code over both (2^15 and up) gives about 1.468x, so HuffShiftFor keeps small tensors at 2^14.
func TestHuffRealKV(t *testing.T) {
	src, err := os.ReadFile("testdata/xw/kv-seq3-layer2-kv.bf16")
	require.NoError(t, err)
	n := uint64(len(src) / 2)
	for shift := uint(layout.HuffMinShift); shift <= layout.HuffMaxShift; shift++ {
		body := encHuff(t, src, shift, true)
		dst := make([]byte, len(src))
		require.NoError(t, decodeHuff(dst, body, n, shift, true))
		require.Equal(t, src, dst)
		ratio := float64(len(src)) / float64(len(body))
		t.Logf("shift %d: %.4fx", shift, ratio)
		if shift == layout.HuffShiftFor(n) {
			require.GreaterOrEqual(t, ratio, 1.47)
		}
	}
}

// FuzzHuffBody drives the huff body decoder with arbitrary bodies: nil or a typed error, never a panic. A body that
// decodes re-encodes to the same bytes unless some chunk's code table differs from the one vkzip's encoder picks
// (tables are the encoder's choice, §14.3).
func FuzzHuffBody(f *testing.F) {
	for _, n := range []int{1, 30, 100, 4096, 5000, 9000} {
		r := rand.New(rand.NewPCG(uint64(n), 14))
		src := kvLike(r, n, 0.03)
		if n == 9000 {
			copy(src[2*4096:], kvLike(r, 4096, 0.9))
		}
		f.Add(encHuff(f, src, 12, n%2 == 0), uint32(n), n%2 == 0)
	}
	f.Fuzz(func(t *testing.T, body []byte, n32 uint32, checksums bool) {
		n := uint64(n32 % 100000)
		dst := make([]byte, 2*n)
		err := decodeHuff(dst, body, n, 12, checksums)
		if err != nil {
			var e *Error
			require.True(t, errors.As(err, &e), "untyped error %v", err)
			return
		}
		again := encHuff(t, dst, 12, checksums)
		if bytes.Equal(body, again) {
			return
		}
		g := newHuffGeom(n, 12)
		hb, ha := huffBody{g}, huffBody{g}
		for c := uint64(0); c < g.Chunks(); c++ {
			ib, _, _, pb, _ := hb.chunkPieces(body, c)
			ia, _, _, pa, _ := ha.chunkPieces(again, c)
			if ib>>24 == 0 && ia>>24 == 0 {
				_, tbb, _ := huffParseTable(pb)
				_, tba, _ := huffParseTable(pa)
				if !bytes.Equal(pb[:tbb], pa[:tba]) {
					return
				}
			}
		}
		t.Fatalf("a body of %d bytes (n %d) decodes, has vkzip's code tables, but re-encodes to %d bytes", len(body), n,
			len(again))
	})
}

// The reference codec on one core (go test -run '^$' -bench Huff -cpu 1 ./codec/): 8 MiB of KV-like values,
// tensors of 16,384 values as in the shared KV files, default chunks, checksums, the CPU backend's parallel driver.
func benchHuffJobs(b *testing.B) (src []byte, jobs []EncodeJob) {
	src = tbe3BenchInput()[:8<<20]
	const per = 16384
	for off := 0; off < len(src); off += 2 * per {
		jobs = append(jobs, EncodeJob{Format: layout.FormatHuff, DType: layout.DTypeBF16, Src: src[off : off+2*per],
			N: per, Shift: layout.HuffShiftFor(per), Checksums: true,
			Dst: make([]byte, layout.Huff{N: per, Shift: layout.HuffShiftFor(per)}.MaxBodySize())})
	}
	return src, jobs
}

func BenchmarkHuffEncode(b *testing.B) {
	src, jobs := benchHuffJobs(b)
	be := NewCPUBackend(0)
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		if err := be.Encode(context.Background(), jobs); err != nil {
			b.Fatal(err)
		}
	}
	var out int
	for _, j := range jobs {
		out += len(j.Out)
	}
	b.ReportMetric(float64(len(src))/float64(out), "ratio")
}

func BenchmarkHuffDecode(b *testing.B) {
	src, jobs := benchHuffJobs(b)
	be := NewCPUBackend(0)
	if err := be.Encode(context.Background(), jobs); err != nil {
		b.Fatal(err)
	}
	dj := make([]DecodeJob, len(jobs))
	for i, j := range jobs {
		dj[i] = DecodeJob{Format: layout.FormatHuff, DType: layout.DTypeBF16, Body: j.Out, N: j.N, Shift: j.Shift,
			Checksums: true, Dst: make([]byte, 2*j.N)}
	}
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		if err := be.Decode(context.Background(), dj); err != nil {
			b.Fatal(err)
		}
	}
}

// A single-exponent chunk's code is one bit, 0; a 1 where a code starts is no code. Bit positions early (the fast
// reader) and late (the exact reader) in one lane and in both lanes of a pair (read together) must each give a
// corrupt error, not a hang or a panic.
func TestHuffNoCodeBits(t *testing.T) {
	const n = 4096
	src := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(src[2*i:], 0x3F80|uint16(i&0x7F)) // exponent 127, mantissas vary
	}
	body := encHuff(t, src, 12, false)
	g := layout.Huff{N: n, Shift: 12}
	piece := body[g.PieceOffset():]
	_, tb, err := huffParseTable(piece)
	require.NoError(t, err)
	lanes := tb + layout.HuffCountsBytes
	require.Equal(t, uint64(len(piece))-lanes, uint64(layout.HuffLanes*4*4), "128 one-bit codes: 4 words per lane")
	dst := make([]byte, 2*n)
	for _, bit := range []uint64{0, 5, 31, 32, 77, 127} {
		for _, set := range [][]uint64{{0}, {17}, {31}, {0, 1}, {30, 31}} {
			b := bytes.Clone(body)
			for _, lane := range set {
				b[g.PieceOffset()+lanes+lane*16+bit/8] |= 1 << (bit % 8)
			}
			require.ErrorIs(t, decodeHuff(dst, b, n, 12, false), ErrCorrupt, "lanes %v bit %d", set, bit)
		}
	}
}

// TestHuffChunkByTensorSize: without a chunk size, each huff tensor gets layout.HuffShiftFor of its size (2^14 for
// small tensors, 2^16 from 4 Mi values); an explicit chunk size applies to all. Every tensor decodes to its values.
func TestHuffChunkByTensorSize(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 14))
	sizes := []int{5000, 1 << 14, 1 << 21, 1 << 22}
	var recs []Record
	for i, n := range sizes {
		recs = append(recs, Record{Name: fmt.Sprintf("t%d", i), DType: layout.DTypeBF16, Data: kvLike(r, n, 0)})
	}
	for _, opts := range [][]Option{{WithFormat("huff")}, {WithFormat("huff"), WithChunkSize(4096)}} {
		c := newCPU(t, opts...)
		enc, err := c.Encode(context.Background(), nil, recs, true)
		require.NoError(t, err)
		info, err := Inspect(enc)
		require.NoError(t, err)
		require.Len(t, info.Containers, 1)
		got := info.Containers[0].Records
		require.Len(t, got, len(sizes))
		for i, n := range sizes {
			want := uint64(1) << layout.HuffShiftFor(uint64(n))
			if len(opts) > 1 {
				want = 4096
			}
			assert.Equal(t, "huff", got[i].Format, "tensor %d", i)
			assert.Equal(t, want, got[i].ChunkSize, "tensor of %d values", n)
		}
		var dec [][]byte
		require.NoError(t, c.DecodeStream(context.Background(), enc, func(_ *ParsedRecord, data []byte) error {
			dec = append(dec, append([]byte{}, data...))
			return nil
		}))
		require.Len(t, dec, len(recs))
		for i := range recs {
			require.True(t, string(recs[i].Data) == string(dec[i]), "tensor %d", i)
		}
	}
}
