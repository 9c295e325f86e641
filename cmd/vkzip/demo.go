package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/vkzip/vkzip/calib"
	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/tensorfile"
)

// Samples shipped in the binary (see testdata/README.md): the first 8 KV-cache tensors of the stories260K test
// and calibration files, 256 KiB of BF16 each.
var (
	//go:embed testdata/kv-sample.safetensors
	kvSample []byte
	//go:embed testdata/kv-calib-sample.safetensors
	kvCalibSample []byte
)

var demoVerb = &verb{
	name:    "demo",
	args:    "[flags]",
	summary: "round-trip a KV-cache sample built into the binary on every backend",
	about: `
Runs the whole pipeline on a sample shipped inside the binary (8 BF16 KV-cache tensors of the stories260K model,
256 KiB): calibrates a codebook on a separate calibration sample, then on each backend encodes the test sample,
decodes it and checks that the result is the input, bit for bit. Prints per backend the compression ratio, the
encode and decode throughput (best of --iters runs) and whether the round trip was exact. Backends that fail to
open are skipped with the reason; a round trip that is not exact fails the command (exit 1).`,
	examples: `  vkzip demo
  vkzip demo --backend cpu --iters 20
  vkzip demo --json`,
	run: runDemo,
}

type demoResult struct {
	Sample   string        `json:"sample"`
	RawBytes int           `json:"raw_bytes"`
	Tensors  int           `json:"tensors"`
	Codebook []int         `json:"codebook"`
	Iters    int           `json:"iters"`
	Backends []demoBackend `json:"results"` // one per backend
}

type demoBackend struct {
	Backend string `json:"backend"`
	Device  string `json:"device,omitempty"`
	Skipped string `json:"reason,omitempty"` // why the backend was skipped: it could not be used
	// The measurements are absent for a skipped backend.
	PayloadBytes int     `json:"payload_bytes,omitempty"`
	Ratio        float64 `json:"ratio,omitempty"`
	EncodeGBps   float64 `json:"encode_gbps,omitempty"`
	DecodeGBps   float64 `json:"decode_gbps,omitempty"`
	BitExact     bool    `json:"bit_exact"`
	SameAsCPU    *bool   `json:"same_payload_as_cpu,omitempty"` // backends must produce the CPU's bytes exactly
}

func runDemo(ctx context.Context, v *verb, args []string) error {
	fs := newFlags(v)
	asJSON := fs.Bool("json", false, "print the results as a JSON object")
	iters := fs.Int("iters", 5, "timed runs per backend; the best is reported")
	bf := addBackendFlags(fs, "all")
	pos, err := parseArgs(v, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("demo takes no arguments")
	}
	if *iters < 1 {
		return usagef("--iters %d: want at least 1", *iters)
	}

	calF, err := tensorfile.Parse(kvCalibSample, tensorfile.OpenOptions{})
	if err != nil {
		return fmt.Errorf("embedded calibration sample: %s", errMessage(err))
	}
	h, err := calib.FromTensors(calF)
	if err != nil {
		return fmt.Errorf("embedded calibration sample: %s", errMessage(err))
	}
	cb, _ := calib.Calibrate(h)
	f, err := tensorfile.Parse(kvSample, tensorfile.OpenOptions{})
	if err != nil {
		return fmt.Errorf("embedded sample: %s", errMessage(err))
	}
	recs := fileRecords(f)

	names := []string{bf.name}
	if bf.name == "all" {
		names = codec.Backends()
	}
	res := demoResult{Sample: "stories260K KV cache, seq0 layers 0-3 (embedded)", RawBytes: len(kvSample),
		Tensors: len(f.Tensors), Iters: *iters}
	for _, e := range cb {
		res.Codebook = append(res.Codebook, int(e))
	}
	var cpuPayload []byte
	var notExact, differs []string
	ran := 0
	for _, name := range names {
		r, payload := demoBackendRun(ctx, name, bf.device, cb, recs, *iters)
		if err := ctx.Err(); err != nil {
			return err
		}
		if r.Skipped == "" {
			ran++
			if !r.BitExact {
				notExact = append(notExact, r.Backend)
			}
			if r.Backend == "cpu" {
				cpuPayload = payload
			} else if cpuPayload != nil {
				same := bytes.Equal(payload, cpuPayload)
				r.SameAsCPU = &same
				if !same {
					differs = append(differs, r.Backend)
				}
			}
		}
		res.Backends = append(res.Backends, r)
	}

	if *asJSON {
		if err := writeJSON(os.Stdout, res); err != nil {
			return err
		}
	} else {
		printDemo(&res)
	}
	switch {
	case len(notExact) > 0:
		return fmt.Errorf("round trip NOT bit-exact on %v", notExact)
	case len(differs) > 0:
		// Every backend must write the CPU reference's bytes exactly (docs/FORMAT.md): a difference is a bug.
		return fmt.Errorf("payload of %v differs from the cpu backend's", differs)
	case ran == 0:
		return errors.New("no backend could be opened")
	}
	return nil
}

