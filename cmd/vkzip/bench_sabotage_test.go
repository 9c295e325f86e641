package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/synth"
	"github.com/vkzip/vkzip/vk"
)

// The bench's checks against broken codecs: the bench's own code path (flags, buffers, timing loop, verdict, exit
// error) with its operations wrapped by a saboteur. Each broken codec must give bit_exact false in the printed
// report and an error (exit 1); the honest wrapper must pass, so the injection point itself is known to work.

const (
	sabWarm  = 2
	sabIters = 3
)

// saboteur breaks one thing of the operations it wraps; it counts the calls to know the iteration.
type saboteur struct {
	benchCodec
	t                *testing.T
	mode             string
	encodes, decodes int
}

// flipByte flips bit 0 of the byte at the middle of the body ("body", n its length) or of the output ("out") of
// the wrapped operations, in whatever memory they keep it.
func (s *saboteur) flipByte(ctx context.Context, which string, n uint64) {
	var cpu *cpuBenchOps
	switch o := s.benchCodec.(type) {
	case *cpuBenchOps:
		cpu = o
	case *vkBenchOps:
		buf, off := o.out, o.n/2
		if which == "body" {
			buf, off = o.body, n/2
		}
		b := []byte{0}
		require.NoError(s.t, o.dev.Download(ctx, b, buf, off))
		b[0] ^= 1
		require.NoError(s.t, o.dev.Upload(ctx, buf, off, b))
		return
	default:
		s.t.Fatalf("no saboteur for %T", o)
	}
	if which == "body" {
		cpu.body[n/2] ^= 1
	} else {
		cpu.out[len(cpu.out)/2] ^= 1
	}
}

func (s *saboteur) Encode(ctx context.Context) (uint64, time.Duration, error) {
	i := s.encodes
	s.encodes++
	n, d, err := s.benchCodec.Encode(ctx)
	if err == nil && s.mode == "encode wrong in one timed iteration" && i == sabWarm+1 {
		s.flipByte(ctx, "body", n)
	}
	return n, d, err
}

func (s *saboteur) Decode(ctx context.Context) (time.Duration, error) {
	i := s.decodes
	s.decodes++
	switch s.mode {
	case "decode writes nothing":
		return 0, nil
	case "decode right only in warm-up":
		if i >= sabWarm {
			return 0, nil
		}
	}
	d, err := s.benchCodec.Decode(ctx)
	if err == nil && s.mode == "decode wrong in the last iteration" && i == sabWarm+sabIters-1 {
		s.flipByte(ctx, "out", 0)
	}
	return d, err
}

var sabotages = []string{
	"decode writes nothing",
	"decode right only in warm-up",
	"decode wrong in the last iteration",
	"encode wrong in one timed iteration",
}

// benchWith runs the bench verb with its operations wrapped per mode ("" is the honest wrapper) and returns the
// report and the verb's error.
func benchWith(t *testing.T, backend, format, mode string) (benchOut, *saboteur, error) {
	t.Helper()
	var sab *saboteur
	wrap := func(ops benchCodec) benchCodec {
		sab = &saboteur{benchCodec: ops, t: t, mode: mode}
		return sab
	}
	var w bytes.Buffer
	err := benchMain(context.Background(), benchVerb, []string{"--backend", backend, "--format", format, "--size",
		"256KiB", "--chunk", "16384", "--iters", fmt.Sprint(sabIters), "--warmup", fmt.Sprint(sabWarm),
		"--latency=false", "--json"}, &w, wrap)
	var ue *usageError
	require.False(t, errors.As(err, &ue), "%v", err)
	var rep benchReport
	require.NoError(t, json.Unmarshal(w.Bytes(), &rep), "the report is printed whatever the verdict: %q (%v)", w.String(), err)
	require.Len(t, rep.Results, 1, w.String())
	out := rep.Results[0]
	require.NotNil(t, sab, "the wrapper was not used")
	return out, sab, err
}

