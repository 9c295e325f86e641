package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vkzip/vkzip/conformance"
	"github.com/vkzip/vkzip/conformance/vkdevices"
)

var conformanceVerb = &verb{
	name:    "conformance",
	args:    "[flags]",
	summary: "prove bitwise equality with the reference on every backend and device",
	about: `
Runs the conformance corpus built into this binary on every backend and every Vulkan device (or the ones
selected): each backend must encode every case to exactly the bytes the Go reference produced when the corpus
was generated (tensor bodies and whole containers), decode them bitwise, decode every other backend's payloads,
and reject every invalid payload with the same error class. Prints a table (category, cases, backend, device,
passed, failed, skipped, n/a, time) and a verdict:

  PASS        every format passed on every device listed; exit 0.
  INCOMPLETE  nothing failed, but something was not checked: a Vulkan device that exists but could not be used
              (not usable, or failed to open), no Vulkan device found (with --backend all), or a format with no
              path on a target ("not applicable", e.g. no device-resident path). The report lists each thing
              not checked and why. Exit 1, or 0 with --allow-incomplete (the verdict still says INCOMPLETE).
  FAIL        a case failed, or was skipped without --allow-skip, or nothing ran; exit 1.

--backend cpu checks the Go reference only and can pass. A skipped case (a backend that cannot run it) is never a
pass and fails the verdict unless --allow-skip.

Mesa's lavapipe reads its vector width once per process, so each lavapipe device runs in a child process per
width in --lp-widths (LP_NATIVE_VECTOR_WIDTH=128 and 256 by default) and the reports are merged. With
LP_NATIVE_VECTOR_WIDTH already set and no --lp-widths, lavapipe runs in this process at that width.

The JSON report (--json, --out) names every device with its vendor, driver, Vulkan version and subgroup size,
the SPIR-V hash, the corpus version and the vkzip version: the file to keep as evidence (docs/CONFORMANCE.md).`,
	examples: `  vkzip conformance
  vkzip conformance --out report.json
  vkzip conformance --backend vulkan --device 0 --json
  vkzip conformance --category lengths,invalid-stream
  vkzip conformance --backend cpu --format splitzip4
  vkzip conformance --allow-incomplete`,
	run: runConformance,
}

// envConformanceChild marks a child process run for one lavapipe vector width: it runs in-process only.
const envConformanceChild = "VKZIP_CONFORMANCE_CHILD"

