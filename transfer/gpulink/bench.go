package gpulink

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/cudabridge"
	"github.com/vkzip/vkzip/cudabridge/nccl"
)

// Modes of a transfer.
const (
	Raw        = "raw"   // the BF16 bytes, one NCCL send
	Compressed = "vkzip" // encode, send the bodies, decode; chunked and pipelined
)

// Chunk sizes in bytes (a multiple of ChunkAlign).
const (
	DefaultChunkBytes = 32 << 20
	ChunkAlign        = 256
	MaxChunkBytes     = 1 << 30
	DefaultInFlight   = 4
	// MaxChunks bounds the chunks of one tensor: each keeps a prepared encode and decode (a vkcodec session each,
	// with the codec's minimum slabs of 64 MiB device and 64 MiB host-visible memory), so memory grows with them.
	MaxChunks = 128
)

// Options configure Bench.
type Options struct {
	LinkOptions
	// Data is the BF16 tensor (an even number of bytes). It is copied to GPU 0 once, before any timing.
	Data []byte
	// ChunkBytes is the compressed transfer's chunk (default DefaultChunkBytes; a multiple of ChunkAlign).
	ChunkBytes int
	// InFlight is the number of chunks in flight, the body buffers on each GPU (default DefaultInFlight).
	InFlight int
	// Shift is the SplitZip-4 chunk shift (default layout.DefaultChunkShift).
	Shift     uint
	Checksums bool
	Codebook  codec.Codebook
	// Modes to run, in order (default Raw, Compressed).
	Modes []string
	// Warmup runs per mode come first, then Repeat measured runs (defaults 1 and 3).
	Warmup, Repeat int
	// RawFromCUDA makes the raw transfer send from and to ordinary CUDA memory (cuMemAlloc) instead of the Vulkan
	// memory the compressed transfer uses: the baseline a serving stack without vkzip would have.
	RawFromCUDA bool
	// Timeout bounds every run's host waits (default 2 minutes).
	Timeout time.Duration
}

