package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vkzip/vkzip/calib"
	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/internal/units"
	"github.com/vkzip/vkzip/transfer"
)

// The transfer verbs: send and recv (one stream between two processes, over TCP) and transfer-bench (the same
// data raw and compressed, timed). The pipeline and wire protocol are package transfer.

const defaultTransferPort = "7468"

var sendVerb = &verb{
	name:    "send",
	args:    "--connect HOST:PORT [flags] [FILE|-]",
	summary: "stream a file to 'vkzip recv' over TCP, compressed on the way",
	about: `
Streams FILE (default: stdin) to a 'vkzip recv' over TCP. The input is read in frames (--frame-size bytes); each
frame is compressed into one vkzip container (SplitZip-4 for the BF16 values, in chunks of --chunk values as in
every verb; the input is taken as raw little-endian BF16, a trailing odd byte kept verbatim) by --workers
goroutines while earlier frames are on the wire, and frames go out in order. At most --inflight frames are held at
once, so memory does not grow with the input, and a slow link or receiver holds the reading back. --raw sends the
frames uncompressed through the same pipeline. --backend auto (the default, as in every verb) codes on a GPU
where one works, else on the pipeline's CPU workers.

The sender hashes what it reads (SHA-256), the receiver what it decodes and writes; send exits 0 only when the
receiver has confirmed that hash and length match. A failure at either end ends both with the same one-line
reason. --synth sends generated data instead of a file, for tests and measurements.

A summary goes to stderr unless --quiet; --json prints a JSON object on stdout: seconds (hello to the
receiver's verdict), effective GB/s (raw bytes delivered per second), bytes on the wire, CPU time of this
process (user+sys) and whether the delivery was verified.`,
	examples: `  vkzip recv --listen :7468 -o kv.bin                    # on the receiving host
  vkzip send --connect gpu2:7468 kv.bin                   # on the sending host
  vkzip send --connect gpu2:7468 --codebook cb.json --frame-size 8MiB kv.bin
  cat kv.bin | vkzip send --connect 10.0.0.2:7468 --raw -
  vkzip send --connect 10.0.0.2:7468 --synth kvlike --size 1GiB --json`,
	run: runSend,
}

var recvVerb = &verb{
	name:    "recv",
	args:    "[--listen ADDR] [-o FILE|-] [flags]",
	summary: "receive one stream from 'vkzip send' and write it out, verified",
	about: `
Listens on --listen, accepts one connection from 'vkzip send', decodes the frames on --workers goroutines
(compressed mode; raw frames pass through; --backend auto, the default, decodes on a GPU where one works) and
writes the stream in order to -o. At the end it compares the
SHA-256 and length of what it wrote with the sender's and tells the sender the verdict; any mismatch, malformed
message or undecodable chunk is an error at both ends.

A file given with -o is written to a temporary file and renamed into place only once the stream is verified, so
a failed transfer leaves no output. Standard output (-o -, the default) and other streams (/dev/null) receive
the bytes as they arrive: there, exit status 1 is what says the stream was not delivered intact.

A summary goes to stderr unless --quiet; --json prints a JSON object (on stdout, or on stderr when the stream
goes to stdout).`,
	examples: `  vkzip recv --listen :7468 -o kv.bin
  vkzip recv --listen 10.0.0.2:7468 -o - | consumer
  vkzip recv --listen 127.0.0.1:0 -o /dev/null --json       # prints the port it listens on`,
	run: runRecv,
}

