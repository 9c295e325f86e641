package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/vkzip/vkzip/calib"
	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/internal/units"
	"github.com/vkzip/vkzip/tensorfile"
)

var encodeVerb = &verb{
	name:    "encode",
	args:    "[flags] INPUT...",
	summary: "compress safetensors, npy or raw BF16/FP8/FP16/FP32 files into .vkz payloads",
	about: `
Compresses each INPUT (a path, or - for stdin) into one vkzip container, INPUT.vkz unless -o or -c says
otherwise. A safetensors file is stored as its header (kept verbatim) followed by every tensor in data order; an
npy file as its header and its array; a raw file (--dtype bf16) as one tensor. 'vkzip decode' gives back the
input byte for byte. The input is read once, in order, and the payload written as it is made: a stream of frames
of 32 MiB of input each (a tensor larger than that in slices), so memory stays bounded (about 150 MiB on the cpu
backend) whatever the input's size, and stdin may be a pipe of any length.

Files work as with zstd: an existing output is never replaced without -f; the output gets the input's permission
bits and modification time; several INPUTs give one output each (-o and -c take one INPUT); the INPUTs are kept
unless --rm. An output appears under its name only once complete: it is written to an unnamed file (Linux) or a
hidden temporary one and put in place at the end, so a failure, Ctrl-C or kill leaves no partial output. A failed
INPUT is named on one line of stderr and the others still run; the exit status is 1 if any failed.

Formats (--format, 'vkzip formats' lists them): each tensor is coded in the first format of the list that codes
its dtype and size; a tensor no format of the list codes is stored (kept as it is). codec.WithFormat follows the
same rule, word for word. Without --format and --prefer the list is ` + "`" + `splitzip4,xw3` + "`" + `: splitzip4 for BF16, xw3
for F8_E5M2, F8_E4M3, F16 and F32. Tensors of other dtypes, and empty ones, are always stored.

--prefer picks the list for you:
` + wrapIndented(preferHelp(), 116, 13) + `

Dtypes: safetensors files declare theirs. NumPy has no BF16 or FP8 type, so an npy array of those is saved as
integers or void ('<i2', '<u2' or '|V2' for BF16, the usual t.view(torch.int16).numpy() or ml_dtypes) and needs
--dtype (bf16, f16, f8_e4m3, ...) to be coded; without it the array is stored and a warning names the flag.
'vkzip calibrate' reads its inputs the same way (one rule, with --dtype bf16 its default).

Without --codebook the codebook is calibrated on each input itself; a codebook from 'vkzip calibrate' on
representative data skips that pass and gives every file the same codebook. A summary goes to stderr unless
--quiet; --json prints a JSON object per input instead (on stdout, or on stderr when the payload goes to stdout;
keys in docs/JSON.md).`,
	examples: `  vkzip encode kv.safetensors                              # writes kv.safetensors.vkz
  vkzip encode kv0.safetensors kv1.safetensors             # kv0.safetensors.vkz, kv1.safetensors.vkz
  vkzip encode -f --rm kv.safetensors                      # replace an old kv.safetensors.vkz, remove the input
  vkzip encode -c kv.safetensors | ssh host 'cat > kv.vkz'  # to stdout
  vkzip encode --codebook cb.json -o kv.vkz kv.safetensors
  vkzip encode --prefer ratio kv.safetensors                # huff for BF16: the smallest payload
  vkzip encode --format tbe3,xw3 kv.safetensors            # TBE-3 for BF16, xw3 for FP8/FP16/FP32
  vkzip encode --format xw2 kv-e4m3.safetensors             # xw2 for FP8/FP16/FP32, everything else stored
  vkzip encode --dtype bf16 kv.npy                          # a BF16 array saved as '<i2' or '|V2'
  vkzip encode --kind raw --dtype bf16 cache.bin           # a headerless BF16 array
  cat kv.safetensors | vkzip encode - > kv.vkz`,
	run: runEncode,
}

