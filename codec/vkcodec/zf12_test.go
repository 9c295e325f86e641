package vkcodec

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/internal/vktune"
	"github.com/vkzip/vkzip/vk"
)

// zf12Both encodes src as zf12 with the reference and with vb.
func zf12Both(t *testing.T, vb *Backend, src []byte, shift uint, checksums bool) (cpu, gpu []byte) {
	t.Helper()
	n := uint64(len(src) / 2)
	g := layout.ZF12{N: n, Shift: shift}
	mk := func() []codec.EncodeJob {
		return []codec.EncodeJob{{Format: layout.FormatZF12, Src: src, N: n, Shift: shift, Checksums: checksums,
			Dst: make([]byte, g.MaxBodySize())}}
	}
	cj, gj := mk(), mk()
	require.NoError(t, codec.NewCPUBackend(1).Encode(context.Background(), cj))
	require.NoError(t, vb.Encode(context.Background(), gj))
	return cj[0].Out, gj[0].Out
}

func zf12DecodeJob(body []byte, n int, shift uint, checksums bool) []codec.DecodeJob {
	return []codec.DecodeJob{{Name: "z", Format: layout.FormatZF12, Body: body, N: uint64(n), Shift: shift,
		Checksums: checksums, Dst: make([]byte, 2*n)}}
}

// TestZF12MatchesReference checks the zf12 kernels byte for byte against the reference, both ways: lengths around
// block and chunk edges, no raw blocks, some, all (kvLike's escapes put exponents far outside a block's range).
func TestZF12MatchesReference(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(12, 5))
	for _, shift := range []uint{10, 13, 16} {
		nv := 1 << shift
		for _, length := range []int{1, 3, 8, 9, 511, 512, 513, 1023, nv - 1, nv, nv + 1, 3*nv + 17} {
			for _, esc := range []float64{0, 0.001, 1} {
				for _, cs := range []bool{true, false} {
					src := kvLike(r, length, esc)
					cpu, gpu := zf12Both(t, vb, src, shift, cs)
					require.True(t, string(cpu) == string(gpu), "shift %d len %d esc %v crc %v: %d/%d bytes, differ at %d",
						shift, length, esc, cs, len(cpu), len(gpu), firstDiff(cpu, gpu))
					jobs := zf12DecodeJob(cpu, length, shift, cs)
					require.NoError(t, vb.Decode(context.Background(), jobs))
					require.NoError(t, jobs[0].Err, "shift %d len %d esc %v crc %v", shift, length, esc, cs)
					require.True(t, string(src) == string(jobs[0].Dst), "shift %d len %d esc %v crc %v: differs at %d",
						shift, length, esc, cs, firstDiff(src, jobs[0].Dst))
				}
			}
		}
	}
}

// TestZF12CorruptionClasses flips bits of valid bodies: the Vulkan decoder must give the reference's verdict.
func TestZF12CorruptionClasses(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(12, 6))
	const n = 5001
	src := kvLike(r, n, 0.0007)
	for _, cs := range []bool{true, false} {
		body, _ := zf12Both(t, vb, src, 10, cs)
		for i := 0; i < 300; i++ {
			bad := append([]byte{}, body...)
			for k := 0; k <= i%3; k++ {
				bad[r.IntN(len(bad))] ^= 1 << r.IntN(8)
			}
			cj, gj := zf12DecodeJob(bad, n, 10, cs), zf12DecodeJob(bad, n, 10, cs)
			requireSameDecode(t, vb, cj, gj)
		}
	}
}

// TestZF12Variants runs the kernels' tuning variants: every one must produce the reference bytes.
func TestZF12Variants(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 7))
	for _, o := range []vktune.Params{{WorkGroup: 64}, {WorkGroup: 512}, {Repl: 2}, {Groups: 3}, {Unroll: 1}, {Unroll: 4}, {CRCBits: 8}} {
		vb := openTest(t, Options{Tune: &o})
		for _, shift := range []uint{10, 16} {
			length := 3<<shift + 700
			src := kvLike(r, length, 0.0005)
			cpu, gpu := zf12Both(t, vb, src, shift, true)
			require.True(t, string(cpu) == string(gpu), "%+v shift %d: differs at %d", o, shift, firstDiff(cpu, gpu))
			jobs := zf12DecodeJob(gpu, length, shift, true)
			require.NoError(t, vb.Decode(context.Background(), jobs))
			require.NoError(t, jobs[0].Err)
			require.True(t, string(src) == string(jobs[0].Dst))
		}
	}
}

