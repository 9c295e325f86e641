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
	"github.com/vkzip/vkzip/vk"
)

// TestDeviceOpsOneSubmission encodes and decodes between device buffers and checks, with the vk counters, that each
// run is exactly one queue submission whose only host read is a size or a verdict.
func TestDeviceOpsOneSubmission(t *testing.T) {
	vb := openTest(t, Options{})
	dev := vb.VK()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{5000, 1 << 16, 3*(1<<14) + 11} {
		src := kvLike(r, n, 0.002)
		shift := uint(layout.DefaultChunkShift)
		g := layout.SZ4{N: uint64(n), Shift: shift}
		in, err := dev.NewBuffer(layout.Align4(uint64(2*n))+64, vk.DeviceLocal)
		require.NoError(t, err)
		defer in.Close()
		body, err := dev.NewBuffer(g.MaxBodySize()+64, vk.DeviceLocal)
		require.NoError(t, err)
		defer body.Close()
		out, err := dev.NewBuffer(layout.Align4(uint64(2*n))+64, vk.DeviceLocal)
		require.NoError(t, err)
		defer out.Close()
		// Offsets that are not binding-aligned exercise the base offsets of the kernels.
		require.NoError(t, dev.Upload(ctx, in, 48, src))
		enc, err := vb.PrepareEncode(ctx, EncodeSpec{
			Format: layout.FormatSplitZip4, Src: vk.BufferRange{Buf: in, Offset: 48}, N: uint64(n), Shift: shift,
			Codebook: &testCB, Checksums: true, Dst: vk.BufferRange{Buf: body, Offset: 20},
		})
		require.NoError(t, err)
		defer enc.Close()
		before := dev.Stats()
		size, err := enc.Run(ctx)
		require.NoError(t, err)
		after := dev.Stats()
		require.Equal(t, uint64(1), after.Submissions-before.Submissions, "encode is one submission")
		require.Equal(t, uint64(1), after.Readbacks-before.Readbacks, "encode reads back only the size")
		want, _ := encodeBoth(t, vb, src, shift, true)
		require.Equal(t, uint64(len(want)), size)
		got := make([]byte, size)
		require.NoError(t, dev.Download(ctx, got, body, 20))
		require.True(t, string(want) == string(got), "device encode differs from the reference at %d", firstDiff(want, got))

		dec, err := vb.PrepareDecode(ctx, DecodeSpec{
			Format: layout.FormatSplitZip4, Body: vk.BufferRange{Buf: body, Offset: 20}, BodyLen: size,
			N: uint64(n), Shift: shift, Codebook: &testCB, Checksums: true,
			Dst: vk.BufferRange{Buf: out, Offset: 32},
		})
		require.NoError(t, err)
		defer dec.Close()
		before = dev.Stats()
		require.NoError(t, dec.Run(ctx))
		after = dev.Stats()
		require.Equal(t, uint64(1), after.Submissions-before.Submissions, "decode is one submission")
		back := make([]byte, 2*n)
		require.NoError(t, dev.Download(ctx, back, out, 32))
		require.True(t, string(src) == string(back))
		require.Positive(t, int64(enc.GPUTime()), "timestamps bracket the encode")
		// Corrupt the body in place: the kernel alone (no host check) must report a checksum error.
		bad := append([]byte{}, want...)
		bad[len(bad)/3] ^= 0x10
		require.NoError(t, dev.Upload(ctx, body, 20, bad))
		err = dec.Run(ctx)
		require.Error(t, err)
		require.True(t, errors.Is(err, codec.ErrChecksum) || errors.Is(err, codec.ErrCorrupt), "%v", err)
	}
}

// TestSZ4BodyOffsets encodes into bodies at every word offset modulo 16 bytes (a payload's body lies behind a header
// of any length, and the encoder stores its low pieces as 8-byte pairs only at even word offsets), with whole and
// partial slots at the tensor's end: the body equals the reference's and no byte around it changes.
func TestSZ4BodyOffsets(t *testing.T) {
	vb := openTest(t, Options{})
	dev := vb.VK()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(11, 12))
	shift := uint(layout.DefaultChunkShift)
	for _, n := range []int{2*(1<<shift) + 4096, 70001, 1<<shift + 13, 9} {
		src := kvLike(r, n, 0.003)
		want, _ := encodeBoth(t, vb, src, shift, true)
		g := layout.SZ4{N: uint64(n), Shift: shift}
		in, err := dev.NewBuffer(layout.Align4(uint64(2*n))+64, vk.DeviceLocal)
		require.NoError(t, err)
		require.NoError(t, dev.Upload(ctx, in, 0, src))
		for _, off := range []uint64{0, 4, 8, 12, 68, 260} {
			body, err := dev.NewBuffer(off+g.MaxBodySize()+64, vk.DeviceLocal)
			require.NoError(t, err)
			poisonBuf(t, dev, body)
			enc, err := vb.PrepareEncode(ctx, EncodeSpec{Format: layout.FormatSplitZip4, Src: vk.BufferRange{Buf: in},
				N: uint64(n), Shift: shift, Codebook: &testCB, Checksums: true, Dst: vk.BufferRange{Buf: body, Offset: off}})
			require.NoError(t, err)
			size, err := enc.Run(ctx)
			require.NoError(t, err)
			got := make([]byte, size)
			require.NoError(t, dev.Download(ctx, got, body, off))
			require.True(t, string(want) == string(got), "%d values at body offset %d: differs from the reference at %d",
				n, off, firstDiff(want, got))
			requirePoison(t, dev, body, off, off+size, fmt.Sprintf("%d values at body offset %d", n, off))
			enc.Close()
			body.Close()
		}
		in.Close()
	}
}

