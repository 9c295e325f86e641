package vkcodec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/vk"
)

// Host-path benchmarks: the tensor in Go memory, encoded or decoded through the backend (staging copies
// included), by one caller or by GOMAXPROCS callers at once (-cpu 1,8). MB/s are of uncompressed BF16.
// Run on a GPU with: codec_vkcodec.test -test.run '^$' -test.bench Host -test.cpu 1,8
// (Warm first: a session's first use allocates its pinned staging memory, ~100 ms per caller on the H200.)

func benchSizes() []int { return []int{1 << 20, 16 << 20} }

func BenchmarkEncodeHost(b *testing.B) {
	vb := openTest(b, Options{})
	for _, size := range benchSizes() {
		src := kvLike(rand.New(rand.NewPCG(1, 2)), size/2, 0.0002)
		n := uint64(size / 2)
		g := layout.SZ4{N: n, Shift: layout.DefaultChunkShift}
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			// Every parallel caller's session allocated before timing: steady state, not first use.
			if err := vb.Warm(context.Background(), runtime.GOMAXPROCS(0), n); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			b.SetBytes(int64(size))
			b.RunParallel(func(pb *testing.PB) {
				jobs := []codec.EncodeJob{{Format: layout.FormatSplitZip4, Src: src, N: n, Shift: layout.DefaultChunkShift,
					Codebook: &testCB, Checksums: true, Dst: make([]byte, g.MaxBodySize())}}
				for pb.Next() {
					if err := vb.Encode(context.Background(), jobs); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func BenchmarkDecodeHost(b *testing.B) {
	vb := openTest(b, Options{})
	for _, size := range benchSizes() {
		src := kvLike(rand.New(rand.NewPCG(1, 2)), size/2, 0.0002)
		n := uint64(size / 2)
		g := layout.SZ4{N: n, Shift: layout.DefaultChunkShift}
		enc := []codec.EncodeJob{{Format: layout.FormatSplitZip4, Src: src, N: n, Shift: layout.DefaultChunkShift,
			Codebook: &testCB, Checksums: true, Dst: make([]byte, g.MaxBodySize())}}
		if err := codec.NewCPUBackend(1).Encode(context.Background(), enc); err != nil {
			b.Fatal(err)
		}
		body := enc[0].Out
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			// Every parallel caller's session allocated before timing: steady state, not first use.
			if err := vb.Warm(context.Background(), runtime.GOMAXPROCS(0), n); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			b.SetBytes(int64(size))
			b.RunParallel(func(pb *testing.PB) {
				jobs := []codec.DecodeJob{{Format: layout.FormatSplitZip4, Body: body, N: n, Shift: layout.DefaultChunkShift,
					Codebook: &testCB, Checksums: true, Dst: make([]byte, 2*n)}}
				for pb.Next() {
					if err := vb.Decode(context.Background(), jobs); err != nil || jobs[0].Err != nil {
						b.Error(err, jobs[0].Err)
						return
					}
				}
			})
		})
	}
}

// Block-API benchmarks: 32 blocks of 512 KiB in device buffers, every block in one submission per iteration
// (PrepareEncode / PrepareDecode with Blocks). MB/s are of uncompressed BF16 over all blocks.
func BenchmarkBlocks(b *testing.B) {
	vb := openTest(b, Options{})
	dev := vb.VK()
	ctx := context.Background()
	const blocks = 32
	n := uint64(256 << 10) // values: 512 KiB
	shift := uint(layout.DefaultChunkShift)
	g := layout.SZ4{N: n, Shift: shift}
	valStride, bodyStride := 2*n, (g.MaxBodySize()+255)&^255
	mk := func(size uint64) *vk.Buffer {
		x, err := dev.NewBuffer(size*blocks, vk.DeviceLocal)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { x.Close() })
		return x
	}
	in, body, out := mk(valStride), mk(bodyStride), mk(valStride)
	var ins, bodies, outs []vk.BufferRange
	r := rand.New(rand.NewPCG(1, 2))
	for i := range blocks {
		ins = append(ins, vk.BufferRange{Buf: in, Offset: uint64(i) * valStride})
		bodies = append(bodies, vk.BufferRange{Buf: body, Offset: uint64(i) * bodyStride})
		outs = append(outs, vk.BufferRange{Buf: out, Offset: uint64(i) * valStride})
		if err := dev.Upload(ctx, in, uint64(i)*valStride, kvLike(r, int(n), 0.0002)); err != nil {
			b.Fatal(err)
		}
	}
	enc, err := vb.PrepareEncode(ctx, EncodeSpec{
		Format: layout.FormatSplitZip4, N: n, Shift: shift, Codebook: &testCB, Checksums: true,
		Blocks: Blocks(ins, bodies),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer enc.Close()
	sizes := make([]uint64, blocks)
	if err := encodeBlocks(ctx, enc, sizes); err != nil {
		b.Fatal(err)
	}
	dec, err := vb.PrepareDecode(ctx, DecodeSpec{
		Format: layout.FormatSplitZip4, N: n, Shift: shift, Codebook: &testCB, Checksums: true,
		Blocks: Blocks(bodies, outs),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer dec.Close()
	b.Run("Encode", func(b *testing.B) {
		b.SetBytes(int64(2 * n * blocks))
		for b.Loop() {
			if err := encodeBlocks(ctx, enc, sizes); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Decode", func(b *testing.B) {
		b.SetBytes(int64(2 * n * blocks))
		for b.Loop() {
			if err := decodeBlocks(ctx, dec, sizes); err != nil {
				b.Fatal(err)
			}
		}
	})
}
