// Command vkzip compresses BF16 LLM KV caches losslessly (SplitZip-4, see docs/FORMAT.md) and restores them byte
// for byte, on the CPU or on a GPU backend.
//
// Every verb parses its own flags (package flag, one FlagSet per verb; -flag and --flag are the same). Failures
// print one line "vkzip: VERB: message" on stderr and exit 1; usage errors exit 2; an unexpected panic exits 3.
// With --json a failure is instead a JSON object {"error": ..., "class": ...} on stdout (docs/JSON.md), with
// the same exit codes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
)

// verb is one subcommand: its help text and what runs it.
type verb struct {
	name     string
	args     string // synopsis after "vkzip NAME"
	summary  string // one line, for the verb list
	about    string // paragraph(s) of the verb's --help
	examples string
	run      func(ctx context.Context, v *verb, args []string) error
}

var verbs []*verb

func init() {
	// Assigned here, not in the declaration: the verbs' run functions print usage from this table.
	verbs = []*verb{calibrateVerb, encodeVerb, decodeVerb, testVerb, inspectVerb, formatsVerb, demoVerb, benchVerb, sendVerb, recvVerb, transferBenchVerb, devicesVerb, conformanceVerb, versionVerb}
}

func findVerb(name string) *verb {
	for _, v := range verbs {
		if v.name == name {
			return v
		}
	}
	return nil
}

// Exit codes.
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitInternal = 3
)

// usageError is a mistake in the command line; it exits 2 rather than 1.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// errHelp means the verb printed its help as asked: exit 0.
var errHelp = errors.New("help shown")

// errReported means the verb has already printed its failures (one line each, for a command of several inputs):
// exit 1 with nothing more on stderr.
var errReported = errors.New("failures reported")

func main() {
	stop := startProfile()
	code := run(os.Args[1:])
	stop()
	os.Exit(code)
}

// startProfile writes a CPU profile of the whole command to $VKZIP_CPUPROFILE when it is set: a diagnostic for
// runs on machines without Go (the GPU machine), read afterwards with `go tool pprof vkzip FILE`.
func startProfile() (stop func()) {
	path := os.Getenv("VKZIP_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "vkzip: VKZIP_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// run executes one command line and returns the exit code.
func run(args []string) (code int) {
	verbName := ""
	defer func() {
		// A panic is a bug, never an answer to bad input: say so in one line instead of a stack trace. (Panics
		// on other goroutines cannot be caught here; the codec and tensorfile never panic on bad input.)
		if r := recover(); r != nil {
			msg := fmt.Sprintf("internal error: %s (this is a bug in vkzip; please report it)", oneLine(fmt.Sprint(r)))
			printFailure(verbName, "", msg, errInternal)
			code = exitInternal
		}
	}()

	if len(args) == 0 {
		printVerbs(os.Stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && name == "help" {
			v := findVerb(args[1])
			if v == nil {
				fmt.Fprintf(os.Stderr, "vkzip: help: unknown verb %q (run 'vkzip help')\n", args[1])
				return exitUsage
			}
			// The verb's own --help: its flags are defined in one place, its run function.
			_ = v.run(context.Background(), v, []string{"--help"})
			return exitOK
		}
		printVerbs(os.Stdout)
		return exitOK
	case "-version", "--version":
		name = "version"
	}
	v := findVerb(name)
	if v == nil {
		fmt.Fprintf(os.Stderr, "vkzip: unknown verb %q (run 'vkzip help')\n", name)
		return exitUsage
	}
	verbName = v.name
	jsonErrors = wantsJSON(args[1:])

	// Ctrl-C cancels the codec call, so the deferred clean-up removes temporary files before exit.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal, restore the default handling: a second Ctrl-C kills at once.
		<-ctx.Done()
		stop()
	}()

	err := v.run(ctx, v, args[1:])
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		return exitOK
	case errors.Is(err, errReported):
		return exitFailure
	case errors.As(err, &ue):
		printFailure(v.name, "", fmt.Sprintf("%s (see 'vkzip %s --help')", oneLine(ue.msg), v.name), err)
		return exitUsage
	case errors.Is(err, context.Canceled):
		printFailure(v.name, "", "interrupted", err)
		return exitFailure
	default:
		printFailure(v.name, "", errMessage(err), err)
		return exitFailure
	}
}

// errMessage is err as one line, without the package prefixes ("vkzip: ", "tensorfile: ", "calib: ") that the
// libraries' errors start with: the CLI's line names the verb instead.
func errMessage(err error) string {
	s := err.Error()
	for _, p := range []string{"vkzip: ", "tensorfile: ", "calib: "} {
		s = strings.TrimPrefix(s, p)
		s = strings.ReplaceAll(s, ": "+p, ": ") // after a path prefix: "cb.json: calib: ..."
	}
	return oneLine(s)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

func printVerbs(w io.Writer) {
	fmt.Fprint(w, `vkzip: lossless compression of LLM KV caches (BF16, FP8, FP16, FP32), on the CPU or any Vulkan GPU.

Usage: vkzip VERB [flags] [arguments]

Verbs:
`)
	width := 0
	for _, v := range verbs {
		width = max(width, len(v.name))
	}
	for _, v := range verbs {
		fmt.Fprintf(w, "  %-*s  %s\n", width, v.name, v.summary)
	}
	fmt.Fprint(w, `
Run 'vkzip VERB --help' (or 'vkzip help VERB') for a verb's flags and examples. Flags may be written -flag or
--flag, before or after the arguments; '-' as a file name means stdin or stdout.

Quick start:
  vkzip calibrate -o cb.json calib.safetensors
  vkzip encode --codebook cb.json kv.safetensors          # writes kv.safetensors.vkz
  vkzip test kv.safetensors.vkz                           # checks the payload, writes nothing
  vkzip decode -o kv2.safetensors kv.safetensors.vkz
`)
}

// printUsage writes a verb's help: synopsis, description, flags and examples.
func printUsage(w io.Writer, v *verb, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: vkzip %s %s\n\n%s\n", v.name, v.args, strings.TrimSpace(v.about))
	var hasFlags bool
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprintf(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if v.examples != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(v.examples, "\n"))
	}
}

// newFlags makes a verb's FlagSet. Its own output is discarded: parse errors come back as usage errors, and
// --help prints the verb's full help on stdout.
func newFlags(v *verb) *flag.FlagSet {
	fs := flag.NewFlagSet(v.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseArgs parses flags given before, between or after the positional arguments (package flag alone stops at
// the first positional one) and returns the positional arguments. After "--" everything is positional.
func parseArgs(v *verb, fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printUsage(os.Stdout, v, fs)
				return nil, errHelp
			}
			return nil, usagef("%v", err)
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}
