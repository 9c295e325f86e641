package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/vkzip/vkzip/calib"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/tensorfile"
)

var calibrateVerb = &verb{
	name:    "calibrate",
	args:    "[flags] FILE...",
	summary: "build a SplitZip-4 codebook from representative BF16 data",
	about: `
Counts the exponents of every BF16 value in the FILEs (safetensors: all BF16 tensors; npy and raw files: read as
BF16 by the rule 'vkzip encode --dtype bf16' follows, so an npy array saved as '<i2', '<u2' or '|V2' counts; - reads
stdin), picks the 16 most frequent as the codebook and prints how well it covers them:
values, distinct exponents, entropy, coverage and escape rate. With -o it saves the codebook as JSON for
'vkzip encode --codebook' (-o - writes it to stdout, and the summary to stderr). Without -o nothing is saved.`,
	examples: `  vkzip calibrate -o cb.json calib.safetensors
  vkzip calibrate --json calib-*.safetensors
  vkzip calibrate -o cb.json kv.npy                 # a BF16 array saved as '<i2' or '|V2'
  vkzip calibrate --kind raw -o cb.json cache.bin`,
	run: runCalibrate,
}

// calibrateResult is calibrate's --json output: the codebook's statistics (calib.Stats in the CLI's vocabulary,
// docs/JSON.md) plus where it came from.
type calibrateResult struct {
	Inputs      []string `json:"inputs"`
	Output      string   `json:"output,omitempty"`
	Codebook    []int    `json:"codebook"` // the 16 exponents, most frequent first
	Values      uint64   `json:"values"`
	Distinct    int      `json:"distinct"`
	EntropyBits float64  `json:"entropy_bits"`
	Coverage    float64  `json:"coverage"`
	Escapes     uint64   `json:"escapes"` // values whose exponent has no code
	EscapeRate  float64  `json:"escape_rate"`
	Counts      []uint64 `json:"counts"` // counts[i]: values coded with code i
}

func runCalibrate(ctx context.Context, v *verb, args []string) error {
	fs := newFlags(v)
	out := fs.String("o", "", "save the codebook JSON to `path` (- for stdout)")
	in := addInputFlags(fs, "bf16")
	asJSON := fs.Bool("json", false, "print the summary as a JSON object")
	quiet := addQuietFlag(fs)
	pos, err := parseArgs(v, fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("no input files")
	}
	opts, err := in.options()
	if err != nil {
		return err
	}
	if opts.DType != layout.DTypeBF16 {
		return usagef("--dtype %s: codebooks exist for bf16 only", in.dtype)
	}
	var h calib.Histogram
	for _, path := range pos {
		fh, err := histogramOf(path, opts)
		if err != nil {
			return err
		}
		h.Merge(&fh)
	}
	cb, stats := calib.Calibrate(h)
	names := make([]string, len(pos))
	for i, p := range pos {
		names[i] = filepath.Base(shown(p, "stdin"))
	}
	cal := &calib.Calibration{Codebook: cb, Stats: stats, Histogram: &h,
		Source: "vkzip calibrate " + strings.Join(names, " ")}

	report := io.Writer(os.Stdout)
	if *out != "" {
		var buf bytes.Buffer
		if err := calib.Save(&buf, cal); err != nil {
			return err
		}
		if *out == "-" {
			report = os.Stderr
			dataOnStdout()
		}
		if err := writeOutput(*out, buf.Bytes()); err != nil {
			return err
		}
	}
	res := calibrateResult{Inputs: pos, Output: *out, Values: stats.Values, Distinct: stats.Distinct,
		EntropyBits: stats.EntropyBits, Coverage: stats.Coverage, Escapes: stats.EscapedValues,
		EscapeRate: stats.EscapeRate, Counts: stats.Counts[:]}
	for _, e := range cb {
		res.Codebook = append(res.Codebook, int(e))
	}
	if *asJSON {
		return writeJSON(report, res)
	}
	if *quiet {
		return nil
	}
	fmt.Fprintf(report, "calibrated on %d file(s): %d BF16 values, %d distinct exponents, entropy %.3f bits/value\n",
		len(pos), stats.Values, stats.Distinct, stats.EntropyBits)
	fmt.Fprintf(report, "coverage %.6f%%, escape rate %.6f%% (%d values escaped)\n", 100*stats.Coverage,
		100*stats.EscapeRate, stats.EscapedValues)
	fmt.Fprintf(report, "exponents, most frequent first: %s\n", joinInts(res.Codebook))
	switch *out {
	case "":
		fmt.Fprintln(report, "codebook not saved (use -o FILE to save it)")
	case "-":
	default:
		fmt.Fprintf(report, "codebook saved to %s\n", *out)
	}
	return nil
}

// histogramOf counts the BF16 exponents of one input (- for stdin).
func histogramOf(path string, opts tensorfile.OpenOptions) (calib.Histogram, error) {
	if path != "-" {
		return calib.FromFile(path, opts)
	}
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		return calib.Histogram{}, fmt.Errorf("reading stdin: %w", err)
	}
	f, err := tensorfile.Parse(data, opts)
	if err != nil {
		return calib.Histogram{}, fmt.Errorf("stdin: %s", errMessage(err))
	}
	h, err := calib.FromTensors(f)
	if err != nil {
		return h, fmt.Errorf("stdin: %s", errMessage(err))
	}
	return h, nil
}
