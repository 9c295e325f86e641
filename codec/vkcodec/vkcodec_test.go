package vkcodec

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/internal/vktune"
	"github.com/vkzip/vkzip/vk/vktest"
)

func openTest(t testing.TB, o Options) *Backend {
	t.Helper()
	b, err := Open(o)
	if err != nil {
		vktest.Unavailable(t, "vulkan backend: %v", err)
	}
	t.Cleanup(func() {
		// With VKZIP_VALIDATE=1 every test is also a validation run: any message fails it.
		require.Empty(t, b.ValidationMessages(), "validation layer messages")
		require.NoError(t, b.Close())
	})
	return b
}

func kvLike(r *rand.Rand, n int, esc float64) []byte {
	b := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		e := 121 + int(r.NormFloat64()*2.2)
		if r.Float64() < esc {
			e = 10 + r.IntN(60)
		}
		e = min(max(e, 0), 255)
		binary.LittleEndian.PutUint16(b[2*i:], uint16(r.Uint32()&0x807F)|uint16(e)<<7)
	}
	return b
}

var testCB = codec.Codebook{126, 127, 125, 128, 124, 123, 122, 129, 121, 120, 119, 118, 117, 116, 115, 130}

func encodeBoth(t *testing.T, vb *Backend, src []byte, shift uint, checksums bool) (cpu, gpu []byte) {
	n := uint64(len(src) / 2)
	g := layout.SZ4{N: n, Shift: shift}
	mk := func() []codec.EncodeJob {
		return []codec.EncodeJob{{Format: layout.FormatSplitZip4, Src: src, N: n, Shift: shift, Codebook: &testCB,
			Checksums: checksums, Dst: make([]byte, g.MaxBodySize())}}
	}
	cj, gj := mk(), mk()
	require.NoError(t, codec.NewCPUBackend(1).Encode(context.Background(), cj))
	require.NoError(t, vb.Encode(context.Background(), gj))
	return cj[0].Out, gj[0].Out
}

func TestEncodeMatchesReference(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(1, 2))
	for _, shift := range []uint{10, 12, 14} {
		nv := 1 << shift
		for _, length := range []int{1, 2, 3, 7, 8, 9, 100, nv - 1, nv, nv + 1, 3*nv + 17} {
			for _, esc := range []float64{0, 0.001, 0.05, 1} {
				for _, cs := range []bool{true, false} {
					src := kvLike(r, length, esc)
					cpu, gpu := encodeBoth(t, vb, src, shift, cs)
					require.Equal(t, len(cpu), len(gpu), "shift %d len %d esc %v crc %v", shift, length, esc, cs)
					require.True(t, string(cpu) == string(gpu), "shift %d len %d esc %v crc %v: bytes differ at %d",
						shift, length, esc, cs, firstDiff(cpu, gpu))
				}
			}
		}
	}
}

