package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vkzip/vkzip/codec"
)

var decodeVerb = &verb{
	name:    "decode",
	args:    "[flags] INPUT",
	summary: "restore the original file from a .vkz payload, verifying it",
	about: `
Decodes INPUT (a .vkz path, or - for stdin) and writes the original bytes to the output: -o PATH, - for stdout,
or by default INPUT without its .vkz suffix (stdout when INPUT is -). Payloads made by 'vkzip encode' and
streams of frames (codec.Writer) are both accepted.

Every checksum and format rule is verified. On any error nothing is left behind: a file output is written to a
temporary file that is renamed into place only when the whole payload has decoded, and stdout receives nothing
until then. A payload encoded with --no-checksum decodes with a warning, since corruption of its tensor data
cannot be detected.`,
	examples: `  vkzip decode kv.safetensors.vkz                 # writes kv.safetensors
  vkzip decode -o restored.safetensors kv.vkz
  vkzip decode - < kv.vkz > kv.safetensors`,
	run: runDecode,
}

// decodeResult is decode's --json output.
type decodeResult struct {
	Input       string  `json:"input"`
	Output      string  `json:"output"`
	InputBytes  int64   `json:"input_bytes"`
	OutputBytes int64   `json:"output_bytes"`
	Ratio       float64 `json:"ratio"`
	Seconds     float64 `json:"seconds"`
	MBPerSec    float64 `json:"mb_per_s"`
	Backend     string  `json:"backend"`
	Device      string  `json:"device"`
	Checksums   bool    `json:"checksums"`
}

// spillLimit is how much decoded output destined for a stream is held in memory before it goes to a temporary
// file instead.
const spillLimit = 512 << 20

func runDecode(ctx context.Context, v *verb, args []string) error {
	fs := newFlags(v)
	out := fs.String("o", "", "output `path`, or - for stdout (default INPUT without .vkz, or stdout when INPUT is -)")
	asJSON := fs.Bool("json", false, "print the result as a JSON object")
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
		switch {
		case in == "-":
			outPath = "-"
		case strings.HasSuffix(in, ".vkz") && filepath.Base(in) != ".vkz":
			outPath = strings.TrimSuffix(in, ".vkz")
		default:
			return usagef("%s has no .vkz suffix: name the output with -o", in)
		}
	}
	if outPath != "-" && (filepath.Clean(outPath) == filepath.Clean(in) || sameFile(in, outPath)) {
		return fmt.Errorf("refusing to overwrite the input %s", in)
	}

	data, release, err := readInput(in)
	if err != nil {
		return err
	}
	defer release()

	// The bar's size is the decoded one; reading it from the headers is cheap, but skip it when no bar can show.
	var p *progress
	if !*quiet && isTerminal(os.Stderr) {
		if raw, ok := decodedSize(data); ok {
			p = newProgress("decode", int64(raw), *quiet)
		}
	}
	s, err := openSession(bf, p)
	if err != nil {
		return err
	}
	defer s.close()

	// Decode into a sink that nobody sees until the payload has verified: a temporary file beside the output, or
	// for a stream (stdout, a device) a buffer copied out afterwards.
	var sink io.Writer
	var commit func() error
	if isStream(outPath) {
		sb := &spillBuffer{limit: spillLimit}
		defer sb.close()
		sink = sb
		commit = func() error { return copyToStream(outPath, sb) }
	} else {
		a, err := createAtomic(outPath)
		if err != nil {
			return err
		}
		defer a.abort()
		sink, commit = a, a.commit
	}
	var n int64
	start := time.Now()
	err = s.c.DecodeStream(ctx, data, func(_ *codec.Rec, d []byte) error {
		k, err := sink.Write(d)
		n += int64(k)
		if err != nil {
			return fmt.Errorf("writing %s: %w", shown(outPath, "stdout"), err)
		}
		return nil
	})
	secs := time.Since(start).Seconds()
	if err != nil {
		p.abort()
		return err
	}
	p.finish()
	if err := commit(); err != nil {
		return err
	}

	res := decodeResult{Input: in, Output: outPath, InputBytes: int64(len(data)), OutputBytes: n, Seconds: secs,
		Backend: s.b.Name(), Device: s.b.Device(), Checksums: hasChecksums(data)}
	res.Ratio = ratio(res.OutputBytes, res.InputBytes)
	res.MBPerSec = mbps(res.OutputBytes, secs)
	report := io.Writer(os.Stdout)
	if outPath == "-" {
		report = os.Stderr
	}
	if !*quiet && s.note != "" {
		fmt.Fprintf(os.Stderr, "vkzip: decode: %s\n", s.note)
	}
	if !res.Checksums {
		fmt.Fprintln(os.Stderr, "vkzip: decode: warning: the payload has no checksums (encoded with --no-checksum): corruption of its tensor data could not be detected")
	}
	if *asJSON {
		return writeJSON(report, res)
	}
	if !*quiet {
		fmt.Fprintf(os.Stderr, "vkzip: decode: %s -> %s: %d -> %d bytes, %.3f s, %.1f MB/s, backend %s\n",
			shown(in, "stdin"), shown(outPath, "stdout"), res.InputBytes, res.OutputBytes, secs, res.MBPerSec,
			backendDesc(s.b))
	}
	return nil
}

// copyToStream writes the verified output to stdout or an existing non-regular file.
func copyToStream(path string, sb *spillBuffer) error {
	if path == "-" {
		return sb.copyTo(os.Stdout)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = sb.copyTo(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// forContainers calls fn for each container of a payload, in order, until one fails to parse.
func forContainers(src []byte, fn func(*codec.Container)) error {
	for len(src) > 0 {
		ct, err := codec.ParseHeader(src)
		if err != nil {
			return err
		}
		fn(ct)
		if ct.Size == 0 || ct.Size > uint64(len(src)) {
			return fmt.Errorf("container size %d", ct.Size)
		}
		src = src[ct.Size:]
	}
	return nil
}

// decodedSize is the number of bytes a payload decodes to, read from its headers (for the progress bar).
func decodedSize(src []byte) (uint64, bool) {
	var n uint64
	err := forContainers(src, func(ct *codec.Container) {
		for i := range ct.Recs {
			n += ct.Recs[i].RawSize()
		}
	})
	return n, err == nil
}

// hasChecksums reports whether every container of a (decoded, so valid) payload carries checksums.
func hasChecksums(src []byte) bool {
	all := true
	err := forContainers(src, func(ct *codec.Container) { all = all && ct.Checksums() })
	return all && err == nil
}
