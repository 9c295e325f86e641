package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vkzip/vkzip/calib"
	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/internal/units"
	"github.com/vkzip/vkzip/synth"
	"github.com/vkzip/vkzip/transfer/gpulink"
)

// transfer-bench --transport nccl: the same tensor from one GPU to another of this host, raw and compressed, over
// NCCL (package transfer/gpulink).

type ncclFlags struct {
	transport string
	gpus      string
	lib       string
	check     bool
	warmup    int
	rawFrom   string
	timeout   time.Duration
}

func addNCCLFlags(fs *flag.FlagSet) *ncclFlags {
	f := &ncclFlags{}
	fs.StringVar(&f.transport, "transport", "tcp", "tcp (two processes or loopback) or nccl (two GPUs of this host)")
	fs.StringVar(&f.gpus, "gpus", "0,1", "nccl: CUDA `ordinals` of the sending and the receiving GPU")
	fs.StringVar(&f.lib, "nccl-lib", "", "nccl: `path` of libnccl.so.2 (default $VKZIP_NCCL_LIB, else the loader's search path)")
	fs.BoolVar(&f.check, "check", false, "nccl: only a 1 MiB NCCL transfer between ordinary CUDA buffers, checked")
	fs.IntVar(&f.warmup, "warmup", 1, "nccl: unmeasured runs per mode before the measured ones")
	fs.StringVar(&f.rawFrom, "raw-from", "shared", "nccl: raw mode sends from the Vulkan-shared buffers (shared) or "+
		"from ordinary CUDA memory (cuda)")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "nccl: bound on each run's waits")
	return f
}

// setFlags lists which of names were given on the command line.
func setFlags(fs *flag.FlagSet, names ...string) []string {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var set []string
	fs.Visit(func(f *flag.Flag) {
		if want[f.Name] {
			set = append(set, f.Name)
		}
	})
	return set
}

func runTransferBenchNCCL(ctx context.Context, fs *flag.FlagSet, nf *ncclFlags, tf *transferFlags, sizeS, data string,
	seed uint64, modesS string, repeat int, asJSON bool) error {
	if set := setFlags(fs, "listen", "connect", "rate", "count", "wait", "workers", "backend", "device", "chunk-hash"); len(set) > 0 {
		return usagef("--%s does not apply to --transport nccl", set[0])
	}
	var gpus []int
	for _, s := range strings.Split(nf.gpus, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 {
			return usagef("--gpus %q: want two CUDA ordinals, e.g. 0,1", nf.gpus)
		}
		gpus = append(gpus, n)
	}
	if len(gpus) != 2 || gpus[0] == gpus[1] {
		return usagef("--gpus %q: want two different CUDA ordinals, e.g. 0,1", nf.gpus)
	}
	if nf.rawFrom != "shared" && nf.rawFrom != "cuda" {
		return usagef("--raw-from %q: want shared or cuda", nf.rawFrom)
	}
	if len(setFlags(fs, "repeat")) == 0 {
		repeat = 3
	}
	if nf.warmup < 0 || repeat < 1 || nf.timeout <= 0 {
		return usagef("--warmup must not be negative, --repeat at least 1 and --timeout positive")
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "vkzip: transfer-bench: "+format+"\n", args...)
	}
	lo := gpulink.LinkOptions{Devices: gpus, NCCLLib: nf.lib, Log: logf}
	if nf.check {
		cctx, cancel := context.WithTimeout(ctx, nf.timeout)
		defer cancel()
		r, err := gpulink.Check(cctx, lo, 1<<20)
		if err != nil {
			return err
		}
		if asJSON {
			res, err := renamedJSON(r, ncclCheckKeys)
			if err != nil {
				return err
			}
			return writeJSON(os.Stdout, res)
		}
		fmt.Printf("transfer-bench --check: NCCL %s (%s), CUDA %s: %d bytes %s → %s, bit-exact %v; first %.3f ms "+
			"(with connection set-up), second %.3f ms\n", r.NCCLVersion, r.NCCLLibrary, r.CUDADriver, r.Bytes, r.Devices[0],
			r.Devices[1], r.BitExact, r.FirstSeconds*1e3, r.SecondSeconds*1e3)
		return nil
	}

	chunk := int64(gpulink.DefaultChunkBytes)
	if len(setFlags(fs, "frame-size")) > 0 {
		n, err := units.ParseSize(tf.frame)
		if err != nil || n%gpulink.ChunkAlign != 0 || n > gpulink.MaxChunkBytes {
			return usagef("--frame-size %q: want a multiple of %d bytes up to 1GiB with --transport nccl (e.g. 32MiB)",
				tf.frame, gpulink.ChunkAlign)
		}
		chunk = n
	}
	if tf.inflight < 0 {
		return usagef("--inflight must not be negative")
	}
	if err := checkOptions(flagOption{"chunk", codec.WithChunkSize(tf.codecChunk)}); err != nil {
		return err
	}
	shift := uint(0)
	for 1<<shift < tf.codecChunk {
		shift++
	}
	var modes []string
	for _, m := range strings.Split(modesS, ",") {
		switch m = strings.TrimSpace(m); m {
		case "raw":
			modes = append(modes, gpulink.Raw)
		case "vkzip", "compressed":
			modes = append(modes, gpulink.Compressed)
		default:
			return usagef("--modes %q: want raw, vkzip or raw,vkzip", modesS)
		}
	}
	size, err := units.ParseSize(sizeS)
	if err != nil || size%2 != 0 {
		return usagef("--size %q: want an even number of bytes (BF16)", sizeS)
	}
	// Fail before generating gigabytes of data where there is nothing to run on.
	if err := gpulink.Probe(lo); err != nil {
		return err
	}
	src, err := benchData(data, int(size/2), seed)
	if err != nil {
		return err
	}
	cb := synth.KVCodebook()
	switch {
	case tf.codebook != "":
		cal, err := calib.LoadFile(tf.codebook)
		if err != nil {
			return fmt.Errorf("codebook: %w", err)
		}
		cb = cal.Codebook
	case data != "kvlike" && !strings.HasPrefix(data, "escapes="):
		var h codec.ExpHistogram
		h.Add(src)
		cb = codec.CodebookFromHistogram(&h)
	}
	r, err := gpulink.Bench(ctx, gpulink.Options{LinkOptions: lo, Data: src, ChunkBytes: int(chunk), InFlight: tf.inflight,
		Shift: shift, Checksums: !tf.noCRC, Codebook: cb, Modes: modes, Warmup: nf.warmup, Repeat: repeat,
		RawFromCUDA: nf.rawFrom == "cuda", Timeout: nf.timeout})
	if err != nil {
		return err
	}
	if asJSON {
		out := struct {
			Date string `json:"date"`
			Data string `json:"data"`
			*gpulink.Result
		}{time.Now().UTC().Format(time.RFC3339), data, r}
		res, err := renamedJSON(out, ncclKeys)
		if err != nil {
			return err
		}
		return writeJSON(os.Stdout, res)
	}
	printNCCLBench(r, data)
	return nil
}

