package vkcodec

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/vk"
)

// blockPool is a set of same-size blocks laid out in shared device buffers, as a KV block pool would be.
type blockPool struct {
	n, bodyStride, valStride uint64
	in, body, out            *vk.Buffer
}

func newBlockPool(t *testing.T, dev *vk.Device, blocks int, n uint64, shift uint) *blockPool {
	g := layout.SZ4{N: n, Shift: shift}
	p := &blockPool{n: n, bodyStride: (g.MaxBodySize() + 36) &^ 3, valStride: (2*n + 63) &^ 15}
	var err error
	p.in, err = dev.NewBuffer(p.valStride*uint64(blocks)+64, vk.DeviceLocal)
	require.NoError(t, err)
	t.Cleanup(func() { p.in.Close() })
	p.body, err = dev.NewBuffer(p.bodyStride*uint64(blocks)+64, vk.DeviceLocal)
	require.NoError(t, err)
	t.Cleanup(func() { p.body.Close() })
	p.out, err = dev.NewBuffer(p.valStride*uint64(blocks)+64, vk.DeviceLocal)
	require.NoError(t, err)
	t.Cleanup(func() { p.out.Close() })
	return p
}

// Ranges start at offsets that are not binding-aligned, to exercise the kernels' base offsets.
func (p *blockPool) ins(k int) []vk.BufferRange {
	r := make([]vk.BufferRange, k)
	for i := range r {
		r[i] = vk.BufferRange{Buf: p.in, Offset: 16 + uint64(i)*p.valStride}
	}
	return r
}

func (p *blockPool) bodies(k int) []vk.BufferRange {
	r := make([]vk.BufferRange, k)
	for i := range r {
		r[i] = vk.BufferRange{Buf: p.body, Offset: 12 + uint64(i)*p.bodyStride}
	}
	return r
}

func (p *blockPool) outs(k int) []vk.BufferRange {
	r := make([]vk.BufferRange, k)
	for i := range r {
		r[i] = vk.BufferRange{Buf: p.out, Offset: 32 + uint64(i)*p.valStride}
	}
	return r
}

