package gpulink

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/vkzip/vkzip/cudabridge"
	"github.com/vkzip/vkzip/cudabridge/nccl"
	"github.com/vkzip/vkzip/synth"
)

func validOptions() Options {
	return Options{Data: synth.KVLike(1<<16, 1), Codebook: synth.KVCodebook(), Checksums: true}
}

func TestOptions(t *testing.T) {
	o := validOptions()
	if err := o.fill(); err != nil {
		t.Fatal(err)
	}
	if o.ChunkBytes != DefaultChunkBytes || o.InFlight != DefaultInFlight || o.Repeat != 3 || len(o.Modes) != 2 {
		t.Errorf("defaults: %+v", o)
	}
	for name, mut := range map[string]func(*Options){
		"odd size":      func(o *Options) { o.Data = o.Data[:101] },
		"empty":         func(o *Options) { o.Data = nil },
		"chunk align":   func(o *Options) { o.ChunkBytes = 1000 },
		"chunk too big": func(o *Options) { o.ChunkBytes = 2 << 30 },
		"too many":      func(o *Options) { o.ChunkBytes = 256 },
		"in flight":     func(o *Options) { o.InFlight = -1 },
		"shift":         func(o *Options) { o.Shift = 30 },
		"mode":          func(o *Options) { o.Modes = []string{"zstd"} },
		"repeat":        func(o *Options) { o.Repeat = -2 },
	} {
		o := validOptions()
		mut(&o)
		if err := o.fill(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestNoLibraries: where neither the CUDA driver nor NCCL can be loaded, Bench and Check say both, with both
// sentinels, and leave the safety environment set.
func TestNoLibraries(t *testing.T) {
	t.Setenv(cudabridge.EnvLib, "/nonexistent/libcuda.so.1")
	t.Setenv(nccl.EnvLib, "/nonexistent/libnccl.so.2")
	t.Setenv("NCCL_NVLS_ENABLE", "1")
	_, err := Bench(context.Background(), validOptions())
	if !errors.Is(err, cudabridge.ErrNoCUDA) || !errors.Is(err, nccl.ErrNoNCCL) {
		t.Errorf("Bench without libraries: %v", err)
	}
	if os.Getenv("NCCL_NVLS_ENABLE") != "0" {
		t.Error("NCCL_NVLS_ENABLE not forced to 0")
	}
	_, err = Check(context.Background(), LinkOptions{}, 0)
	if !errors.Is(err, cudabridge.ErrNoCUDA) || !errors.Is(err, nccl.ErrNoNCCL) {
		t.Errorf("Check without libraries: %v", err)
	}
}

// TestOnTwoGPUs runs Check and a small Bench on the GPU machine (VKZIP_REQUIRE_NCCL=1 there; skipped elsewhere).
func TestOnTwoGPUs(t *testing.T) {
	if os.Getenv(nccl.EnvLib) == "" && os.Getenv("VKZIP_REQUIRE_NCCL") != "1" {
		t.Skip("no NCCL here (set VKZIP_NCCL_LIB, and VKZIP_REQUIRE_NCCL=1 to require it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := Check(ctx, LinkOptions{Log: t.Logf}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("check: %+v", c)
	o := validOptions()
	o.Data = synth.KVLike(4<<20, 2) // 8 MiB
	o.ChunkBytes, o.InFlight, o.Repeat, o.Warmup = 1<<20+4096, 3, 2, 1
	o.Log, o.Timeout = t.Logf, 30*time.Second
	r, err := Bench(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if !r.BitExact || r.Ratio < 1.1 || r.Chunks != 8 {
		t.Errorf("bench: %+v", r)
	}
	t.Logf("raw %.3f ms, vkzip %.3f ms, ratio %.4f", r.RawSeconds*1e3, r.CompressedSeconds*1e3, r.Ratio)
}