var transferBenchVerb = &verb{
	name:    "transfer-bench",
	args:    "[flags]",
	summary: "time the same KV data sent raw and compressed: speedup over raw",
	about: `
Sends the same data raw, then compressed, through the transfer pipeline (in frames of --frame-size bytes, encode,
send and decode overlapped; --backend auto by default, as in every verb) and reports for each: seconds, effective GB/s and Gbit/s (raw bytes delivered per second), bytes on
the wire, compression ratio, CPU time (user+sys, from getrusage) and bit-exactness (SHA-256 and length verified by
the receiver); then the speedup, raw seconds over compressed seconds.

By default both ends run in this process over loopback TCP. Unshaped loopback is limited by the CPU, not by a
link, so compressing cannot win there; --rate paces the sender in user space (a token bucket) to emulate a link
of that rate. For a real link (two hosts, or network namespaces shaped with tc: scripts/transfer-netns.sh) run
'transfer-bench --listen ADDR' at the receiving end and 'transfer-bench --connect ADDR' at the sending end,
which reports; the listener serves --count transfers (default: one per mode and repeat). CPU times are of this
process: in loopback both ends, in two-process runs each end its own.

Data: kvlike (KV-cache-like BF16 with the exponent distribution of the shared KV corpus), gauss, escapes=P, or a
file (its BF16 tensors, tiled to --size).

--transport nccl sends between two GPUs of this host instead (CUDA devices --gpus, default 0,1): the tensor lies
in GPU 0's memory, raw mode sends its bytes with one NCCL send, vkzip mode encodes --frame-size pieces with the
Vulkan codec on GPU 0, sends the bodies with NCCL and decodes them on GPU 1, --inflight frames at a time, every
hand-off ordered by semaphores shared between Vulkan and CUDA (there --frame-size defaults to 32MiB, a multiple of
256 bytes up to 1GiB, --inflight to 4 and --repeat to 3, after --warmup runs). It needs the NVIDIA driver
(libcuda.so.1), a Vulkan loader and NCCL (libnccl.so.2, or --nccl-lib / $VKZIP_NCCL_LIB; e.g. the Python package
nvidia-nccl-cu13). Times run from the first call of a transfer until the tensor is complete on GPU 1; each run's
output is copied to the host once afterwards and compared with the input (not timed). --check runs only a 1 MiB
NCCL transfer between ordinary CUDA buffers. The process sets NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1 (NVLink multicast stays off) and, unless set,
NCCL_P2P_DIRECT_DISABLE=1.`,
	examples: `  vkzip transfer-bench --size 256MiB
  vkzip transfer-bench --size 1GiB --rate 2gbit --json
  vkzip transfer-bench --listen 10.0.0.1:7468                  # receiving end
  vkzip transfer-bench --connect 10.0.0.1:7468 --size 1GiB     # sending end: reports
  vkzip transfer-bench --transport nccl --size 2GiB --frame-size 64MiB --inflight 4 --json
  vkzip transfer-bench --transport nccl --check`,
	run: runTransferBench,
}

// transferFlags are the pipeline and codec flags shared by the transfer verbs.
type transferFlags struct {
	frame      string // --frame-size: raw bytes per frame
	codecChunk int    // --chunk: values per codec chunk
	codebook   string
	noCRC      bool
	chunkHash  bool
	hash       string
	workers    int
	inflight   int
	backend    *backendFlags
	note       string // how --backend auto chose
}

func addTransferFlags(fs *flag.FlagSet, sender bool) *transferFlags {
	f := &transferFlags{}
	if sender {
		fs.StringVar(&f.frame, "frame-size", "4MiB", "raw `bytes` per frame (one message, one container): even, 256 B to 64 MiB; e.g. 4MiB")
		fs.IntVar(&f.codecChunk, "chunk", 1<<layout.DefaultChunkShift, "chunk size in `values`, as in every verb: a power of two from 1024 to 65536")
		fs.StringVar(&f.codebook, "codebook", "", "codebook `file` from 'vkzip calibrate' (default: calibrate each frame on itself)")
		fs.BoolVar(&f.noCRC, "no-checksum", false, "leave out the containers' chunk checksums (the stream's SHA-256 still checks delivery)")
		fs.BoolVar(&f.chunkHash, "chunk-hash", false, "verify with the SHA-256 of the chunks' SHA-256 digests, hashed by the workers in parallel, "+
			"instead of the SHA-256 of the stream (one core per end, about 1-2 GB/s: a limit above ~10 Gbit/s)")
		fs.StringVar(&f.hash, "hash", "sha256", "digest that verifies delivery: sha256 (what sha256sum prints, ~1.4 GB/s per core) or "+
			"xxh3 (XXH3-128, ~20 GB/s per core; catches damage and bugs, not deliberate forgery)")
	}
	fs.IntVar(&f.workers, "workers", 0, "encode/decode goroutines (default: the number of CPUs)")
	fs.IntVar(&f.inflight, "inflight", 0, "chunks held at once, bounding memory (default: 2 × workers)")
	f.backend = addBackendFlags(fs, "auto")
	return f
}

