package vkcodec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
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