// TestEncodeEscapeCounts puts escapes where the encoder's per-slot counts are at their limits: slots of 8 escapes
// (a full 4-bit count), runs of escaped slots across count words, and chunks one escape below and at the count that
// makes a chunk raw, so that a miscount changes the body (a misplaced escape, or the wrong chunk kind). Each body
// must equal the reference's and decode back.
func TestEncodeEscapeCounts(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(11, 12))
	const shift = 10
	n := 1 << shift
	raw := n / 8 // escapes (4 bytes each) at which a chunk's side reaches its raw size, n/2 bytes
	for _, o := range []vktune.Params{{}, {Groups: 2}, {Unroll: 1}} {
		vb := vb
		if o != (vktune.Params{}) {
			vb = openTest(t, Options{Tune: &o})
		}
		for _, counts := range [][]int{{raw - 1, raw, raw + 1}, {raw - 8, 8, 0}, {raw - 1, raw - 2, raw - 3}} {
			src := kvLike(r, len(counts)*n-3, 0)
			for c, k := range counts {
				// k escapes from a random start: whole slots of 8, crossing count words of 8 slots.
				start := r.IntN(n - k)
				for i := start; i < start+k && c*n+i < len(src)/2; i++ {
					v := binary.LittleEndian.Uint16(src[2*(c*n+i):])
					binary.LittleEndian.PutUint16(src[2*(c*n+i):], v&0x807F|uint16(10+r.IntN(60))<<7)
				}
			}
			cpu, gpu := encodeBoth(t, vb, src, shift, true)
			require.True(t, string(cpu) == string(gpu), "%+v counts %v: differs at %d", o, counts, firstDiff(cpu, gpu))
			dst := make([]byte, len(src))
			for i := range dst {
				dst[i] = 0xA5
			}
			jobs := []codec.DecodeJob{{Format: layout.FormatSplitZip4, Body: gpu, N: uint64(len(src) / 2), Shift: shift,
				Codebook: &testCB, Checksums: true, Dst: dst}}
			require.NoError(t, vb.Decode(context.Background(), jobs))
			require.NoError(t, jobs[0].Err)
			require.True(t, string(src) == string(dst), "%+v counts %v: decode differs", o, counts)
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestDecodeMatchesReference(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(3, 4))
	for _, shift := range []uint{10, 14} {
		nv := 1 << shift
		for _, length := range []int{1, 5, 8, nv - 1, nv, 2*nv + 3} {
			for _, esc := range []float64{0, 0.01, 1} {
				for _, cs := range []bool{true, false} {
					src := kvLike(r, length, esc)
					cpu, _ := encodeBoth(t, vb, src, shift, cs)
					jobs := []codec.DecodeJob{{Format: layout.FormatSplitZip4, Body: cpu, N: uint64(length), Shift: shift,
						Codebook: &testCB, Checksums: cs, Dst: make([]byte, 2*length)}}
					require.NoError(t, vb.Decode(context.Background(), jobs))
					require.NoError(t, jobs[0].Err, "shift %d len %d esc %v", shift, length, esc)
					require.True(t, string(src) == string(jobs[0].Dst), "shift %d len %d esc %v crc %v: differs at %d",
						shift, length, esc, cs, firstDiff(src, jobs[0].Dst))
				}
			}
		}
	}
}

// TestCorruptionClasses flips bits of valid bodies and checks the Vulkan decoder reports the reference's class.
func TestCorruptionClasses(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(5, 6))
	src := kvLike(r, 5000, 0.02)
	for _, cs := range []bool{true, false} {
		body, _ := encodeBoth(t, vb, src, 10, cs)
		for i := 0; i < 300; i++ {
			bad := append([]byte{}, body...)
			bad[r.IntN(len(bad))] ^= 1 << r.IntN(8)
			mk := func() []codec.DecodeJob {
				return []codec.DecodeJob{{Format: layout.FormatSplitZip4, Body: bad, N: 5000, Shift: 10,
					Codebook: &testCB, Checksums: cs, Dst: make([]byte, 10000)}}
			}
			cj, gj := mk(), mk()
			requireSameDecode(t, vb, cj, gj)
		}
	}
}

// TestVariantsMatchReference runs the kernels' tuning variants (workgroup size, table replication, grid size, slots
// loaded together, CRC table widths, a small escape stage, so that the decoder reads the escapes of larger chunks in
// place): every variant must produce the reference bytes and decode them back.
func TestVariantsMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, o := range []vktune.Params{{WorkGroup: 64}, {WorkGroup: 512}, {Repl: 2}, {Groups: 3}, {Unroll: 1},
		{Unroll: 2}, {Unroll: 4}, {EscCap: 64}, {CRCBits: 4}, {CRCBits: 8}, {Groups: 5, Unroll: 2, CRCBits: 6},
		{SZ4PlaceWG: 256}} {
		vb := openTest(t, Options{Tune: &o})
		for _, shift := range []uint{10, 14, 16} {
			for _, length := range []int{1<<shift + 5, 3 << shift} {
				src := kvLike(r, length, 0.003)
				cpu, gpu := encodeBoth(t, vb, src, shift, true)
				require.True(t, string(cpu) == string(gpu), "%+v shift %d len %d: differs at %d", o, shift, length, firstDiff(cpu, gpu))
				jobs := []codec.DecodeJob{{Format: layout.FormatSplitZip4, Body: gpu, N: uint64(length), Shift: shift,
					Codebook: &testCB, Checksums: true, Dst: make([]byte, 2*length)}}
				require.NoError(t, vb.Decode(context.Background(), jobs))
				require.NoError(t, jobs[0].Err)
				require.True(t, string(src) == string(jobs[0].Dst))
			}
		}
	}
}