// open returns the send options for mode, and a function that releases the backend.
func (f *transferFlags) open(mode transfer.Mode) (transfer.Options, codec.Backend, func(), error) {
	o := transfer.Options{Mode: mode, CodecChunk: f.codecChunk, NoChecksums: f.noCRC, Workers: f.workers,
		InFlight: f.inflight, ChunkHash: f.chunkHash}
	h, err := transfer.ParseHash(f.hash)
	if err != nil {
		return o, nil, nil, usagef("--hash: %v", err)
	}
	o.Hash = h
	if f.frame != "" {
		n, err := units.ParseSize(f.frame)
		if err != nil || n%2 != 0 || n < transfer.MinChunkSize || n > transfer.MaxChunkSize {
			return o, nil, nil, usagef("--frame-size %q: want an even number of bytes from %d to %d (e.g. 4MiB)", f.frame,
				transfer.MinChunkSize, transfer.MaxChunkSize)
		}
		o.ChunkSize = int(n)
	}
	if err := checkOptions(flagOption{"chunk", codec.WithChunkSize(f.codecChunk)}); err != nil {
		return o, nil, nil, err
	}
	if f.workers < 0 || f.inflight < 0 {
		return o, nil, nil, usagef("--workers and --inflight must not be negative")
	}
	if f.codebook != "" {
		cal, err := calib.LoadFile(f.codebook)
		if err != nil {
			return o, nil, nil, fmt.Errorf("codebook: %w", err)
		}
		o.Codebook = &cal.Codebook
	}
	b, err := f.openBackend()
	if err != nil || b == nil {
		return o, nil, func() {}, err
	}
	o.Backend = b
	return o, b, func() { b.Close() }, nil
}

// openBackend opens --backend for the pipeline, keeping OpenBackend's note for showBackendNote. The CPU backend
// without a --device is nil: the pipeline's own CPU codec, whose workers give the parallelism (one goroutine per
// frame), serves then.
func (f *transferFlags) openBackend() (codec.Backend, error) {
	if f.backend.name == "cpu" && f.backend.device == "" {
		return nil, nil
	}
	b, note, err := codec.OpenBackend(f.backend.name, f.backend.device)
	if err != nil {
		return nil, fmt.Errorf("backend %s: %s", f.backend.name, errMessage(err))
	}
	f.note = note
	if b.Name() == "cpu" && f.backend.device == "" {
		b.Close()
		return nil, nil
	}
	return b, nil
}

// warm prepares a GPU backend for the pipeline's concurrent chunks before any data moves: its per-caller memory
// costs tens of ms per worker on first use, which would otherwise land in the first chunks' time (measured on the
// H200: a cold 4 GiB transfer-bench took 2.56 s, warm ones 1.37 s). ends is how many pipeline ends share b.
func (f *transferFlags) warm(ctx context.Context, b codec.Backend, ends, chunkBytes int) error {
	if b == nil {
		return nil
	}
	callers := ends * f.workerCount()
	if chunkBytes == 0 {
		chunkBytes = transfer.DefaultChunkSize
	}
	if err := codec.Warm(ctx, b, callers, uint64(chunkBytes/2)); err != nil {
		return fmt.Errorf("backend %s: preparing %d workers: %s", b.Name(), callers, errMessage(err))
	}
	return nil
}

// workerCount is --workers, or the pipeline's default (GOMAXPROCS) when it is 0.
func (f *transferFlags) workerCount() int {
	if f.workers > 0 {
		return f.workers
	}
	return runtime.GOMAXPROCS(0)
}

// backendName is the backend's name and device for reports; nil is the pipeline's CPU codec.
func (f *transferFlags) backendName(b codec.Backend) (name, device string) {
	if b == nil {
		return "cpu", fmt.Sprintf("%s CPU, %d workers", runtime.GOARCH, f.workerCount())
	}
	return b.Name(), b.Device()
}

// transferReport is one end's view of one transfer (--json of send and recv, and the runs of transfer-bench).
type transferReport struct {
	Role          string  `json:"role"` // send or recv
	Peer          string  `json:"peer,omitempty"`
	Mode          string  `json:"mode"` // raw or vkzip
	Seconds       float64 `json:"seconds"`
	GBps          float64 `json:"gbps"`   // raw bytes delivered per second / 1e9
	Gbitps        float64 `json:"gbitps"` // the same in Gbit/s
	RawBytes      int64   `json:"raw_bytes"`
	PayloadBytes  int64   `json:"payload_bytes"`
	BytesSent     int64   `json:"bytes_sent"`
	BytesReceived int64   `json:"bytes_received"`
	Ratio         float64 `json:"ratio"`
	Frames        int64   `json:"frames"`
	FrameBytes    int     `json:"frame_bytes"`
	Checksums     bool    `json:"checksums"`
	Workers       int     `json:"workers"`
	InFlight      int     `json:"inflight"`
	Codebook      []int   `json:"codebook,omitempty"` // the fixed codebook, if any
	Backend       string  `json:"backend,omitempty"`
	Device        string  `json:"device,omitempty"`
	CPUUser       float64 `json:"cpu_user_seconds"`
	CPUSys        float64 `json:"cpu_sys_seconds"`
	CPUSeconds    float64 `json:"cpu_seconds"`
	CPUCores      float64 `json:"cpu_cores"` // cpu_seconds / seconds
	Verified      bool    `json:"verified"`  // digest and length matched at the receiver
	Digest        string  `json:"digest"`
	DigestAlgo    string  `json:"digest_algo"`      // sha256 or xxh3-128
	SHA256        string  `json:"sha256,omitempty"` // the digest again when it is a SHA-256 (compatibility)
	Hash          string  `json:"hash"`             // what the digest is of: "stream", or "chunks" (the chunks' digests)
}

