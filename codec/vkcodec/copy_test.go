package vkcodec

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/vk"
)

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