func runConformance(ctx context.Context, v *verb, args []string) error {
	fs := newFlags(v)
	backend := fs.String("backend", "all", "all, cpu or vulkan")
	device := fs.String("device", "", "Vulkan device: index or name substring (default: every device; one that cannot be used makes the run incomplete)")
	asJSON := fs.Bool("json", false, "print the JSON report instead of the table")
	out := fs.String("out", "", "also write the JSON report to this file")
	cats := fs.String("category", "", "comma-separated categories (default: all)")
	formats := fs.String("format", "", "comma-separated formats (default: all)")
	allowSkip := fs.Bool("allow-skip", false, "skipped cases do not fail the verdict")
	allowIncomplete := fs.Bool("allow-incomplete", false, "exit 0 when the verdict is incomplete (it still says incomplete)")
	lpWidths := fs.String("lp-widths", "128,256", "lavapipe vector widths, one child process each (\"\": this process only)")
	resident := fs.Bool("resident", true, "also check each Vulkan device's device-resident operations (backend vulkan-resident)")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	pos, err := parseArgs(v, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("conformance takes no arguments")
	}
	switch *backend {
	case "all", "cpu", "vulkan":
	default:
		return usagef("--backend must be all, cpu or vulkan")
	}
	knownFormats, knownCats, err := conformance.CorpusNames()
	if err != nil {
		return err
	}
	for _, x := range splitList(*formats) {
		if !slices.Contains(knownFormats, x) {
			return usagef("--format: no format %q in the corpus (have %s)", x, strings.Join(knownFormats, ", "))
		}
	}
	for _, x := range splitList(*cats) {
		if !slices.Contains(knownCats, x) {
			return usagef("--category: no category %q in the corpus (have %s)", x, strings.Join(knownCats, ", "))
		}
	}
	widthsSet := false
	fs.Visit(func(f *flag.Flag) { widthsSet = widthsSet || f.Name == "lp-widths" })
	var widths []int
	for _, w := range splitList(*lpWidths) {
		n, err := strconv.Atoi(w)
		if err != nil || n <= 0 {
			return usagef("--lp-widths: %q is not a width in bits", w)
		}
		widths = append(widths, n)
	}
	if os.Getenv(envConformanceChild) == "1" || (!widthsSet && os.Getenv("LP_NATIVE_VECTOR_WIDTH") != "") {
		widths = nil
	}

	logf := func(format string, a ...any) {
		if !*quiet {
			fmt.Fprintf(os.Stderr, "vkzip: conformance: "+format+"\n", a...)
		}
	}
	start := time.Now()
	lister := &vkdevices.Lister{}
	o := conformance.Options{Select: conformance.Selection{Backend: *backend, Device: *device, NoResident: !*resident,
		Lister: lister},
		Formats: splitList(*formats), Categories: splitList(*cats), AllowSkip: *allowSkip,
		Version: buildVersion().Version, Log: logf}

	// Lavapipe devices go to child processes, one per vector width.
	var lavapipes []conformance.DeviceInfo
	if len(widths) > 0 && *backend != "cpu" {
		if devs, err := lister.Devices(); err == nil {
			sel := devs
			if *device != "" {
				sel = nil // an unknown device is this process's error to report
				if d, err := lister.Select(devs, *device); err == nil {
					sel = []conformance.DeviceInfo{d}
				}
			}
			for _, d := range sel {
				if d.Usable && conformance.IsLavapipe(d) {
					lavapipes = append(lavapipes, d)
				}
			}
		}
		o.Select.SkipLavapipe = len(lavapipes) > 0
	}
	// The children run concurrently with this process and each other: a cold run is mostly lavapipe compiling
	// kernels, one thread each.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type childRun struct {
		rep *conformance.Report
		err error
	}
	var runs []chan childRun
	for _, d := range lavapipes {
		for _, w := range widths {
			ch := make(chan childRun, 1)
			runs = append(runs, ch)
			go func() {
				r, err := runLavapipeChild(cctx, d, w, o, *quiet)
				ch <- childRun{r, err}
			}()
		}
	}
	// This process runs the rest (possibly nothing: the report still carries the build and the corpus).
	rep, err := conformance.Run(ctx, o)
	if err != nil {
		cancel()
		for _, ch := range runs {
			<-ch
		}
		return err
	}
	var childErr error
	for _, ch := range runs {
		c := <-ch
		if c.err != nil {
			childErr = errors.Join(childErr, c.err)
			continue
		}
		rep.Merge(c.rep)
	}
	if childErr != nil {
		return childErr
	}
	rep.Seconds = math.Round(time.Since(start).Seconds()*1000) / 1000

	if *out != "" {
		var b bytes.Buffer
		if err := rep.WriteJSON(&b); err != nil {
			return err
		}
		if err := writeOutput(*out, b.Bytes()); err != nil {
			return err
		}
	}
	if *asJSON {
		err = rep.WriteJSON(os.Stdout)
	} else {
		err = rep.WriteTable(os.Stdout)
	}
	if err != nil {
		return err
	}
	switch {
	case rep.Passed():
		return nil
	case rep.Incomplete() && *allowIncomplete:
		if !*quiet {
			fmt.Fprintf(os.Stderr, "vkzip: conformance: verdict INCOMPLETE, exit 0 as --allow-incomplete asks\n")
		}
		return nil
	case rep.Incomplete():
		return fmt.Errorf("INCOMPLETE (not a pass; --allow-incomplete to exit 0): %s", strings.Join(rep.Reasons, "; "))
	default:
		return fmt.Errorf("FAIL: %s", strings.Join(rep.Reasons, "; "))
	}
}

// runLavapipeChild runs this binary again for one lavapipe device at one vector width and reads its report.
func runLavapipeChild(ctx context.Context, d conformance.DeviceInfo, width int, o conformance.Options, quiet bool) (*conformance.Report, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("lavapipe at %d bits: cannot re-run this binary: %w", width, err)
	}
	dir, err := os.MkdirTemp("", "vkzip-conformance-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "report.json")
	args := []string{"conformance", "--backend", "vulkan", "--device", strconv.Itoa(d.Index), "--lp-widths", "",
		"--out", out, "--json", "--quiet=" + strconv.FormatBool(quiet), "--allow-skip=" + strconv.FormatBool(o.AllowSkip),
		"--resident=" + strconv.FormatBool(!o.Select.NoResident)}
	if o.Formats != nil {
		args = append(args, "--format", strings.Join(o.Formats, ","))
	}
	if o.Categories != nil {
		args = append(args, "--category", strings.Join(o.Categories, ","))
	}
	if !quiet {
		fmt.Fprintf(os.Stderr, "vkzip: conformance: %s at LP_NATIVE_VECTOR_WIDTH=%d in a child process\n", d.Name, width)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("LP_NATIVE_VECTOR_WIDTH=%d", width), envConformanceChild+"=1")
	cmd.Stdout = nil // the report comes through --out
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if !quiet {
		cmd.Stderr = os.Stderr
	}
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("lavapipe at %d bits: the child process wrote no report (%v): %s", width, runErr,
			oneLine(stderr.String()))
	}
	rep, err := conformance.ReadReport(b)
	if err != nil {
		return nil, fmt.Errorf("lavapipe at %d bits: %w", width, err)
	}
	for _, dev := range rep.Devices {
		if dev.LPVectorWidth != width {
			return nil, fmt.Errorf("lavapipe at %d bits: the child ran %s at %d bits", width, dev.Name, dev.LPVectorWidth)
		}
	}
	return rep, nil
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