// cpuClock measures this process's CPU time over an interval.
type cpuClock struct{ user, sys time.Duration }

func startCPU() cpuClock {
	u, s, _ := transfer.CPUTime()
	return cpuClock{u, s}
}

func (c cpuClock) into(r *transferReport) {
	u, s, _ := transfer.CPUTime()
	r.CPUUser, r.CPUSys = (u - c.user).Seconds(), (s - c.sys).Seconds()
	r.CPUSeconds = r.CPUUser + r.CPUSys
	if r.Seconds > 0 {
		r.CPUCores = r.CPUSeconds / r.Seconds
	}
}

func newReport(role, peer string, st *transfer.Stats) transferReport {
	r := transferReport{Role: role, Peer: peer, Mode: st.Mode.String(), Seconds: st.Duration.Seconds(),
		RawBytes: st.RawBytes, PayloadBytes: st.PayloadBytes, BytesSent: st.BytesSent, BytesReceived: st.BytesReceived,
		Ratio: st.Ratio(), Frames: st.Chunks, FrameBytes: st.ChunkSize, Checksums: st.Checksums, Verified: st.Verified,
		Workers: st.Workers, InFlight: st.InFlight,
		Digest: hex.EncodeToString(st.SHA256[:]), DigestAlgo: st.Hash.String(), Hash: "stream"}
	if st.Hash == transfer.XXH3 {
		r.Digest = r.Digest[:32] // 128 bits; the protocol pads them with zeros
	} else {
		r.SHA256 = r.Digest
	}
	if st.ChunkHash {
		r.Hash = "chunks"
	}
	r.GBps = st.GBps()
	r.Gbitps = 8 * r.GBps
	if st.Codebook != nil {
		for _, e := range st.Codebook {
			r.Codebook = append(r.Codebook, int(e))
		}
	}
	return r
}

func (r *transferReport) line() string {
	dir := "to"
	if r.Role == "recv" {
		dir = "from"
	}
	s := fmt.Sprintf("%d bytes (%s, %d frames of %d) %s %s in %.3f s: %.3f GB/s (%.2f Gbit/s) effective, ratio %.4f, "+
		"%d bytes sent, %d received, CPU %.2f s (%.2f cores)", r.RawBytes, r.Mode, r.Frames, r.FrameBytes, dir, r.Peer,
		r.Seconds, r.GBps, r.Gbitps, r.Ratio, r.BytesSent, r.BytesReceived, r.CPUSeconds, r.CPUCores)
	if r.Verified {
		s += ", verified " + r.DigestAlgo + " " + r.Digest[:16] + "…"
	}
	return s
}