func (o *Options) fill() error {
	if len(o.Data) < 2 || len(o.Data)%2 != 0 {
		return fmt.Errorf("gpulink: a tensor of %d bytes (BF16: an even number, at least 2)", len(o.Data))
	}
	if o.ChunkBytes == 0 {
		o.ChunkBytes = DefaultChunkBytes
	}
	if o.ChunkBytes < ChunkAlign || o.ChunkBytes > MaxChunkBytes || o.ChunkBytes%ChunkAlign != 0 {
		return fmt.Errorf("gpulink: chunk of %d bytes (a multiple of %d up to %d)", o.ChunkBytes, ChunkAlign, MaxChunkBytes)
	}
	if k := (len(o.Data) + o.ChunkBytes - 1) / o.ChunkBytes; k > MaxChunks {
		return fmt.Errorf("gpulink: %d chunks of %d bytes; at most %d (each keeps prepared codec operations): use a larger chunk",
			k, o.ChunkBytes, MaxChunks)
	}
	if o.InFlight == 0 {
		o.InFlight = DefaultInFlight
	}
	if o.InFlight < 1 || o.InFlight > 64 {
		return fmt.Errorf("gpulink: %d chunks in flight (1 to 64)", o.InFlight)
	}
	if o.Shift == 0 {
		o.Shift = layout.DefaultChunkShift
	}
	if o.Shift < layout.MinChunkShift || o.Shift > layout.MaxChunkShift {
		return fmt.Errorf("gpulink: codec chunk shift %d", o.Shift)
	}
	if err := o.Codebook.Validate(); err != nil {
		return err
	}
	if len(o.Modes) == 0 {
		o.Modes = []string{Raw, Compressed}
	}
	for _, m := range o.Modes {
		if m != Raw && m != Compressed {
			return fmt.Errorf("gpulink: mode %q (want %s or %s)", m, Raw, Compressed)
		}
	}
	if o.Warmup < 0 || o.Repeat < 0 {
		return fmt.Errorf("gpulink: negative warm-up or repeat count")
	}
	if o.Repeat == 0 {
		o.Repeat = 3
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	return nil
}

// Run is one measured transfer.
type Run struct {
	Mode     string  `json:"mode"`
	Seconds  float64 `json:"seconds"`
	GBps     float64 `json:"gb_per_s"` // tensor bytes delivered per second / 1e9
	BitExact bool    `json:"bit_exact"`
	// Compressed runs: body bytes sent, the codec's GPU time (sum of the kernels' timestamps per GPU), and where the
	// host spent its time: blocked on encodes, on decodes, in the NCCL group calls, preparing decodes.
	BodyBytes      int64   `json:"body_bytes,omitempty"`
	EncodeGPU      float64 `json:"encode_gpu_s,omitempty"`
	DecodeGPU      float64 `json:"decode_gpu_s,omitempty"`
	HostWaitEncode float64 `json:"host_wait_encode_s,omitempty"`
	HostWaitDecode float64 `json:"host_wait_decode_s,omitempty"`
	HostEnqueue    float64 `json:"host_enqueue_s,omitempty"`
	HostPrepare    float64 `json:"host_prepare_s,omitempty"`
	DecodePrepares int     `json:"decode_prepares,omitempty"`
}

// Result is Bench's report. Times are wall-clock seconds on the host from the first call of a transfer until the
// tensor is complete on GPU 1: for raw, after both streams are idle; for compressed, after the last decode
// finished. The comparison of the output with the input (one copy to host memory after each run) is not timed.
type Result struct {
	Transport     string            `json:"transport"`
	NCCLVersion   string            `json:"nccl_version"`
	NCCLLibrary   string            `json:"nccl_library"`
	CUDADriver    string            `json:"cuda_driver"`
	Devices       [2]string         `json:"devices"`
	VulkanDevices [2]string         `json:"vulkan_devices"`
	Env           map[string]string `json:"env"`
	SizeBytes     int64             `json:"size_bytes"`
	ChunkBytes    int               `json:"chunk_bytes"`
	Chunks        int               `json:"chunks"`
	PreparedOps   int               `json:"prepared_ops"` // encodes and decodes prepared and kept (one each per chunk)
	InFlight      int               `json:"inflight"`
	CodecChunk    int               `json:"codec_chunk"`
	Checksums     bool              `json:"checksums"`
	Ordering      string            `json:"ordering"` // how encode, send and decode are ordered: GPU semaphores
	RawFrom       string            `json:"raw_from"` // "shared" (the Vulkan buffers) or "cuda" (cuMemAlloc)
	Ratio         float64           `json:"ratio"`    // tensor bytes / body bytes
	Warmup        int               `json:"warmup"`
	Repeat        int               `json:"repeat"`
	SetupSeconds  float64           `json:"setup_seconds"`
	Runs          []Run             `json:"runs"`
	// Medians of the measured runs per mode, and raw seconds over compressed seconds.
	RawSeconds        float64 `json:"raw_seconds,omitempty"`
	CompressedSeconds float64 `json:"compressed_seconds,omitempty"`
	RawGBps           float64 `json:"raw_gb_per_s,omitempty"`
	CompressedGBps    float64 `json:"compressed_gb_per_s,omitempty"`
	Speedup           float64 `json:"speedup,omitempty"`
	BitExact          bool    `json:"bit_exact"` // every run, warm-ups included
}

// Bench sends the same tensor from GPU 0 to GPU 1 raw and compressed, Warmup + Repeat times each, and reports the
// medians. Every run's output is compared with the input.
func Bench(ctx context.Context, o Options) (*Result, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	l, err := openLink(&o.LinkOptions, true)
	if err != nil {
		return nil, err
	}
	defer l.close()
	size := uint64(len(o.Data))
	slots, bodySize := slotsFor(size, uint64(o.ChunkBytes), o.InFlight, o.Shift)
	sh, err := newShared(l, size, slots, bodySize)
	if err != nil {
		return nil, err
	}
	defer sh.close()
	mv := &ncclMover{l: l, s: sh}
	e, err := newVKEngine(ctx, l.g[0].vk, l.g[1].vk, sh.vulkan(), mv, size, uint64(o.ChunkBytes), o.Shift, o.Codebook,
		o.Checksums)
	if err != nil {
		return nil, err
	}
	defer e.close()
	r := &Result{Transport: "nccl", NCCLVersion: l.lib.VersionString(), NCCLLibrary: l.lib.Path(),
		CUDADriver: l.drv.VersionString(), Devices: [2]string{l.g[0].info.String(), l.g[1].info.String()},
		VulkanDevices: [2]string{l.g[0].vk.Device(), l.g[1].vk.Device()}, Env: nccl.Env(), SizeBytes: int64(size),
		ChunkBytes: o.ChunkBytes, Chunks: e.K, InFlight: e.S, CodecChunk: 1 << o.Shift, Checksums: o.Checksums,
		Ordering: "gpu", RawFrom: "shared", Warmup: o.Warmup, Repeat: o.Repeat, BitExact: true}
	g0, g1 := l.g[0], l.g[1]
	// The tensor starts out on GPU 0 (set-up, not timed).
	if err := g0.cu.CopyFromHost(sh.in0.Ptr, o.Data); err != nil {
		return nil, err
	}
	rawSrc, rawDst := sh.in0.Ptr, sh.out1.Ptr
	if o.RawFromCUDA {
		r.RawFrom = "cuda"
		a, err := g0.cu.Alloc(size)
		if err != nil {
			return nil, err
		}
		defer a.Close()
		b, err := g1.cu.Alloc(size)
		if err != nil {
			return nil, err
		}
		defer b.Close()
		if err := g0.cu.CopyFromHost(a.Ptr(), o.Data); err != nil {
			return nil, err
		}
		rawSrc, rawDst = a.Ptr(), b.Ptr()
	}
	r.SetupSeconds = time.Since(t0).Seconds()
	o.logf("set-up %.1f s: %d chunks of %d bytes, %d in flight", r.SetupSeconds, e.K, o.ChunkBytes, e.S)

	host := make([]byte, size)
	var bodyBytes, rawBytes int64
	for i := 0; i < o.Warmup+o.Repeat; i++ {
		for _, mode := range o.Modes {
			run, err := func() (Run, error) {
				rctx, cancel := context.WithTimeout(ctx, o.Timeout)
				defer cancel()
				if mode == Raw {
					return rawRun(rctx, l, rawSrc, rawDst, size, o.Data, host)
				}
				return compressedRun(rctx, e, mv, o.Data, host)
			}()
			if err != nil {
				return r, fmt.Errorf("%s run %d: %w", mode, i+1, err)
			}
			if err := l.asyncErrors(); err != nil {
				return r, fmt.Errorf("%s run %d: %w", mode, i+1, err)
			}
			r.BitExact = r.BitExact && run.BitExact
			tag := "warm-up"
			if i >= o.Warmup {
				tag = "measured"
				r.Runs = append(r.Runs, run)
				if mode == Compressed {
					bodyBytes, rawBytes = bodyBytes+run.BodyBytes, rawBytes+int64(size)
				}
			}
			o.logf("%s %s run: %.3f ms, %.1f GB/s, bit-exact %v", tag, mode, run.Seconds*1e3, run.GBps, run.BitExact)
			if !run.BitExact {
				return r, fmt.Errorf("%w (%s run %d)", ErrMismatch, mode, i+1)
			}
		}
	}
	if bodyBytes > 0 {
		r.Ratio = float64(rawBytes) / float64(bodyBytes)
	}
	r.PreparedOps = e.prepared()
	r.RawSeconds, r.RawGBps = median(r.Runs, Raw)
	r.CompressedSeconds, r.CompressedGBps = median(r.Runs, Compressed)
	if r.RawSeconds > 0 && r.CompressedSeconds > 0 {
		r.Speedup = r.RawSeconds / r.CompressedSeconds
	}
	return r, nil
}

func gbps(n uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds() / 1e9
}

// rawRun sends the tensor in one NCCL group and checks what arrived.
func rawRun(ctx context.Context, l *link, src, dst cudabridge.DevicePtr, size uint64, want, host []byte) (Run, error) {
	g1 := l.g[1]
	if err := g1.cu.MemsetAsync(g1.st, dst, 0xA5, size); err != nil {
		return Run{}, err
	}
	if err := syncStream(ctx, g1.st); err != nil {
		return Run{}, err
	}
	t := time.Now()
	if err := sendRecv(ctx, l, src, dst, size); err != nil {
		return Run{}, err
	}
	d := time.Since(t)
	if err := g1.cu.CopyToHost(host, dst); err != nil {
		return Run{}, err
	}
	return Run{Mode: Raw, Seconds: d.Seconds(), GBps: gbps(size, d), BitExact: bytes.Equal(host, want)}, nil
}

// compressedRun runs the pipeline once and checks what arrived.
func compressedRun(ctx context.Context, e *vkEngine, mv *ncclMover, want, host []byte) (Run, error) {
	g1 := mv.l.g[1]
	if err := e.startRun(); err != nil {
		return Run{}, err
	}
	if err := g1.cu.MemsetAsync(g1.st, mv.s.out1.Ptr, 0xA5, e.size); err != nil {
		return Run{}, err
	}
	if err := syncStream(ctx, g1.st); err != nil {
		return Run{}, err
	}
	t := time.Now()
	if err := runPipeline(ctx, e); err != nil {
		return Run{}, err
	}
	d := time.Since(t)
	// CUDA reads the output only after the last decode signalled it.
	if err := mv.orderOutput(e.v(uint64(e.K))); err != nil {
		return Run{}, err
	}
	if err := e.endRun(ctx); err != nil {
		return Run{}, err
	}
	if err := g1.cu.CopyToHost(host, mv.s.out1.Ptr); err != nil {
		return Run{}, err
	}
	return e.st.run(e.size, d, bytes.Equal(host, want)), nil
}

// run is the report of a compressed run of size bytes that took d.
func (s runStats) run(size uint64, d time.Duration, exact bool) Run {
	return Run{Mode: Compressed, Seconds: d.Seconds(), GBps: gbps(size, d), BitExact: exact,
		BodyBytes: int64(s.bodyBytes), EncodeGPU: s.encGPU.Seconds(), DecodeGPU: s.decGPU.Seconds(),
		HostWaitEncode: s.waitEnc.Seconds(), HostWaitDecode: s.waitDec.Seconds(), HostEnqueue: s.enqueue.Seconds(),
		HostPrepare: s.prepare.Seconds(), DecodePrepares: s.prepares}
}

// median is the median seconds of mode's runs and that run's GB/s.
func median(runs []Run, mode string) (float64, float64) {
	var rs []Run
	for _, r := range runs {
		if r.Mode == mode {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return 0, 0
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Seconds < rs[j].Seconds })
	m := rs[(len(rs)-1)/2]
	return m.Seconds, m.GBps
}
