package vkcodec

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/internal/vktune"
	"github.com/vkzip/vkzip/vk"
)

// soak reports whether VKZIP_SOAK=full asks for the long versions of these tests.
func soak() bool { return os.Getenv("VKZIP_SOAK") == "full" }

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestRobustBufferAccessDisabled(t *testing.T) {
	vb := openTest(t, Options{})
	// The kernels bound their own indices; the driver's robustness must not be what keeps them in bounds.
	require.False(t, vb.VK().RobustBufferAccess())
}

// classOf names the error class of err, "" for nil.
func classOf(err error) string {
	for _, c := range []error{codec.ErrCorrupt, codec.ErrChecksum, codec.ErrNonCanonical, codec.ErrTruncated,
		codec.ErrTooLarge, codec.ErrInvalidInput} {
		if errors.Is(err, c) {
			return c.Error()
		}
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return ""
}

// mutate damages a body in one of several ways: bit flips, random bytes, zeroed or copied ranges, table words.
func mutate(r *rand.Rand, body []byte, g layout.SZ4) []byte {
	kind := r.IntN(5)
	b := mutateBody(r, body, kind, g.TableOffset(), g.Chunks())
	if kind == 4 {
		if side := uint64(len(b)) - g.SideOffset(); side >= 8 {
			i := g.SideOffset() + 4*r.Uint64N(side/4)
			binary.LittleEndian.PutUint32(b[i:], r.Uint32()&0x00FFFFFF)
		} else {
			b[r.IntN(len(b))] ^= 0x80
		}
	}
	return b
}

// mutateBody returns a copy of body damaged in the way kind names, for the kinds every format shares: 0 bit flips,
// 1 a random byte, 2 a zeroed range, 3 a word of the chunk table (chunks entries at tableOff); a copy undamaged for
// other kinds, which the caller damages its own way.
func mutateBody(r *rand.Rand, body []byte, kind int, tableOff, chunks uint64) []byte {
	b := append([]byte{}, body...)
	switch kind {
	case 0:
		for i := 0; i < 1+r.IntN(3); i++ {
			b[r.IntN(len(b))] ^= 1 << r.IntN(8)
		}
	case 1:
		b[r.IntN(len(b))] = byte(r.Uint32())
	case 2:
		i := r.IntN(len(b))
		clear(b[i:min(len(b), i+1+r.IntN(64))])
	case 3:
		w := tableOff + r.Uint64N(chunks)*layout.ChunkEntrySize + uint64(4*r.IntN(3))
		binary.LittleEndian.PutUint32(b[w:], r.Uint32()>>(r.IntN(32)))
	}
	return b
}

// TestMutatedPayloadsOnDevice feeds damaged bodies, checksums off, straight to the decode kernel on device buffers
// (no host-side table check): each one must come back as an error of the reference's class, or decode; never
// crash, hang or lose the device. 1,000 mutations; 10,000 with VKZIP_SOAK=full; VKZIP_MUTATIONS overrides.
func TestMutatedPayloadsOnDevice(t *testing.T) {
	vb := openTest(t, Options{})
	dev := vb.VK()
	ctx := context.Background()
	count := mutationCount()
	r := rand.New(rand.NewPCG(31, 32))
	type sample struct {
		src  []byte
		body []byte
		g    layout.SZ4
	}
	var samples []sample
	for _, esc := range []float64{0.01, 0.2} { // coded chunks with escapes, and raw chunks
		n := 3*1024 + 77
		src := kvLike(r, n, esc)
		g := layout.SZ4{N: uint64(n), Shift: 10}
		jobs := []codec.EncodeJob{{Format: layout.FormatSplitZip4, Src: src, N: g.N, Shift: 10, Codebook: &testCB,
			Dst: make([]byte, g.MaxBodySize())}}
		require.NoError(t, codec.NewCPUBackend(1).Encode(ctx, jobs))
		samples = append(samples, sample{src, jobs[0].Out, g})
	}
	var classes = map[string]int{}
	for _, sm := range samples {
		in, err := dev.NewBuffer(uint64(len(sm.body))+16, vk.DeviceLocal)
		require.NoError(t, err)
		defer in.Close()
		out, err := dev.NewBuffer(2*sm.g.N+16, vk.DeviceLocal)
		require.NoError(t, err)
		defer out.Close()
		op, err := vb.PrepareDecode(ctx, DecodeSpec{
			Format: layout.FormatSplitZip4, Body: vk.BufferRange{Buf: in}, BodyLen: uint64(len(sm.body)), N: sm.g.N,
			Shift: sm.g.Shift, Codebook: &testCB, Checksums: false, Dst: vk.BufferRange{Buf: out},
		})
		require.NoError(t, err)
		defer op.Close()
		for i := 0; i < count/len(samples); i++ {
			bad := mutate(r, sm.body, sm.g)
			ref := []codec.DecodeJob{{Format: layout.FormatSplitZip4, Body: bad, N: sm.g.N, Shift: sm.g.Shift,
				Codebook: &testCB, Dst: make([]byte, 2*sm.g.N)}}
			runMutation(t, dev, op, in, out, ref, i, classes)
		}
	}
	requireMutationClasses(t, dev, count, classes)
}

// mutationCount is how many mutations the mutation tests run: 1,000; 10,000 with VKZIP_SOAK=full;
// VKZIP_MUTATIONS overrides.
func mutationCount() int {
	if soak() && os.Getenv("VKZIP_MUTATIONS") == "" {
		return 10000
	}
	return envInt("VKZIP_MUTATIONS", 1000)
}

// runMutation uploads the damaged body of ref (the reference's decode job) to in and decodes it with op into out:
// the kernel's verdict must be the reference's class, and a body that decodes must give the reference's values.
// classes counts the verdicts.
func runMutation(t *testing.T, dev *vk.Device, op *DecodeOp, in, out *vk.Buffer, ref []codec.DecodeJob, i int,
	classes map[string]int) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, dev.Upload(ctx, in, 0, ref[0].Body))
	gerr := op.Run(ctx)
	require.NoError(t, codec.NewCPUBackend(1).Decode(ctx, ref))
	require.Equal(t, classOf(ref[0].Err), classOf(gerr), "mutation %d: reference %v, kernel %v", i, ref[0].Err, gerr)
	if gerr == nil {
		got := make([]byte, len(ref[0].Dst))
		require.NoError(t, dev.Download(ctx, got, out, 0))
		require.Equal(t, ref[0].Dst, got, "mutation %d decodes differently", i)
	}
	classes[classOf(gerr)]++
}