func runSend(ctx context.Context, v *verb, args []string) error {
	fs := newFlags(v)
	connect := fs.String("connect", "", "the receiver's `host:port` (required)")
	raw := fs.Bool("raw", false, "send the bytes uncompressed")
	tf := addTransferFlags(fs, true)
	wait := fs.Duration("wait", 10*time.Second, "keep retrying a refused connection for this `duration` (the receiver may start later)")
	synthSpec := fs.String("synth", "", "send test `data` of --size bytes instead of FILE: kvlike, gauss, escapes=P, or a tensor "+
		"file's BF16 tensors tiled")
	sizeS := fs.String("size", "1GiB", "bytes of --synth data")
	seed := fs.Uint64("seed", 1, "seed of --synth data")
	asJSON := fs.Bool("json", false, "print the result as a JSON object")
	quiet := addQuietFlag(fs)
	pos, err := parseArgs(v, fs, args)
	if err != nil {
		return err
	}
	if *connect == "" {
		return usagef("--connect HOST:PORT is required")
	}
	if len(pos) > 1 {
		return usagef("want at most one FILE, got %d arguments", len(pos))
	}
	if *synthSpec != "" && len(pos) == 1 {
		return usagef("--synth and FILE exclude each other")
	}
	mode := transfer.Compressed
	if *raw {
		mode = transfer.Raw
	}
	opts, b, release, err := tf.open(mode)
	if err != nil {
		return err
	}
	defer release()
	showBackendNote(v.name, tf.note, *quiet)
	if mode == transfer.Compressed {
		if err := tf.warm(ctx, b, 1, opts.ChunkSize); err != nil {
			return err
		}
	}

	// A file is mapped and sent from memory (no copy); stdin streams through the chunk buffers.
	var data []byte
	fromMemory := *synthSpec != "" || (len(pos) == 1 && pos[0] != "-")
	switch {
	case *synthSpec != "":
		if data, err = synthData(*synthSpec, *sizeS, *seed); err != nil {
			return err
		}
	case len(pos) == 1 && pos[0] != "-":
		d, rel, err := readInput(pos[0])
		if err != nil {
			return err
		}
		defer rel()
		data = d
	}
	t, err := transfer.Dial(ctx, *connect, *wait)
	if err != nil {
		return err
	}
	defer t.Close()
	clock := startCPU()
	var st *transfer.Stats
	if fromMemory {
		st, err = transfer.SendBytes(ctx, t, data, opts)
	} else {
		st, err = transfer.Send(ctx, t, os.Stdin, opts)
	}
	if err != nil {
		return err
	}
	r := newReport("send", *connect, st)
	r.Backend, r.Device = tf.backendName(b)
	clock.into(&r)
	if *asJSON {
		return writeJSON(os.Stdout, r)
	}
	if !*quiet {
		fmt.Fprintf(os.Stderr, "vkzip: send: %s\n", r.line())
	}
	return nil
}

// synthData makes --synth data: kvlike, gauss, escapes=P, or a tensor file's BF16 tensors tiled to size.
func synthData(spec, sizeS string, seed uint64) ([]byte, error) {
	size, err := units.ParseSize(sizeS)
	if err != nil {
		return nil, usagef("--size: %v", err)
	}
	data, err := benchData(spec, int((size+1)/2), seed)
	if err != nil {
		return nil, fmt.Errorf("--synth %s: %s", spec, errMessage(err))
	}
	return data[:size], nil
}

func runRecv(ctx context.Context, v *verb, args []string) error {
	fs := newFlags(v)
	listen := fs.String("listen", ":"+defaultTransferPort, "`address` to listen on, host:port (port 0: any free port)")
	out := fs.String("o", "-", "output `path`, or - for stdout")
	tf := addTransferFlags(fs, false)
	maxChunk := fs.String("max-chunk", "64MiB", "largest chunk `size` a sender may use (bounds memory)")
	timeout := fs.Duration("timeout", 0, "give up when no sender connects within this `time` (0: wait forever)")
	asJSON := fs.Bool("json", false, "print the result as a JSON object")
	quiet := addQuietFlag(fs)
	pos, err := parseArgs(v, fs, args)
	if err != nil {
		return err
	}
	if *out == "-" {
		dataOnStdout()
	}
	if len(pos) != 0 {
		return usagef("recv takes no arguments (the output is -o), got %q", pos[0])
	}
	mc, err := units.ParseSize(*maxChunk)
	if err != nil || mc < transfer.MinChunkSize || mc > transfer.MaxChunkSize {
		return usagef("--max-chunk %q: want a size from %d to %d bytes", *maxChunk, transfer.MinChunkSize, transfer.MaxChunkSize)
	}
	if tf.workers < 0 || tf.inflight < 0 {
		return usagef("--workers and --inflight must not be negative")
	}
	ro := transfer.ReceiveOptions{Workers: tf.workers, InFlight: tf.inflight, MaxChunkSize: int(mc)}
	b, err := tf.openBackend()
	if err != nil {
		return err
	}
	showBackendNote(v.name, tf.note, *quiet)
	if b != nil {
		defer b.Close()
		ro.Backend = b
		// The chunk size is the sender's: prepare for the default; larger chunks grow the memory on first use.
		if err := tf.warm(ctx, b, 1, transfer.DefaultChunkSize); err != nil {
			return err
		}
	}

	// The output is ready before anyone may connect: a bad path fails at once.
	var w io.Writer
	var commit func() error
	var abort func()
	switch {
	case *out == "-":
		w, commit, abort = os.Stdout, func() error { return nil }, func() {}
	case isStream(*out):
		f, err := os.OpenFile(*out, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		w, commit, abort = f, f.Close, func() { f.Close() }
	default:
		a, err := createAtomic(*out)
		if err != nil {
			return err
		}
		w, commit, abort = a, a.commit, a.abort
	}
	defer abort()

	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", *listen, err)
	}
	defer l.Close()
	if !*quiet {
		fmt.Fprintf(os.Stderr, "vkzip: recv: listening on %s\n", l.Addr())
	}
	actx := ctx
	if *timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	t, err := transfer.Accept(actx, l)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("no sender connected within %v", *timeout)
		}
		return err
	}
	l.Close()
	defer t.Close()
	peer := t.Conn().RemoteAddr().String()
	clock := startCPU()
	st, err := transfer.Receive(ctx, t, w, ro)
	if err != nil {
		return err
	}
	if err := commit(); err != nil {
		return err
	}
	r := newReport("recv", peer, st)
	r.Backend, r.Device = tf.backendName(b)
	clock.into(&r)
	report := io.Writer(os.Stdout)
	if *out == "-" {
		report = os.Stderr
	}
	if *asJSON {
		return writeJSON(report, r)
	}
	if !*quiet {
		fmt.Fprintf(os.Stderr, "vkzip: recv: %s\n", r.line())
	}
	return nil
}

