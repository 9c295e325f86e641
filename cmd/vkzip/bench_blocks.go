package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/vk"
)

// blocksOut is what `bench --blocks` measures: the block API (vkcodec.PrepareEncode/PrepareDecode with Blocks)
// on a stream of same-size KV blocks, each run one submission of every block, depth runs in flight.
type blocksOut struct {
	Blocks     int   `json:"blocks"`
	BlockBytes int64 `json:"block_bytes"`
	Depth      int   `json:"depth"`         // prepared operations in flight
	Runs       int   `json:"measured_runs"` // measured runs of each direction
	// Wall: bytes of every block of every run over the elapsed time of the whole pipelined loop (submission,
	// synchronisation and size/verdict read-back included). GPU: one run's timestamps, median.
	EncodeWallGBps float64 `json:"encode_wall_gbps"`
	DecodeWallGBps float64 `json:"decode_wall_gbps"`
	EncodeGBps     float64 `json:"encode_gbps"`
	DecodeGBps     float64 `json:"decode_gbps"`
	// The block wall throughput as a fraction of the large-tensor wall throughput of the same invocation.
	EncodeOfLarge float64 `json:"encode_of_large"`
	DecodeOfLarge float64 `json:"decode_of_large"`
	Ratio         float64 `json:"ratio"`
	BitExact      bool    `json:"bit_exact"`
	MatchesCPU    bool    `json:"matches_cpu"`
}

type blockSet struct {
	in, body, out *vk.Buffer
	ins, bodies   []vk.BufferRange
	outs          []vk.BufferRange
	enc           *vkcodec.EncodeOp
	dec           *vkcodec.DecodeOp
	sizes         []uint64
}

func (s *blockSet) close() {
	if s.enc != nil {
		s.enc.Close()
	}
	if s.dec != nil {
		s.dec.Close()
	}
	for _, b := range []*vk.Buffer{s.in, s.body, s.out} {
		if b != nil {
			b.Close()
		}
	}
}