// requireMutationClasses checks the end of a mutation test: the device is not lost, and mutations reached both the
// kernel's structural and its canonical checks.
func requireMutationClasses(t *testing.T, dev *vk.Device, count int, classes map[string]int) {
	t.Helper()
	require.False(t, dev.Lost())
	t.Logf("%d mutations through the kernel: %v", count, classes)
	require.Greater(t, classes[codec.ErrNonCanonical.Error()], 0, "some mutations must reach the kernel's canonical checks")
	require.Greater(t, classes[codec.ErrCorrupt.Error()], 0)
}

// TestBoundsClampedInDebug builds the decoder with DebugBounds, which decodes even chunks whose table is corrupt,
// and points a side offset far past the side section: the clamp counter shows the kernel bounding the index,
// and the run still ends cleanly with the corrupt verdict.
func TestBoundsClampedInDebug(t *testing.T) {
	vb := openTest(t, Options{Tune: &vktune.Params{DebugBounds: true}})
	dev := vb.VK()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(41, 42))
	n := 4096
	src := kvLike(r, n, 0.02)
	g := layout.SZ4{N: uint64(n), Shift: 10}
	jobs := []codec.EncodeJob{{Format: layout.FormatSplitZip4, Src: src, N: g.N, Shift: 10, Codebook: &testCB,
		Dst: make([]byte, g.MaxBodySize())}}
	require.NoError(t, codec.NewCPUBackend(1).Encode(ctx, jobs))
	body := append([]byte{}, jobs[0].Out...)
	binary.LittleEndian.PutUint32(body[g.TableOffset()+2*layout.ChunkEntrySize+4:], 1<<20) // chunk 2's side offset
	in, err := dev.NewBuffer(uint64(len(body)), vk.DeviceLocal)
	require.NoError(t, err)
	defer in.Close()
	out, err := dev.NewBuffer(2*g.N, vk.DeviceLocal)
	require.NoError(t, err)
	defer out.Close()
	require.NoError(t, dev.Upload(ctx, in, 0, body))
	op, err := vb.PrepareDecode(ctx, DecodeSpec{
		Format: layout.FormatSplitZip4, Body: vk.BufferRange{Buf: in}, BodyLen: uint64(len(body)), N: g.N,
		Shift: 10, Codebook: &testCB, Checksums: false, Dst: vk.BufferRange{Buf: out},
	})
	require.NoError(t, err)
	defer op.Close()
	err = op.Run(ctx)
	require.ErrorIs(t, err, codec.ErrCorrupt)
	require.Greater(t, op.Clamps(), uint32(0), "the out-of-range side offset must have been clamped")
	require.False(t, dev.Lost())
}