// transferBenchOut is transfer-bench's --json output.
type transferBenchOut struct {
	Date       string           `json:"date"`
	Transport  string           `json:"transport"` // loopback TCP, or tcp to/from an address
	Rate       string           `json:"rate,omitempty"`
	Data       string           `json:"data"`
	RawBytes   int64            `json:"raw_bytes"`
	FrameBytes int              `json:"frame_bytes"`
	Workers    int              `json:"workers"`
	InFlight   int              `json:"inflight"`
	Backend    string           `json:"backend"`
	Device     string           `json:"device"`
	Runs       []transferReport `json:"runs"`
	// Per mode: the median of the runs' seconds and the run it belongs to.
	RawSeconds        float64 `json:"raw_seconds,omitempty"`
	CompressedSeconds float64 `json:"compressed_seconds,omitempty"`
	RawGBps           float64 `json:"raw_gbps,omitempty"`
	CompressedGBps    float64 `json:"compressed_gbps,omitempty"`
	RawCPU            float64 `json:"raw_cpu_seconds,omitempty"`
	CompressedCPU     float64 `json:"compressed_cpu_seconds,omitempty"`
	Speedup           float64 `json:"speedup,omitempty"` // raw seconds / compressed seconds
	BitExact          bool    `json:"bit_exact"`         // every run verified
}

// parseRate reads a link rate in tc's units (bit, kbit, mbit, gbit, tbit; decimal) and returns bytes per second.
func parseRate(s string) (float64, error) {
	l := strings.ToLower(s)
	for _, u := range []struct {
		suf string
		m   float64
	}{{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}} {
		if strings.HasSuffix(l, u.suf) {
			f, err := strconv.ParseFloat(strings.TrimSuffix(l, u.suf), 64)
			if err != nil || f <= 0 {
				break
			}
			return f * u.m / 8, nil
		}
	}
	return 0, fmt.Errorf("bad rate %q (want e.g. 2gbit, 500mbit)", s)
}