// encodeResult is encode's --json output.
type encodeResult struct {
	Input        string  `json:"input"`
	Output       string  `json:"output"`
	RawBytes     int64   `json:"raw_bytes"`
	PayloadBytes int64   `json:"payload_bytes"`
	Ratio        float64 `json:"ratio"`
	Seconds      float64 `json:"seconds"`
	EncodeGBps   float64 `json:"encode_gbps"`
	Backend      string  `json:"backend"`
	Device       string  `json:"device"`
	// Escapes and EscapeRate are over the chunks of formats that escape values (escapingFormats); absent when
	// no tensor is in one.
	Escapes    *uint64       `json:"escapes,omitempty"`
	EscapeRate *float64      `json:"escape_rate,omitempty"`
	Records    int           `json:"record_count"`
	Checksums  bool          `json:"checksums"`
	Codebook   []int         `json:"codebook,omitempty"`
	Formats    []formatCount `json:"formats"` // tensors per format, in order of first use
	// Verified: --verify decoded the payload with the Go reference codec and got the input back byte for byte
	// (VerifySeconds long) before anything was written.
	Verified      bool    `json:"verified"`
	VerifySeconds float64 `json:"verify_seconds,omitempty"`
}

// formatCount is how many tensors of a payload are in one format.
type formatCount struct {
	Format  string `json:"format"`
	Tensors int    `json:"tensors"`
}

func runEncode(ctx context.Context, v *verb, args []string) error {
	fs := newFlags(v)
	ff := addFileFlags(fs, "INPUT.vkz, or stdout when INPUT is -")
	cbPath := fs.String("codebook", "", "codebook `file` from 'vkzip calibrate' (default: calibrate on each input)")
	chunk := fs.Int("chunk", 1<<layout.DefaultChunkShift,
		"chunk size in `values`: a power of two from 1024 to 65536 (huff by default: 16384 to 65536 by tensor size)")
	noCRC := fs.Bool("no-checksum", false, "leave out chunk checksums: a little faster, but corruption of tensor data goes undetected")
	format := fs.String("format", "", "tensor `formats`, comma-separated, in order of preference (vkzip formats lists them): "+
		"each tensor takes the first that codes it, a tensor none codes is stored; default "+
		strings.Join(codec.DefaultFormatNames(), ","))
	prefer := fs.String("prefer", "", "`mode` instead of --format: speed ("+preferList("speed")+"), balanced ("+
		preferList("balanced")+") or ratio ("+preferList("ratio")+")")
	frameFlag := fs.String("frame", "32MiB", "input `bytes` per frame of the payload (a multiple of 8, at most 128MiB): "+
		"memory grows with it, not with the input")
	in := addInputFlags(fs, "")
	asJSON := fs.Bool("json", false, "print the result as a JSON object per input")
	verify := fs.Bool("verify", false, "decode every frame of the payload with the Go reference codec and compare it with its "+
		"input before writing it: catches a faulty encoder (a GPU driver's, say) at the cost of a CPU decode")
	quiet := addQuietFlag(fs)
	bf := addBackendFlags(fs, "auto")
	pos, err := parseArgs(v, fs, args)
	if err != nil {
		return err
	}
	jobs, err := planJobs(pos, ff, func(in string) (string, error) { return in + ".vkz", nil })
	if err != nil {
		return err
	}
	frame, err := units.ParseSize(*frameFlag)
	if err != nil || frame < 8 || frame > codec.MaxFrameSize/2 || frame%8 != 0 {
		return usagef("--frame %q: want a multiple of 8 bytes from 8 to 128MiB", *frameFlag)
	}
	openOpts, err := in.options()
	if err != nil {
		return err
	}
	formats, err := preferFormats(*prefer, *format)
	if err != nil {
		return err
	}
	if err := checkOptions(flagOption{"chunk", codec.WithChunkSize(*chunk)}, flagOption{"format", codec.WithFormat(formats)}); err != nil {
		return err
	}
	opts := []codec.Option{codec.WithChecksums(!*noCRC), codec.WithFormat(formats)}
	// Only an explicit --chunk overrides a format's own default chunk size (huff's: layout.HuffShiftFor).
	if flagSet(fs, "chunk") {
		if err := checkChunkFits(formats, *chunk); err != nil {
			return err
		}
		opts = append(opts, codec.WithChunkSize(*chunk))
	}
	if *cbPath != "" {
		cal, err := calib.LoadFile(*cbPath)
		if err != nil {
			return fmt.Errorf("codebook: %w", err)
		}
		opts = append(opts, codec.WithCodebook(cal.Codebook))
	}
	s, err := openFileSession(bf, opts...)
	if err != nil {
		return err
	}
	defer s.close()
	if *noCRC {
		fmt.Fprintln(os.Stderr, "vkzip: encode: warning: --no-checksum: corruption of tensor data in these payloads would go undetected")
	}
	e := &encoder{s: s, openOpts: openOpts, formats: formats, formatFlag: *format != "", ff: ff, verify: *verify,
		asJSON: *asJSON, quiet: *quiet, checksums: !*noCRC, frame: int(frame)}
	return forEachInput(ctx, v.name, jobs, func(j fileJob) error { return e.encode(ctx, j) })
}