// ncclKeys renames gpulink.Result's JSON keys into the CLI's vocabulary (docs/JSON.md).
var ncclKeys = map[string]string{
	"size_bytes": "raw_bytes", "chunk_bytes": "frame_bytes", "chunks": "frames", "codec_chunk": "chunk",
	"gb_per_s": "gbps", "raw_gb_per_s": "raw_gbps", "compressed_gb_per_s": "compressed_gbps",
	"body_bytes": "payload_bytes", "encode_gpu_s": "encode_gpu_seconds", "decode_gpu_s": "decode_gpu_seconds",
	"host_wait_encode_s": "host_wait_encode_seconds", "host_wait_decode_s": "host_wait_decode_seconds",
	"host_enqueue_s": "host_enqueue_seconds", "host_prepare_s": "host_prepare_seconds",
	"devices": "cuda_device_names", "vulkan_devices": "vulkan_device_names",
}

// ncclCheckKeys renames gpulink.CheckResult's JSON keys likewise.
var ncclCheckKeys = map[string]string{"bytes": "raw_bytes", "devices": "cuda_device_names"}

func printNCCLBench(r *gpulink.Result, data string) {
	fmt.Printf("transfer-bench: %d bytes of %s, NCCL %s, %s → %s; vkzip in %d frames of %d, %d in flight, ratio %.4f; "+
		"raw from %s memory\n", r.SizeBytes, data, r.NCCLVersion, r.Devices[0], r.Devices[1], r.Chunks, r.ChunkBytes,
		r.InFlight, r.Ratio, r.RawFrom)
	fmt.Printf("  %-6s %10s %9s  %s\n", "mode", "ms", "GB/s", "bit-exact")
	for _, run := range r.Runs {
		fmt.Printf("  %-6s %10.3f %9.1f  %v", run.Mode, run.Seconds*1e3, run.GBps, run.BitExact)
		if run.Mode == gpulink.Compressed {
			fmt.Printf("   (GPU encode %.3f ms, decode %.3f ms; host waits encode %.3f, decode %.3f, enqueue %.3f ms)",
				run.EncodeGPU*1e3, run.DecodeGPU*1e3, run.HostWaitEncode*1e3, run.HostWaitDecode*1e3, run.HostEnqueue*1e3)
		}
		fmt.Println()
	}
	if r.Speedup > 0 {
		fmt.Printf("  speedup of vkzip over raw: %.3fx (median %.3f ms raw, %.3f ms vkzip)\n", r.Speedup, r.RawSeconds*1e3,
			r.CompressedSeconds*1e3)
	}
}
