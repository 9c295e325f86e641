package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/vkzip/vkzip/calib"
	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/tensorfile"
)

var encodeVerb = &verb{
	name:    "encode",
	args:    "[flags] INPUT",
	summary: "compress a safetensors, npy or raw BF16 file into a .vkz payload",
	about: `
Compresses INPUT (a path, or - for stdin) into one vkzip container. A safetensors file is stored as its header
(kept verbatim) followed by every tensor in data order; an npy file as its header and its array; a raw file
(--dtype bf16) as one tensor. BF16 tensors are coded with SplitZip-4 and F8_E5M2, F8_E4M3, F16 and F32 tensors
with xw3 unless --format names others; tensors of other dtypes (and empty ones) are stored as they are, so
'vkzip decode' gives back the input byte for byte.

--format takes a format or a comma-separated list ('vkzip formats' lists them): each tensor is coded in the first
named format that codes its dtype, else in its dtype's default (splitzip4, xw3), else stored. End the list with
'stored' to store what the named formats do not code.

Without --codebook the codebook is calibrated on the input itself; a codebook from 'vkzip calibrate' on
representative data lets you skip that pass and gives every file the same codebook.

The output (default INPUT.vkz; stdout when INPUT is -) is written to a temporary file and renamed into place
only on success, so a failed run leaves no partial output. A summary goes to stderr unless --quiet; --json
prints a JSON object instead (on stdout, or on stderr when the payload goes to stdout).`,
	examples: `  vkzip encode kv.safetensors                              # writes kv.safetensors.vkz
  vkzip encode --codebook cb.json -o kv.vkz kv.safetensors
  vkzip encode --format tbe3 kv.safetensors                # TBE-3 for BF16 tensors
  vkzip encode --format xw2,stored kv-e4m3.safetensors      # xw2 for FP8/FP16/FP32, everything else stored
  vkzip encode --dtype bf16 -o cache.vkz cache.bin          # headerless BF16 array
  vkzip encode --kind raw --dtype bf16 cache.bin           # the same, never mistaken for safetensors
  cat kv.safetensors | vkzip encode - > kv.vkz`,
	run: runEncode,
}