// TestDeviceLossIsTyped injects VK_ERROR_DEVICE_LOST at the vk boundary: the call fails with ErrDeviceLost, and a
// new backend opens and works afterwards.
func TestDeviceLossIsTyped(t *testing.T) {
	vb, err := Open(Options{})
	if err != nil {
		openTest(t, Options{}) // skips, or fails under VKZIP_REQUIRE_VULKAN=1
		return
	}
	src := kvLike(rand.New(rand.NewPCG(1, 1)), 5000, 0.01)
	g := layout.SZ4{N: 5000, Shift: 10}
	job := func() []codec.EncodeJob {
		return []codec.EncodeJob{{Format: layout.FormatSplitZip4, Src: src, N: 5000, Shift: 10, Codebook: &testCB,
			Checksums: true, Dst: make([]byte, g.MaxBodySize())}}
	}
	require.NoError(t, vb.Encode(context.Background(), job()))
	vb.VK().InjectFault(vk.ResultDeviceLost)
	err = vb.Encode(context.Background(), job())
	require.ErrorIs(t, err, codec.ErrDeviceLost)
	require.NoError(t, vb.Close())
	again := openTest(t, Options{})
	j := job()
	require.NoError(t, again.Encode(context.Background(), j))
}

// TestConcurrentMixed shares one backend between goroutines doing verified encodes and decodes; submissions must
// overlap (no global lock). A few seconds here; 64 goroutines × 60 s with VKZIP_SOAK=full.
func TestConcurrentMixed(t *testing.T) {
	vb := openTest(t, Options{})
	workers, dur := 8, 2*time.Second
	if soak() {
		workers, dur = 64, 60*time.Second
	}
	before := vb.VK().Stats()
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	var ops sync.Map
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			k := 0
			for time.Now().Before(deadline) {
				n := 1 + r.IntN(40000)
				shift := uint(10 + r.IntN(7))
				src := kvLike(r, n, []float64{0, 0.001, 0.3}[r.IntN(3)])
				g := layout.SZ4{N: uint64(n), Shift: shift}
				jobs := []codec.EncodeJob{{Format: layout.FormatSplitZip4, Src: src, N: g.N, Shift: shift, Codebook: &testCB,
					Checksums: r.IntN(2) == 0, Dst: make([]byte, g.MaxBodySize())}}
				if err := vb.Encode(context.Background(), jobs); err != nil {
					errs <- err
					return
				}
				dj := []codec.DecodeJob{{Format: layout.FormatSplitZip4, Body: jobs[0].Out, N: g.N, Shift: shift,
					Codebook: &testCB, Checksums: jobs[0].Checksums, Dst: make([]byte, 2*n)}}
				if err := vb.Decode(context.Background(), dj); err != nil || dj[0].Err != nil {
					errs <- errors.Join(err, dj[0].Err)
					return
				}
				if string(dj[0].Dst) != string(src) {
					errs <- errors.New("round trip differs")
					return
				}
				k++
			}
			ops.Store(w, k)
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	total := 0
	ops.Range(func(_, v any) bool { total += v.(int); return true })
	st := vb.VK().Stats()
	t.Logf("%d goroutines, %d verified round trips, %d submissions, at most %d in flight", workers, total,
		st.Submissions-before.Submissions, st.MaxInFlight)
	require.GreaterOrEqual(t, int64(st.MaxInFlight), int64(2), "submissions from different goroutines must overlap")
}