func TestSharedMemoryFit(t *testing.T) {
	b := &Backend{t: vktune.Params{WorkGroup: 256, Repl: 1, EscCap: 1024, CRCBits: 8}}
	require.NoError(t, b.fitSharedMemory(48<<10))
	require.Equal(t, 256, b.t.WorkGroup)
	require.NoError(t, b.fitSharedMemory(24<<10)) // shrinks the escape buffers and the workgroup to fit
	require.LessOrEqual(t, b.sharedBytes(uint32(b.t.WorkGroup)), uint32(24<<10))
	b.info.Name = "tiny"
	require.ErrorIs(t, b.fitSharedMemory(16<<10), codec.ErrNoDevice) // byte tables alone take 20 KiB
	// 5-bit tables take 4.4 KiB: the same device runs the kernels.
	b = &Backend{t: vktune.Params{WorkGroup: 256, Repl: 1, EscCap: 1024, CRCBits: 5}}
	require.NoError(t, b.fitSharedMemory(16<<10))
}

// TestWorkGroupHoldsSubgroup checks that no workgroup of the chunk kernels is smaller than the device's widest
// subgroup, whatever the options or the shared memory ask, and that such a backend still codes correctly.
func TestWorkGroupHoldsSubgroup(t *testing.T) {
	b := &Backend{t: vktune.Params{WorkGroup: 256, Repl: 1, EscCap: 1024, CRCBits: 8}}
	b.info.MaxSubgroupSize = 128
	b.info.Name = "wide subgroups"
	require.ErrorIs(t, b.fitSharedMemory(12<<10), codec.ErrNoDevice) // would need workgroups of 64
	require.Equal(t, 128, b.t.WorkGroup)

	vb := openTest(t, Options{Tune: &vktune.Params{WorkGroup: 1}})
	require.GreaterOrEqual(t, uint32(vb.t.WorkGroup), vb.info.MaxSubgroupSize)
	src := kvLike(rand.New(rand.NewPCG(9, 10)), 3<<12+5, 0.02) // escapes enough for the encoder's shared path
	cpu, gpu := encodeBoth(t, vb, src, 12, true)
	require.True(t, string(cpu) == string(gpu), "bytes differ at %d", firstDiff(cpu, gpu))
}

// TestUnrollDefaults pins the per-kernel unroll choice: the SplitZip-4 encoder and decoders load four slots per
// thread unless Tune.Unroll says otherwise, every other chunk kernel two.
func TestUnrollDefaults(t *testing.T) {
	b := &Backend{}
	for k, want := range map[string]int{"sz4_decode": 4, "sz4_decode_pieces": 4, "sz4_encode": 4, "zf12_decode": 2, "zf12_encode": 2} {
		require.Equal(t, want, b.unroll(k), k)
	}
	b.t.Unroll = 1
	require.Equal(t, 1, b.unroll("sz4_decode"))
	require.Equal(t, 1, b.unroll("sz4_encode"))
	// The CRC table widths the formats measured fastest (kernelTuner), 8 where none did.
	for k, want := range map[string]int{"sz4_decode": 4, "sz4_decode_pieces": 4, "sz4_encode": 8, "sz4_place": 8,
		"zf12_encode": 5, "zf12_decode_pieces": 5, "tbe3_decode": 5, "huff_place": 5, "huff_check": 5,
		"huff_encode": 8, "auto_gather": 8} {
		require.Equal(t, want, b.crcBits(k), k)
	}
	b.t.CRCBits = 6
	require.Equal(t, 6, b.crcBits("sz4_decode"))
}