// TestBlockOps encodes and decodes a set of blocks in one submission each, twice with different contents (the
// prepared operations are reused), and checks every body against the Go reference and every block's round trip.
func TestBlockOps(t *testing.T) {
	vb := openTest(t, Options{})
	dev := vb.VK()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 9))
	const blocks = 6
	shift := uint(14)
	n := uint64(3*(1<<14) + 100)
	p := newBlockPool(t, dev, blocks, n, shift)
	enc, err := vb.PrepareEncode(ctx, EncodeSpec{
		Format: layout.FormatSplitZip4, N: n, Shift: shift, Codebook: &testCB, Checksums: true,
		Blocks: Blocks(p.ins(blocks), p.bodies(blocks)),
	})
	require.NoError(t, err)
	defer enc.Close()
	dec, err := vb.PrepareDecode(ctx, DecodeSpec{
		Format: layout.FormatSplitZip4, N: n, Shift: shift, Codebook: &testCB, Checksums: true,
		Blocks: Blocks(p.bodies(blocks), p.outs(blocks)),
	})
	require.NoError(t, err)
	defer dec.Close()
	require.Equal(t, blocks, enc.Blocks())
	require.Equal(t, blocks, dec.Blocks())
	sizes := make([]uint64, blocks)
	for round := range 2 {
		srcs := make([][]byte, blocks)
		for i := range srcs {
			esc := []float64{0, 0.001, 0.02, 0.6}[(i+round)%4] // 0.6: raw chunks
			srcs[i] = kvLike(r, int(n), esc)
			require.NoError(t, dev.Upload(ctx, p.in, p.ins(blocks)[i].Offset, srcs[i]))
		}
		before := dev.Stats()
		require.NoError(t, encodeBlocks(ctx, enc, sizes))
		require.Equal(t, uint64(1), dev.Stats().Submissions-before.Submissions, "all blocks in one submission")
		for i := range srcs {
			want, _ := encodeBoth(t, vb, srcs[i], shift, true)
			require.Equal(t, uint64(len(want)), sizes[i], "round %d block %d size", round, i)
			got := make([]byte, sizes[i])
			require.NoError(t, dev.Download(ctx, got, p.body, p.bodies(blocks)[i].Offset))
			require.True(t, string(want) == string(got), "round %d block %d differs at %d", round, i, firstDiff(want, got))
		}
		before = dev.Stats()
		require.NoError(t, decodeBlocks(ctx, dec, sizes))
		require.Equal(t, uint64(1), dev.Stats().Submissions-before.Submissions)
		for i := range srcs {
			back := make([]byte, 2*n)
			require.NoError(t, dev.Download(ctx, back, p.out, p.outs(blocks)[i].Offset))
			require.True(t, string(srcs[i]) == string(back), "round %d block %d round trip", round, i)
		}
	}
	require.Positive(t, int64(enc.GPUTime()))
	require.Positive(t, int64(dec.GPUTime()))

	// A damaged body: the kernel names the block and the reference's class.
	want := make([]byte, sizes[4])
	require.NoError(t, dev.Download(ctx, want, p.body, p.bodies(blocks)[4].Offset))
	bad := append([]byte{}, want...)
	bad[len(bad)/2] ^= 0x04
	require.NoError(t, dev.Upload(ctx, p.body, p.bodies(blocks)[4].Offset, bad))
	jobs := []codec.DecodeJob{{Format: layout.FormatSplitZip4, Body: bad, N: n, Shift: shift, Codebook: &testCB,
		Checksums: true, Dst: make([]byte, 2*n)}}
	require.NoError(t, codec.NewCPUBackend(1).Decode(ctx, jobs))
	require.Error(t, jobs[0].Err)
	err = decodeBlocks(ctx, dec, sizes)
	require.Error(t, err)
	require.ErrorContains(t, err, "block 4")
	var ce, re *codec.Error
	require.True(t, errors.As(err, &ce) && errors.As(jobs[0].Err, &re))
	require.Equal(t, re.Class, ce.Class, "GPU %v, reference %v", err, jobs[0].Err)

	// A wrong length is refused before anything runs; the next run with the right lengths still works.
	require.NoError(t, dev.Upload(ctx, p.body, p.bodies(blocks)[4].Offset, want))
	wrong := append([]uint64{}, sizes...)
	wrong[2] += 4
	err = decodeBlocks(ctx, dec, wrong)
	require.Error(t, err)
	if wrong[2] <= (layout.SZ4{N: n, Shift: shift}).MaxBodySize() {
		// Within bounds: the kernel sees a table that does not end at the body's end.
		require.ErrorIs(t, err, codec.ErrCorrupt)
	}
	require.NoError(t, decodeBlocks(ctx, dec, sizes))
	wrong[2] = 1 << 40
	require.ErrorIs(t, decodeBlocks(ctx, dec, wrong), codec.ErrCorrupt)
	require.Error(t, decodeBlocks(ctx, dec, sizes[:3]))
	require.Error(t, encodeBlocks(ctx, enc, sizes[:3]), "too few size slots")
	require.NoError(t, decodeBlocks(ctx, dec, sizes))
}

// TestBlockOpsInFlight keeps two prepared block encodes in flight at once and checks both results.
func TestBlockOpsInFlight(t *testing.T) {
	vb := openTest(t, Options{})
	dev := vb.VK()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 1))
	const blocks = 4
	n := uint64(1 << 15)
	shift := uint(layout.DefaultChunkShift)
	pa, pb := newBlockPool(t, dev, blocks, n, shift), newBlockPool(t, dev, blocks, n, shift)
	srcs := map[*blockPool][][]byte{}
	var ops []*EncodeOp
	for _, p := range []*blockPool{pa, pb} {
		for i := range blocks {
			s := kvLike(r, int(n), 0.003)
			srcs[p] = append(srcs[p], s)
			require.NoError(t, dev.Upload(ctx, p.in, p.ins(blocks)[i].Offset, s))
		}
		op, err := vb.PrepareEncode(ctx, EncodeSpec{
			Format: layout.FormatSplitZip4, N: n, Shift: shift, Codebook: &testCB, Checksums: true,
			Blocks: Blocks(p.ins(blocks), p.bodies(blocks)),
		})
		require.NoError(t, err)
		defer op.Close()
		ops = append(ops, op)
	}
	for range 3 {
		require.NoError(t, ops[0].SubmitWith(nil, nil))
		require.NoError(t, ops[1].SubmitWith(nil, nil))
		require.Error(t, ops[1].SubmitWith(nil, nil), "a second submit before Finish is refused")
		for k, p := range []*blockPool{pa, pb} {
			sizes := make([]uint64, blocks)
			_, err := ops[k].Finish(ctx)
			require.NoError(t, err)
			require.NoError(t, ops[k].BlockSizes(sizes))
			for i := range blocks {
				want, _ := encodeBoth(t, vb, srcs[p][i], shift, true)
				got := make([]byte, sizes[i])
				require.NoError(t, dev.Download(ctx, got, p.body, p.bodies(blocks)[i].Offset))
				require.True(t, string(want) == string(got), "op %d block %d", k, i)
			}
		}
	}
}

