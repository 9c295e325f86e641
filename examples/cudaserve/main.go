//go:build unix

// Command cudaserve is the Go side of examples/cuda_client.py: it opens the
// Vulkan device, exports shared buffers and timeline semaphores over a Unix
// socket (cudabridge's handshake) and encodes/decodes on the client's
// requests, ordered by the semaphores the client's CUDA stream signals.
//
//	go build -o .devbin/cudaserve ./examples/cudaserve
//	python3 examples/cuda_client.py --server .devbin/cudaserve
//
// The client starts this program itself; run it by hand only to serve a
// client started elsewhere:
//
//	cudaserve --socket /tmp/vkzip-cuda.sock --values 16777216
//
// Exit status 0 when the client reported success.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/examples/cudavk"
)

func main() {
	socket := flag.String("socket", "/tmp/vkzip-cuda.sock", "Unix socket path to listen on")
	values := flag.Uint64("values", 1<<24, "capacity of the shared src/dst buffers in BF16 values")
	device := flag.String("device", "", "Vulkan device (index or name substring; default $VKZIP_DEVICE, else the best)")
	chunk := flag.Uint("chunk", 1<<layout.DefaultChunkShift, "chunk size in values (power of two, 1024..65536)")
	noCRC := flag.Bool("no-checksum", false, "encode without chunk checksums")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	probe := flag.Bool("probe", false, "write markers into the buffers (for clients that mmap lavapipe memory; tests only)")
	asJSON := flag.Bool("json", false, "print the server's report as JSON on stdout")
	flag.Parse()

	shift := uint(0)
	for s := uint(layout.MinChunkShift); s <= layout.MaxChunkShift; s++ {
		if *chunk == 1<<s {
			shift = s
		}
	}
	if shift == 0 {
		fmt.Fprintln(os.Stderr, "cudaserve: --chunk must be a power of two in [1024, 65536]")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()

	b, err := vkcodec.Open(vkcodec.Options{Device: *device})
	if err != nil {
		fmt.Fprintln(os.Stderr, "cudaserve:", err)
		os.Exit(1)
	}
	defer b.Close()
	fmt.Fprintf(os.Stderr, "cudaserve: Vulkan device %s; GPU-side ordering %v\n", b.Device(), cudavk.GPUOrdering())
	rep, err := cudavk.ListenSelfTest(ctx, b, *socket, cudavk.SelfTestOptions{
		Values: *values, Shift: shift, Checksums: !*noCRC, Probe: *probe, Log: os.Stderr})
	os.Remove(*socket)
	if *asJSON && rep != nil {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cudaserve:", err)
		os.Exit(1)
	}
}
