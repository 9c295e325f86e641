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
	args:    "[flags] INPUT...",
	summary: "restore the original files from .vkz payloads, verifying them",
	about: `
Decodes each INPUT (a .vkz path, or - for stdin) and writes the original bytes to its output: INPUT without its
.vkz suffix, or -o PATH (one INPUT), or stdout with -c or -o - (one INPUT; the default when INPUT is -).
Payloads made by 'vkzip encode' and streams of frames (codec.Writer) are both accepted.

Files work as with zstd: an existing output is never replaced without -f (so 'vkzip decode kv.safetensors.vkz'
leaves an existing kv.safetensors alone); the output gets the payload's permission bits and modification time,
which encode took from the original; several INPUTs give one output each; the INPUTs are kept unless --rm. A
failed INPUT is named on one line of stderr and the others still run; the exit status is 1 if any failed.

Every checksum and format rule is verified before the output appears. A file output is written to an unnamed
file (Linux) or a hidden temporary one and put in place only when the whole payload has decoded, so a failure,
Ctrl-C or kill leaves nothing behind; stdout receives nothing until then. A payload encoded with --no-checksum
decodes with a warning, since corruption of its tensor data cannot be detected. 'vkzip test' checks payloads
without writing anything.`,
	examples: `  vkzip decode kv.safetensors.vkz                 # writes kv.safetensors (not over an existing one)
  vkzip decode -f kv.safetensors.vkz              # replaces an existing kv.safetensors
  vkzip decode kv0.safetensors.vkz kv1.safetensors.vkz
  vkzip decode -o restored.safetensors kv.vkz
  vkzip decode -c kv.vkz | sha256sum
  vkzip decode - < kv.vkz > kv.safetensors`,
	run: runDecode,
}

// decodeResult is decode's --json output.
type decodeResult struct {
	Input        string  `json:"input"`
	Output       string  `json:"output"`
	PayloadBytes int64   `json:"payload_bytes"`
	RawBytes     int64   `json:"raw_bytes"`
	Ratio        float64 `json:"ratio"`
	Seconds      float64 `json:"seconds"`
	DecodeGBps   float64 `json:"decode_gbps"`
	Backend      string  `json:"backend"`
	Device       string  `json:"device"`
	Checksums    bool    `json:"checksums"`
}

// spillLimit is how much decoded output destined for a stream is held in memory before it goes to a temporary
// file instead.
const spillLimit = 512 << 20

func runDecode(ctx context.Context, v *verb, args []string) error {
	fs := newFlags(v)
	ff := addFileFlags(fs, "INPUT without .vkz, or stdout when INPUT is -")
	asJSON := fs.Bool("json", false, "print the result as a JSON object per input")
	quiet := addQuietFlag(fs)
	bf := addBackendFlags(fs, "auto")
	pos, err := parseArgs(v, fs, args)
	if err != nil {
		return err
	}
	jobs, err := planJobs(pos, ff, func(in string) (string, error) {
		if strings.HasSuffix(in, ".vkz") && filepath.Base(in) != ".vkz" {
			return strings.TrimSuffix(in, ".vkz"), nil
		}
		return "", usagef("%s has no .vkz suffix: name the output with -o or -c", in)
	})
	if err != nil {
		return err
	}
	s, err := openFileSession(bf)
	if err != nil {
		return err
	}
	defer s.close()
	return forEachInput(ctx, v.name, jobs, func(j fileJob) error {
		return decodeOne(ctx, s, j, ff, *asJSON, *quiet)
	})
}

// decodeOne decodes one payload into its output.
func decodeOne(ctx context.Context, s *fileSession, j fileJob, ff *fileFlags, asJSON, quiet bool) error {
	if err := checkJobOutput(j, ff.force); err != nil {
		return err
	}
	outOpts := outputOptionsFor(j.in, ff.force)
	data, release, err := readInput(j.in)
	if err != nil {
		return err
	}
	defer release()

	// The bar's size is the decoded one; reading it from the headers is cheap, but skip it when no bar can show.
	var p *progress
	if !quiet && isTerminal(os.Stderr) {
		if raw, ok := decodedSize(data); ok {
			p = newProgress("decode", int64(raw), quiet)
		}
	}
	c, err := s.codec(p)
	if err != nil {
		return err
	}
	defer c.Close()

	// Decode into a sink that nobody sees until the payload has verified: an unnamed or temporary file beside
	// the output, or for a stream (stdout, a device) a buffer copied out afterwards.
	var sink io.Writer
	var commit func() error
	if isStream(j.out) {
		sb := &spillBuffer{limit: spillLimit}
		defer sb.close()
		sink = sb
		commit = func() error { return copyToStream(j.out, sb) }
	} else {
		a, err := createOutput(j.out, outOpts)
		if err != nil {
			return err
		}
		defer a.abort()
		sink, commit = a, a.commit
	}
	var n int64
	start := time.Now()
	err = c.DecodeStream(ctx, data, func(_ *codec.Rec, d []byte) error {
		k, err := sink.Write(d)
		n += int64(k)
		if err != nil {
			return fmt.Errorf("writing %s: %w", shown(j.out, "stdout"), err)
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
	checksums := hasChecksums(data)
	if ff.rm {
		release()
		if err := removeInput(j.in); err != nil {
			return err
		}
	}

	res := decodeResult{Input: j.in, Output: j.out, PayloadBytes: int64(len(data)), RawBytes: n, Seconds: secs,
		Backend: s.b.Name(), Device: s.b.Device(), Checksums: checksums}
	res.Ratio = ratio(res.RawBytes, res.PayloadBytes)
	res.DecodeGBps = gbpsOf(res.RawBytes, secs)
	s.showNote("decode", quiet)
	report := io.Writer(os.Stdout)
	if j.out == "-" {
		report = os.Stderr
	}
	if !res.Checksums {
		fmt.Fprintf(os.Stderr, "vkzip: decode: warning: %s has no checksums (encoded with --no-checksum): corruption of its tensor data could not be detected\n",
			shown(j.in, "the payload"))
	}
	if asJSON {
		return writeJSON(report, res)
	}
	if !quiet {
		fmt.Fprintf(os.Stderr, "vkzip: decode: %s -> %s: %d -> %d bytes, %.3f s, %s GB/s, backend %s\n",
			shown(j.in, "stdin"), shown(j.out, "stdout"), res.PayloadBytes, res.RawBytes, secs, gb(res.DecodeGBps),
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