// TestMixedFormatsOneCall hands the backend SplitZip-4 and zf12 jobs in one call.
func TestMixedFormatsOneCall(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(12, 8))
	a, b := kvLike(r, 3000, 0.01), kvLike(r, 5000, 0.001)
	mk := func() []codec.EncodeJob {
		return []codec.EncodeJob{
			{Format: layout.FormatZF12, Src: a, N: 3000, Shift: 10, Checksums: true, Dst: make([]byte, 8000)},
			{Format: layout.FormatSplitZip4, Src: b, N: 5000, Shift: 10, Codebook: &testCB, Checksums: true, Dst: make([]byte, 12000)},
			{Format: layout.FormatZF12, Src: b, N: 5000, Shift: 11, Checksums: false, Dst: make([]byte, 12000)},
		}
	}
	cj, gj := mk(), mk()
	require.NoError(t, codec.NewCPUBackend(2).Encode(context.Background(), cj))
	require.NoError(t, vb.Encode(context.Background(), gj))
	for i := range cj {
		require.Equal(t, cj[i].Out, gj[i].Out, "job %d", i)
	}
	require.ErrorIs(t, vb.Encode(context.Background(), []codec.EncodeJob{{Format: 77, N: 1, Src: a, Dst: make([]byte, 64)}}),
		codec.ErrUnsupported)
	require.True(t, vb.SupportsFormat(layout.FormatZF12))
	require.False(t, vb.SupportsFormat(77))
}

// mutateZF12 damages a zf12 body: bit flips, random bytes, zeroed ranges, table words, header bytes, side words.
func mutateZF12(r *rand.Rand, body []byte, g layout.ZF12) []byte {
	kind := r.IntN(6)
	b := mutateBody(r, body, kind, g.TableOffset(), g.Chunks())
	switch kind {
	case 4:
		h := g.HeaderOffset() + r.Uint64N(g.TableOffset()-g.HeaderOffset())
		b[h] = []byte{0xFF, 0, 0x80, b[h] + 1, b[h] - 1, byte(r.Uint32())}[r.IntN(6)]
	case 5:
		if side := uint64(len(b)) - g.SideOffset(); side >= 8 {
			i := g.SideOffset() + 4*r.Uint64N(side/4)
			binary.LittleEndian.PutUint32(b[i:], r.Uint32())
		} else {
			b[r.IntN(len(b))] ^= 0x80
		}
	}
	return b
}

// TestZF12MutatedOnDevice feeds damaged zf12 bodies, checksums off, straight to the decode kernel on device buffers
// (no host-side table check): each must get the reference's verdict, and decode the same when it decodes.
func TestZF12MutatedOnDevice(t *testing.T) {
	vb := openTest(t, Options{})
	dev := vb.VK()
	ctx := context.Background()
	count := mutationCount()
	r := rand.New(rand.NewPCG(12, 9))
	classes := map[string]int{}
	for _, esc := range []float64{0.0005, 0.01} { // some raw blocks, and nearly all
		n := 3*1024 + 333
		src := kvLike(r, n, esc)
		g := layout.ZF12{N: uint64(n), Shift: 10}
		jobs := []codec.EncodeJob{{Format: layout.FormatZF12, Src: src, N: g.N, Shift: 10, Dst: make([]byte, g.MaxBodySize())}}
		require.NoError(t, codec.NewCPUBackend(1).Encode(ctx, jobs))
		body := jobs[0].Out
		in, err := dev.NewBuffer(g.MaxBodySize()+16, vk.DeviceLocal)
		require.NoError(t, err)
		defer in.Close()
		out, err := dev.NewBuffer(2*g.N+16, vk.DeviceLocal)
		require.NoError(t, err)
		defer out.Close()
		ops := map[int]*DecodeOp{}
		for i := 0; i < count/2; i++ {
			bad := mutateZF12(r, body, g)
			if uint64(len(bad)) < g.MinBodySize() || uint64(len(bad)) > g.MaxBodySize() {
				continue
			}
			op := ops[len(bad)]
			if op == nil {
				op, err = vb.PrepareDecode(ctx, DecodeSpec{
					Format: layout.FormatZF12, Body: vk.BufferRange{Buf: in}, BodyLen: uint64(len(bad)), N: g.N,
					Shift: 10, Codebook: nil, Checksums: false, Dst: vk.BufferRange{Buf: out},
				})
				require.NoError(t, err)
				defer op.Close()
				ops[len(bad)] = op
			}
			runMutation(t, dev, op, in, out, zf12DecodeJob(bad, n, 10, false), i, classes)
		}
	}
	requireMutationClasses(t, dev, count, classes)
}

