package cudavk

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/cudabridge"
	"github.com/vkzip/vkzip/vk"
)

// Sources of Bench: where the tensor lives and how it reaches the codec.
const (
	// SourceCUDA: the tensor is in shared memory (Vulkan-exported, imported
	// into CUDA). CUDA signals "ready", the encode waits on it, the decode
	// writes shared memory and signals "done", CUDA waits: no copy at all.
	SourceCUDA = "cuda"
	// SourceCopy: the tensor is in ordinary CUDA memory (cudaMalloc): one
	// counted device-to-device copy into shared memory and one back out.
	SourceCopy = "copy"
	// SourceHost: the tensor is in ordinary CUDA memory and goes through
	// host memory both ways (device→host, upload, encode/decode, download,
	// host→device): the path without the bridge.
	SourceHost = "host"
)

// BenchOptions configure Bench.
type BenchOptions struct {
	Source    string         // SourceCUDA, SourceCopy or SourceHost
	Data      []byte         // BF16 input (an even number of bytes)
	Shift     uint           // chunk shift (default layout.DefaultChunkShift)
	Checksums bool           // chunk checksums
	Codebook  codec.Codebook // codebook for Data
	Iters     int            // measured iterations (default 20)
	Warmup    int            // warm-up iterations (default 3)
	// Driver is the CUDA driver (default Load()).
	Driver *cudabridge.Driver
}

// Spread summarises measurements.
type Spread struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	Max    float64 `json:"max"`
}

func spreadOf(x []float64) Spread {
	if len(x) == 0 {
		return Spread{}
	}
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	q := func(p float64) float64 { return s[int(math.Round(p*float64(len(s)-1)))] }
	return Spread{Min: s[0], Median: q(0.5), P90: q(0.9), Max: s[len(s)-1]}
}

// BenchResult is Bench's measurement. GB/s are 1e9 bytes of uncompressed
// BF16 per second of wall time, as a serving stack sees it: from the
// tensor in CUDA memory to the body (encode), from the body to the tensor
// back in CUDA memory (decode), and both with CUDA's waits (round trip).
type BenchResult struct {
	Source         string              `json:"source"`
	Device         string              `json:"device"`
	CUDADevice     string              `json:"cuda_device"`
	CUDADriver     string              `json:"cuda_driver"`
	Ordering       cudabridge.Ordering `json:"ordering"`
	SizeBytes      int64               `json:"size_bytes"`
	Ratio          float64             `json:"ratio"`
	EncodeGBps     float64             `json:"encode_gbps"`
	DecodeGBps     float64             `json:"decode_gbps"`
	RoundTripGBps  float64             `json:"round_trip_gbps"`
	EncodeSpread   Spread              `json:"encode_gbps_spread"`
	DecodeSpread   Spread              `json:"decode_gbps_spread"`
	RoundTrip      Spread              `json:"round_trip_gbps_spread"`
	Counters       cudabridge.Counters `json:"counters"` // over the measured iterations
	HostBytesPerOp float64             `json:"host_staged_bytes_per_iter"`
	BitExact       bool                `json:"bit_exact"`
	Iters          int                 `json:"iters"`
	Warmup         int                 `json:"warmup"`
}

// Bench measures encode and decode of a BF16 tensor that lives in CUDA
// memory, straight from shared memory (SourceCUDA), through one counted
// device copy (SourceCopy), or staged through host memory (SourceHost), on
// the Vulkan device of b and the CUDA device with the same UUID. The last
// iteration's output is checked bit for bit against the input.
func Bench(ctx context.Context, b *vkcodec.Backend, o BenchOptions) (*BenchResult, error) {
	if len(o.Data) < 2 || len(o.Data)%2 != 0 {
		return nil, invalidf("bench data of %d bytes (BF16: an even number, at least 2)", len(o.Data))
	}
	if o.Shift == 0 {
		o.Shift = layout.DefaultChunkShift
	}
	if o.Iters <= 0 {
		o.Iters = 20
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	}
	switch o.Source {
	case SourceCUDA, SourceCopy, SourceHost:
	default:
		return nil, invalidf("bench source %q (want %s, %s or %s)", o.Source, SourceCUDA, SourceCopy, SourceHost)
	}
	d := o.Driver
	if d == nil {
		var err error
		if d, err = cudabridge.Load(); err != nil {
			return nil, err
		}
	}
	c, err := d.OpenForVulkan(b.Info())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	bb := &bench{o: o, b: b, dev: b.VK(), c: c, n: uint64(len(o.Data) / 2)}
	defer bb.close()
	res := &BenchResult{Source: o.Source, Device: b.Device(), CUDADevice: c.Info().String(), CUDADriver: d.VersionString(),
		SizeBytes: int64(len(o.Data)), Iters: o.Iters, Warmup: o.Warmup}
	if err := bb.setup(ctx); err != nil {
		return nil, err
	}
	var enc, dec, rt []float64
	var c0 cudabridge.Counters
	for i := 0; i < o.Warmup+o.Iters; i++ {
		if i == o.Warmup {
			c0 = cudabridge.ReadCounters()
		}
		te, td, trt, err := bb.iter(ctx, uint64(i+1))
		if err != nil {
			return nil, fmt.Errorf("iteration %d: %w", i, err)
		}
		if i >= o.Warmup {
			enc = append(enc, gbps(len(o.Data), te))
			dec = append(dec, gbps(len(o.Data), td))
			rt = append(rt, gbps(len(o.Data), trt))
		}
	}
	res.Counters = cudabridge.ReadCounters().Sub(c0)
	res.HostBytesPerOp = float64(res.Counters.HostStagedBytes) / float64(o.Iters)
	res.EncodeSpread, res.DecodeSpread, res.RoundTrip = spreadOf(enc), spreadOf(dec), spreadOf(rt)
	res.EncodeGBps, res.DecodeGBps, res.RoundTripGBps = res.EncodeSpread.Median, res.DecodeSpread.Median, res.RoundTrip.Median
	res.Ordering = bb.ordering
	res.Ratio = float64(len(o.Data)) / float64(bb.bodyLen)
	got := make([]byte, len(o.Data))
	if err := c.CopyToHostUncounted(got, bb.outPtr); err != nil {
		return nil, err
	}
	res.BitExact = bytes.Equal(got, o.Data)
	return res, nil
}