// benchBlocks measures blocks of blockBytes (BF16) cut from src (tiled), in depth block sets.
func benchBlocks(ctx context.Context, b *vkcodec.Backend, src []byte, blocks int, blockBytes int64, shift uint,
	cb codec.Codebook, checksums bool, depth, warm, iters int) (*blocksOut, error) {
	dev := b.VK()
	n := uint64(blockBytes / 2)
	g := layout.SZ4{N: n, Shift: shift}
	valStride := (2*n + 255) &^ 255
	bodyStride := (g.MaxBodySize() + 255) &^ 255
	block := func(i int) []byte { // block i of the stream: src tiled
		out := make([]byte, 2*n)
		off := (uint64(i) * 2 * n) % uint64(len(src))
		for k := 0; k < len(out); {
			c := copy(out[k:], src[off:])
			k += c
			off = 0
		}
		return out
	}
	sets := make([]*blockSet, depth)
	defer func() {
		for _, s := range sets {
			if s != nil {
				s.close()
			}
		}
	}()
	for d := range sets {
		s := &blockSet{sizes: make([]uint64, blocks)}
		sets[d] = s
		var err error
		if s.in, err = dev.NewBuffer(valStride*uint64(blocks), vk.DeviceLocal); err != nil {
			return nil, err
		}
		if s.body, err = dev.NewBuffer(bodyStride*uint64(blocks), vk.DeviceLocal); err != nil {
			return nil, err
		}
		if s.out, err = dev.NewBuffer(valStride*uint64(blocks), vk.DeviceLocal); err != nil {
			return nil, err
		}
		for i := range blocks {
			s.ins = append(s.ins, vk.BufferRange{Buf: s.in, Offset: uint64(i) * valStride, Size: 2 * n})
			s.bodies = append(s.bodies, vk.BufferRange{Buf: s.body, Offset: uint64(i) * bodyStride, Size: g.MaxBodySize()})
			s.outs = append(s.outs, vk.BufferRange{Buf: s.out, Offset: uint64(i) * valStride, Size: 2 * n})
			if err := dev.Upload(ctx, s.in, uint64(i)*valStride, block(d*blocks+i)); err != nil {
				return nil, err
			}
		}
		if s.enc, err = b.PrepareEncode(ctx, vkcodec.EncodeSpec{
			Format: layout.FormatSplitZip4, N: n, Shift: shift, Codebook: &cb, Checksums: checksums,
			Blocks: vkcodec.Blocks(s.ins, s.bodies),
		}); err != nil {
			return nil, err
		}
		if _, err := s.enc.Run(ctx); err != nil {
			return nil, err
		}
		if err := s.enc.BlockSizes(s.sizes); err != nil {
			return nil, err
		}
		if s.dec, err = b.PrepareDecode(ctx, vkcodec.DecodeSpec{
			Format: layout.FormatSplitZip4, N: n, Shift: shift, Codebook: &cb, Checksums: checksums,
			Blocks: vkcodec.Blocks(s.bodies, s.outs),
		}); err != nil {
			return nil, err
		}
	}
	out := &blocksOut{Blocks: blocks, BlockBytes: blockBytes, Depth: depth, Runs: iters * depth}
	total := float64(blocks) * float64(blockBytes)
	// pipeline keeps depth runs in flight: each set is resubmitted as soon as its previous run is finished.
	pipeline := func(runs int, submit func(s *blockSet) error, finish func(s *blockSet) error,
		gpu func(s *blockSet) time.Duration) (wall float64, gpuMed float64, err error) {
		var g []float64
		t0 := time.Now()
		for i := range runs + depth {
			s := sets[i%depth]
			if i >= depth {
				if err := finish(s); err != nil {
					return 0, 0, err
				}
				g = append(g, gbps(int64(total), gpu(s)))
			}
			if i < runs {
				if err := submit(s); err != nil {
					return 0, 0, err
				}
			}
		}
		return total * float64(runs) / time.Since(t0).Seconds() / 1e9, spreadOf(g).Median, nil
	}
	encSubmit := func(s *blockSet) error { return s.enc.SubmitWith(nil, nil) }
	encFinish := func(s *blockSet) error {
		if _, err := s.enc.Finish(ctx); err != nil {
			return err
		}
		return s.enc.BlockSizes(s.sizes)
	}
	encGPU := func(s *blockSet) time.Duration { return s.enc.GPUTime() }
	decSubmit := func(s *blockSet) error {
		if err := s.dec.SetBodyLens(s.sizes); err != nil {
			return err
		}
		return s.dec.SubmitWith(nil, nil)
	}
	decFinish := func(s *blockSet) error { return s.dec.Finish(ctx) }
	decGPU := func(s *blockSet) time.Duration { return s.dec.GPUTime() }
	if warm > 0 {
		if _, _, err := pipeline(warm*depth, encSubmit, encFinish, encGPU); err != nil {
			return nil, err
		}
		if _, _, err := pipeline(warm*depth, decSubmit, decFinish, decGPU); err != nil {
			return nil, err
		}
	}
	// The measured runs start on poisoned bodies and outputs: what the checks below read was written by them.
	for _, s := range sets {
		if err := poisonBuffers(ctx, dev, s.body, s.out); err != nil {
			return nil, err
		}
	}
	var err error
	if out.EncodeWallGBps, out.EncodeGBps, err = pipeline(out.Runs, encSubmit, encFinish, encGPU); err != nil {
		return nil, err
	}
	if out.DecodeWallGBps, out.DecodeGBps, err = pipeline(out.Runs, decSubmit, decFinish, decGPU); err != nil {
		return nil, err
	}
	// Every block of every set: body against the Go reference, output against the input.
	cpu := codec.NewCPUBackend(0)
	out.BitExact, out.MatchesCPU = true, true
	var bodyBytes uint64
	got := make([]byte, g.MaxBodySize())
	back := make([]byte, 2*n)
	for d, s := range sets {
		jobs := make([]codec.EncodeJob, blocks)
		for i := range jobs {
			jobs[i] = codec.EncodeJob{Format: layout.FormatSplitZip4, Src: block(d*blocks + i), N: n, Shift: shift,
				Codebook: &cb, Checksums: checksums, Dst: make([]byte, g.MaxBodySize())}
		}
		if err := cpu.Encode(ctx, jobs); err != nil {
			return nil, err
		}
		for i := range blocks {
			if d == 0 {
				bodyBytes += s.sizes[i]
			}
			if s.sizes[i] > g.MaxBodySize() {
				out.MatchesCPU, out.BitExact = false, false
				continue
			}
			if err := dev.Download(ctx, got[:s.sizes[i]], s.body, s.bodies[i].Offset); err != nil {
				return nil, err
			}
			out.MatchesCPU = out.MatchesCPU && bytes.Equal(got[:s.sizes[i]], jobs[i].Out)
			if err := dev.Download(ctx, back, s.out, s.outs[i].Offset); err != nil {
				return nil, err
			}
			out.BitExact = out.BitExact && bytes.Equal(back, jobs[i].Src)
		}
	}
	out.BitExact = out.BitExact && out.MatchesCPU
	out.Ratio = total / float64(bodyBytes)
	return out, nil
}

// poisonBuffers fills whole buffers (sizes multiples of 4) with benchPoison bytes.
func poisonBuffers(ctx context.Context, dev *vk.Device, bufs ...*vk.Buffer) error {
	cmd, err := dev.NewCommands()
	if err != nil {
		return err
	}
	defer cmd.Close()
	if err := cmd.Begin(); err != nil {
		return err
	}
	for _, b := range bufs {
		cmd.FillBuffer(b, 0, b.Size()&^3, uint32(benchPoison)*0x01010101)
	}
	cmd.Barrier()
	if err := cmd.End(); err != nil {
		return err
	}
	sub, err := dev.Submit(cmd)
	if err != nil {
		return err
	}
	return sub.Wait(ctx)
}

func printBlocks(w io.Writer, o *blocksOut) {
	fmt.Fprintf(w, "  blocks: %d × %.1f MiB per run, %d runs in flight: encode %s GB/s wall (%s GPU, %.0f%% of the large "+
		"tensor's wall), decode %s GB/s wall (%s GPU, %.0f%%); ratio %.4f; bit-exact %v, matches the Go reference %v\n",
		o.Blocks, float64(o.BlockBytes)/(1<<20), o.Depth, gb(o.EncodeWallGBps), gb(o.EncodeGBps), 100*o.EncodeOfLarge,
		gb(o.DecodeWallGBps), gb(o.DecodeGBps), 100*o.DecodeOfLarge, o.Ratio, o.BitExact, o.MatchesCPU)
}
