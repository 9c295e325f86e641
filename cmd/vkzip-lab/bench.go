package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/internal/units"
	"github.com/vkzip/vkzip/internal/vktune"
	"github.com/vkzip/vkzip/synth"
	"github.com/vkzip/vkzip/vk"
)

// benchOut is one bench report. The *_gbps figures are medians over the measured iterations of GPU timestamps:
// encode and decode count the uncompressed bytes, the copy the bytes it reads and writes.
type benchOut struct {
	Format     string        `json:"format"`
	DType      string        `json:"dtype"`
	Device     string        `json:"device"`
	Data       string        `json:"data"`
	SizeBytes  int64         `json:"size_bytes"`
	Chunk      int           `json:"chunk"`
	Checksums  bool          `json:"checksums"`
	Ratio      float64       `json:"ratio"`
	EncodeGBps float64       `json:"encode_gbps"`
	DecodeGBps float64       `json:"decode_gbps"`
	CopyGBps   float64       `json:"copy_gbps"`
	CopyShape  string        `json:"copy_shape,omitempty"`
	Encode     spread        `json:"encode_gbps_spread"`
	Decode     spread        `json:"decode_gbps_spread"`
	Copy       spread        `json:"copy_gbps_spread"`
	PassUs     []float64     `json:"encode_pass_us,omitempty"` // last iteration: each encode pass
	Tune       vktune.Params `json:"tune"`                     // the knobs as set (zero: the shipped default)
	// BitExact: every iteration (warm-up included; body and output poisoned before each) gave the Go reference
	// codec's body and decoded to the input.
	BitExact     bool   `json:"bit_exact"`
	CheckFailure string `json:"check_failure,omitempty"`
	Iters        int    `json:"iters"`
	Warmup       int    `json:"warmup"`
}

type spread struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

