package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/examples/cudavk"
	"github.com/vkzip/vkzip/internal/units"
	"github.com/vkzip/vkzip/synth"
	"github.com/vkzip/vkzip/tensorfile"
	"github.com/vkzip/vkzip/vk"
)

var benchVerb = &verb{
	name:    "bench",
	args:    "[flags]",
	summary: "measure encode/decode throughput against an in-run copy roofline",
	about: `
Measures encode and decode of one tensor in one format (--format, default splitzip4). On the Vulkan backend the tensor stays in device memory: GPU
time comes from timestamps around the whole operation (every pass, checksums included), wall time adds submission,
synchronisation and the read-back of the size. A 16-byte copy kernel over the same bytes, in the same run, gives
the bandwidth roofline; the codec ceiling derived from it is copy bandwidth × 2 / (2 + 2/ratio) bytes of input per
byte moved. On the CPU backend the roofline is a memory copy of the same bytes split over as many goroutines as
the codec uses, and the codec's times are wall times (encode_gbps equals encode_wall_gbps there). GB/s are 1e9
bytes of uncompressed BF16 per second.

Every iteration, warm-up included, runs encode, the copy (which evicts the body from a last-level cache smaller
than the copy's bytes before the decode reads it) and decode, and is checked bit for bit: the body and the output
are poisoned before it, then the body must equal the Go reference's and the output the input. bit_exact is false
(and the bench exits 1 after its report) when any check failed; check_failure says the first. A stderr warning
(cache_warning) says when input, body and output together fit in the device's last-level cache, or when its size
is unknown. The 1 MiB latency (--latency) is timed warm (runs back to back) and cold (each run after a copy
several times the cache's size).

Data: kvlike (the exponent distribution of the shared KV corpus; no file needed), gauss (standard normal),
escapes=P (kvlike with a fraction P of values escaped), spread (exponents uniform over the KV codebook's 16), or
a file (its BF16 tensors, tiled to --size).

Every coded format runs (--format, vkzip formats lists them). Formats of other dtypes (xw2/xw3/xw4) measure the
BF16 data converted to --dtype (default: the format's first, F8_E5M2); GB/s then count bytes of that dtype. A
format or dtype without device-resident operations on the Vulkan backend is timed through its host path: values
staged up, bodies staged down, wall clock only (the line says "host path"). --format auto measures the auto body
(every chunk in its smallest candidate: splitzip4, zf12 or tbe3 for BF16; xw2, xw3 or xw4 for --dtype F8_E5M2,
F8_E4M3, F16 or F32, device-resident too), not the encoder's per-tensor choice; kvlike, gauss and escapes=P make
every chunk a tbe3 piece, spread a splitzip4 piece.

--blocks K (Vulkan, splitzip4) also times the block API on the same data cut into K blocks of --block-size: each
run encodes (or decodes) every block in one submission, --depth runs in flight; its wall throughput is compared
with the large tensor's of the same invocation.`,
	examples: `  vkzip bench --backend vulkan --size 512MiB --data kvlike --json
  vkzip bench --backend cpu --size 64MiB
  vkzip bench --backend vulkan --data escapes=0.01
  vkzip bench --backend vulkan --blocks 256 --block-size 2MiB --depth 2
  vkzip bench --backend vulkan --format xw3 --dtype F8_E4M3 --size 64MiB
  vkzip bench --backend vulkan --format tbe3 --size 512MiB --json`,
	run: runBench,
}