// TestZF12BoundsClampedInDebug points a side offset far past the side section in a debug build of the decoder,
// which decodes corrupt chunks anyway: the clamp counter shows the index bounded, and the verdict is corrupt.
func TestZF12BoundsClampedInDebug(t *testing.T) {
	vb := openTest(t, Options{Tune: &vktune.Params{DebugBounds: true}})
	dev := vb.VK()
	ctx := context.Background()
	n := 4096
	src := kvLike(rand.New(rand.NewPCG(12, 10)), n, 0.01)
	g := layout.ZF12{N: uint64(n), Shift: 10}
	jobs := []codec.EncodeJob{{Format: layout.FormatZF12, Src: src, N: g.N, Shift: 10, Dst: make([]byte, g.MaxBodySize())}}
	require.NoError(t, codec.NewCPUBackend(1).Encode(ctx, jobs))
	body := append([]byte{}, jobs[0].Out...)
	require.NotZero(t, binary.LittleEndian.Uint32(body[g.TableOffset()+2*layout.ChunkEntrySize:]), "chunk 2 needs raw blocks")
	binary.LittleEndian.PutUint32(body[g.TableOffset()+2*layout.ChunkEntrySize+4:], 1<<20) // chunk 2's side offset
	in, err := dev.NewBuffer(uint64(len(body)), vk.DeviceLocal)
	require.NoError(t, err)
	defer in.Close()
	out, err := dev.NewBuffer(2*g.N, vk.DeviceLocal)
	require.NoError(t, err)
	defer out.Close()
	require.NoError(t, dev.Upload(ctx, in, 0, body))
	op, err := vb.PrepareDecode(ctx, DecodeSpec{
		Format: layout.FormatZF12, Body: vk.BufferRange{Buf: in}, BodyLen: uint64(len(body)), N: g.N, Shift: 10,
		Codebook: nil, Checksums: false, Dst: vk.BufferRange{Buf: out},
	})
	require.NoError(t, err)
	defer op.Close()
	require.ErrorIs(t, op.Run(ctx), codec.ErrCorrupt)
	require.Greater(t, op.Clamps(), uint32(0), "the out-of-range side offset must have been clamped")
	require.False(t, dev.Lost())
}

// TestZF12DeviceOps encodes and decodes through the device-resident operations at unaligned offsets.
func TestZF12DeviceOps(t *testing.T) {
	vb := openTest(t, Options{})
	dev := vb.VK()
	ctx := context.Background()
	n := 70001
	src := kvLike(rand.New(rand.NewPCG(12, 11)), n, 0.0003)
	g := layout.ZF12{N: uint64(n), Shift: 14}
	ref := []codec.EncodeJob{{Format: layout.FormatZF12, Src: src, N: g.N, Shift: 14, Checksums: true, Dst: make([]byte, g.MaxBodySize())}}
	require.NoError(t, codec.NewCPUBackend(1).Encode(ctx, ref))
	in, err := dev.NewBuffer(48+uint64(len(src))+16, vk.DeviceLocal)
	require.NoError(t, err)
	defer in.Close()
	body, err := dev.NewBuffer(20+g.MaxBodySize(), vk.DeviceLocal)
	require.NoError(t, err)
	defer body.Close()
	out, err := dev.NewBuffer(32+uint64(len(src))+16, vk.DeviceLocal)
	require.NoError(t, err)
	defer out.Close()
	require.NoError(t, dev.Upload(ctx, in, 48, src))
	enc, err := vb.PrepareEncode(ctx, EncodeSpec{
		Format: layout.FormatZF12, Src: vk.BufferRange{Buf: in, Offset: 48}, N: g.N, Shift: 14, Codebook: nil,
		Checksums: true, Dst: vk.BufferRange{Buf: body, Offset: 20},
	})
	require.NoError(t, err)
	defer enc.Close()
	size, err := enc.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(len(ref[0].Out)), size)
	got := make([]byte, size)
	require.NoError(t, dev.Download(ctx, got, body, 20))
	require.True(t, string(ref[0].Out) == string(got), "differs at %d", firstDiff(ref[0].Out, got))
	dec, err := vb.PrepareDecode(ctx, DecodeSpec{
		Format: layout.FormatZF12, Body: vk.BufferRange{Buf: body, Offset: 20}, BodyLen: size, N: g.N, Shift: 14,
		Codebook: nil, Checksums: true, Dst: vk.BufferRange{Buf: out, Offset: 32},
	})
	require.NoError(t, err)
	defer dec.Close()
	require.NoError(t, dec.Run(ctx))
	back := make([]byte, len(src))
	require.NoError(t, dev.Download(ctx, back, out, 32))
	require.True(t, string(src) == string(back))
	_, err = vb.PrepareEncode(ctx, EncodeSpec{
		Format: 77, Src: vk.BufferRange{Buf: in}, N: 1, Shift: 10, Codebook: nil, Checksums: true,
		Dst: vk.BufferRange{Buf: body},
	})
	require.ErrorIs(t, err, codec.ErrUnsupported)
}
