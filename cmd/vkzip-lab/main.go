// Command vkzip-lab is the tuning lab of the Vulkan backend. Its one verb, bench, times the device-resident encode
// and decode of one format with the kernels' tuning knobs (internal/vktune) set from flags, and checks every
// iteration's body against the Go reference codec and its decoded values against the input. The product's
// `vkzip bench` measures the shipped configuration; this command compares variants on one device.
//
//	vkzip-lab bench [--format F] [--size S] [--wg N --repl N --groups N --unroll N ...] [--copy-shape R:W] [--json]
//
// Knobs change speed, never bytes: a variant whose round trip differs from the reference is a bug, reported and
// exit status 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// errUsage marks command-line mistakes (exit status 2).
var errUsage = errors.New("usage")

func usagef(f string, a ...any) error { return fmt.Errorf("%w: "+f, append([]any{errUsage}, a...)...) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "vkzip-lab:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "vkzip-lab:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, "usage: vkzip-lab bench [flags]   (vkzip-lab bench --help lists them)")
		if len(args) == 0 {
			return usagef("no verb")
		}
		return nil
	}
	switch args[0] {
	case "bench":
		return benchMain(ctx, args[1:], stdout, stderr)
	}
	return usagef("unknown verb %q (want bench)", args[0])
}