// encodeResult is encode's --json output.
type encodeResult struct {
	Input       string        `json:"input"`
	Output      string        `json:"output"`
	InputBytes  int64         `json:"input_bytes"`
	OutputBytes int64         `json:"output_bytes"`
	Ratio       float64       `json:"ratio"`
	Seconds     float64       `json:"seconds"`
	MBPerSec    float64       `json:"mb_per_s"`
	Backend     string        `json:"backend"`
	Device      string        `json:"device"`
	EscapeRate  float64       `json:"escape_rate"`
	Records     int           `json:"records"`
	Checksums   bool          `json:"checksums"`
	Codebook    []int         `json:"codebook,omitempty"`
	Formats     []formatCount `json:"formats"` // tensors per format, in order of first use
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
	out := fs.String("o", "", "output `path`, or - for stdout (default INPUT.vkz, or stdout when INPUT is -)")
	cbPath := fs.String("codebook", "", "codebook `file` from 'vkzip calibrate' (default: calibrate on the input)")
	chunk := fs.Int("chunk", 1<<layout.DefaultChunkShift,
		"chunk size in `values`: a power of two from 1024 to 65536 (huff by default: 16384 to 65536 by tensor size)")
	noCRC := fs.Bool("no-checksum", false, "leave out chunk checksums: a little faster, but corruption of tensor data goes undetected")
	format := fs.String("format", "", "tensor `formats`, comma-separated (vkzip formats lists them); default "+
		strings.Join(codec.DefaultFormatNames(), ",")+"; tensors they do not code get their dtype's default, or are stored")
	prefer := fs.String("prefer", "", "`ratio` (huff for BF16: the smallest payload) or speed (auto: the fastest fixed-width "+
		"codings); instead of --format")
	dtypeName := fs.String("dtype", "", "element `type` of a raw or npy input, e.g. bf16 (default: from the file; raw files need it)")
	kindName := fs.String("kind", "auto", "input `kind`: auto (detect), safetensors, npy or raw")
	asJSON := fs.Bool("json", false, "print the result as a JSON object")
	verify := fs.Bool("verify", false, "decode the payload with the Go reference codec and compare it with the input before "+
		"writing anything: catches a faulty encoder (a GPU driver's, say) at the cost of a CPU decode")
	quiet := addQuietFlag(fs)
	bf := addBackendFlags(fs, "auto")
	pos, err := parseArgs(v, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one INPUT, got %d arguments", len(pos))
	}
	in := pos[0]
	outPath := *out
	if outPath == "" {
		outPath = "-"
		if in != "-" {
			outPath = in + ".vkz"
		}
	}
	if sameFile(in, outPath) {
		return fmt.Errorf("refusing to overwrite the input %s", in)
	}
	dt, err := parseDType(*dtypeName)
	if err != nil {
		return err
	}
	kind, ok := tensorfile.ParseKind(*kindName)
	if !ok {
		return usagef("--kind %q: want auto, safetensors, npy or raw", *kindName)
	}
	if kind == tensorfile.Raw && dt == layout.DTypeOpaque {
		return usagef("--kind raw needs --dtype")
	}
	spec, err := preferFormats(*prefer, *format)
	if err != nil {
		return err
	}
	formats := encodeFormats(spec)
	if err := checkOptions(flagOption{"chunk", codec.WithChunkSize(*chunk)}, flagOption{"format", codec.WithFormat(formats)}); err != nil {
		return err
	}
	opts := []codec.Option{codec.WithChecksums(!*noCRC), codec.WithFormat(formats)}
	// Only an explicit --chunk overrides a format's own default chunk size (huff's: layout.HuffShiftFor).
	if flagSet(fs, "chunk") {
		opts = append(opts, codec.WithChunkSize(*chunk))
	}
	if *cbPath != "" {
		cal, err := calib.LoadFile(*cbPath)
		if err != nil {
			return fmt.Errorf("codebook: %w", err)
		}
		opts = append(opts, codec.WithCodebook(cal.Codebook))
	}

	f, release, err := openTensors(in, tensorfile.OpenOptions{Kind: kind, DType: dt})
	if err != nil {
		return err
	}
	defer release()
	recs := fileRecords(f)

	p := newProgress("encode", f.Size, *quiet)
	s, err := openSession(bf, p, opts...)
	if err != nil {
		return err
	}
	defer s.close()
	start := time.Now()
	payload, err := s.c.Encode(ctx, nil, recs, true)
	secs := time.Since(start).Seconds()
	if err != nil {
		p.abort()
		return err
	}
	p.finish()
	var verifySecs float64
	if *verify {
		vstart := time.Now()
		if err := verifyPayload(ctx, payload, f); err != nil {
			return err
		}
		verifySecs = time.Since(vstart).Seconds()
	}
	if err := writeOutput(outPath, payload); err != nil {
		return err
	}

	res := encodeResult{Input: in, Output: outPath, InputBytes: f.Size, OutputBytes: int64(len(payload)),
		Seconds: secs, Backend: s.b.Name(), Device: s.b.Device(), Records: len(recs), Checksums: !*noCRC}
	res.Ratio = ratio(res.InputBytes, res.OutputBytes)
	res.Verified, res.VerifySeconds = *verify, verifySecs
	res.MBPerSec = mbps(res.InputBytes, secs)
	if info, err := codec.Inspect(payload); err == nil {
		res.EscapeRate = escapeRate(info)
		res.Formats = formatCounts(info)
		if cbs := info.Containers[0].Codebooks; len(cbs) > 0 {
			for _, e := range cbs[0] {
				res.Codebook = append(res.Codebook, int(e))
			}
		}
	}

	// Stdout carries the payload when it is the output; reports then go to stderr.
	report := io.Writer(os.Stdout)
	if outPath == "-" {
		report = os.Stderr
	}
	if !*quiet && s.note != "" {
		fmt.Fprintf(os.Stderr, "vkzip: encode: %s\n", s.note)
	}
	if *noCRC {
		fmt.Fprintln(os.Stderr, "vkzip: encode: warning: --no-checksum: corruption of tensor data in this payload would go undetected")
	}
	if *asJSON {
		return writeJSON(report, res)
	}
	if !*quiet {
		var fc []string
		for _, f := range res.Formats {
			fc = append(fc, fmt.Sprintf("%s %d", f.Format, f.Tensors))
		}
		verified := ""
		if res.Verified {
			verified = fmt.Sprintf(", verified by the reference decoder in %.3f s", verifySecs)
		}
		fmt.Fprintf(os.Stderr, "vkzip: encode: %s -> %s: %d -> %d bytes, ratio %.4f, escape rate %.4f%%, %.3f s, %.1f MB/s, backend %s, tensors: %s%s\n",
			shown(in, "stdin"), shown(outPath, "stdout"), res.InputBytes, res.OutputBytes, res.Ratio, 100*res.EscapeRate,
			secs, res.MBPerSec, backendDesc(s.b), strings.Join(fc, ", "), verified)
	}
	return nil
}

