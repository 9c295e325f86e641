package vkcodec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/internal/vktune"
)

func tbe3Job(src []byte, shift uint, checksums bool) codec.EncodeJob {
	n := uint64(len(src) / 2)
	return codec.EncodeJob{Format: layout.FormatTBE3, Src: src, N: n, Shift: shift, Checksums: checksums,
		Dst: make([]byte, layout.TBE3{N: n, Shift: shift}.MaxBodySize())}
}

func tbe3Decode(t *testing.T, vb *Backend, body []byte, n uint64, shift uint, checksums bool) ([]byte, error) {
	t.Helper()
	jobs := []codec.DecodeJob{{Name: "x", Format: layout.FormatTBE3, Body: body, N: n, Shift: shift,
		Checksums: checksums, Dst: make([]byte, 2*n)}}
	require.NoError(t, vb.Decode(context.Background(), jobs))
	return jobs[0].Dst, jobs[0].Err
}

// tbe3Patterns are inputs that reach every path of the kernels: raw chunks, all-fallback and no-fallback chunks,
// windows at both ends of the exponent range, and two equally good windows.
func tbe3Patterns(r *rand.Rand) map[string][]byte {
	mk := func(n int, f func(i int) uint16) []byte {
		b := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint16(b[2*i:], f(i))
		}
		return b
	}
	return map[string][]byte{
		"all-bit-patterns": mk(65536, func(i int) uint16 { return uint16(i) }),
		"uniform":          mk(3000, func(int) uint16 { return uint16(r.Uint32()) }),
		"zeros":            mk(2500, func(int) uint16 { return 0 }),
		"exp255":           mk(2100, func(i int) uint16 { return 0x7F80 | uint16(i&0x807F) }),
		// Window at exponent 0 with fallbacks above it, and at 249 with fallbacks below.
		"low":  mk(3000, func(i int) uint16 { return uint16(i%5+i%23/22*90)<<7 | uint16(i&0x807F) }),
		"high": mk(3000, func(i int) uint16 { return uint16(255-i%5-i%23/22*90)<<7 | uint16(i&0x807F) }),
		"tie":  mk(2048, func(i int) uint16 { return uint16(100+i%2*7)<<7 | uint16(i&0x807F) }),
		"boundary": mk(4096+33, func(i int) uint16 {
			if i%1024 < 385 {
				return uint16(i%250) << 7
			}
			return uint16(120+i%7) << 7
		}),
	}
}

func TestTBE3EncodeMatchesReference(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(11, 12))
	check := func(src []byte, shift uint, cs bool, what string) {
		want := tbe3Ref(t, src, shift, cs)
		jobs := []codec.EncodeJob{tbe3Job(src, shift, cs)}
		require.NoError(t, vb.Encode(context.Background(), jobs))
		got := jobs[0].Out
		require.Equal(t, len(want), len(got), what)
		require.True(t, string(want) == string(got), "%s: bytes differ at %d", what, firstDiff(want, got))
	}
	for _, shift := range []uint{10, 12, 16} {
		nv := 1 << shift
		for _, n := range []int{1, 2, 24, 25, 31, 32, 33, 63, 64, 65, 100, nv - 1, nv, nv + 1, 3*nv + 17} {
			for _, far := range []float64{0, 0.02, 0.3, 1} {
				for _, cs := range []bool{true, false} {
					check(kvLike(r, n, far), shift, cs, "kv")
				}
			}
		}
	}
	for name, src := range tbe3Patterns(r) {
		for _, shift := range []uint{10, 16} {
			check(src, shift, true, name)
		}
	}
}

func TestTBE3DecodeMatchesReference(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(13, 14))
	check := func(src []byte, shift uint, cs bool, what string) {
		n := uint64(len(src) / 2)
		dst, err := tbe3Decode(t, vb, tbe3Ref(t, src, shift, cs), n, shift, cs)
		require.NoError(t, err, what)
		require.True(t, string(src) == string(dst), "%s: differs at %d", what, firstDiff(src, dst))
	}
	for _, shift := range []uint{10, 16} {
		nv := 1 << shift
		for _, n := range []int{1, 5, 25, 33, 64, 65, nv - 1, nv, 2*nv + 3} {
			for _, far := range []float64{0, 0.02, 1} {
				for _, cs := range []bool{true, false} {
					check(kvLike(r, n, far), shift, cs, "kv")
				}
			}
		}
	}
	for name, src := range tbe3Patterns(r) {
		for _, shift := range []uint{10, 13} {
			check(src, shift, true, name)
			check(src, shift, false, name)
		}
	}
}