// rssBytes is the resident set size of this process.
func rssBytes(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm")
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// TestResourceHygiene runs many encode/decode cycles and opens and closes backends: live Vulkan objects return to
// their baseline and RSS stays flat. 300 cycles and 5 backends here; 10,000 and 50 with VKZIP_SOAK=full.
func TestResourceHygiene(t *testing.T) {
	cycles, opens := 300, 5
	if soak() {
		cycles, opens = 10000, 50
	}
	base := vk.LiveObjects()
	r := rand.New(rand.NewPCG(5, 5))
	src := kvLike(r, 20000, 0.001)
	g := layout.SZ4{N: 20000, Shift: 12}
	run := func(vb *Backend) {
		jobs := []codec.EncodeJob{{Format: layout.FormatSplitZip4, Src: src, N: g.N, Shift: 12, Codebook: &testCB,
			Checksums: true, Dst: make([]byte, g.MaxBodySize())}}
		require.NoError(t, vb.Encode(context.Background(), jobs))
		dj := []codec.DecodeJob{{Format: layout.FormatSplitZip4, Body: jobs[0].Out, N: g.N, Shift: 12, Codebook: &testCB,
			Checksums: true, Dst: make([]byte, 2*g.N)}}
		require.NoError(t, vb.Decode(context.Background(), dj))
		require.NoError(t, dj[0].Err)
	}
	vb := openTest(t, Options{})
	for i := 0; i < 20; i++ { // warm: pipelines, sessions
		run(vb)
	}
	runtime.GC()
	rss0, live0 := rssBytes(t), vb.VK().LiveObjects()
	for i := 0; i < cycles; i++ {
		run(vb)
	}
	runtime.GC()
	rss1 := rssBytes(t)
	require.Equal(t, live0, vb.VK().LiveObjects(), "Vulkan objects leaked by encode/decode cycles")
	require.Less(t, rss1, rss0+64<<20, "RSS grew from %d to %d over %d cycles", rss0, rss1, cycles)
	for i := 0; i < opens; i++ {
		b, err := Open(Options{})
		require.NoError(t, err)
		run(b)
		require.NoError(t, b.Close())
	}
	t.Logf("%d cycles: RSS %d -> %d MiB; %d backends opened and closed", cycles, rss0>>20, rss1>>20, opens)
	require.NoError(t, vb.Close())
	require.Equal(t, base, vk.LiveObjects(), "Vulkan objects leaked by opening and closing backends")
}

// TestMemoryBudget: calls larger than the budget run in slices, a tensor larger than it is refused clearly, and a
// cancelled context stops the work between slices.
func TestMemoryBudget(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	g := layout.SZ4{N: 30000, Shift: 12}
	budget := planBytes(g, 1<<40, true) * 2 // room for two tensors per submission
	vb := openTest(t, Options{MemoryBudget: budget})
	var jobs []codec.EncodeJob
	var srcs [][]byte
	for i := 0; i < 5; i++ {
		src := kvLike(r, int(g.N), 0.001)
		srcs = append(srcs, src)
		jobs = append(jobs, codec.EncodeJob{Format: layout.FormatSplitZip4, Src: src, N: g.N, Shift: 12,
			Codebook: &testCB, Checksums: true, Dst: make([]byte, g.MaxBodySize())})
	}
	require.NoError(t, vb.Encode(context.Background(), jobs[:1])) // warm: pipelines and their constant tables
	before := vb.VK().Stats().Submissions
	require.NoError(t, vb.Encode(context.Background(), jobs))
	require.Equal(t, uint64(3), vb.VK().Stats().Submissions-before, "5 tensors at 2 per slice: 3 submissions")
	for i := range jobs {
		dj := []codec.DecodeJob{{Format: layout.FormatSplitZip4, Body: jobs[i].Out, N: g.N, Shift: 12, Codebook: &testCB,
			Checksums: true, Dst: make([]byte, 2*g.N)}}
		require.NoError(t, vb.Decode(context.Background(), dj))
		require.Equal(t, srcs[i], dj[0].Dst)
	}
	big := layout.SZ4{N: 1 << 20, Shift: 12}
	err := vb.Encode(context.Background(), []codec.EncodeJob{{Format: layout.FormatSplitZip4,
		Src: make([]byte, 2*big.N), N: big.N, Shift: 12, Codebook: &testCB, Dst: make([]byte, big.MaxBodySize())}})
	require.ErrorIs(t, err, codec.ErrTooLarge)
	require.Contains(t, err.Error(), "budget")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, vb.Encode(ctx, jobs), context.Canceled)
}