func spreadOf(v []float64) spread {
	if len(v) == 0 {
		return spread{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return spread{Min: s[0], Median: s[len(s)/2], Max: s[len(s)-1]}
}

// tuneFlags registers the tuning flags on fs, each writing its knob of p.
func tuneFlags(fs *flag.FlagSet, p *vktune.Params) {
	fs.IntVar(&p.WorkGroup, "wg", 0, "threads per workgroup of the chunk kernels (0: 256)")
	fs.IntVar(&p.Repl, "repl", 0, "CRC table replication in shared memory (0: 1)")
	fs.IntVar(&p.CRCBits, "crc-bits", 0, "bits per CRC shift-table lookup, 4 to 8 (0: each kernel's fastest)")
	fs.IntVar(&p.Groups, "groups", 0, "workgroups per dispatch (0: by device type)")
	fs.IntVar(&p.EscCap, "esc-cap", 0, "escapes the SplitZip-4 decoder stages in shared memory (0: 1024)")
	fs.IntVar(&p.Unroll, "unroll", 0, "slots per thread loaded together (0: each kernel's fastest)")
	fs.IntVar(&p.Queues, "queues", 0, "compute queues, 1 to 8 (0: up to 4)")
	u32 := func(v *uint32, name, usage string) {
		fs.Func(name, usage, func(s string) error {
			x, err := strconv.ParseUint(s, 10, 32)
			*v = uint32(x)
			return err
		})
	}
	u32(&p.SZ4PlaceWG, "sz4-place-wg", "SplitZip-4 placement pass workgroup (default 32)")
	u32(&p.XWEncodeWG, "xw-encode-wg", "exponent-window encoder workgroup (default 1024)")
	u32(&p.XWDecodeWG, "xw-decode-wg", "exponent-window decoder workgroup (default: --wg)")
	u32(&p.TBE3WG, "tbe3-wg", "TBE-3 kernels' workgroup (default 128, or --wg where that is less)")
	h := &p.Huff
	u32(&h.EncodeWG, "huff-encode-wg", "huff encoder workgroup (default 256)")
	u32(&h.PlaceWG, "huff-place-wg", "huff placement workgroup (default 128)")
	u32(&h.DecodeWG, "huff-decode-wg", "huff decoder workgroup, 32 per chunk in flight (default 128)")
	u32(&h.DecodeGroups, "huff-decode-groups", "cap on the huff decoder's workgroups (default: the grid)")
	u32(&h.CheckWG, "huff-check-wg", "huff checksum pass workgroup (default 128)")
	u32(&h.CheckGroups, "huff-check-groups", "cap on the huff checksum pass's workgroups (default: none)")
	fs.BoolVar(&h.CheckFirst, "huff-check-first", false, "record the huff checksum pass before the decoder")
	u32(&h.Batch, "huff-batch", "loads each huff invocation issues together, at most 32 (default 8)")
	u32(&h.CacheShift, "huff-cache-shift", "largest chunk shift whose exponents the huff encoder caches (default 14)")
	fs.BoolVar(&h.NoTeamSync, "huff-no-team-sync", false, "do not run huff decode teams as synced subgroups")
	fs.BoolVar(&h.NoInt64, "huff-no-int64", false, "take the 32-bit huff decoder where the 64-bit one would run")
	u32(&h.TableEntries, "huff-table", "huff decode table entries per chunk: 256, 512 or 1024 (default 1024)")
	u32(&h.L1Bits, "huff-l1-bits", "least first-level bits of the huff decode tables, 5 to 9 (default 6)")
	fs.BoolVar(&h.TwoReads, "huff-two-reads", false, "read both huff decode table levels for every code")
	u32(&h.RingFill, "huff-rfill", "words each huff decode lane loads into its ring per block, 1 to 4 (default 2)")
	u32(&h.LowAhead, "huff-lowpf", "blocks ahead the huff decoder loads the low words, 1 to 3 (default 1)")
}

func benchMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("vkzip-lab bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var p vktune.Params
	tuneFlags(fs, &p)
	device := fs.String("device", "", "Vulkan device: index or name substring (default $VKZIP_DEVICE, else the best)")
	formatName := fs.String("format", "splitzip4", "format with a device-resident path")
	dtypeName := fs.String("dtype", "", "values' dtype (default BF16, or the format's first): the BF16 data converted")
	data := fs.String("data", "kvlike", "kvlike or gauss")
	sizeS := fs.String("size", "64MiB", "uncompressed BF16 bytes")
	chunk := fs.Int("chunk", 0, "chunk size in values (0: the format's choice for the size)")
	noCRC := fs.Bool("no-checksum", false, "measure without chunk checksums")
	iters := fs.Int("iters", 20, "measured iterations")
	warm := fs.Int("warmup", 3, "warm-up iterations")
	seed := fs.Uint64("seed", 1, "data seed")
	copyShape := fs.String("copy-shape", "", "time the copy as `R:W[:contiguous][:uN]` 16-byte reads and writes per "+
		"unit, N units per thread at once (a codec's traffic mix without its work; copy_gbps is that kernel's traffic)")
	asJSON := fs.Bool("json", false, "print a JSON object")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usagef("%v", err)
	}
	if fs.NArg() != 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	shape, err := parseCopyShape(*copyShape)
	if err != nil {
		return err
	}
	size, err := units.ParseSize(*sizeS)
	if err != nil || size < 2 || size%2 != 0 {
		return usagef("--size %q: want an even number of bytes", *sizeS)
	}
	if *iters < 1 || *warm < 0 {
		return usagef("--iters must be at least 1 and --warmup at least 0")
	}
	fid, ok := codec.FormatByName(*formatName)
	fd, _ := codec.LookupFormat(fid)
	if !ok || !fd.Chunked() {
		return usagef("--format %q: want a chunked format (have %v)", *formatName, codec.FormatNames())
	}
	dt := layout.DTypeBF16
	switch {
	case *dtypeName != "":
		if dt, ok = layout.ParseDType(*dtypeName); !ok {
			return usagef("--dtype %q", *dtypeName)
		}
	case !fd.Accepts(dt, 1) && len(fd.DTypeList()) > 0:
		dt = fd.DTypeList()[0]
	}
	if !fd.Accepts(dt, 1) {
		return usagef("--format %s does not code %v", fd.Name, dt)
	}
	values := int(size / 2)
	var shift uint
	switch {
	case *chunk != 0:
		for s := uint(fd.MinShift); s <= uint(fd.MaxShift); s++ {
			if *chunk == 1<<s {
				shift = s
			}
		}
		if shift == 0 {
			return usagef("--chunk %d: want a power of two from %d to %d", *chunk, 1<<fd.MinShift, 1<<fd.MaxShift)
		}
	case fd.ShiftFor != nil:
		shift = fd.ShiftFor(uint64(values))
	default:
		shift = layout.DefaultChunkShift
	}
	shift = min(max(shift, uint(fd.MinShift)), uint(fd.MaxShift))
	var src []byte
	switch *data {
	case "kvlike":
		src = synth.KVLike(values, *seed)
	case "gauss":
		src = synth.Gauss(values, *seed)
	default:
		return usagef("--data %q: want kvlike or gauss", *data)
	}
	var h codec.ExpHistogram
	h.Add(src)
	cb := codec.CodebookFromHistogram(&h)
	if dt != layout.DTypeBF16 {
		if src, err = synth.ConvertBF16(nil, src, dt); err != nil {
			return err
		}
	}
	var cbp *codec.Codebook
	if fd.UsesCodebook(dt) {
		cbp = &cb
	}
	b, err := vkcodec.Open(vkcodec.Options{Device: *device, Tune: &p})
	if err != nil {
		return err
	}
	defer b.Close()
	out := benchOut{Format: fd.Name, DType: dt.String(), Device: b.Device(), Data: *data, SizeBytes: int64(len(src)),
		Chunk: 1 << shift, Checksums: !*noCRC, CopyShape: *copyShape, Tune: p, Iters: *iters, Warmup: *warm}
	if err := measure(ctx, b, fid, dt, src, shift, cbp, shape, &out); err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "%s %s on %s, %d bytes, chunk %d, checksums %v: ratio %.4f, encode %.1f GB/s, decode %.1f GB/s, "+
			"copy %.1f GB/s; bit-exact %v\n", out.Format, out.DType, out.Device, out.SizeBytes, out.Chunk, out.Checksums,
			out.Ratio, out.EncodeGBps, out.DecodeGBps, out.CopyGBps, out.BitExact)
	}
	if !out.BitExact {
		return fmt.Errorf("%s: results were not bit-exact: %s", out.Format, out.CheckFailure)
	}
	return nil
}