// demoBackendRun encodes and decodes the sample iters times on one backend and checks the result.
func demoBackendRun(ctx context.Context, name, device string, cb codec.Codebook, recs []codec.Record, iters int) (demoBackend, []byte) {
	r := demoBackend{Backend: name}
	b, _, err := codec.OpenBackend(name, device)
	if err != nil {
		r.Skipped = errMessage(err)
		return r, nil
	}
	defer b.Close()
	r.Backend, r.Device = b.Name(), b.Device()
	c, err := codec.New(codec.WithBackend(b), codec.WithCodebook(cb))
	if err != nil {
		r.Skipped = errMessage(err)
		return r, nil
	}
	defer c.Close()

	var payload, out []byte
	bestEnc, bestDec := time.Duration(1<<62), time.Duration(1<<62)
	for i := 0; i < iters; i++ {
		t := time.Now()
		payload, err = c.Encode(ctx, payload[:0], recs, true)
		bestEnc = min(bestEnc, time.Since(t))
		if err != nil {
			r.Skipped = "encode failed: " + errMessage(err)
			return r, nil
		}
		t = time.Now()
		out, err = c.DecodeAll(payload, out[:0])
		bestDec = min(bestDec, time.Since(t))
		if err != nil {
			r.Skipped = "decode failed: " + errMessage(err)
			return r, nil
		}
		if !bytes.Equal(out, kvSample) {
			r.BitExact = false
			break
		}
		r.BitExact = true
	}
	r.PayloadBytes = len(payload)
	r.Ratio = ratio(int64(len(kvSample)), int64(len(payload)))
	r.EncodeGBps = gbpsOf(int64(len(kvSample)), bestEnc.Seconds())
	r.DecodeGBps = gbpsOf(int64(len(kvSample)), bestDec.Seconds())
	return r, payload
}

func printDemo(res *demoResult) {
	w := os.Stdout
	fmt.Fprintf(w, "sample: %s, %d tensors, %d bytes\n", res.Sample, res.Tensors, res.RawBytes)
	fmt.Fprintf(w, "codebook (calibrated on a separate sample): %s\n\n", joinInts(res.Codebook))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "backend\tdevice\tratio\tencode GB/s\tdecode GB/s\tbit-exact\n"
	for _, b := range res.Backends {
		if b.Skipped != "" {
			continue
		}
		fmt.Fprint(tw, header)
		header = ""
		exact := "yes"
		if !b.BitExact {
			exact = "NO"
		}
		if b.SameAsCPU != nil && !*b.SameAsCPU {
			exact += " (payload differs from cpu's)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.4f\t%s\t%s\t%s\n", b.Backend, b.Device, b.Ratio, gb(b.EncodeGBps), gb(b.DecodeGBps), exact)
	}
	tw.Flush()
	for _, b := range res.Backends {
		if b.Skipped != "" {
			fmt.Fprintf(w, "%s: skipped: %s\n", b.Backend, b.Skipped)
		}
	}
	fmt.Fprintf(w, "\n(best of %d runs; a sample this small measures overhead more than throughput)\n", res.Iters)
}
