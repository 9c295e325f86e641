package vkcodec

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/vk"
)

// storedRef is a stored body as docs/FORMAT.md defines it: the bytes, zero padding to a word, the CRC-32C of both
// (0 without checksums).
func storedRef(data []byte, checksums bool) []byte {
	body := append(append([]byte{}, data...), make([]byte, layout.Align4(uint64(len(data)))-uint64(len(data)))...)
	crc := uint32(0)
	if checksums {
		crc = crc32c.Checksum(body)
	}
	return binary.LittleEndian.AppendUint32(body, crc)
}

// TestStoredOnDevice: stored's device-resident encode and decode write exactly the reference's body and values
// into poisoned buffers (byte counts with and without padding, checksums on and off, unaligned offsets), and the
// decoder gives the reference's verdict on a flipped byte, a nonzero padding byte and a CRC word without checksums.
func TestStoredOnDevice(t *testing.T) {
	vb := openTest(t, Options{})
	dev := vb.VK()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	poison := func(buf *vk.Buffer) {
		require.NoError(t, dev.Upload(ctx, buf, 0, bytes.Repeat([]byte{0xA5}, int(buf.Size()))))
	}
	for _, c := range []struct {
		dt layout.DType
		n  uint64
	}{{layout.DTypeF8E4M3, 1001}, {layout.DTypeBF16, 70000}, {layout.DTypeF32, 5}, {layout.DTypeF8E5M2, 3}} {
		for _, cs := range []bool{true, false} {
			data := make([]byte, c.n*uint64(c.dt.Size()))
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			want := storedRef(data, cs)
			in, err := dev.NewBuffer(layout.Align4(uint64(len(data)))+64, vk.DeviceLocal)
			require.NoError(t, err)
			defer in.Close()
			body, err := dev.NewBuffer(uint64(len(want))+64, vk.DeviceLocal)
			require.NoError(t, err)
			defer body.Close()
			out, err := dev.NewBuffer(layout.Align4(uint64(len(data)))+64, vk.DeviceLocal)
			require.NoError(t, err)
			defer out.Close()
			poison(in)
			poison(body)
			poison(out)
			require.NoError(t, dev.Upload(ctx, in, 16, data))

			enc, err := vb.PrepareEncode(ctx, EncodeSpec{Format: layout.FormatStored, DType: c.dt, N: c.n,
				Checksums: cs, Src: vk.BufferRange{Buf: in, Offset: 16}, Dst: vk.BufferRange{Buf: body, Offset: 12}})
			require.NoError(t, err)
			defer enc.Close()
			size, err := enc.Run(ctx)
			require.NoError(t, err)
			require.Equal(t, uint64(len(want)), size)
			got := make([]byte, size)
			require.NoError(t, dev.Download(ctx, got, body, 12))
			require.Equal(t, want, got, "%v × %d, checksums %v: body", c.dt, c.n, cs)

			dec, err := vb.PrepareDecode(ctx, DecodeSpec{Format: layout.FormatStored, DType: c.dt, N: c.n,
				Checksums: cs, Body: vk.BufferRange{Buf: body, Offset: 12}, BodyLen: size,
				Dst: vk.BufferRange{Buf: out, Offset: 32}})
			require.NoError(t, err)
			defer dec.Close()
			require.NoError(t, dec.Run(ctx))
			back := make([]byte, len(data))
			require.NoError(t, dev.Download(ctx, back, out, 32))
			require.Equal(t, data, back, "%v × %d, checksums %v: values", c.dt, c.n, cs)

			bad := append([]byte{}, want...)
			bad[r.IntN(len(data))] ^= 0x08
			require.NoError(t, dev.Upload(ctx, body, 12, bad))
			if cs {
				require.ErrorIs(t, dec.Run(ctx), codec.ErrChecksum)
			} else {
				require.NoError(t, dec.Run(ctx), "without checksums a changed value is a valid body")
				bad = append([]byte{}, want...)
				bad[len(bad)-1] = 1
				require.NoError(t, dev.Upload(ctx, body, 12, bad))
				require.ErrorIs(t, dec.Run(ctx), codec.ErrNonCanonical)
			}
			if pad := len(want) - 4 - len(data); pad > 0 && !cs {
				bad = append([]byte{}, want...)
				bad[len(data)] = 0x40
				require.NoError(t, dev.Upload(ctx, body, 12, bad))
				require.ErrorIs(t, dec.Run(ctx), codec.ErrNonCanonical)
			}
		}
	}
}

// TestStoredHostJobs: stored through the backend's host-memory jobs gives the reference's bodies and values.
func TestStoredHostJobs(t *testing.T) {
	vb := openTest(t, Options{})
	ctx := context.Background()
	data := make([]byte, 4099)
	for i := range data {
		data[i] = byte(i * 7)
	}
	want := storedRef(data, true)
	jobs := []codec.EncodeJob{{Format: layout.FormatStored, DType: layout.DTypeU8, Src: data, N: uint64(len(data)),
		Checksums: true, Dst: bytes.Repeat([]byte{0xA5}, len(want))}}
	require.NoError(t, vb.Encode(ctx, jobs))
	require.Equal(t, want, jobs[0].Out)
	dec := []codec.DecodeJob{{Format: layout.FormatStored, DType: layout.DTypeU8, Body: want, N: uint64(len(data)),
		Checksums: true, Dst: bytes.Repeat([]byte{0xA5}, len(data))}}
	require.NoError(t, vb.Decode(ctx, dec))
	require.NoError(t, dec[0].Err)
	require.Equal(t, data, dec[0].Dst)
}