// TestBlockOpsRefuse checks the clear errors for block sets the kernels cannot take.
func TestBlockOpsRefuse(t *testing.T) {
	vb := openTest(t, Options{})
	dev := vb.VK()
	ctx := context.Background()
	n := uint64(4096)
	shift := uint(12)
	p := newBlockPool(t, dev, 3, n, shift)
	_, err := vb.PrepareEncode(ctx, EncodeSpec{
		Format: layout.FormatSplitZip4, N: n, Shift: shift, Codebook: &testCB, Checksums: true,
		Blocks: Blocks(p.ins(3), p.bodies(2)),
	})
	require.ErrorIs(t, err, codec.ErrInvalidInput)
	_, err = vb.PrepareEncode(ctx, EncodeSpec{
		Format: layout.FormatSplitZip4, N: n, Shift: shift, Codebook: &testCB, Checksums: true,
		Blocks: Blocks(nil, nil),
	})
	require.ErrorIs(t, err, codec.ErrInvalidInput)
	overlap := p.bodies(3)
	overlap[2].Offset = overlap[1].Offset + 8
	_, err = vb.PrepareEncode(ctx, EncodeSpec{
		Format: layout.FormatSplitZip4, N: n, Shift: shift, Codebook: &testCB, Checksums: true,
		Blocks: Blocks(p.ins(3), overlap),
	})
	require.ErrorIs(t, err, codec.ErrInvalidInput)
	require.ErrorContains(t, err, "overlap")
	mis := p.ins(3)
	mis[1].Offset += 4
	_, err = vb.PrepareEncode(ctx, EncodeSpec{
		Format: layout.FormatSplitZip4, N: n, Shift: shift, Codebook: &testCB, Checksums: true,
		Blocks: Blocks(mis, p.bodies(3)),
	})
	require.ErrorIs(t, err, codec.ErrInvalidInput)
	past := p.outs(3)
	past[2].Offset = p.out.Size() - 16
	_, err = vb.PrepareDecode(ctx, DecodeSpec{
		Format: layout.FormatSplitZip4, N: n, Shift: shift, Codebook: &testCB, Checksums: true,
		Blocks: Blocks(p.bodies(3), past),
	})
	require.ErrorIs(t, err, codec.ErrInvalidInput)
	_, err = vb.PrepareDecode(ctx, DecodeSpec{
		Format: layout.FormatSplitZip4, N: 0, Shift: shift, Codebook: &testCB, Checksums: true,
		Blocks: Blocks(p.bodies(3), p.outs(3)),
	})
	require.Error(t, err)
}

// encodeBlocks runs a block encode and writes each block's body length to sizes.
func encodeBlocks(ctx context.Context, op *EncodeOp, sizes []uint64) error {
	if _, err := op.Run(ctx); err != nil {
		return err
	}
	return op.BlockSizes(sizes)
}

// decodeBlocks runs a block decode of bodies of the given lengths.
func decodeBlocks(ctx context.Context, op *DecodeOp, bodyLens []uint64) error {
	if err := op.SetBodyLens(bodyLens); err != nil {
		return err
	}
	return op.Run(ctx)
}