// openTensors parses a tensor file (path, or - for stdin).
func openTensors(path string, opts tensorfile.OpenOptions) (*tensorfile.File, func(), error) {
	if path == "-" {
		data, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, nil, fmt.Errorf("reading stdin: %w", err)
		}
		f, err := tensorfile.Parse(data, opts)
		if err != nil {
			return nil, nil, fmt.Errorf("stdin: %s", errMessage(err))
		}
		return f, func() {}, nil
	}
	f, err := tensorfile.Open(path, opts)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
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

// escapeRate is the fraction of coded values that were escaped, over the whole payload.
func escapeRate(info *codec.Info) float64 {
	var esc, vals uint64
	for _, c := range info.Containers {
		for _, r := range c.Records {
			if r.Chunks > 0 {
				esc += r.Escapes
				vals += r.RawBytes / 2
			}
		}
	}
	if vals == 0 {
		return 0
	}
	return float64(esc) / float64(vals)
}

func ratio(raw, coded int64) float64 {
	if coded == 0 {
		return 0
	}
	return float64(raw) / float64(coded)
}

func mbps(bytes int64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(bytes) / 1e6 / secs
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

// encodeFormats is the codec's format list for --format: the named formats, then the defaults, so a dtype the named
// ones do not code keeps its default ("" is the defaults alone).
// preferFormats turns --prefer into a format list: ratio is huff (BF16; other dtypes keep their defaults), speed
// is auto. It is an alternative to --format, and giving both is an error rather than a silent precedence.
func preferFormats(prefer, format string) (string, error) {
	switch {
	case prefer == "":
		return format, nil
	case strings.TrimSpace(format) != "":
		return "", usagef("--prefer and --format both given: --prefer %s picks the formats itself", prefer)
	case prefer == "ratio":
		return "huff", nil
	case prefer == "speed":
		return "auto", nil
	}
	return "", usagef("--prefer %q: want ratio or speed", prefer)
}

// flagSet reports whether the command line set flag name.
func flagSet(fs *flag.FlagSet, name string) (set bool) {
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func encodeFormats(flag string) string {
	if strings.TrimSpace(flag) == "" {
		return ""
	}
	return flag + "," + strings.Join(codec.DefaultFormatNames(), ",")
}

// formatCounts counts the tensors of a payload by format.
func formatCounts(info *codec.Info) []formatCount {
	var out []formatCount
	for _, c := range info.Containers {
	next:
		for _, r := range c.Records {
			if r.Kind != "tensor" {
				continue
			}
			for i := range out {
				if out[i].Format == r.Format {
					out[i].Tensors++
					continue next
				}
			}
			out = append(out, formatCount{Format: r.Format, Tensors: 1})
		}
	}
	return out
}
