//go:build unix

package cudavk

// Tests that need the NVIDIA driver and an NVIDIA Vulkan device. They skip
// (with the reason) elsewhere, and fail instead with VKZIP_REQUIRE_CUDA=1.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/cudabridge"
	"github.com/vkzip/vkzip/synth"
	"github.com/vkzip/vkzip/vk"
)

// envRequireCUDA makes a missing CUDA driver a test failure instead of a
// skip (as in package cudabridge's tests).
const envRequireCUDA = "VKZIP_REQUIRE_CUDA"

type cudaEnv struct {
	d   *cudabridge.Driver
	b   *vkcodec.Backend
	dev *vk.Device
	c   *cudabridge.Context
}

func openCUDA(t *testing.T) *cudaEnv {
	t.Helper()
	required := os.Getenv(envRequireCUDA) == "1"
	d, err := cudabridge.Load()
	if err != nil {
		if required {
			t.Fatalf("%s=1: %v", envRequireCUDA, err)
		}
		t.Skipf("no CUDA driver: %v", err)
	}
	b := openBackend(t)
	c, err := d.OpenForVulkan(b.Info())
	if err != nil {
		if required || !errors.Is(err, cudabridge.ErrNoDevice) {
			t.Fatalf("OpenForVulkan(%s): %v", b.Info().Name, err)
		}
		t.Skipf("the Vulkan device is not a CUDA device: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	f := b.VK().Features()
	if !f.ExternalMemoryFD || !f.ExternalSemaphoreFD || !f.TimelineSemaphore {
		t.Fatalf("NVIDIA Vulkan device without external memory/semaphore fds or timelines: %+v", f)
	}
	t.Logf("CUDA %s (%s); device %s; Vulkan %s; GPU ordering %v", d.VersionString(), d.Path(), c.Info(),
		b.Device(), GPUOrdering())
	return &cudaEnv{d: d, b: b, dev: b.VK(), c: c}
}

func pattern(n int, seed byte) []byte {
	p := make([]byte, n)
	x := uint32(seed) | 1
	for i := range p {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		p[i] = byte(x)
	}
	return p
}

func TestCUDADevices(t *testing.T) {
	e := openCUDA(t)
	devs, err := e.d.Devices()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		t.Logf("CUDA device %s: VMM %v, POSIX fd %v, timeline semaphores %v", d, d.VMM, d.POSIXFD, d.TimelineSemaphores)
	}
	if e.c.Info().UUID != e.b.Info().UUID {
		t.Fatal("UUID mismatch")
	}
	if _, err := e.d.Open(len(devs)); !errors.Is(err, cudabridge.ErrNoDevice) {
		t.Errorf("Open(out of range): %v", err)
	}
}

// Direction a: Vulkan memory imported into CUDA, written and read by both.
func TestCUDASharedBuffer(t *testing.T) {
	e := openCUDA(t)
	ctx := context.Background()
	const size = 3<<20 + 256
	sb, err := cudabridge.NewSharedBuffer(e.c, e.dev, size)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	t.Logf("shared buffer: %d bytes, allocation %d, CUDA address %#x", sb.Size, sb.VK.AllocationSize(), uint64(sb.Ptr))
	want := pattern(size, 1)
	if err := e.c.CopyFromHostUncounted(sb.Ptr, want); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, size)
	if err := e.dev.Download(ctx, got, sb.VK, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("Vulkan does not read what CUDA wrote")
	}
	want = pattern(size, 2)
	if err := e.dev.Upload(ctx, sb.VK, 0, want); err != nil {
		t.Fatal(err)
	}
	if err := e.c.CopyToHostUncounted(got, sb.Ptr); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("CUDA does not read what Vulkan wrote")
	}
}

// Direction b: a CUDA VMM allocation (POSIX fd) imported into Vulkan.
func TestCUDAVMMToVulkan(t *testing.T) {
	e := openCUDA(t)
	ctx := context.Background()
	g, err := e.c.VMMGranularity()
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.c.AllocShareable(5 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	t.Logf("VMM allocation: %d bytes (granularity %d) at %#x", a.Size(), g, uint64(a.Ptr()))
	want := pattern(int(a.Size()), 3)
	if err := e.c.CopyFromHostUncounted(a.Ptr(), want); err != nil {
		t.Fatal(err)
	}
	vb, err := cudabridge.ImportVMMToVulkan(e.dev, a, a.Size())
	if err != nil {
		t.Fatalf("ImportVMMToVulkan: %v", err)
	}
	defer vb.Close()
	got := make([]byte, a.Size())
	if err := e.dev.Download(ctx, got, vb, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("Vulkan does not read what CUDA wrote into its VMM allocation")
	}
	want = pattern(int(a.Size()), 4)
	if err := e.dev.Upload(ctx, vb, 0, want); err != nil {
		t.Fatal(err)
	}
	if err := e.c.CopyToHostUncounted(got, a.Ptr()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("CUDA does not read what Vulkan wrote into the VMM allocation")
	}
	// The fd also maps into CUDA again (what another process does).
	fd, err := a.ExportFD()
	if err != nil {
		t.Fatal(err)
	}
	b2, err := e.c.ImportShareable(fd, a.Size())
	cudabridge.CloseFDs([]int{fd})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if err := e.c.CopyToHostUncounted(got, b2.Ptr()); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("second mapping: %v", err)
	}
}