func testSabotage(t *testing.T, backend, format string) {
	out, sab, err := benchWith(t, backend, format, "")
	require.NoError(t, err)
	assert.True(t, out.BitExact)
	assert.True(t, out.MatchesCPU)
	assert.Empty(t, out.CheckFailure)
	assert.Equal(t, sabWarm+sabIters, out.CheckedIters)
	assert.Equal(t, sabWarm+sabIters, sab.decodes, "the loop runs every iteration through the wrapper")
	for _, mode := range sabotages {
		t.Run(mode, func(t *testing.T) {
			out, _, err := benchWith(t, backend, format, mode)
			require.Error(t, err, "a failed check must make the bench exit 1")
			assert.Contains(t, err.Error(), "not bit-exact")
			assert.False(t, out.BitExact)
			assert.NotEmpty(t, out.CheckFailure)
			t.Logf("%s: %s", mode, out.CheckFailure)
			if mode == "encode wrong in one timed iteration" {
				assert.False(t, out.MatchesCPU, "the wrong body is compared with the reference")
				assert.Contains(t, out.CheckFailure, fmt.Sprintf("iteration %d of", sabWarm+2))
			} else {
				assert.True(t, out.MatchesCPU, "the encoder was right: only the output is wrong")
			}
			if mode == "decode wrong in the last iteration" {
				assert.Contains(t, out.CheckFailure, fmt.Sprintf("iteration %d of %d", sabWarm+sabIters, sabWarm+sabIters))
			}
		})
	}
}

func TestBenchSabotageCPU(t *testing.T) {
	testSabotage(t, "cpu", "splitzip4")
}

// TestBenchSabotageVulkan runs the device-resident operations (and, for a format without them, the host path).
func TestBenchSabotageVulkan(t *testing.T) {
	needVulkan(t)
	t.Run("resident", func(t *testing.T) {
		testSabotage(t, "vulkan", "splitzip4")
		out, _, err := benchWith(t, "vulkan", "splitzip4", "")
		require.NoError(t, err)
		assert.Equal(t, "resident", out.Path)
	})
	t.Run("host", func(t *testing.T) {
		// Every coded format has device-resident operations: the host path runs through benchVulkanHost itself.
		b, err := vkcodec.Open(vkcodec.Options{})
		require.NoError(t, err)
		defer b.Close()
		src := synth.KVLike(1<<17, 1)
		cb := synth.KVCodebook()
		for _, mode := range append([]string{""}, sabotages...) {
			ref := []codec.EncodeJob{{Format: layout.FormatSplitZip4, Src: src, N: 1 << 17, Shift: 14, Codebook: &cb,
				Checksums: true, Dst: make([]byte, layout.SZ4{N: 1 << 17, Shift: 14}.MaxBodySize())}}
			out := benchOut{Format: "splitzip4", RawBytes: int64(len(src)), Iters: sabIters, Warmup: sabWarm}
			err := benchVulkanHost(context.Background(), b, ref, src, &out, func(ops benchCodec) benchCodec {
				return &saboteur{benchCodec: ops, t: t, mode: mode}
			})
			require.NoError(t, err, mode)
			assert.Equal(t, "host", out.Path)
			assert.Equal(t, mode == "", out.BitExact, "%q: %s", mode, out.CheckFailure)
			assert.Equal(t, mode != "encode wrong in one timed iteration", out.MatchesCPU, mode)
		}
	})
}

// TestBenchNoTuningFlags: the kernels' tuning and profiling flags belong to vkzip-lab; vkzip bench refuses them as
// usage errors before it measures anything.
func TestBenchNoTuningFlags(t *testing.T) {
	for _, f := range []string{"--wg=64", "--repl=2", "--groups=3", "--unroll=2", "--profile=64", "--copy-shape=2:2"} {
		r := vkz(t, t.TempDir(), nil, "bench", "--backend", "cpu", "--size", "64KiB", "--iters", "1", f)
		assert.Equal(t, exitUsage, r.code, "%s: %s", f, r.stderr)
		assert.Empty(t, r.stdout, f)
	}
}

