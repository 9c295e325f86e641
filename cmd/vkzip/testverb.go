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
	Input       string  `json:"input"`
	InputBytes  int64   `json:"input_bytes"`
	OutputBytes int64   `json:"output_bytes"` // what decode would write
	Seconds     float64 `json:"seconds"`
	Backend     string  `json:"backend"`
	Checksums   bool    `json:"checksums"`
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
			fmt.Printf("%s: OK (%d -> %d bytes)\n", shown(j.in, "stdin"), res.InputBytes, res.OutputBytes)
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
	return testResult{Input: path, InputBytes: st.InputBytes, OutputBytes: st.OutputBytes,
		Seconds: time.Since(start).Seconds(), Backend: s.b.Name(), Checksums: st.Checksums}, nil
}