// The chain CUDA work → encode → decode → CUDA work with no host wait in
// between on the CUDA side: a long kernel, a write of the tensor, a signal;
// the encode waits on it (on the GPU where vkcodec supports it); CUDA
// waits for the decode and copies the result out.
func TestCUDASemaphoreChain(t *testing.T) {
	e := openCUDA(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 1 << 22
	kv := synth.KVLike(n, 7)
	cb := synth.KVCodebook()
	src, err := cudabridge.NewSharedBuffer(e.c, e.dev, 2*n)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := cudabridge.NewSharedBuffer(e.c, e.dev, 2*n)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	body, err := e.dev.NewBuffer(layout.SZ4{N: n, Shift: 16}.MaxBodySize(), vk.DeviceLocal)
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	sem, err := cudabridge.NewSharedSemaphore(e.c, e.dev, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sem.Close()
	in, err := e.c.Alloc(2 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := e.c.Alloc(2 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := e.c.CopyFromHostUncounted(in.Ptr(), kv); err != nil {
		t.Fatal(err)
	}
	st, err := e.c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	enc, err := e.b.PrepareEncode(ctx, vkcodec.EncodeSpec{
		Format: layout.FormatSplitZip4, Src: src.Range(), N: n, Shift: 16, Codebook: &cb, Checksums: true,
		Dst: vk.BufferRange{Buf: body},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()

	c0 := cudabridge.ReadCounters()
	t0 := time.Now()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.c.MemsetAsync(st, src.Ptr, 0x55, 2*n))   // what a premature encode would see
	must(e.c.MemsetAsync(st, dst.Ptr, 0x11, 2*n))   // what a missing decode would leave
	must(e.c.SpinAsync(st, 400_000_000))            // ≈ 0.2 s on an H200
	must(e.c.CopyAsync(st, src.Ptr, in.Ptr(), 2*n)) // the tensor arrives (after the spin)
	must(sem.CU.Signal(st, 1))
	must(sem.CU.Wait(st, 3))
	must(e.c.CopyAsync(st, out.Ptr(), dst.Ptr, 2*n))
	enqueued := time.Since(t0)
	if done, err := st.Done(); err != nil || done {
		t.Fatalf("the stream finished at once (%v, %v): the spin kernel did not run", done, err)
	}
	run, err := cudabridge.StartEncode(ctx, enc, []vk.SemaphoreValue{sem.At(1)}, []vk.SemaphoreValue{sem.At(2)})
	must(err)
	readyAtSubmit, _ := sem.VK.Value()
	bodyLen, err := run.Wait(ctx)
	must(err)
	encoded := time.Since(t0)
	dec, err := e.b.PrepareDecode(ctx, vkcodec.DecodeSpec{
		Format: layout.FormatSplitZip4, Body: vk.BufferRange{Buf: body}, BodyLen: bodyLen, N: n, Shift: 16,
		Codebook: &cb, Checksums: true, Dst: dst.Range(),
	})
	must(err)
	defer dec.Close()
	drun, err := cudabridge.StartDecode(ctx, dec, nil, []vk.SemaphoreValue{sem.At(3)})
	must(err)
	_, err = drun.Wait(ctx)
	must(err)
	must(st.Synchronize())
	total := time.Since(t0)
	delta := cudabridge.ReadCounters().Sub(c0)
	t.Logf("ordering %s; enqueue %v, encode done at %v (ready=%d at submit), chain done at %v; ratio %.3f; %+v",
		run.Ordering(), enqueued, encoded, readyAtSubmit, total, float64(2*n)/float64(bodyLen), delta)
	got := make([]byte, 2*n)
	must(e.c.CopyToHostUncounted(got, out.Ptr()))
	if !bytes.Equal(got, kv) {
		t.Fatal("decoded tensor differs")
	}
	if delta.HostStagedBytes != 0 || delta.DeviceCopyBytes != 4*n {
		t.Errorf("counters %+v: want no host staging, two counted device copies", delta)
	}
	if run.Ordering() == cudabridge.OrderingGPU && readyAtSubmit != 0 {
		t.Logf("note: the encode was queued after CUDA signalled (ready=%d)", readyAtSubmit)
	}
	if encoded < 100*time.Millisecond {
		t.Errorf("the encode finished after %v, before the 0.2 s CUDA kernel could have", encoded)
	}
}

func TestCUDABench(t *testing.T) {
	e := openCUDA(t)
	data := synth.KVLike(1<<22, 3)
	for _, src := range []string{SourceCUDA, SourceCopy, SourceHost} {
		r, err := Bench(context.Background(), e.b, BenchOptions{Source: src, Data: data, Shift: 16, Checksums: true,
			Codebook: synth.KVCodebook(), Iters: 5, Warmup: 1, Driver: e.d})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		t.Logf("%s: encode %.1f GB/s, decode %.1f GB/s, round trip %.1f GB/s, ordering %s, %+v, ratio %.3f",
			src, r.EncodeGBps, r.DecodeGBps, r.RoundTripGBps, r.Ordering, r.Counters, r.Ratio)
		if !r.BitExact {
			t.Errorf("%s: not bit-exact", src)
		}
		if (src == SourceHost) != (r.Counters.HostStagedBytes > 0) {
			t.Errorf("%s: host-staged bytes %d", src, r.Counters.HostStagedBytes)
		}
	}
}

func TestBenchWithoutCUDA(t *testing.T) {
	if _, err := cudabridge.Load(); err == nil {
		t.Skip("a CUDA driver is installed")
	}
	b := openBackend(t)
	_, err := Bench(context.Background(), b, BenchOptions{Source: SourceCUDA, Data: make([]byte, 64)})
	if !errors.Is(err, cudabridge.ErrNoCUDA) {
		t.Fatalf("Bench without a driver: %v, want cudabridge.ErrNoCUDA", err)
	}
	if _, err := Bench(context.Background(), b, BenchOptions{Source: "disk", Data: make([]byte, 64)}); !errors.Is(err, cudabridge.ErrInvalid) {
		t.Fatalf("bad source: %v", err)
	}
}
