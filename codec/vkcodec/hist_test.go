package vkcodec

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/vk"
)

// TestExpHistMatchesHost: the device histogram equals codec.ExpHistogram's, the counts the encoder calibrates
// with, for odd and even counts, sources at an offset that is not a binding's alignment, uniform random bits (every
// exponent) and KV-like values, and every run starts from zero whatever the counts' memory held before it.
func TestExpHistMatchesHost(t *testing.T) {
	const maxN = 300001
	r := rand.New(rand.NewPCG(5, 6))
	random := make([]byte, 2*maxN)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	vb := openTest(t, Options{})
	dev, ctx := vb.VK(), context.Background()
	for _, data := range [][]byte{random, kvLike(r, maxN, 0.01)} {
		buf, err := dev.NewBuffer(uint64(len(data))+512, vk.DeviceLocal)
		require.NoError(t, err)
		defer buf.Close()
		require.NoError(t, dev.Upload(ctx, buf, 0, bytes.Repeat([]byte{0xA5}, int(buf.Size()))))
		const off = 20 // a word offset inside the binding's 256-byte-aligned start
		require.NoError(t, dev.Upload(ctx, buf, off, data))
		for _, n := range []uint64{1, 2, 3, 255, 4097, 65536, maxN} {
			var want codec.ExpHistogram
			want.Add(data[:2*n])
			op, err := vb.PrepareExpHist(ctx, vk.BufferRange{Buf: buf, Offset: off, Size: 2*n + 2}, n)
			require.NoError(t, err)
			for run := range 2 {
				garbage := bytes.Repeat([]byte{byte(0x5A + run)}, histBins)
				require.NoError(t, dev.Upload(ctx, op.hist.dev.buf, op.hist.dev.off, garbage))
				copy(op.hist.host.bytes(), garbage)
				got, err := op.Run(ctx)
				require.NoError(t, err)
				require.Equal(t, want, got, "%d values, run %d", n, run)
			}
			op.Close()
		}
	}
}

// TestExpHistRefusesBadRanges: a source the kernel could not read safely, or a count it could not hold, is
// invalid input, refused before anything is recorded.
func TestExpHistRefusesBadRanges(t *testing.T) {
	vb := openTest(t, Options{})
	ctx := context.Background()
	buf, err := vb.VK().NewBuffer(4096, vk.DeviceLocal)
	require.NoError(t, err)
	defer buf.Close()
	for _, c := range []struct {
		src vk.BufferRange
		n   uint64
	}{
		{vk.BufferRange{Buf: buf}, 0},
		{vk.BufferRange{Buf: buf}, 2049},                             // past the buffer
		{vk.BufferRange{Buf: buf, Offset: 4000}, 49},                 // past the buffer from an offset
		{vk.BufferRange{Buf: buf, Offset: 0, Size: 100}, 51},         // past the range
		{vk.BufferRange{Buf: buf, Offset: 0, Size: 101}, 51},         // the last value's word past the range
		{vk.BufferRange{Buf: buf, Offset: 2}, 10},                    // misaligned
		{vk.BufferRange{Buf: buf}, MaxExpHistValues + 1},             // counts would overflow
		{vk.BufferRange{}, 10},                                       // no buffer
		{vk.BufferRange{Buf: buf, Offset: 4096 - 256, Size: 512}, 1}, // range past the buffer
	} {
		op, err := vb.PrepareExpHist(ctx, c.src, c.n)
		require.ErrorIs(t, err, codec.ErrInvalidInput, "%+v, %d values", c.src, c.n)
		require.Nil(t, op)
	}
	op, err := vb.PrepareExpHist(ctx, vk.BufferRange{Buf: buf, Offset: 0, Size: 104}, 51)
	require.NoError(t, err, "51 values in 104 bytes: the last word is whole")
	op.Close()
}