// measure times the device-resident encode, decode and copy of src, checking each iteration's body and output.
func measure(ctx context.Context, b *vkcodec.Backend, f uint8, dt layout.DType, src []byte, shift uint,
	cb *codec.Codebook, shape vkcodec.CopyShape, out *benchOut) error {
	fd, _ := codec.LookupFormat(f)
	n := uint64(len(src)) / uint64(dt.Size())
	ref := []codec.EncodeJob{{Format: f, DType: dt, Src: src, N: n, Shift: shift, Codebook: cb,
		Checksums: out.Checksums, Dst: make([]byte, fd.MaxBodyOf(n, dt, shift))}}
	if err := codec.NewCPUBackend(0).Encode(ctx, ref); err != nil {
		return err
	}
	want := ref[0].Out
	out.Ratio = float64(len(src)) / float64(max(len(want), 1))
	if !b.SupportsResident(f) {
		return fmt.Errorf("%s has no device-resident path on %s (vkzip bench times its host path)", fd.Name, b.Device())
	}
	dev := b.VK()
	pad := (uint64(len(src)) + 255) &^ 255
	bodyCap := (uint64(cap(ref[0].Dst)) + 255) &^ 255
	bufs := map[string]*vk.Buffer{}
	for k, sz := range map[string]uint64{"in": pad, "body": bodyCap, "out": pad, "copy": pad} {
		x, err := dev.NewBuffer(sz, vk.DeviceLocal)
		if err != nil {
			return fmt.Errorf("allocating %d bytes: %w", sz, err)
		}
		defer x.Close()
		bufs[k] = x
	}
	whole := func(k string) vk.BufferRange { return vk.BufferRange{Buf: bufs[k]} }
	if err := dev.Upload(ctx, bufs["in"], 0, src); err != nil {
		return err
	}
	enc, err := b.PrepareEncode(ctx, vkcodec.EncodeSpec{
		Format: f, DType: dt, Src: whole("in"), N: n, Shift: shift, Codebook: cb, Checksums: out.Checksums,
		Dst: whole("body"),
	})
	if err != nil {
		return err
	}
	defer enc.Close()
	dec, err := b.PrepareDecode(ctx, vkcodec.DecodeSpec{
		Format: f, DType: dt, Body: whole("body"), BodyLen: uint64(len(want)), N: n, Shift: shift, Codebook: cb,
		Checksums: out.Checksums, Dst: whole("out"),
	})
	if err != nil {
		return err
	}
	defer dec.Close()
	cp, err := b.PrepareCopyShaped(whole("in"), whole("copy"), pad, shape)
	if err != nil {
		return err
	}
	defer cp.Close()
	poison, err := poisoner(dev, bufs["body"], bufs["out"])
	if err != nil {
		return err
	}
	defer poison.Close()
	body, got := make([]byte, len(want)), make([]byte, len(src))
	var encG, decG, cpG []float64
	out.BitExact = true
	fail := func(s string, a ...any) {
		if out.BitExact {
			out.BitExact, out.CheckFailure = false, fmt.Sprintf(s, a...)
		}
	}
	for it := 0; it < out.Warmup+out.Iters; it++ {
		sub, err := dev.Submit(poison)
		if err == nil {
			err = sub.Wait(ctx)
		}
		if err != nil {
			return err
		}
		bodyLen, err := enc.Run(ctx)
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		te := enc.GPUTime()
		if bodyLen != uint64(len(want)) {
			fail("iteration %d: body of %d bytes, the reference's is %d", it, bodyLen, len(want))
		} else if err := dev.Download(ctx, body, bufs["body"], 0); err != nil {
			return err
		} else if i := firstDiff(body, want); i >= 0 {
			fail("iteration %d: body differs from the reference at byte %d", it, i)
		}
		if err := dec.Run(ctx); err != nil {
			fail("iteration %d: decode: %v", it, err)
		}
		td := dec.GPUTime()
		if err := dev.Download(ctx, got, bufs["out"], 0); err != nil {
			return err
		}
		if i := firstDiff(got, src); i >= 0 {
			fail("iteration %d: decoded values differ from the input at byte %d", it, i)
		}
		if err := cp.Run(ctx); err != nil {
			return fmt.Errorf("copy: %w", err)
		}
		if it >= out.Warmup {
			encG = append(encG, gbps(len(src), te))
			decG = append(decG, gbps(len(src), td))
			cpG = append(cpG, gbps(int(shape.Traffic(pad)), cp.GPUTime()))
		}
	}
	out.Encode, out.Decode, out.Copy = spreadOf(encG), spreadOf(decG), spreadOf(cpG)
	out.EncodeGBps, out.DecodeGBps, out.CopyGBps = out.Encode.Median, out.Decode.Median, out.Copy.Median
	for _, d := range enc.PassTimes() {
		out.PassUs = append(out.PassUs, float64(d.Nanoseconds())/1e3)
	}
	return nil
}