// errVerify marks an encode whose payload did not decode to its input (encode --verify).
var errVerify = codec.ErrVerify

// encoder encodes the inputs of one encode command.
type encoder struct {
	s             *fileSession
	openOpts      tensorfile.OpenOptions
	formats       string // the codec's format list ("" = the default)
	formatFlag    bool   // the list came from --format
	ff            *fileFlags
	verify        bool
	asJSON, quiet bool
	checksums     bool
	frame         int // input bytes per frame
}

func (e *encoder) encode(ctx context.Context, j fileJob) error {
	if err := checkJobOutput(j, e.ff.force); err != nil {
		return err
	}
	if j.out == "-" && isTerminal(os.Stdout) && !e.ff.force {
		return fmt.Errorf("refusing to write a payload to a terminal (redirect stdout, or -f)")
	}
	outOpts := outputOptionsFor(j.in, e.ff.force)
	in, size, closeIn, err := openStreamInput(j.in)
	if err != nil {
		return err
	}
	defer closeIn()
	p := newProgress("encode", size, e.quiet)
	c, err := e.s.codec(p)
	if err != nil {
		return err
	}
	defer c.Close()
	sink, commit, abort, err := openSink(j.out, outOpts)
	if err != nil {
		return err
	}
	defer abort()
	name := ""
	if j.in != "-" {
		name = j.in
	}
	start := time.Now()
	st, err := c.EncodeFile(ctx, sink, in, codec.FileOptions{OpenOptions: e.openOpts, Name: name, Verify: e.verify, FrameSize: e.frame,
		Header: func(f *tensorfile.File) {
			for _, w := range uncodedWarnings(f, shown(j.in, "stdin"), e.formats, e.formatFlag) {
				fmt.Fprintf(os.Stderr, "vkzip: encode: warning: %s\n", w)
			}
		}})
	secs := time.Since(start).Seconds()
	if err != nil {
		p.abort()
		if j.in == "-" {
			var te *tensorfile.Error
			if errors.As(err, &te) {
				err = fmt.Errorf("stdin: %s", errMessage(err))
			}
		}
		if errors.Is(err, codec.ErrVerify) {
			err = fmt.Errorf("%w (nothing written)", err)
		}
		return err
	}
	p.finish()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := commit(); err != nil {
		return err
	}
	if e.ff.rm {
		closeIn()
		if err := removeInput(j.in); err != nil {
			return err
		}
	}

	res := encodeResult{Input: j.in, Output: j.out, RawBytes: st.InputBytes, PayloadBytes: st.OutputBytes,
		Seconds: secs, Backend: e.s.b.Name(), Device: e.s.b.Device(), Records: st.Records, Checksums: e.checksums}
	res.Ratio = ratio(res.RawBytes, res.PayloadBytes)
	res.Verified = e.verify
	if e.verify {
		res.VerifySeconds = secs // verification runs frame by frame, inside the encode
	}
	res.EncodeGBps = gbpsOf(res.RawBytes, secs)
	var tally escapeTally
	for _, ch := range st.Chunks {
		if escapingFormats[ch.Format] {
			tally.escapes += ch.Escapes
			tally.values += ch.Values
		}
	}
	res.Escapes, res.EscapeRate = tally.count(), tally.rate()
	for _, f := range st.Formats {
		res.Formats = append(res.Formats, formatCount{Format: f.Format, Tensors: f.Tensors})
	}
	if st.Codebook != nil {
		for _, e := range st.Codebook {
			res.Codebook = append(res.Codebook, int(e))
		}
	}

	// Stdout carries the payload when it is the output; reports then go to stderr.
	e.s.showNote("encode", e.quiet)
	report := io.Writer(os.Stdout)
	if j.out == "-" {
		report = os.Stderr
	}
	if e.asJSON {
		return writeJSON(report, res)
	}
	if !e.quiet {
		var fc []string
		for _, f := range res.Formats {
			fc = append(fc, fmt.Sprintf("%s %d", f.Format, f.Tensors))
		}
		verified := ""
		if res.Verified {
			verified = ", every frame verified by the reference decoder"
		}
		esc := ""
		if res.EscapeRate != nil {
			esc = fmt.Sprintf(", escape rate %.4f%%", 100**res.EscapeRate)
		}
		fmt.Fprintf(os.Stderr, "vkzip: encode: %s -> %s: %d -> %d bytes, ratio %.4f%s, %.3f s, %s GB/s, backend %s, tensors: %s%s\n",
			shown(j.in, "stdin"), shown(j.out, "stdout"), res.RawBytes, res.PayloadBytes, res.Ratio, esc,
			secs, gb(res.EncodeGBps), backendDesc(e.s.b), strings.Join(fc, ", "), verified)
	}
	return nil
}