// TestTBE3Batch encodes and decodes several tensors of different sizes and chunk sizes in one submission.
func TestTBE3Batch(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(15, 16))
	var enc []codec.EncodeJob
	var srcs [][]byte
	for i, n := range []int{5000, 1, 70000, 1024} {
		src := kvLike(r, n, 0.02)
		srcs = append(srcs, src)
		enc = append(enc, tbe3Job(src, uint(10+2*i), i%2 == 0))
	}
	require.NoError(t, vb.Encode(context.Background(), enc))
	var dec []codec.DecodeJob
	for i := range enc {
		require.Equal(t, tbe3Ref(t, srcs[i], enc[i].Shift, enc[i].Checksums), enc[i].Out, "job %d", i)
		dec = append(dec, codec.DecodeJob{Format: layout.FormatTBE3, Body: enc[i].Out, N: enc[i].N, Shift: enc[i].Shift,
			Checksums: enc[i].Checksums, Dst: make([]byte, 2*enc[i].N)})
	}
	require.NoError(t, vb.Decode(context.Background(), dec))
	for i := range dec {
		require.NoError(t, dec[i].Err)
		require.Equal(t, srcs[i], dec[i].Dst, "job %d", i)
	}
}

// TestTBE3CorruptionClasses flips bits of valid bodies and checks the Vulkan decoder reports the reference's class
// and chunk (or decodes the same values when the reference accepts the body).
func TestTBE3CorruptionClasses(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(17, 18))
	src := kvLike(r, 5000, 0.02)
	copy(src[2*2048:], kvLike(r, 1024, 0.9)) // chunk 2 raw
	seen := map[error]int{}
	for _, cs := range []bool{true, false} {
		body := tbe3Ref(t, src, 10, cs)
		for i := 0; i < 400; i++ {
			bad := append([]byte{}, body...)
			for f := 0; f < 1+i%3; f++ {
				bad[r.IntN(len(bad))] ^= 1 << r.IntN(8)
			}
			want := make([]byte, 10000)
			werr := decodeTBE3Ref(want, bad, 5000, 10, cs)
			got, gerr := tbe3Decode(t, vb, bad, 5000, 10, cs)
			if werr == nil {
				require.NoError(t, gerr)
				require.Equal(t, want, got)
				continue
			}
			require.Error(t, gerr, "reference: %v", werr)
			for _, cls := range []error{codec.ErrCorrupt, codec.ErrChecksum, codec.ErrNonCanonical} {
				require.Equal(t, errors.Is(werr, cls), errors.Is(gerr, cls), "cpu %v / gpu %v", werr, gerr)
				if errors.Is(werr, cls) {
					seen[cls]++
				}
			}
			var we, ge *codec.Error
			require.True(t, errors.As(werr, &we) && errors.As(gerr, &ge))
			require.Equal(t, we.Chunk, ge.Chunk, "cpu %v / gpu %v", werr, gerr)
		}
	}
	// The flips must have exercised every class (the kernel decides checksum and non-canonical on its own).
	for _, cls := range []error{codec.ErrCorrupt, codec.ErrChecksum, codec.ErrNonCanonical} {
		require.NotZero(t, seen[cls], "no %v case", cls)
	}
	t.Logf("classes seen: %v", seen)
}

// TestTBE3Variants runs the kernels with other workgroup sizes, grid sizes and table replication.
func TestTBE3Variants(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	for _, o := range []vktune.Params{{WorkGroup: 32}, {WorkGroup: 512}, {Repl: 2}, {Groups: 3}, {CRCBits: 8}, {WorkGroup: 512, CRCBits: 4}} {
		t.Run(fmt.Sprintf("wg%d-repl%d-groups%d-crc%d", o.WorkGroup, o.Repl, o.Groups, o.CRCBits), func(t *testing.T) {
			vb := openTest(t, Options{Tune: &o})
			for _, shift := range []uint{10, 14} {
				for _, n := range []int{1<<shift + 5, 3 << shift} {
					src := kvLike(r, n, 0.01)
					jobs := []codec.EncodeJob{tbe3Job(src, shift, true)}
					require.NoError(t, vb.Encode(context.Background(), jobs))
					want := tbe3Ref(t, src, shift, true)
					require.True(t, string(want) == string(jobs[0].Out), "shift %d n %d: differs at %d", shift, n,
						firstDiff(want, jobs[0].Out))
					dst, err := tbe3Decode(t, vb, want, uint64(n), shift, true)
					require.NoError(t, err, "shift %d n %d", shift, n)
					require.True(t, string(src) == string(dst), "shift %d n %d", shift, n)
				}
			}
		})
	}
}

// BenchmarkTBE3 times host-memory encode and decode of 16 MiB of KV-like values (staging included):
// go test -run '^$' -bench TBE3 ./codec/vkcodec/
func BenchmarkTBE3(b *testing.B) {
	vb, err := Open(Options{})
	if err != nil {
		b.Skip(err)
	}
	defer vb.Close()
	src := kvLike(rand.New(rand.NewPCG(21, 22)), 8<<20, 0.001)
	n := uint64(len(src) / 2)
	g := layout.TBE3{N: n, Shift: layout.DefaultChunkShift}
	jobs := []codec.EncodeJob{{Format: layout.FormatTBE3, Src: src, N: n, Shift: g.Shift, Checksums: true,
		Dst: make([]byte, g.MaxBodySize())}}
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for i := 0; i < b.N; i++ {
			if err := vb.Encode(context.Background(), jobs); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(src))/float64(len(jobs[0].Out)), "ratio")
	})
	if err := vb.Encode(context.Background(), jobs); err != nil {
		b.Fatal(err)
	}
	dec := []codec.DecodeJob{{Format: layout.FormatTBE3, Body: jobs[0].Out, N: n, Shift: g.Shift, Checksums: true,
		Dst: make([]byte, len(src))}}
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for i := 0; i < b.N; i++ {
			if err := vb.Decode(context.Background(), dec); err != nil || dec[0].Err != nil {
				b.Fatal(err, dec[0].Err)
			}
		}
	})
}