type spread struct {
	Min    float64 `json:"min"`
	P10    float64 `json:"p10"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	Max    float64 `json:"max"`
}

// MarshalJSON writes a spread of no measurements (all zero: a time the run does not have, such as the copy of
// the host path) as null rather than zeros.
func (s spread) MarshalJSON() ([]byte, error) {
	if s == (spread{}) {
		return []byte("null"), nil
	}
	type plain spread
	return json.Marshal(plain(s))
}

func spreadOf(x []float64) spread {
	if len(x) == 0 {
		return spread{}
	}
	s := append([]float64{}, x...)
	sort.Float64s(s)
	q := func(p float64) float64 { return s[int(math.Round(p*float64(len(s)-1)))] }
	return spread{Min: s[0], P10: q(0.1), Median: q(0.5), P90: q(0.9), Max: s[len(s)-1]}
}

// benchReport is bench's --json output: one object, its results one per format measured.
type benchReport struct {
	Results []benchOut `json:"results"`
}

type benchOut struct {
	Format string `json:"format"`
	DType  string `json:"dtype"`
	// Path is how the Vulkan backend was timed: "resident" (device buffers, GPU timestamps) or "host" (staged
	// through host memory, wall clock: formats without device-resident operations).
	Path           string  `json:"path,omitempty"`
	Backend        string  `json:"backend"`
	Device         string  `json:"device"`
	Data           string  `json:"data"`
	RawBytes       int64   `json:"raw_bytes"`
	Chunk          int     `json:"chunk"`
	Checksums      bool    `json:"checksums"`
	Ratio          float64 `json:"ratio"`
	EncodeGBps     float64 `json:"encode_gbps"`
	EncodeWallGBps float64 `json:"encode_wall_gbps"`
	DecodeGBps     float64 `json:"decode_gbps"`
	DecodeWallGBps float64 `json:"decode_wall_gbps"`
	CopyGBps       float64 `json:"copy_gbps,omitempty"`    // read+write bytes per second of the copy kernel
	CeilingGBps    float64 `json:"ceiling_gbps,omitempty"` // codec ceiling derived from the copy
	EncodeOfCeil   float64 `json:"encode_of_ceiling,omitempty"`
	DecodeOfCeil   float64 `json:"decode_of_ceiling,omitempty"`
	EncodeSpread   spread  `json:"encode_gbps_spread"`
	DecodeSpread   spread  `json:"decode_gbps_spread"`
	EncodeWall     spread  `json:"encode_wall_gbps_spread"`
	DecodeWall     spread  `json:"decode_wall_gbps_spread"`
	CopySpread     spread  `json:"copy_gbps_spread"`
	// Encode+decode of a resident 1 MiB tensor, wall, warm: runs back to back, the tensor's buffers cached.
	Latency1MiBUs *spread `json:"latency_1mib_us,omitempty"`
	// The GPU part of that: medians of the encode's and the decode's timestamps, and the chunk size used.
	Latency1MiBGPUUs []float64 `json:"latency_1mib_gpu_us,omitempty"`
	LatencyChunk     int       `json:"latency_chunk,omitempty"`
	// The same cold: each run after a copy of latency_evict_bytes through other buffers (pipelines prepared).
	Latency1MiBColdUs    *spread             `json:"latency_1mib_cold_us,omitempty"`
	Latency1MiBColdGPUUs []float64           `json:"latency_1mib_cold_gpu_us,omitempty"`
	LatencyEvictBytes    uint64              `json:"latency_evict_bytes,omitempty"`
	EncodePassUs         []float64           `json:"encode_pass_us,omitempty"` // last iteration: each pass (EncodeOp.PassTimes)
	KernelStats          map[string][]string `json:"kernel_stats,omitempty"`   // compiler statistics, where the driver gives them
	// Escapes and EscapeRate: the reference body's, over chunks of formats that escape values (absent for huff,
	// zf12 and auto bodies without such chunks).
	Escapes    *uint64  `json:"escapes,omitempty"`
	EscapeRate *float64 `json:"escape_rate,omitempty"`
	// BitExact: every checked iteration (all of them, warm-up included; body and output poisoned before each)
	// gave the reference body and decoded to the input; the 1 MiB latency runs and --blocks likewise. MatchesCPU:
	// every body equalled the Go reference codec's (encoded once, before the loop, into a buffer of its own).
	BitExact     bool   `json:"bit_exact"`
	MatchesCPU   bool   `json:"matches_cpu"`
	CheckedIters int    `json:"checked_iterations"`
	CheckFailure string `json:"check_failure,omitempty"` // the first check that failed
	// The device's last-level cache (0: unknown), where its size comes from, and the bytes of input, body and
	// output; CacheWarning says when they fit in it (or its size is unknown).
	LLCBytes        int64      `json:"llc_bytes,omitempty"`
	LLC             string     `json:"llc,omitempty"`
	WorkingSetBytes int64      `json:"working_set_bytes,omitempty"`
	CacheWarning    string     `json:"cache_warning,omitempty"`
	Iters           int        `json:"iters"`
	Warmup          int        `json:"warmup"`
	Variant         string     `json:"variant,omitempty"`
	Blocks          *blocksOut `json:"block_api,omitempty"` // --blocks: the block API on a stream of KV blocks
}

// blockSpec is what --blocks, --block-size and --depth ask for.
type blockSpec struct {
	blocks, depth int
	bytes         int64
}

func benchData(spec string, values int, seed uint64) ([]byte, error) {
	cb := synth.KVCodebook()
	switch {
	case spec == "kvlike":
		return synth.KVLike(values, seed), nil
	case spec == "gauss":
		return synth.Gauss(values, seed), nil
	case spec == "spread":
		// Exponents uniform over the KV codebook's 16: SplitZip-4 codes every value, a 7-exponent window misses
		// more than half, so every auto chunk is a splitzip4 piece.
		out := make([]byte, 2*values)
		x := seed | 1
		for i := 0; i < values; i++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			v := uint16(x>>32)&0x807F | uint16(cb[x&15])<<7
			out[2*i], out[2*i+1] = byte(v), byte(v>>8)
		}
		return out, nil
	case strings.HasPrefix(spec, "escapes="):
		p, err := strconv.ParseFloat(strings.TrimPrefix(spec, "escapes="), 64)
		if err != nil || p < 0 || p > 1 {
			return nil, fmt.Errorf("bad escape fraction in %q", spec)
		}
		return synth.Mixed(values, seed, p, &cb), nil
	}
	f, err := tensorfile.Open(spec, tensorfile.OpenOptions{})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var src []byte
	for _, t := range f.Tensors {
		if t.DType == layout.DTypeBF16 {
			src = append(src, t.Data...)
		}
	}
	if len(src) < 2 {
		return nil, fmt.Errorf("%s has no BF16 values", spec)
	}
	out := make([]byte, 2*values)
	for i := 0; i < len(out); i += copy(out[i:], src) {
	}
	return out, nil
}

func runBench(ctx context.Context, v *verb, args []string) error {
	return benchMain(ctx, v, args, os.Stdout, nil)
}

// benchMain is the bench verb writing its report to w, the timing loop's operations wrapped by wrap (nil: none).
// A check that failed makes it return an error after the report: the verb exits 1.
func benchMain(ctx context.Context, v *verb, args []string, w io.Writer, wrap benchWrap) error {
	fs := newFlags(v)
	bf := addBackendFlags(fs, "auto")
	data := fs.String("data", "kvlike", "kvlike, gauss, escapes=P or a file")
	sizeS := fs.String("size", "512MiB", "uncompressed BF16 bytes")
	chunk := fs.Int("chunk", 1<<layout.DefaultChunkShift, "chunk size in values (huff by default: 16384 to 65536 by the size)")
	formatName := fs.String("format", "splitzip4", "`format` to measure (vkzip formats lists them), or a comma-separated "+
		"list measured one after the other (e.g. auto,huff: speed and ratio modes side by side)")
	dtypeName := fs.String("dtype", "", "values' `dtype` (default BF16, or the format's first dtype): other float "+
		"dtypes are the BF16 data converted (round to nearest even, saturating)")
	noCRC := fs.Bool("no-checksum", false, "measure without chunk checksums")
	iters := fs.Int("iters", 20, "measured iterations")
	warm := fs.Int("warmup", 3, "warm-up iterations")
	asJSON := fs.Bool("json", false, `print one JSON object, {"results": [...]} with one result per format (docs/JSON.md)`)
	seed := fs.Uint64("seed", 1, "data seed")
	latency := fs.Bool("latency", true, "vulkan: also time a resident 1 MiB tensor")
	latChunk := fs.Int("latency-chunk", 0, "chunk size in values of the 1 MiB tensor (default: layout.ChunkShiftFor, 8192)")
	blocks := fs.Int("blocks", 0, "vulkan, splitzip4: also time `K` blocks per run through the block API")
	blockSizeS := fs.String("block-size", "2MiB", "with --blocks: uncompressed bytes per block")
	depth := fs.Int("depth", 2, "with --blocks: block runs in flight")
	source := fs.String("source", "", "vulkan on NVIDIA: cuda (the tensor in CUDA memory shared with Vulkan, zero copy), "+
		"copy (ordinary CUDA memory, one device copy) or host (staged through host memory)")
	if _, err := parseArgs(v, fs, args); err != nil {
		return err
	}
	size, err := units.ParseSize(*sizeS)
	if err != nil {
		return usagef("%v", err)
	}
	if size < 2 || size%2 != 0 {
		return usagef("--size %q: want an even number of bytes, at least one BF16 value", *sizeS)
	}
	shift := uint(0)
	for s := uint(layout.MinChunkShift); s <= layout.MaxChunkShift; s++ {
		if *chunk == 1<<s {
			shift = s
		}
	}
	latShift := layout.ChunkShiftFor(1 << 19)
	if *latChunk != 0 {
		latShift = 0
		for s := uint(layout.MinChunkShift); s <= layout.MaxChunkShift; s++ {
			if *latChunk == 1<<s {
				latShift = s
			}
		}
	}
	if shift == 0 || latShift == 0 || *iters < 1 || *warm < 0 {
		return usagef("--chunk must be a power of two in [1024, 65536] and --iters ≥ 1")
	}
	var blk *blockSpec
	if *blocks > 0 {
		bs, err := units.ParseSize(*blockSizeS)
		if err != nil || bs%2 != 0 {
			return usagef("--block-size %q: want an even number of bytes", *blockSizeS)
		}
		if *depth < 1 || *depth > 8 {
			return usagef("--depth must be in [1, 8]")
		}
		blk = &blockSpec{blocks: *blocks, depth: *depth, bytes: bs}
	}
	names := strings.Split(*formatName, ",")
	var outs []benchOut
	for _, name := range names {
		o, err := benchFormat(ctx, bf, strings.TrimSpace(name), shift, flagSet(fs, "chunk"), size, benchFlags{data: *data,
			dtype: *dtypeName, noCRC: *noCRC, iters: *iters, warm: *warm, seed: *seed,
			latency: *latency, source: *source, json: *asJSON, latShift: latShift, blk: blk, wrap: wrap})
		if err != nil {
			return err
		}
		if o != nil {
			if o.CacheWarning != "" {
				fmt.Fprintf(os.Stderr, "vkzip: bench: warning: %s: %s\n", o.Format, o.CacheWarning)
			}
			outs = append(outs, *o)
		}
	}
	switch {
	case *asJSON && *source != "": // --source printed its own report, in the same shape
	case *asJSON:
		err = writeJSON(w, benchReport{Results: outs}) // one shape for one format or several
	default:
		for i := range outs {
			printBench(w, &outs[i])
		}
	}
	if err != nil {
		return err
	}
	for _, o := range outs {
		if !o.BitExact || !o.MatchesCPU {
			why := o.CheckFailure
			if why == "" && o.Blocks != nil {
				why = "--blocks"
			}
			return fmt.Errorf("%s: results were not bit-exact: %s", o.Format, why)
		}
	}
	return nil
}

// benchFlags are runBench's per-format settings.
type benchFlags struct {
	data, dtype, source  string
	noCRC, latency, json bool
	iters, warm          int
	seed                 uint64
	latShift             uint       // chunk shift of the 1 MiB latency tensor
	blk                  *blockSpec // --blocks
	wrap                 benchWrap  // wraps the timing loop's operations (tests)
}

// benchFormat measures one format; a nil result means it printed its own report (--source).
func benchFormat(ctx context.Context, bf *backendFlags, formatName string, shift uint, chunkSet bool, size int64,
	fl benchFlags) (*benchOut, error) {
	data, dtypeName, noCRC, iters, warm, seed := &fl.data, &fl.dtype, &fl.noCRC, &fl.iters, &fl.warm, &fl.seed
	latency, source, asJSON := &fl.latency, &fl.source, &fl.json
	latShift, blk := fl.latShift, fl.blk
	var err error
	fid, ok := codec.FormatByName(formatName)
	fd, _ := codec.LookupFormat(fid)
	if !ok || fd.CPU == nil {
		return nil, usagef("--format %q: want a coded format (have %v)", formatName, codec.FormatNames())
	}
	dt := layout.DTypeBF16
	switch {
	case *dtypeName != "":
		if dt, ok = layout.ParseDType(*dtypeName); !ok {
			return nil, usagef("--dtype %q", *dtypeName)
		}
	case !fd.Accepts(dt, 1) && len(fd.DTypeList()) > 0:
		dt = fd.DTypeList()[0]
	}
	if !fd.Accepts(dt, 1) {
		return nil, usagef("--format %s does not code %v", fd.Name, dt)
	}
	values := int(size / int64(dt.Size()))
	// A format's own chunk size for a tensor of this many values (huff: 2^16 from 4 Mi values, smaller below)
	// unless --chunk is given; a --chunk outside the format's range is refused (never changed silently), the
	// default one clamped.
	if !chunkSet && fd.ShiftFor != nil {
		shift = fd.ShiftFor(uint64(values))
	}
	if chunkSet {
		if err := checkChunkFits(fd.Name, 1<<shift); err != nil {
			return nil, err
		}
	}
	shift = min(max(shift, uint(fd.MinShift)), uint(fd.MaxShift))
	latShift = min(max(latShift, uint(fd.MinShift)), uint(fd.MaxShift))
	src, err := benchData(*data, values, *seed)
	if err != nil {
		return nil, err
	}
	cb := synth.KVCodebook()
	if *data != "kvlike" && !strings.HasPrefix(*data, "escapes=") {
		var h codec.ExpHistogram
		h.Add(src)
		cb = codec.CodebookFromHistogram(&h)
	}
	if dt != layout.DTypeBF16 {
		if src, err = synth.ConvertBF16(nil, src, dt); err != nil {
			return nil, err
		}
	}
	out := benchOut{Format: fd.Name, DType: dt.String(), Data: *data, RawBytes: int64(len(src)), Chunk: 1 << shift,
		Checksums: !*noCRC, Iters: *iters, Warmup: *warm}
	// The job every backend measures; its Go reference encode (referenceBody) is what every timed body must equal.
	cpu := codec.NewCPUBackend(0)
	var cbp *codec.Codebook
	if fd.UsesCodebook(dt) {
		cbp = &cb
	}
	ref := []codec.EncodeJob{{Format: fid, DType: dt, Src: src, N: uint64(values), Shift: shift, Codebook: cbp,
		Checksums: out.Checksums, Dst: make([]byte, fd.MaxBodyOf(uint64(values), dt, shift))}}
	name := bf.name
	if name == "auto" {
		name = "vulkan"
		if b, err := vkcodec.Open(vkcodec.Options{Device: bf.device, Auto: true}); err != nil {
			name = "cpu"
		} else {
			b.Close()
		}
	}
	if *source != "" && fid != layout.FormatSplitZip4 {
		return nil, usagef("--source measures splitzip4 only")
	}
	if *source != "" {
		// The tensor lives in CUDA memory: cudabridge shares it with the Vulkan device (or copies, or stages).
		b, err := vkcodec.Open(vkcodec.Options{Device: bf.device})
		if err != nil {
			return nil, err
		}
		defer b.Close()
		r, err := cudavk.Bench(ctx, b, cudavk.BenchOptions{Source: *source, Data: src, Shift: shift,
			Checksums: out.Checksums, Codebook: cb, Iters: *iters, Warmup: *warm})
		if err != nil {
			return nil, err
		}
		if *asJSON {
			res, err := renamedJSON(r, benchSourceKeys)
			if err != nil {
				return nil, err
			}
			if err := writeJSON(os.Stdout, map[string]any{"results": []any{res}}); err != nil {
				return nil, err
			}
		} else {
			fmt.Printf("bench --source %s: %s (CUDA %s), ordering %s: encode %.0f GB/s, decode %.0f GB/s, round trip %.0f GB/s; "+
				"host-staged bytes per iteration %.0f; bit-exact %v\n", r.Source, r.Device, r.CUDADevice, r.Ordering, r.EncodeGBps,
				r.DecodeGBps, r.RoundTripGBps, r.HostBytesPerOp, r.BitExact)
		}
		if !r.BitExact {
			return nil, fmt.Errorf("results were not bit-exact")
		}
		return nil, nil
	}
	switch name {
	case "cpu":
		if blk != nil {
			return nil, usagef("--blocks needs --backend vulkan")
		}
		err = benchCPU(ctx, cpu, ref, src, &out, fl.wrap)
	case "vulkan":
		if blk != nil && fid != layout.FormatSplitZip4 {
			return nil, usagef("--blocks measures splitzip4 only")
		}
		err = benchVulkan(ctx, vkcodec.Options{Device: bf.device}, ref, src, cb, &out, *latency, latShift, blk, fl.wrap)
	default:
		return nil, usagef("--backend must be cpu, vulkan or auto")
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

func gbps(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / d.Seconds() / 1e9
}

// referenceBody encodes ref with the Go reference codec (a backend of its own) and returns the body: what every
// body the bench loop produces is compared with.
func referenceBody(ctx context.Context, ref []codec.EncodeJob) ([]byte, error) {
	if err := codec.NewCPUBackend(0).Encode(ctx, ref); err != nil {
		return nil, err
	}
	return ref[0].Out, nil
}

func benchCPU(ctx context.Context, cpu *codec.CPUBackend, ref []codec.EncodeJob, src []byte, out *benchOut,
	wrap benchWrap) error {
	out.Backend, out.Device = "cpu", cpu.Device()
	want, err := referenceBody(ctx, ref)
	if err != nil {
		return err
	}
	var ops benchCodec = newCPUBenchOps(cpu, cpu, ref[0])
	if wrap != nil {
		ops = wrap(ops)
	}
	llc, what := hostL3()
	setCache(out, llc, what, int64(2*len(src)+len(want)))
	r, err := benchLoop(ctx, ops, src, want, out.Warmup, out.Iters, out.RawBytes, 2*out.RawBytes)
	if err != nil {
		return err
	}
	// On the CPU the codec's time is its wall time: the "GPU" figures are the wall ones.
	out.EncodeWall, out.DecodeWall, out.CopySpread = spreadOf(r.encW), spreadOf(r.decW), spreadOf(r.cpy)
	out.EncodeSpread, out.DecodeSpread = out.EncodeWall, out.DecodeWall
	out.EncodeWallGBps, out.DecodeWallGBps = out.EncodeWall.Median, out.DecodeWall.Median
	out.EncodeGBps, out.DecodeGBps, out.CopyGBps = out.EncodeWallGBps, out.DecodeWallGBps, out.CopySpread.Median
	out.Ratio = float64(len(src)) / float64(len(want))
	out.CeilingGBps = out.CopyGBps * 2 / (2 + 2/out.Ratio)
	if out.CeilingGBps > 0 {
		out.EncodeOfCeil, out.DecodeOfCeil = out.EncodeGBps/out.CeilingGBps, out.DecodeGBps/out.CeilingGBps
	}
	out.Escapes, out.EscapeRate = bodyEscapes(want, ref[0])
	out.CheckedIters = out.Warmup + out.Iters
	r.setChecks(out)
	return nil
}

// copyParallel copies src to dst in workers contiguous pieces at once, the CPU's copy roofline for a codec that
// runs on as many goroutines, and returns how long it took.
func copyParallel(dst, src []byte, workers int) time.Duration {
	workers = max(workers, 1)
	piece := ((len(src)+workers-1)/workers + 63) &^ 63 // never 0: fewer bytes than workers still make progress
	var wg sync.WaitGroup
	t0 := time.Now()
	for lo := 0; lo < len(src); lo += piece {
		hi := min(lo+piece, len(src))
		wg.Add(1)
		go func() {
			defer wg.Done()
			copy(dst[lo:hi], src[lo:hi])
		}()
	}
	wg.Wait()
	return time.Since(t0)
}

func benchVulkan(ctx context.Context, o vkcodec.Options, ref []codec.EncodeJob, src []byte, cb codec.Codebook,
	out *benchOut, latency bool, latShift uint, blk *blockSpec, wrap benchWrap) error {
	b, err := vkcodec.Open(o)
	if err != nil {
		return err
	}
	defer b.Close()
	if !b.SupportsResident(ref[0].Format) {
		return benchVulkanHost(ctx, b, ref, src, out, wrap)
	}
	dev := b.VK()
	out.Backend, out.Device = "vulkan", b.Device()
	g := layout.SZ4{N: ref[0].N, Shift: ref[0].Shift}
	n := uint64(len(src))
	pad := (n + 255) &^ 255
	bufs := map[string]uint64{"in": pad, "body": (uint64(cap(ref[0].Dst)) + 255) &^ 255, "out": pad, "copy": pad}
	buf := map[string]*vk.Buffer{}
	for k, sz := range bufs {
		x, err := dev.NewBuffer(sz, vk.DeviceLocal)
		if err != nil {
			return fmt.Errorf("allocating %d bytes: %w", sz, err)
		}
		defer x.Close()
		buf[k] = x
	}
	if err := dev.Upload(ctx, buf["in"], 0, src); err != nil {
		return err
	}
	whole := func(k string) vk.BufferRange { return vk.BufferRange{Buf: buf[k]} }
	f, dt := ref[0].Format, ref[0].DType
	enc, err := b.PrepareEncode(ctx, vkcodec.EncodeSpec{
		Format: f, DType: dt, Src: whole("in"), N: g.N, Shift: g.Shift, Codebook: ref[0].Codebook,
		Checksums: ref[0].Checksums, Dst: whole("body"),
	})
	if errors.Is(err, codec.ErrUnsupported) { // a dtype without device-resident kernels for this format
		return benchVulkanHost(ctx, b, ref, src, out, wrap)
	}
	if err != nil {
		return err
	}
	defer enc.Close()
	out.Path = "resident"
	bodyLen, err := enc.Run(ctx)
	if err != nil {
		return err
	}
	dec, err := b.PrepareDecode(ctx, vkcodec.DecodeSpec{
		Format: f, DType: dt, Body: whole("body"), BodyLen: bodyLen, N: g.N, Shift: g.Shift,
		Codebook: ref[0].Codebook, Checksums: ref[0].Checksums, Dst: whole("out"),
	})
	if err != nil {
		return err
	}
	defer dec.Close()
	cp, err := b.PrepareCopy(whole("in"), whole("copy"), pad)
	if err != nil {
		return err
	}
	defer cp.Close()
	want, err := referenceBody(ctx, ref)
	if err != nil {
		return err
	}
	vops, err := newVKBenchOps(dev, buf["body"], buf["out"], n, enc, dec, cp)
	if err != nil {
		return err
	}
	defer vops.Close()
	var ops benchCodec = vops
	if wrap != nil {
		ops = wrap(ops)
	}
	llc, what := deviceLLC(b.Info())
	setCache(out, llc, what, int64(2*pad)+int64(len(want)))
	r, err := benchLoop(ctx, ops, src, want, out.Warmup, out.Iters, out.RawBytes, 2*int64(pad))
	if err != nil {
		return err
	}
	out.EncodeSpread, out.EncodeWall, out.DecodeSpread, out.DecodeWall, out.CopySpread =
		spreadOf(r.encG), spreadOf(r.encW), spreadOf(r.decG), spreadOf(r.decW), spreadOf(r.cpy)
	out.EncodeGBps, out.EncodeWallGBps = out.EncodeSpread.Median, out.EncodeWall.Median
	out.DecodeGBps, out.DecodeWallGBps = out.DecodeSpread.Median, out.DecodeWall.Median
	out.CopyGBps = out.CopySpread.Median
	for _, d := range enc.PassTimes() {
		out.EncodePassUs = append(out.EncodePassUs, float64(d.Nanoseconds())/1e3)
	}
	out.Ratio = float64(n) / float64(max(r.bodyLen, 1))
	out.CeilingGBps = out.CopyGBps * 2 / (2 + 2/out.Ratio)
	if out.CeilingGBps > 0 {
		out.EncodeOfCeil, out.DecodeOfCeil = out.EncodeGBps/out.CeilingGBps, out.DecodeGBps/out.CeilingGBps
	}
	out.Escapes, out.EscapeRate = bodyEscapes(want, ref[0])
	out.CheckedIters = out.Warmup + out.Iters
	r.setChecks(out)
	out.KernelStats = b.KernelStats()
	if latency {
		// The cold runs copy several times the last-level cache between runs (an unknown one: a size larger than
		// the last-level caches of the devices the bench knows).
		evict := uint64(256 << 20)
		switch {
		case llc > 0:
			evict = uint64(max(4*llc, 16<<20))
		case b.Info().Type == vk.DeviceTypeCPU:
			evict = 64 << 20
		}
		l, err := benchLatency(ctx, b, src, f, dt, ref[0].Checksums, ref[0].Codebook, latShift, evict)
		if err != nil {
			return err
		}
		out.Latency1MiBUs, out.Latency1MiBGPUUs, out.LatencyChunk = &l.warm, l.warmGPU, 1<<latShift
		out.Latency1MiBColdUs, out.Latency1MiBColdGPUUs, out.LatencyEvictBytes = &l.cold, l.coldGPU, evict
		if l.failure != "" {
			out.BitExact = false
			if out.CheckFailure == "" {
				out.CheckFailure = l.failure
			}
		}
	}
	if blk != nil {
		r, err := benchBlocks(ctx, b, src, blk.blocks, blk.bytes, ref[0].Shift, cb, ref[0].Checksums, blk.depth,
			out.Warmup, max(out.Iters/blk.depth, 1))
		if err != nil {
			return fmt.Errorf("--blocks: %w", err)
		}
		if out.EncodeWallGBps > 0 && out.DecodeWallGBps > 0 {
			r.EncodeOfLarge, r.DecodeOfLarge = r.EncodeWallGBps/out.EncodeWallGBps, r.DecodeWallGBps/out.DecodeWallGBps
		}
		out.Blocks = r
		out.BitExact = out.BitExact && r.BitExact
		out.MatchesCPU = out.MatchesCPU && r.MatchesCPU
	}
	return nil
}

// benchVulkanHost times a format without device-resident operations through the backend's host path: values
// staged up, bodies staged down, wall clock (GPU time is not separable there). The copy between encode and decode
// is a host copy: it evicts the host's caches and gives no roofline.
func benchVulkanHost(ctx context.Context, b *vkcodec.Backend, ref []codec.EncodeJob, src []byte, out *benchOut,
	wrap benchWrap) error {
	out.Backend, out.Device, out.Path = "vulkan", b.Device(), "host"
	out.Variant = "host path (staged, wall clock)"
	if !b.SupportsFormat(ref[0].Format) {
		return fmt.Errorf("the vulkan backend does not run %s", out.Format)
	}
	want, err := referenceBody(ctx, ref)
	if err != nil {
		return err
	}
	var ops benchCodec = newCPUBenchOps(b, codec.NewCPUBackend(0), ref[0])
	if wrap != nil {
		ops = wrap(ops)
	}
	r, err := benchLoop(ctx, ops, src, want, out.Warmup, out.Iters, out.RawBytes, 2*out.RawBytes)
	if err != nil {
		return err
	}
	out.EncodeWall, out.DecodeWall = spreadOf(r.encW), spreadOf(r.decW)
	out.EncodeWallGBps, out.DecodeWallGBps = out.EncodeWall.Median, out.DecodeWall.Median
	// Wall clock is the codec's only time here: the codec figures are the wall ones, as on the CPU backend.
	out.EncodeSpread, out.DecodeSpread = out.EncodeWall, out.DecodeWall
	out.EncodeGBps, out.DecodeGBps = out.EncodeWallGBps, out.DecodeWallGBps
	out.Ratio = float64(len(src)) / float64(max(r.bodyLen, 1))
	out.Escapes, out.EscapeRate = bodyEscapes(want, ref[0])
	out.CheckedIters = out.Warmup + out.Iters
	r.setChecks(out)
	return nil
}

// latencyOut is benchLatency's: wall times of encode+decode warm (back to back) and cold (after a copy that
// evicts the caches), the GPU medians [encode, decode] of each, and the first check that failed.
type latencyOut struct {
	warm, cold       spread
	warmGPU, coldGPU []float64
	failure          string
}

// benchLatency times encode+decode of a resident 1 MiB tensor of dt, wall clock, as a serving stack would see it:
// warm (runs back to back, the tensor's buffers cached) and cold (each run after a copy of evict bytes through
// buffers of its own, pipelines and buffers already prepared). The first and the last run of each kind are checked
// (body and output poisoned before, compared after, untimed).
func benchLatency(ctx context.Context, b *vkcodec.Backend, src []byte, f uint8, dt layout.DType, checksums bool,
	cb *codec.Codebook, shift uint, evict uint64) (*latencyOut, error) {
	dev := b.VK()
	const size = 1 << 20
	n := uint64(size / dt.Size())
	g := layout.SZ4{N: n, Shift: shift}
	fd, _ := codec.LookupFormat(f)
	maxBody := (fd.MaxBodyOf(n, dt, g.Shift) + 255) &^ 255
	vals := make([]byte, size) // src tiled: a --size below 1 MiB still fills it
	for i := 0; i < size; i += copy(vals[i:], src) {
	}
	evict = (evict + 255) &^ 255
	var bufs [5]*vk.Buffer // in, body, out, and the eviction copy's source and destination
	for i, sz := range []uint64{size, maxBody, size, evict, evict} {
		x, err := dev.NewBuffer(sz, vk.DeviceLocal)
		if err != nil {
			return nil, err
		}
		defer x.Close()
		bufs[i] = x
	}
	in, body, outb := bufs[0], bufs[1], bufs[2]
	if err := dev.Upload(ctx, in, 0, vals); err != nil {
		return nil, err
	}
	enc, err := b.PrepareEncode(ctx, vkcodec.EncodeSpec{
		Format: f, DType: dt, Src: vk.BufferRange{Buf: in}, N: n, Shift: g.Shift, Codebook: cb,
		Checksums: checksums, Dst: vk.BufferRange{Buf: body},
	})
	if err != nil {
		return nil, err
	}
	defer enc.Close()
	bodyLen, err := enc.Run(ctx)
	if err != nil {
		return nil, err
	}
	dec, err := b.PrepareDecode(ctx, vkcodec.DecodeSpec{
		Format: f, DType: dt, Body: vk.BufferRange{Buf: body}, BodyLen: bodyLen, N: n, Shift: g.Shift, Codebook: cb,
		Checksums: checksums, Dst: vk.BufferRange{Buf: outb},
	})
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	ev, err := b.PrepareCopy(vk.BufferRange{Buf: bufs[3]}, vk.BufferRange{Buf: bufs[4]}, evict)
	if err != nil {
		return nil, err
	}
	defer ev.Close()
	ref := []codec.EncodeJob{{Format: f, DType: dt, Src: vals, N: n, Shift: g.Shift, Codebook: cb,
		Checksums: checksums, Dst: make([]byte, maxBody)}}
	want, err := referenceBody(ctx, ref)
	if err != nil {
		return nil, err
	}
	// The same poison and checks as the large tensor's loop, on the small tensor's own buffers and kernel shapes.
	ops, err := newVKBenchOps(dev, body, outb, size, enc, dec, ev)
	if err != nil {
		return nil, err
	}
	defer ops.Close()
	lo := &latencyOut{}
	var evBest time.Duration
	// runs times n runs, the first skip untimed; cold ones each after the eviction copy.
	runs := func(kind string, count, skip int, cold bool) (spread, []float64, error) {
		var us, encG, decG []float64
		for i := range count {
			checked := i == 0 || i == count-1
			if checked {
				if err := ops.Poison(ctx); err != nil {
					return spread{}, nil, err
				}
			}
			if i == 0 || i == 1 {
				// The series starts, and resumes after its first check, with the device at working clocks.
				if err := settleGPU(ctx, ev, &evBest); err != nil {
					return spread{}, nil, err
				}
			}
			if cold {
				if err := ev.Run(ctx); err != nil {
					return spread{}, nil, err
				}
			}
			t0 := time.Now()
			got, err := enc.Run(ctx)
			if err == nil {
				err = dec.Run(ctx)
			}
			t := time.Since(t0)
			if err != nil && !isCodecError(err) {
				return spread{}, nil, err
			}
			if i >= skip {
				us = append(us, float64(t.Nanoseconds())/1e3)
				encG = append(encG, float64(enc.GPUTime().Nanoseconds())/1e3)
				decG = append(decG, float64(dec.GPUTime().Nanoseconds())/1e3)
			}
			if !checked || lo.failure != "" {
				continue
			}
			if err != nil {
				lo.failure = fmt.Sprintf("1 MiB %s run %d: %v", kind, i+1, err)
				continue
			}
			if got != uint64(len(want)) {
				lo.failure = fmt.Sprintf("1 MiB %s run %d: the body is %d bytes, the reference's %d", kind, i+1, got,
					len(want))
				continue
			}
			bb, err := ops.Body(ctx, got)
			if err != nil {
				return spread{}, nil, err
			}
			if !bytes.Equal(bb, want) {
				lo.failure = fmt.Sprintf("1 MiB %s run %d: the body differs from the reference at byte %d", kind, i+1,
					firstDiff(bb, want))
				continue
			}
			back, err := ops.Output(ctx)
			if err != nil {
				return spread{}, nil, err
			}
			if !bytes.Equal(back, vals) {
				lo.failure = fmt.Sprintf("1 MiB %s run %d: the decoded output differs from the input at byte %d", kind,
					i+1, firstDiff(back, vals))
			}
		}
		return spreadOf(us), []float64{spreadOf(encG).Median, spreadOf(decG).Median}, nil
	}
	if lo.warm, lo.warmGPU, err = runs("warm", 220, 20, false); err != nil {
		return nil, err
	}
	if lo.cold, lo.coldGPU, err = runs("cold", 60, 0, true); err != nil {
		return nil, err
	}
	return lo, nil
}

// gb formats a rate in GB/s with enough digits for slow devices too.
func gb(x float64) string {
	if x < 10 {
		return fmt.Sprintf("%.3f", x)
	}
	return fmt.Sprintf("%.0f", x)
}

func printBench(w io.Writer, o *benchOut) {
	path := ""
	if o.Path == "host" {
		path = " (host path: staged, wall clock)"
	}
	fmt.Fprintf(w, "bench: %s %s, %s on %s%s\n", o.Format, o.DType, o.Backend, o.Device, path)
	esc := ""
	if o.EscapeRate != nil {
		esc = fmt.Sprintf(", escape rate %.4f%%", 100**o.EscapeRate)
	}
	fmt.Fprintf(w, "  data %s, %.1f MiB, chunk %d, checksums %v: ratio %.4f%s\n", o.Data,
		float64(o.RawBytes)/(1<<20), o.Chunk, o.Checksums, o.Ratio, esc)
	switch {
	case o.CopyGBps > 0 && o.Backend == "cpu":
		fmt.Fprintf(w, "  copy roofline %s GB/s (read+write, %s) -> codec ceiling %s GB/s\n", gb(o.CopyGBps),
			strings.TrimPrefix(o.Device, runtime.GOARCH+" CPU, "), gb(o.CeilingGBps))
		fmt.Fprintf(w, "  encode %s GB/s wall (%.0f%% of ceiling), decode %s GB/s wall (%.0f%%), median of %d\n",
			gb(o.EncodeWallGBps), 100*o.EncodeOfCeil, gb(o.DecodeWallGBps), 100*o.DecodeOfCeil, o.Iters)
	case o.CopyGBps > 0:
		fmt.Fprintf(w, "  copy roofline %s GB/s (read+write) -> codec ceiling %s GB/s\n", gb(o.CopyGBps), gb(o.CeilingGBps))
		fmt.Fprintf(w, "  encode %s GB/s GPU (%.0f%% of ceiling), %s GB/s wall\n", gb(o.EncodeGBps), 100*o.EncodeOfCeil, gb(o.EncodeWallGBps))
		fmt.Fprintf(w, "  decode %s GB/s GPU (%.0f%% of ceiling), %s GB/s wall\n", gb(o.DecodeGBps), 100*o.DecodeOfCeil, gb(o.DecodeWallGBps))
	default:
		fmt.Fprintf(w, "  encode %s GB/s, decode %s GB/s (wall, median of %d)\n", gb(o.EncodeWallGBps), gb(o.DecodeWallGBps), o.Iters)
	}
	if o.Latency1MiBUs != nil {
		fmt.Fprintf(w, "  1 MiB encode+decode, resident, chunk %d: warm %.0f µs median (p90 %.0f); GPU %.0f + %.0f µs\n", o.LatencyChunk,
			o.Latency1MiBUs.Median, o.Latency1MiBUs.P90, o.Latency1MiBGPUUs[0], o.Latency1MiBGPUUs[1])
	}
	if o.Latency1MiBColdUs != nil {
		fmt.Fprintf(w, "  1 MiB encode+decode, cold (after a %.0f MiB copy): %.0f µs median (p90 %.0f); GPU %.0f + %.0f µs\n",
			float64(o.LatencyEvictBytes)/(1<<20), o.Latency1MiBColdUs.Median, o.Latency1MiBColdUs.P90,
			o.Latency1MiBColdGPUUs[0], o.Latency1MiBColdGPUUs[1])
	}
	if o.Blocks != nil {
		printBlocks(w, o.Blocks)
	}
	fmt.Fprintf(w, "  bit-exact %v, matches the Go reference %v (%d iterations checked)\n", o.BitExact, o.MatchesCPU,
		o.CheckedIters)
	if o.CheckFailure != "" {
		fmt.Fprintf(w, "  first failed check: %s\n", o.CheckFailure)
	}
}