// TestEncodeTable checks EncodeSpec.Table: the chunk table each run copies to host memory, within the run's one
// submission, equals the table in the body it wrote; formats that place no table by the geometry copy none.
func TestEncodeTable(t *testing.T) {
	vb := openTest(t, Options{})
	dev := vb.VK()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(9, 10))
	const n = 3*(1<<14) + 11
	shift := uint(layout.DefaultChunkShift)
	in, err := dev.NewBuffer(layout.Align4(2*n)+64, vk.DeviceLocal)
	require.NoError(t, err)
	defer in.Close()
	body, err := dev.NewBuffer(10*n, vk.DeviceLocal)
	require.NoError(t, err)
	defer body.Close()
	for _, f := range []uint8{layout.FormatSplitZip4, layout.FormatTBE3, layout.FormatHuff, layout.FormatAuto} {
		if !vb.SupportsResident(f) {
			continue
		}
		spec := EncodeSpec{Format: f, N: n, Shift: shift, Codebook: &testCB, Checksums: true, Table: true,
			Src: vk.BufferRange{Buf: in, Offset: 48}, Dst: vk.BufferRange{Buf: body, Offset: 20}}
		enc, err := vb.PrepareEncode(ctx, spec)
		require.NoError(t, err, codec.FormatName(f))
		fm, _ := codec.LookupFormat(f)
		tab, off := enc.Table()
		if fm.Table == nil {
			require.Nil(t, tab, "%s places no table", codec.FormatName(f))
			enc.Close()
			continue
		}
		wantOff, entries, ok := fm.Table(layout.DTypeBF16, n, shift)
		require.True(t, ok)
		require.Equal(t, wantOff, off)
		require.Len(t, tab, int(entries*layout.ChunkEntrySize))
		for round := range 2 { // a second tensor's table replaces the first's
			require.NoError(t, dev.Upload(ctx, in, 48, kvLike(r, n, 0.002+0.05*float64(round))))
			tab, _ = enc.Table()
			for i := range tab {
				tab[i] = 0xA5
			}
			before := dev.Stats()
			size, err := enc.Run(ctx)
			require.NoError(t, err)
			require.Equal(t, uint64(1), dev.Stats().Submissions-before.Submissions, "the table comes with the run")
			got := make([]byte, size)
			require.NoError(t, dev.Download(ctx, got, body, 20))
			tab, _ = enc.Table()
			require.Equal(t, got[off:off+uint64(len(tab))], tab, "%s round %d", codec.FormatName(f), round)
		}
		enc.Close()
		spec.Blocks = []Block{{spec.Src, spec.Dst}, {spec.Src, vk.BufferRange{Buf: body, Offset: 5 * n &^ 255}}}
		spec.Table = false
		two, err := vb.PrepareEncode(ctx, spec)
		require.NoError(t, err, "the blocks themselves are valid")
		two.Close()
		spec.Table = true
		_, err = vb.PrepareEncode(ctx, spec)
		require.ErrorIs(t, err, codec.ErrInvalidInput, "a table with several blocks")
	}
}

// TestCopyShapes runs the copy kernel's shapes and checks every written vector against the shape's definition:
// unit i XORs its R source vectors (one stream each, or consecutive) and writes the result XOR w to its W outputs.
// The plain copy must be a copy.
func TestCopyShapes(t *testing.T) {
	vb := openTest(t, Options{})
	dev := vb.VK()
	ctx := context.Background()
	const n = 48 << 10 // bytes on each side
	src := make([]byte, n)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	in, err := dev.NewBuffer(n, vk.DeviceLocal)
	require.NoError(t, err)
	defer in.Close()
	out, err := dev.NewBuffer(n, vk.DeviceLocal)
	require.NoError(t, err)
	defer out.Close()
	require.NoError(t, dev.Upload(ctx, in, 0, src))
	vec := func(b []byte, i int) [4]uint32 {
		var v [4]uint32
		for k := range v {
			v[k] = binary.LittleEndian.Uint32(b[16*i+4*k:])
		}
		return v
	}
	for _, sh := range []CopyShape{{}, {Reads: 3, Writes: 4}, {Reads: 4, Writes: 3, Contiguous: true},
		{Reads: 2, Writes: 2, Unroll: 4}, {Reads: 1, Writes: 2, Contiguous: true, Unroll: 2}} {
		zero := make([]byte, n)
		require.NoError(t, dev.Upload(ctx, out, 0, zero))
		op, err := vb.PrepareCopyShaped(vk.BufferRange{Buf: in}, vk.BufferRange{Buf: out}, n, sh)
		require.NoError(t, err)
		require.NoError(t, op.Run(ctx))
		op.Close()
		got := make([]byte, n)
		require.NoError(t, dev.Download(ctx, got, out, 0))
		s := sh.norm()
		units := n / 16 / max(s.Reads, s.Writes)
		require.Equal(t, uint64(16*units*(s.Reads+s.Writes)), sh.Traffic(n))
		for i := range units {
			var x [4]uint32
			for rd := range s.Reads {
				idx := rd*units + i
				if s.Contiguous {
					idx = i*s.Reads + rd
				}
				v := vec(src, idx)
				for k := range x {
					x[k] ^= v[k]
				}
			}
			for w := range s.Writes {
				idx := w*units + i
				if s.Contiguous {
					idx = i*s.Writes + w
				}
				want := x
				for k := range want {
					want[k] ^= uint32(w)
				}
				require.Equal(t, want, vec(got, idx), "shape %+v unit %d output %d", sh, i, w)
			}
		}
	}
	op, err := vb.PrepareCopyShaped(vk.BufferRange{Buf: in}, vk.BufferRange{Buf: out}, n, CopyShape{Reads: 9, Writes: 1})
	require.Error(t, err, "at most 8 vectors a side")
	require.Nil(t, op)
}