// fileRecords lays a tensor file out as container records: the header bytes as a blob, then every tensor in data
// order. Prefix plus the tensors' data is the file, so decoding the records gives it back byte for byte.
func fileRecords(f *tensorfile.File) []codec.Record {
	recs := make([]codec.Record, 0, len(f.Tensors)+1)
	if len(f.Prefix) > 0 {
		recs = append(recs, codec.Record{Blob: true, Data: f.Prefix})
	}
	for _, t := range f.Tensors {
		r := codec.Record{Name: t.Name, DType: t.DType, Shape: t.Shape, Data: t.Data}
		switch {
		case t.DType == layout.DTypeOpaque:
			r.Shape = nil // bytes of an unknown dtype: the codec counts them as a flat byte array
		case r.Shape == nil:
			r.Shape = []uint64{} // a scalar; nil would mean "flat"
		}
		recs = append(recs, r)
	}
	return recs
}

// parseDType maps a --dtype value ("bf16", "F32", ...) to a dtype; "" means not forced.
func parseDType(s string) (layout.DType, error) {
	if s == "" {
		return layout.DTypeOpaque, nil
	}
	dt, ok := layout.ParseDType(strings.ToUpper(s))
	if !ok {
		return 0, usagef("unknown dtype %q (want a safetensors dtype name such as bf16, f16, f32)", s)
	}
	return dt, nil
}

// payloadEscapes is the escape count and rate of a whole payload: escapes over the values of every chunk in a
// format that escapes values (escapingFormats); both nil when there is none.
func payloadEscapes(info *codec.Info) (*uint64, *float64) {
	var t escapeTally
	for _, c := range info.Containers {
		for _, r := range c.Records {
			t.add(r.ChunkList)
		}
	}
	return t.count(), t.rate()
}

func ratio(raw, coded int64) float64 {
	if coded == 0 {
		return 0
	}
	return float64(raw) / float64(coded)
}

// gbpsOf is a rate in GB/s (1e9 bytes per second), the unit of every rate the CLI prints.
func gbpsOf(bytes int64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(bytes) / 1e9 / secs
}

// shown is path for messages, with "-" spelled out as std ("stdin" or "stdout").
func shown(path, std string) string {
	if path == "-" {
		return std
	}
	return path
}