func pad256(n uint64) uint64 { return (n + 255) &^ 255 }

func gbps(bytes int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / d.Seconds() / 1e9
}

type bench struct {
	o        BenchOptions
	b        *vkcodec.Backend
	dev      *vk.Device
	c        *cudabridge.Context
	n        uint64
	st       *cudabridge.Stream
	src, dst *cudabridge.SharedBuffer // shared (cuda, copy)
	body     *vk.Buffer
	hsrc     *vk.Buffer // plain Vulkan buffers (host)
	hdst     *vk.Buffer
	cin      *cudabridge.DeviceMemory // ordinary CUDA memory: the tensor (copy, host) and its decoded copy
	cout     *cudabridge.DeviceMemory
	sem      *cudabridge.SharedSemaphore
	enc      *vkcodec.EncodeOp
	decs     map[uint64]*vkcodec.DecodeOp
	host     []byte
	inPtr    cudabridge.DevicePtr
	outPtr   cudabridge.DevicePtr
	bodyLen  uint64
	ordering cudabridge.Ordering
}

func (bb *bench) setup(ctx context.Context) error {
	o, n := bb.o, bb.n
	g := layout.SZ4{N: n, Shift: o.Shift}
	size := pad256(2 * n)
	var err error
	if bb.st, err = bb.c.NewStream(); err != nil {
		return err
	}
	if bb.body, err = bb.dev.NewBuffer(pad256(g.MaxBodySize()), vk.DeviceLocal); err != nil {
		return err
	}
	var srcRange vk.BufferRange
	if o.Source == SourceHost {
		if bb.hsrc, err = bb.dev.NewBuffer(size, vk.DeviceLocal); err != nil {
			return err
		}
		if bb.hdst, err = bb.dev.NewBuffer(size, vk.DeviceLocal); err != nil {
			return err
		}
		srcRange = vk.BufferRange{Buf: bb.hsrc}
		bb.host = make([]byte, 2*n)
	} else {
		if bb.src, err = cudabridge.NewSharedBuffer(bb.c, bb.dev, size); err != nil {
			return err
		}
		if bb.dst, err = cudabridge.NewSharedBuffer(bb.c, bb.dev, size); err != nil {
			return err
		}
		if bb.sem, err = cudabridge.NewSharedSemaphore(bb.c, bb.dev, 0); err != nil {
			return err
		}
		srcRange = bb.src.Range()
	}
	if o.Source == SourceCUDA {
		bb.inPtr, bb.outPtr = bb.src.Ptr, bb.dst.Ptr
	} else {
		if bb.cin, err = bb.c.Alloc(size); err != nil {
			return err
		}
		if bb.cout, err = bb.c.Alloc(size); err != nil {
			return err
		}
		bb.inPtr, bb.outPtr = bb.cin.Ptr(), bb.cout.Ptr()
	}
	// The tensor starts out in CUDA memory (set-up, not measured).
	if err := bb.c.CopyFromHostUncounted(bb.inPtr, o.Data); err != nil {
		return err
	}
	if bb.enc, err = bb.b.PrepareEncode(ctx, vkcodec.EncodeSpec{
		Format: layout.FormatSplitZip4, Src: srcRange, N: n, Shift: o.Shift, Codebook: &o.Codebook,
		Checksums: o.Checksums, Dst: vk.BufferRange{Buf: bb.body},
	}); err != nil {
		return err
	}
	bb.decs = map[uint64]*vkcodec.DecodeOp{}
	return nil
}