// TestBenchCacheWarning: a working set within the cache warns, one above it does not, an unknown cache says so.
func TestBenchCacheWarning(t *testing.T) {
	var o benchOut
	setCache(&o, 50<<20, "H100 L2", 48<<20)
	assert.Contains(t, o.CacheWarning, "fits in the last-level cache")
	o = benchOut{}
	setCache(&o, 50<<20, "H100 L2", 51<<20)
	assert.Empty(t, o.CacheWarning)
	assert.EqualValues(t, 50<<20, o.LLCBytes)
	o = benchOut{}
	setCache(&o, 0, "unknown for X", 1<<30)
	assert.Contains(t, o.CacheWarning, "unknown")
	assert.Zero(t, o.LLCBytes)
}

// TestBenchDeviceLLC: the table by PCI id and by name, a GH200 not taken for an H200, a CPU device's host L3 from sysfs.
func TestBenchDeviceLLC(t *testing.T) {
	n, _ := deviceLLC(vk.DeviceInfo{Name: "NVIDIA Graphics Device", VendorID: pciNVIDIA, DeviceID: 0x2330})
	assert.EqualValues(t, 50<<20, n)
	n, _ = deviceLLC(vk.DeviceInfo{Name: "NVIDIA H200", VendorID: pciNVIDIA, DeviceID: 0xFFFF})
	assert.EqualValues(t, 50<<20, n)
	n, _ = deviceLLC(vk.DeviceInfo{Name: "NVIDIA A100-SXM4-80GB", VendorID: pciNVIDIA})
	assert.EqualValues(t, 40<<20, n)
	n, what := deviceLLC(vk.DeviceInfo{Name: "NVIDIA GH200 480GB", VendorID: pciNVIDIA, DeviceID: 0xFFFF})
	assert.Zero(t, n)
	assert.Contains(t, what, "unknown")

	dir := t.TempDir()
	for i, c := range []struct{ level, size string }{{"1", "48K"}, {"2", "2048K"}, {"3", "32768K"}} {
		d := filepath.Join(dir, fmt.Sprintf("index%d", i))
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "level"), []byte(c.level+"\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(d, "size"), []byte(c.size+"\n"), 0o644))
	}
	old := sysCacheDir
	t.Cleanup(func() { sysCacheDir = old })
	sysCacheDir = dir
	n, _ = deviceLLC(vk.DeviceInfo{Name: "llvmpipe (LLVM 15.0.6, 256 bits)", Type: vk.DeviceTypeCPU})
	assert.EqualValues(t, 32<<20, n)
	sysCacheDir = filepath.Join(dir, "none")
	n, what = hostL3()
	assert.Zero(t, n)
	assert.Contains(t, what, "unknown")
}

// TestBenchLatencyWarmCold: the 1 MiB latency is reported warm and cold (after its eviction copy), both checked,
// from a --size below 1 MiB too (the tensor is the data tiled).
func TestBenchLatencyWarmCold(t *testing.T) {
	if testing.Short() {
		t.Skip("280 runs of a 1 MiB tensor: slow on a CPU Vulkan device")
	}
	needVulkan(t)
	r := vkz(t, t.TempDir(), nil, "bench", "--backend", "vulkan", "--size", "256KiB", "--iters", "1", "--warmup", "0",
		"--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	out := oneBench(t, r.stdout)
	assert.True(t, out.BitExact && out.MatchesCPU, out.CheckFailure)
	require.NotNil(t, out.Latency1MiBUs)
	require.NotNil(t, out.Latency1MiBColdUs)
	assert.Positive(t, out.Latency1MiBUs.Median)
	assert.Positive(t, out.Latency1MiBColdUs.Median)
	assert.Len(t, out.Latency1MiBColdGPUUs, 2)
	assert.GreaterOrEqual(t, out.LatencyEvictBytes, uint64(16<<20))
	assert.Contains(t, r.stderr, "warning", "the working set's cache warning (or its size unknown) is on stderr")
}