func addQuietFlag(fs *flag.FlagSet) *bool {
	q := new(bool)
	fs.BoolVar(q, "quiet", false, "print no summary or notes (warnings and errors still go to stderr)")
	fs.BoolVar(q, "q", false, "short for --quiet")
	return q
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// preferMode is one value of --prefer: the format list it stands for and what that means for each dtype.
type preferMode struct {
	name    string
	formats string // a codec format list (codec.WithFormat)
	about   string
}

// preferModes are --prefer's values. Speeds are GB/s of encode / decode on one H100 (vkzip bench --backend vulkan
// --size 512MiB, kvlike data converted to each dtype); ratios on the same data.
var preferModes = []preferMode{
	{"speed", mustPrefer("speed"), "the fastest coder of each dtype, never stored: BF16 splitzip4 " +
		"(H100 1505/1529 GB/s, 1.33x); F16, F32 and F8_E5M2 xw4 (on an H100 as fast to encode as xw3 and 27-40% faster " +
		"to decode, at a lower ratio: F16 1.07x against 1.12x); F8_E4M3 xw3 (xw4 does not code it)"},
	{"balanced", mustPrefer("balanced"), "auto for every dtype: each tensor (or, when smaller, each chunk) in the smallest of the " +
		"fixed-width formats, BF16 splitzip4, zf12 or tbe3, F8/F16/F32 xw2, xw3 or xw4, so at least the ratio of each " +
		"of them (BF16 1.40x); it sizes every candidate first, so it is the slowest (H100 BF16 477/424 GB/s)"},
	{"ratio", mustPrefer("ratio"), "the smallest payload: BF16 huff (entropy-coded exponents, 1.47x, H100 452/940 GB/s); " +
		"F8/F16/F32 auto, as balanced (they have no entropy coder)"},
}

// mustPrefer is codec.PreferFormats of a mode this table describes; a mode codec does not know is a programming
// error, caught by the first run of any test.
func mustPrefer(mode string) string {
	l, ok := codec.PreferFormats(mode)
	if !ok {
		panic("codec has no prefer mode " + mode)
	}
	return l
}

// preferList is the format list of --prefer mode name.
func preferList(name string) string {
	for _, m := range preferModes {
		if m.name == name {
			return m.formats
		}
	}
	return ""
}

// preferHelp describes the --prefer modes, one paragraph each, for help texts.
func preferHelp() string {
	var b strings.Builder
	for _, m := range preferModes {
		fmt.Fprintf(&b, "  %-9s= --format %s: %s\n", m.name, m.formats, m.about)
	}
	return strings.TrimRight(b.String(), "\n")
}

// preferFormats is the codec's format list for --prefer and --format: --prefer's list, or --format's as given
// ("" is the default list). The two flags exclude each other, and giving both is an error rather than a silent
// precedence.
func preferFormats(prefer, format string) (string, error) {
	switch {
	case prefer == "":
		return format, nil
	case strings.TrimSpace(format) != "":
		return "", usagef("--prefer and --format both given: --prefer %s picks the formats itself", prefer)
	}
	if l := preferList(prefer); l != "" {
		return l, nil
	}
	return "", usagef("--prefer %q: want speed, balanced or ratio", prefer)
}

// checkChunkFits refuses a --chunk that some format of the list (a codec format list, "" for the default) would
// not use as given: the codec clamps a chunk size to each format's range, and a size the user asked for is never
// changed silently.
func checkChunkFits(formats string, chunk int) error {
	ids, err := codec.ParseFormats(formats)
	if err != nil {
		return nil // checkOptions reports a bad list
	}
	for _, id := range ids {
		f, ok := codec.LookupFormat(id)
		if !ok || !f.Chunked() {
			continue
		}
		if lo, hi := 1<<f.MinShift, 1<<f.MaxShift; chunk < lo || chunk > hi {
			return usagef("--chunk %d: %s takes chunks of %d to %d values (a power of two); pick one in range, or "+
				"leave --chunk out for each format's own size", chunk, f.Name, lo, hi)
		}
	}
	return nil
}

// flagSet reports whether the command line set flag name.
func flagSet(fs *flag.FlagSet, name string) (set bool) {
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// inputFlags are --kind and --dtype, which say how encode and calibrate read their inputs: both resolve them
// with inputOptions, so a file is read alike by both.
type inputFlags struct{ kind, dtype string }

// addInputFlags defines --kind and --dtype; defDType is --dtype's default ("" for none).
func addInputFlags(fs *flag.FlagSet, defDType string) *inputFlags {
	f := &inputFlags{}
	fs.StringVar(&f.kind, "kind", "auto", "input `kind`: auto (detect), safetensors, npy or raw")
	usage := "element `type` of npy and raw inputs: bf16, f16, f32, f8_e4m3, f8_e5m2 (an npy array of integers or " +
		"void of that size, such as '<i2', '<u2' or '|V2' for bf16, is read as it; safetensors files declare their own)"
	if defDType == "" {
		usage += " (default: from the file; raw files need it)"
	}
	fs.StringVar(&f.dtype, "dtype", defDType, usage)
	return f
}

func (f *inputFlags) options() (tensorfile.OpenOptions, error) { return inputOptions(f.kind, f.dtype) }

// inputOptions resolves --kind and --dtype into how a tensor file is opened: the one rule by which encode and
// calibrate read their inputs. A forced dtype applies to npy and raw files (an npy array of integers or void with
// the dtype's element size is read as that dtype: tensorfile.OpenOptions.DType); raw files need one.
func inputOptions(kindName, dtypeName string) (tensorfile.OpenOptions, error) {
	dt, err := parseDType(dtypeName)
	if err != nil {
		return tensorfile.OpenOptions{}, err
	}
	kind, ok := tensorfile.ParseKind(kindName)
	if !ok {
		return tensorfile.OpenOptions{}, usagef("--kind %q: want auto, safetensors, npy or raw", kindName)
	}
	if kind == tensorfile.Raw && dt == layout.DTypeOpaque {
		return tensorfile.OpenOptions{}, usagef("--kind raw needs --dtype")
	}
	return tensorfile.OpenOptions{Kind: kind, DType: dt}, nil
}

// uncodedWarnings are the warning lines for tensors of f (named name) that will be stored uncoded although a
// flag would have them coded: an npy array whose integer or void dtype may hold float bits (one line each,
// naming the --dtype to pass), and tensors of coded dtypes that no format of an explicit list codes (one line).
func uncodedWarnings(f *tensorfile.File, name, formats string, explicit bool) []string {
	var out []string
	if f.Kind == tensorfile.NPY || f.Kind == tensorfile.Raw {
		for _, t := range f.Tensors {
			if t.Size == 0 || anyFormatCodes(t.DType) {
				continue
			}
			n := uint64(1)
			for _, d := range t.Shape {
				n *= d
			}
			if n == 0 {
				continue
			}
			var hint string
			switch t.Size / int64(n) {
			case 1:
				hint = "if it holds FP8 values, pass --dtype f8_e4m3 or --dtype f8_e5m2"
			case 2:
				hint = "if it holds BF16 values, pass --dtype bf16 (F16: --dtype f16)"
			case 4:
				hint = "if it holds F32 values, pass --dtype f32"
			default:
				continue
			}
			what := "array"
			if t.Name != "" {
				what = fmt.Sprintf("array %q", t.Name)
			}
			out = append(out, fmt.Sprintf("%s: %s of npy dtype '%s' is stored uncoded: %s", name, what, t.DTypeName, hint))
		}
	}
	if !explicit {
		return out
	}
	ids, err := codec.ParseFormats(formats)
	if err != nil || slices.Contains(ids, layout.FormatStored) {
		return out
	}
	var missed []string
	count := map[layout.DType]int{}
	for _, t := range f.Tensors {
		n := uint64(0)
		if es := t.DType.Size(); es > 0 && t.DType != layout.DTypeOpaque {
			n = uint64(t.Size) / uint64(es)
			if t.Size < 0 {
				n = 1 // a raw array from a pipe, of a length not known yet: judged by its dtype
			}
		}
		if n == 0 || !anyFormatCodes(t.DType) {
			continue
		}
		coded := false
		for _, id := range ids {
			if g, ok := codec.LookupFormat(id); ok && g.Accepts(t.DType, n) {
				coded = true
				break
			}
		}
		if !coded {
			if count[t.DType] == 0 {
				missed = append(missed, t.DType.String())
			}
			count[t.DType]++
		}
	}
	if len(missed) > 0 {
		var parts []string
		for _, d := range missed {
			dt, _ := layout.ParseDType(d)
			parts = append(parts, fmt.Sprintf("%d %s", count[dt], d))
		}
		out = append(out, fmt.Sprintf("%s: tensors stored uncoded (%s): no format of the list %q codes them; add one "+
			"('vkzip formats'), or end the list with stored to store them without this warning", name,
			strings.Join(parts, ", "), formats))
	}
	return out
}

// anyFormatCodes reports whether some format of this build codes tensors of dtype d.
func anyFormatCodes(d layout.DType) bool {
	if d == layout.DTypeOpaque {
		return false
	}
	for _, f := range codec.Formats() {
		if f.ID != layout.FormatStored && f.Accepts(d, 1) {
			return true
		}
	}
	return false
}