func (bb *bench) decOp(ctx context.Context, bodyLen uint64) (*vkcodec.DecodeOp, error) {
	if op := bb.decs[bodyLen]; op != nil {
		return op, nil
	}
	dst := vk.BufferRange{Buf: bb.hdst}
	if bb.dst != nil {
		dst = bb.dst.Range()
	}
	op, err := bb.b.PrepareDecode(ctx, vkcodec.DecodeSpec{
		Format: layout.FormatSplitZip4, Body: vk.BufferRange{Buf: bb.body}, BodyLen: bodyLen, N: bb.n,
		Shift: bb.o.Shift, Codebook: &bb.o.Codebook, Checksums: bb.o.Checksums, Dst: dst,
	})
	if err != nil {
		return nil, err
	}
	bb.decs[bodyLen] = op
	return op, nil
}

// iter runs one encode + decode; k numbers the iteration (semaphore values
// 3k-2, 3k-1, 3k).
func (bb *bench) iter(ctx context.Context, k uint64) (enc, dec, rt time.Duration, err error) {
	n2 := 2 * bb.n
	t0 := time.Now()
	if bb.o.Source == SourceHost {
		if err = bb.c.CopyToHost(bb.host, bb.inPtr); err != nil {
			return
		}
		if err = bb.dev.Upload(ctx, bb.hsrc, 0, bb.host); err != nil {
			return
		}
		cudabridge.CountHostStaged(n2)
		if bb.bodyLen, err = bb.enc.Run(ctx); err != nil {
			return
		}
		enc = time.Since(t0)
		t1 := time.Now()
		var op *vkcodec.DecodeOp
		if op, err = bb.decOp(ctx, bb.bodyLen); err != nil {
			return
		}
		if err = op.Run(ctx); err != nil {
			return
		}
		if err = bb.dev.Download(ctx, bb.host, bb.hdst, 0); err != nil {
			return
		}
		cudabridge.CountHostStaged(n2)
		if err = bb.c.CopyFromHost(bb.outPtr, bb.host); err != nil {
			return
		}
		dec = time.Since(t1)
		bb.ordering = cudabridge.OrderingHost
		return enc, dec, time.Since(t0), nil
	}
	ready, encoded, done := 3*k-2, 3*k-1, 3*k
	if bb.o.Source == SourceCopy {
		if err = bb.c.CopyAsync(bb.st, bb.src.Ptr, bb.inPtr, n2); err != nil {
			return
		}
	}
	// CUDA → Vulkan: everything queued on the stream so far happens before the encode.
	if err = bb.sem.CU.Signal(bb.st, ready); err != nil {
		return
	}
	if err = bb.sem.CU.Wait(bb.st, done); err != nil {
		return
	}
	if bb.o.Source == SourceCopy {
		if err = bb.c.CopyAsync(bb.st, bb.outPtr, bb.dst.Ptr, n2); err != nil {
			return
		}
	}
	run, err := cudabridge.StartEncode(ctx, bb.enc, []vk.SemaphoreValue{bb.sem.At(ready)}, []vk.SemaphoreValue{bb.sem.At(encoded)})
	if err != nil {
		return
	}
	bb.ordering = run.Ordering()
	if bb.bodyLen, err = run.Wait(ctx); err != nil {
		return
	}
	cudabridge.CountZeroCopy(n2)
	enc = time.Since(t0)
	t1 := time.Now()
	var op *vkcodec.DecodeOp
	if op, err = bb.decOp(ctx, bb.bodyLen); err != nil {
		return
	}
	drun, err := cudabridge.StartDecode(ctx, op, nil, []vk.SemaphoreValue{bb.sem.At(done)})
	if err != nil {
		return
	}
	if _, err = drun.Wait(ctx); err != nil {
		return
	}
	cudabridge.CountZeroCopy(n2)
	dec = time.Since(t1)
	if err = bb.st.Synchronize(); err != nil { // CUDA has the decoded tensor
		return
	}
	return enc, dec, time.Since(t0), nil
}

func (bb *bench) close() {
	for _, op := range bb.decs {
		op.Close()
	}
	if bb.enc != nil {
		bb.enc.Close()
	}
	if bb.st != nil {
		bb.st.Synchronize()
		bb.st.Close()
	}
	if bb.sem != nil {
		bb.sem.VK.Signal(1 << 62) // release anything still waiting
	}
	bb.dev.WaitIdle()
	for _, s := range []*cudabridge.SharedBuffer{bb.src, bb.dst} {
		if s != nil {
			s.Close()
		}
	}
	for _, x := range []*vk.Buffer{bb.body, bb.hsrc, bb.hdst} {
		if x != nil {
			x.Close()
		}
	}
	for _, m := range []*cudabridge.DeviceMemory{bb.cin, bb.cout} {
		if m != nil {
			m.Close()
		}
	}
	if bb.sem != nil {
		bb.sem.Close()
	}
}