// TestTBE3KernelChecksTable skips the host's table check and hands the kernel bodies with damaged chunk tables:
// it must stay inside its buffers and call every structurally broken body corrupt (which chunk it names may
// differ: it checks each entry against its neighbour, the reference walks the running sum), and agree with the
// reference on everything else.
func TestTBE3KernelChecksTable(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(23, 24))
	const n = 5000
	src := kvLike(r, n, 0.05)
	copy(src[2*2048:], kvLike(r, 1024, 0.9)) // chunk 2 raw
	g := layout.TBE3{N: n, Shift: 10}
	corrupt := 0
	for _, cs := range []bool{true, false} {
		body := tbe3Ref(t, src, 10, cs)
		for i := 0; i < 200; i++ {
			bad := append([]byte{}, body...)
			e := g.TableOffset() + uint64(r.IntN(int(layout.ChunkEntrySize*g.Chunks())))
			bad[e] ^= 1 << r.IntN(8)
			if i%4 == 0 { // a wild value, not just one bit
				binary.LittleEndian.PutUint32(bad[e&^3:], r.Uint32())
			}
			want := make([]byte, 2*n)
			werr := decodeTBE3Ref(want, bad, n, 10, cs)
			jobs := []codec.DecodeJob{{Format: layout.FormatTBE3, Body: bad, N: n, Shift: 10, Checksums: cs,
				Dst: make([]byte, 2*n)}}
			require.NoError(t, vb.decodeBatch(context.Background(), tbe3Codec{}, jobs, []tensor{decodeTensor(&jobs[0])}))
			gerr := jobs[0].Err
			if errors.Is(werr, codec.ErrCorrupt) {
				require.ErrorIs(t, gerr, codec.ErrCorrupt, "reference: %v", werr)
				corrupt++
				continue
			}
			if werr == nil {
				require.NoError(t, gerr)
				require.Equal(t, want, jobs[0].Dst)
				continue
			}
			var we, ge *codec.Error
			require.True(t, errors.As(werr, &we) && errors.As(gerr, &ge), "cpu %v / gpu %v", werr, gerr)
			require.Equal(t, we.Class, ge.Class, "cpu %v / gpu %v", werr, gerr)
			require.Equal(t, we.Chunk, ge.Chunk, "cpu %v / gpu %v", werr, gerr)
		}
	}
	require.NotZero(t, corrupt)
}

// TestTBE3ScratchSlots checks the encoder's scratch slots at their limits: chunks of k fallbacks up to the most that
// stay coded (636 of 1,024 values: the slot but its last word) and just past them (raw), in one segment and in
// segments of 4 chunks.
func TestTBE3ScratchSlots(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const shift = 10
	ks := []int{636, 637, 633, 0, 1, 635, 640, 100, 636, 3}
	var src []byte
	for _, k := range ks {
		vals := make([]uint16, 1<<shift)
		for i := range vals {
			e := 120 + r.IntN(layout.TBE3Window) // the window
			if i < k {
				e = r.IntN(100) // fallbacks, too spread out to make a better window
			}
			vals[i] = uint16(e)<<7 | uint16(r.Uint32()&0x807F)
		}
		r.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
		for _, v := range vals {
			src = binary.LittleEndian.AppendUint16(src, v)
		}
	}
	src = append(src, kvLike(r, 5, 0.5)...)
	g := layout.TBE3{N: uint64(len(src) / 2), Shift: shift}
	for _, slab := range []uint64{0, 8 << 10} {
		vb := openTest(t, Options{})
		if slab != 0 {
			vb.slabMax = slab
			require.Equal(t, uint64(4), vb.segChunks(shift))
		}
		for _, cs := range []bool{true, false} {
			want := tbe3Ref(t, src, shift, cs)
			for c, k := range ks {
				info := binary.LittleEndian.Uint32(want[g.TableOffset()+layout.ChunkEntrySize*uint64(c):])
				if layout.TBE3CodedFits(1<<shift, uint64(k)) {
					require.Equal(t, uint32(k), info&layout.TBE3CountMask, "chunk %d", c)
				} else {
					require.Equal(t, uint32(layout.ChunkRaw), info>>layout.KindShift, "chunk %d", c)
				}
			}
			jobs := []codec.EncodeJob{tbe3Job(src, shift, cs)}
			require.NoError(t, vb.Encode(context.Background(), jobs))
			require.True(t, string(want) == string(jobs[0].Out), "slab %d checksums %v: differs at %d", slab, cs,
				firstDiff(want, jobs[0].Out))
		}
	}
}
