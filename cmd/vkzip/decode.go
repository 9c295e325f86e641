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

Every checksum and format rule is verified before the bytes they cover are written. The payload is read once, in
order, and decoded frame by frame in bounded memory (about 150 MiB on the cpu backend, whatever its size). A file
output is written to an unnamed file (Linux) or a hidden temporary one and put in place only when the whole
payload has decoded, so a failure, Ctrl-C or kill leaves nothing behind. Stdout (or a FIFO) receives each frame's
bytes once that frame has verified, so a consumer starts early; if a later frame is damaged or missing, the
consumer has the verified output so far and decode exits with status 1. A payload encoded with --no-checksum
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
	in, size, closeIn, err := openStreamInput(j.in)
	if err != nil {
		return err
	}
	defer closeIn()

	// The bar's size is the decoded one, read from the frames' headers of a regular file; no bar can show for
	// a pipe, whose headers arrive with the data.
	var p *progress
	if !quiet && size > progressMin && isTerminal(os.Stderr) {
		if f, ok := in.(*os.File); ok {
			if raw, ok := decodedSize(f, size); ok {
				p = newProgress("decode", int64(raw), quiet)
			}
		}
	}
	c, err := s.codec(p)
	if err != nil {
		return err
	}
	defer c.Close()

	// Decoded bytes go out batch by batch, each only once every checksum of its records has verified. A file
	// output appears under its name only once the whole payload has (an unnamed or temporary file until then);
	// a stream (stdout, a FIFO) receives the verified batches as they come, and on a later error the exit status
	// tells the consumer that what it has is incomplete.
	sink, commit, abort, err := openSink(j.out, outOpts)
	if err != nil {
		return err
	}
	defer abort()
	start := time.Now()
	st, err := c.DecodeFile(ctx, writerFunc(func(d []byte) (int, error) {
		k, err := sink.Write(d)
		if err != nil {
			return k, fmt.Errorf("writing %s: %w", shown(j.out, "stdout"), err)
		}
		return k, nil
	}), in)
	secs := time.Since(start).Seconds()
	if err != nil {
		p.abort()
		return err
	}
	p.finish()
	if err := commit(); err != nil {
		return err
	}
	if ff.rm {
		closeIn()
		if err := removeInput(j.in); err != nil {
			return err
		}
	}

	res := decodeResult{Input: j.in, Output: j.out, PayloadBytes: st.InputBytes, RawBytes: st.OutputBytes,
		Seconds: secs, Backend: s.b.Name(), Device: s.b.Device(), Checksums: st.Checksums}
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

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// decodedSize is the number of bytes the payload in the regular file f (size bytes) decodes to, read from its
// containers' headers alone (for the progress bar).
func decodedSize(f *os.File, size int64) (uint64, bool) {
	var n uint64
	for off := int64(0); off < size; {
		ct, err := codec.ReadHeader(io.NewSectionReader(f, off, size-off))
		if err != nil || ct.Size == 0 {
			return 0, false
		}
		for i := range ct.Recs {
			n += ct.Recs[i].RawSize()
		}
		off += int64(ct.Size)
	}
	return n, true
}