func runTransferBench(ctx context.Context, v *verb, args []string) error {
	fs := newFlags(v)
	sizeS := fs.String("size", "1GiB", "uncompressed bytes per transfer")
	data := fs.String("data", "kvlike", "kvlike, gauss, escapes=P or a file")
	seed := fs.Uint64("seed", 1, "data seed")
	tf := addTransferFlags(fs, true)
	modesS := fs.String("modes", "raw,vkzip", "modes to run, in order: raw, vkzip or both")
	repeat := fs.Int("repeat", 1, "runs per mode (alternating); the report gives the median")
	rateS := fs.String("rate", "", "pace the sending end in user space at this `rate`, e.g. 2gbit (tc units; default: unpaced)")
	listen := fs.String("listen", "", "receive at this `address` instead of running both ends here")
	connect := fs.String("connect", "", "send to a 'transfer-bench --listen' at this `host:port`")
	count := fs.Int("count", 0, "with --listen: transfers to serve (default: one per mode and repeat)")
	wait := fs.Duration("wait", 10*time.Second, "with --connect: keep retrying a refused connection for this `duration`")
	asJSON := fs.Bool("json", false, "print a JSON object")
	quiet := addQuietFlag(fs)
	nf := addNCCLFlags(fs)
	pos, err := parseArgs(v, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("transfer-bench takes no arguments, got %q", pos[0])
	}
	switch nf.transport {
	case "tcp":
		if set := setFlags(fs, "gpus", "nccl-lib", "check", "warmup", "raw-from"); len(set) > 0 {
			return usagef("--%s applies to --transport nccl only", set[0])
		}
	case "nccl":
		return runTransferBenchNCCL(ctx, fs, nf, tf, *sizeS, *data, *seed, *modesS, *repeat, *asJSON)
	default:
		return usagef("--transport %q: want tcp or nccl", nf.transport)
	}
	if *listen != "" && *connect != "" {
		return usagef("--listen and --connect exclude each other")
	}
	var modes []transfer.Mode
	for _, m := range strings.Split(*modesS, ",") {
		switch strings.TrimSpace(m) {
		case "raw":
			modes = append(modes, transfer.Raw)
		case "vkzip", "compressed":
			modes = append(modes, transfer.Compressed)
		default:
			return usagef("--modes %q: want raw, vkzip or raw,vkzip", *modesS)
		}
	}
	if *repeat < 1 || *count < 0 {
		return usagef("--repeat must be at least 1 and --count not negative")
	}
	var rate float64
	if *rateS != "" {
		if rate, err = parseRate(*rateS); err != nil {
			return usagef("--rate: %v", err)
		}
		if *listen != "" {
			return usagef("--rate paces the sending end: give it with --connect, or loopback")
		}
	}
	size, err := units.ParseSize(*sizeS)
	if err != nil {
		return usagef("--size: %v", err)
	}
	opts, b, release, err := tf.open(transfer.Compressed)
	if err != nil {
		return err
	}
	defer release()
	showBackendNote(v.name, tf.note, *quiet)
	// Both ends share the backend here: twice the workers.
	if err := tf.warm(ctx, b, 2, opts.ChunkSize); err != nil {
		return err
	}
	ro := transfer.ReceiveOptions{Workers: tf.workers, InFlight: tf.inflight, Backend: b}
	out := transferBenchOut{Date: time.Now().UTC().Format(time.RFC3339), Data: *data, Rate: *rateS, BitExact: true}
	out.Backend, out.Device = tf.backendName(b)

	if *listen != "" {
		n := *count
		if n == 0 {
			n = len(modes) * *repeat
		}
		return benchListen(ctx, *listen, n, ro, out, *asJSON)
	}

	src, err := benchData(*data, int((size+1)/2), *seed)
	if err != nil {
		return err
	}
	src = src[:size]
	out.RawBytes = size
	out.Transport = "loopback TCP, both ends in this process"
	if *connect != "" {
		out.Transport = "TCP to " + *connect
	}
	for i := 0; i < *repeat; i++ {
		for _, m := range modes {
			o := opts
			o.Mode = m
			r, err := benchOnce(ctx, *connect, *wait, rate, src, o, ro)
			if err != nil {
				return fmt.Errorf("%s run: %w", m, err)
			}
			r.Backend, r.Device = out.Backend, out.Device
			out.Runs = append(out.Runs, r)
			out.FrameBytes, out.Workers, out.InFlight = r.FrameBytes, r.Workers, r.InFlight
			out.BitExact = out.BitExact && r.Verified
		}
	}
	out.RawSeconds, out.RawGBps, out.RawCPU = medianRun(out.Runs, "raw")
	out.CompressedSeconds, out.CompressedGBps, out.CompressedCPU = medianRun(out.Runs, "vkzip")
	if out.RawSeconds > 0 && out.CompressedSeconds > 0 {
		out.Speedup = out.RawSeconds / out.CompressedSeconds
	}
	if *asJSON {
		if err := writeJSON(os.Stdout, out); err != nil {
			return err
		}
	} else {
		printTransferBench(&out)
	}
	if !out.BitExact {
		return fmt.Errorf("a transfer was not verified bit-exact")
	}
	return nil
}

// medianRun gives the median seconds of the runs of mode, with that run's GB/s and CPU seconds.
func medianRun(runs []transferReport, mode string) (secs, gbps, cpu float64) {
	var rs []transferReport
	for _, r := range runs {
		if r.Mode == mode {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return 0, 0, 0
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Seconds < rs[j].Seconds })
	m := rs[(len(rs)-1)/2]
	return m.Seconds, m.GBps, m.CPUSeconds
}