// poisoner records the fill of the body and output buffers with 0xA5 bytes, run before every iteration so that a
// kernel that skips a store leaves bytes the checks catch.
func poisoner(dev *vk.Device, body, out *vk.Buffer) (*vk.Commands, error) {
	cmd, err := dev.NewCommands()
	if err != nil {
		return nil, err
	}
	if err := cmd.Begin(); err != nil {
		cmd.Close()
		return nil, err
	}
	cmd.FillBuffer(body, 0, body.Size()&^3, 0xA5A5A5A5)
	cmd.FillBuffer(out, 0, out.Size()&^3, 0xA5A5A5A5)
	cmd.Barrier()
	if err := cmd.End(); err != nil {
		cmd.Close()
		return nil, err
	}
	return cmd, nil
}

func gbps(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds() / 1e9
}

// firstDiff is the first index where a and b differ, or -1 where they are equal.
func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// parseCopyShape reads --copy-shape: "" (the roofline's copy) or "R:W" followed by any of ":contiguous" and ":uN".
func parseCopyShape(s string) (vkcodec.CopyShape, error) {
	var sh vkcodec.CopyShape
	if s == "" {
		return sh, nil
	}
	bad := usagef("--copy-shape %q: want R:W[:contiguous][:uN], R, W and N from 1 to 8", s)
	f := strings.Split(s, ":")
	if len(f) < 2 || len(f) > 4 {
		return sh, bad
	}
	var err1, err2 error
	sh.Reads, err1 = strconv.Atoi(f[0])
	sh.Writes, err2 = strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || sh.Reads < 1 || sh.Reads > 8 || sh.Writes < 1 || sh.Writes > 8 {
		return sh, bad
	}
	for _, x := range f[2:] {
		u, err := strconv.Atoi(strings.TrimPrefix(x, "u"))
		switch {
		case x == "contiguous":
			sh.Contiguous = true
		case strings.HasPrefix(x, "u") && err == nil && u >= 1 && u <= 8:
			sh.Unroll = u
		default:
			return sh, bad
		}
	}
	return sh, nil
}