// TestWarm checks that Warm allocates everything concurrent callers need: after Warm(2, n), two concurrent
// encodes and decodes of n values create no device objects that outlive them (no new slabs).
func TestWarm(t *testing.T) {
	vb := openTest(t, Options{})
	const n = 3 << 16
	src := kvLike(rand.New(rand.NewPCG(5, 6)), n, 0.001)
	require.NoError(t, vb.Warm(context.Background(), 2, n))
	live := vb.VK().LiveObjects()
	g := layout.SZ4{N: n, Shift: layout.DefaultChunkShift}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			enc := []codec.EncodeJob{{Format: layout.FormatSplitZip4, Src: src, N: n, Shift: layout.DefaultChunkShift,
				Codebook: &testCB, Checksums: true, Dst: make([]byte, g.MaxBodySize())}}
			if err := vb.Encode(context.Background(), enc); err != nil {
				errs <- err
				return
			}
			dec := []codec.DecodeJob{{Format: layout.FormatSplitZip4, Body: enc[0].Out, N: n, Shift: layout.DefaultChunkShift,
				Codebook: &testCB, Checksums: true, Dst: make([]byte, 2*n)}}
			err := vb.Decode(context.Background(), dec)
			if err == nil {
				err = dec[0].Err
			}
			errs <- err
		}()
	}
	for range 2 {
		require.NoError(t, <-errs)
	}
	require.Equal(t, live, vb.VK().LiveObjects(), "objects created after Warm")
	// Without Warm a third concurrent caller would have had to allocate: Warm with 3 does.
	require.NoError(t, vb.Warm(context.Background(), 3, n))
	require.Greater(t, vb.VK().LiveObjects(), live)
}

// requireSameDecode decodes one body with the reference (cj) and with the backend (gj): both decode it to the same
// values, or both refuse it with the same error classes.
func requireSameDecode(t *testing.T, vb *Backend, cj, gj []codec.DecodeJob) {
	t.Helper()
	require.NoError(t, codec.NewCPUBackend(1).Decode(context.Background(), cj))
	require.NoError(t, vb.Decode(context.Background(), gj))
	if cj[0].Err == nil {
		require.NoError(t, gj[0].Err)
		require.Equal(t, cj[0].Dst, gj[0].Dst)
		return
	}
	require.Error(t, gj[0].Err, "reference: %v", cj[0].Err)
	for _, cls := range []error{codec.ErrCorrupt, codec.ErrChecksum, codec.ErrNonCanonical} {
		require.Equal(t, errors.Is(cj[0].Err, cls), errors.Is(gj[0].Err, cls), "cpu %v / gpu %v", cj[0].Err, gj[0].Err)
	}
}

// huffRef is the reference codec's huff body of src.
func huffRef(t *testing.T, src []byte, shift uint, checksums bool) []byte {
	return refBody(t, encodeHuffRef, layout.Huff{N: uint64(len(src) / 2), Shift: shift}.MaxBodySize(), src, shift,
		checksums)
}

// tbe3Ref is the reference codec's TBE-3 body of src.
func tbe3Ref(t *testing.T, src []byte, shift uint, checksums bool) []byte {
	return refBody(t, encodeTBE3Ref, layout.TBE3{N: uint64(len(src) / 2), Shift: shift}.MaxBodySize(), src, shift,
		checksums)
}

// refBody is the body a reference encoder (encodeTBE3Ref, encodeHuffRef) makes of the BF16 values src in a
// buffer of maxBody bytes.
func refBody(t *testing.T, encode func(dst, src []byte, n uint64, shift uint, checksums bool) ([]byte, error),
	maxBody uint64, src []byte, shift uint, checksums bool) []byte {
	t.Helper()
	body, err := encode(make([]byte, maxBody), src, uint64(len(src)/2), shift, checksums)
	require.NoError(t, err)
	return body
}