// benchOnce runs one transfer: to addr, or with both ends here over loopback when addr is "".
func benchOnce(ctx context.Context, addr string, wait time.Duration, rate float64, src []byte, o transfer.Options,
	ro transfer.ReceiveOptions) (transferReport, error) {
	var l net.Listener
	recvDone := make(chan error, 1)
	if addr == "" {
		var err error
		if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return transferReport{}, err
		}
		defer l.Close()
		addr = l.Addr().String()
		go func() {
			t, err := transfer.Accept(ctx, l)
			if err != nil {
				recvDone <- err
				return
			}
			defer t.Close()
			_, err = transfer.Receive(ctx, t, io.Discard, ro)
			recvDone <- err
		}()
	}
	ct, err := transfer.Dial(ctx, addr, wait)
	if err != nil {
		return transferReport{}, err
	}
	defer ct.Close()
	var t transfer.Transport = ct
	if rate > 0 {
		t = transfer.Paced(ct, rate, 256<<10)
	}
	clock := startCPU()
	st, err := transfer.SendBytes(ctx, t, src, o)
	if l != nil {
		if err != nil {
			ct.Close()
		}
		if rerr := <-recvDone; err == nil && rerr != nil {
			err = rerr
		}
	}
	if err != nil {
		return transferReport{}, err
	}
	r := newReport("send", addr, st)
	if l != nil {
		r.Peer = "loopback"
	}
	clock.into(&r)
	return r, nil
}

// benchListen is the receiving end of a two-process transfer-bench.
func benchListen(ctx context.Context, addr string, n int, ro transfer.ReceiveOptions, out transferBenchOut, asJSON bool) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	defer l.Close()
	fmt.Fprintf(os.Stderr, "vkzip: transfer-bench: listening on %s for %d transfers\n", l.Addr(), n)
	out.Transport = "TCP, receiving at " + l.Addr().String()
	var failed error
	for i := 0; i < n; i++ {
		t, err := transfer.Accept(ctx, l)
		if err != nil {
			return err
		}
		clock := startCPU()
		st, err := transfer.Receive(ctx, t, io.Discard, ro)
		t.Close()
		if err != nil {
			// Say so and go on: the sending end reports the failure too.
			fmt.Fprintf(os.Stderr, "vkzip: transfer-bench: transfer %d: %s\n", i+1, errMessage(err))
			failed = err
			out.BitExact = false
			continue
		}
		r := newReport("recv", t.Conn().RemoteAddr().String(), st)
		r.Backend, r.Device = out.Backend, out.Device
		clock.into(&r)
		out.Runs = append(out.Runs, r)
		out.RawBytes, out.FrameBytes, out.Workers, out.InFlight = r.RawBytes, r.FrameBytes, r.Workers, r.InFlight
		if !asJSON {
			fmt.Printf("transfer-bench: received %s\n", r.line())
		}
	}
	if asJSON {
		if err := writeJSON(os.Stdout, out); err != nil {
			return err
		}
	}
	return failed
}

func printTransferBench(o *transferBenchOut) {
	rate := "unshaped"
	if o.Rate != "" {
		rate = "sender paced at " + o.Rate
	}
	fmt.Printf("transfer-bench: %d bytes of %s, frames of %d, %d workers, %d in flight, backend %s (%s), %s (%s)\n",
		o.RawBytes, o.Data, o.FrameBytes, o.Workers, o.InFlight, o.Backend, o.Device, o.Transport, rate)
	fmt.Printf("  %-6s %9s %8s %8s %14s %7s %7s %6s  %s\n", "mode", "seconds", "GB/s", "Gbit/s", "bytes sent", "ratio",
		"CPU s", "cores", "bit-exact")
	for _, r := range o.Runs {
		fmt.Printf("  %-6s %9.3f %8.3f %8.2f %14d %7.4f %7.2f %6.2f  %v\n", r.Mode, r.Seconds, r.GBps, r.Gbitps,
			r.BytesSent, r.Ratio, r.CPUSeconds, r.CPUCores, r.Verified)
	}
	if o.Speedup > 0 {
		fmt.Printf("  speedup of vkzip over raw: %.3fx (median seconds %.3f raw, %.3f vkzip)\n", o.Speedup, o.RawSeconds,
			o.CompressedSeconds)
	}
}
