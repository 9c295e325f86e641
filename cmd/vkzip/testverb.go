package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

var testVerb = &verb{
	name:    "test",
	args:    "[flags] FILE...",
	summary: "check .vkz payloads without writing anything (zstd -t)",
	about: `
Decodes each FILE (a .vkz path, or - for stdin) as 'vkzip decode' would, verifying every checksum and format
rule, and throws the output away: nothing is written. Each good FILE gets a line "FILE: OK" on stdout (unless
--quiet); each bad one a line "vkzip: test: FILE: why" on stderr, and the exit status is 1 if any is bad. A payload
encoded with --no-checksum passes with a warning, since corruption of its tensor data cannot be detected.`,
	examples: `  vkzip test kv.safetensors.vkz
  vkzip test -q *.vkz && echo all good
  vkzip test --json kv.vkz`,
	run: runTest,
}

// testResult is test's --json output, one object per good FILE.
type testResult struct {
	Input        string  `json:"input"`
	PayloadBytes int64   `json:"payload_bytes"`
	RawBytes     int64   `json:"raw_bytes"` // what decode would write
	Ratio        float64 `json:"ratio"`
	Seconds      float64 `json:"seconds"`
	DecodeGBps   float64 `json:"decode_gbps"`
	Backend      string  `json:"backend"`
	Device       string  `json:"device"`
	Checksums    bool    `json:"checksums"`
}

func runTest(ctx context.Context, v *verb, args []string) error {
	fs := newFlags(v)
	asJSON := fs.Bool("json", false, "print a JSON object per good FILE")
	quiet := addQuietFlag(fs)
	bf := addBackendFlags(fs, "auto")
	pos, err := parseArgs(v, fs, args)
	if err != nil {
		return err
	}
	// test writes nothing: every FILE's "output" is a discard, so planJobs only checks the inputs.
	jobs, err := planJobs(pos, &fileFlags{}, func(string) (string, error) { return "", nil })
	if err != nil {
		return err
	}
	errorOut = os.Stdout // test writes no data: its reports and errors stay on stdout, stdin or not
	s, err := openFileSession(bf)
	if err != nil {
		return err
	}
	defer s.close()
	return forEachInput(ctx, v.name, jobs, func(j fileJob) error {
		res, err := testPayload(ctx, s, j.in)
		if err != nil {
			return err
		}
		s.showNote("test", *quiet)
		if !res.Checksums {
			fmt.Fprintf(os.Stderr, "vkzip: test: warning: %s has no checksums (encoded with --no-checksum): corruption of its tensor data could not be detected\n",
				shown(j.in, "stdin"))
		}
		switch {
		case *asJSON:
			return writeJSON(os.Stdout, res)
		case !*quiet:
			fmt.Printf("%s: OK (%d -> %d bytes)\n", shown(j.in, "stdin"), res.PayloadBytes, res.RawBytes)
		}
		return nil
	})
}

// testPayload decodes the payload in path, verifying it, and discards what it decodes to. It reads the payload
// once, in order, in the bounded memory of codec.DecodeFile.
func testPayload(ctx context.Context, s *fileSession, path string) (testResult, error) {
	in, _, closeIn, err := openStreamInput(path)
	if err != nil {
		return testResult{}, err
	}
	defer closeIn()
	c, err := s.codec(nil)
	if err != nil {
		return testResult{}, err
	}
	defer c.Close()
	start := time.Now()
	st, err := c.DecodeFile(ctx, io.Discard, in)
	if err != nil {
		return testResult{}, err
	}
	secs := time.Since(start).Seconds()
	n := st.OutputBytes
	return testResult{Input: path, PayloadBytes: st.InputBytes, RawBytes: n, Ratio: ratio(n, st.InputBytes),
		Seconds: secs, DecodeGBps: gbpsOf(n, secs), Backend: s.b.Name(), Device: s.b.Device(),
		Checksums: st.Checksums}, nil
}
