package vkcodec

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/vk"
)

// The memory a prepared operation's read-back words can live in. On lavapipe every mode runs: its one memory type
// is device-local and host-visible, and a backend told it is not unified takes the discrete device's paths.
var wordModes = []string{"unified", "discrete-mapped", "discrete-staged"}

// openWordMode opens a backend whose operations keep their read-back words as mode says: unified memory (host reset
// and read in place), a discrete device with host-visible device memory (the same for one tensor, staged for
// blocks), or one without (reset and copied by the command buffer, which resets the timestamp queries too).
func openWordMode(t testing.TB, mode string) *Backend {
	vb := openTest(t, Options{})
	if vb.info.Type != vk.DeviceTypeCPU && mode != "discrete-staged" {
		t.Skipf("%s: the device is discrete", mode)
	}
	switch mode {
	case "discrete-mapped":
		vb.unified = false
	case "discrete-staged":
		vb.unified = false
		noMappedWords, noHostQueryReset = true, true
		t.Cleanup(func() { noMappedWords, noHostQueryReset = false, false })
	}
	return vb
}

// residentPair is a prepared encode and decode of one tensor (or of blocks same-size tensors) between device
// buffers, with the sources uploaded.
type residentPair struct {
	enc  *EncodeOp
	dec  *DecodeOp
	srcs [][]byte
	want [][]byte // the reference bodies
	p    *blockPool
}

// asBlocks: one tensor is given as a block set too (block decodes take their lengths per run).
func newResidentPair(t *testing.T, vb *Backend, blocks int, asBlocks bool, n uint64, seed uint64) *residentPair {
	dev := vb.VK()
	ctx := context.Background()
	shift := uint(layout.DefaultChunkShift)
	r := rand.New(rand.NewPCG(seed, 1))
	rp := &residentPair{p: newBlockPool(t, dev, blocks, n, shift)}
	for i := range blocks {
		src := kvLike(r, int(n), []float64{0.001, 0.02, 0.6}[i%3])
		require.NoError(t, dev.Upload(ctx, rp.p.in, rp.p.ins(blocks)[i].Offset, src))
		want, _ := encodeBoth(t, vb, src, shift, true)
		rp.srcs, rp.want = append(rp.srcs, src), append(rp.want, want)
	}
	es := EncodeSpec{Format: layout.FormatSplitZip4, N: n, Shift: shift, Codebook: &testCB, Checksums: true}
	ds := DecodeSpec{Format: layout.FormatSplitZip4, N: n, Shift: shift, Codebook: &testCB, Checksums: true}
	asBlocks = asBlocks || blocks > 1
	if !asBlocks {
		es.Src, es.Dst = rp.p.ins(1)[0], rp.p.bodies(1)[0]
	} else {
		es.Blocks = Blocks(rp.p.ins(blocks), rp.p.bodies(blocks))
	}
	var err error
	rp.enc, err = vb.PrepareEncode(ctx, es)
	require.NoError(t, err)
	t.Cleanup(rp.enc.Close)
	if !asBlocks {
		ds.Body, ds.BodyLen, ds.Dst = rp.p.bodies(1)[0], uint64(len(rp.want[0])), rp.p.outs(1)[0]
	} else {
		ds.Blocks = Blocks(rp.p.bodies(blocks), rp.p.outs(blocks))
	}
	rp.dec, err = vb.PrepareDecode(ctx, ds)
	require.NoError(t, err)
	t.Cleanup(rp.dec.Close)
	if asBlocks {
		lens := make([]uint64, blocks)
		for i := range lens {
			lens[i] = uint64(len(rp.want[i]))
		}
		require.NoError(t, rp.dec.SetBodyLens(lens))
	}
	return rp
}

// poisonWords fills the read-back words the host can reach with garbage: a run must reset them itself.
func (rp *residentPair) poisonWords() {
	for _, l := range []loc{rp.enc.work, rp.dec.status} {
		b := l.bytes()
		for i := range b {
			b[i] = 0xA5
		}
	}
}

// check compares every block's body and decoded values with the reference (both buffers were poisoned before the
// runs that wrote them).
func (rp *residentPair) check(t *testing.T, dev *vk.Device, what string) {
	ctx := context.Background()
	blocks := len(rp.srcs)
	for i := range blocks {
		got := make([]byte, len(rp.want[i]))
		require.NoError(t, dev.Download(ctx, got, rp.p.body, rp.p.bodies(blocks)[i].Offset))
		require.True(t, string(got) == string(rp.want[i]), "%s: block %d body differs at %d", what, i,
			firstDiff(got, rp.want[i]))
		back := make([]byte, len(rp.srcs[i]))
		require.NoError(t, dev.Download(ctx, back, rp.p.out, rp.p.outs(blocks)[i].Offset))
		require.True(t, string(back) == string(rp.srcs[i]), "%s: block %d values differ at %d", what, i,
			firstDiff(back, rp.srcs[i]))
	}
}

func poisonBufs(t *testing.T, dev *vk.Device, bufs ...*vk.Buffer) {
	for _, b := range bufs {
		require.NoError(t, dev.Upload(context.Background(), b, 0, poisonBytes(int(b.Size()))))
	}
}

// steadyAllocs is the fewest allocations per call of f over rounds rounds of testing.AllocsPerRun(runs, f). An
// allocation of f's own recurs in every round; the Go runtime's one-off ones do not: a cgo call that blocks long
// (a slow device, the validation layers on a loaded machine) lets the scheduler start a thread, and its structures
// count as allocations of whichever round it falls in.
func steadyAllocs(rounds, runs int, f func()) float64 {
	least := testing.AllocsPerRun(runs, f)
	for range rounds - 1 {
		least = min(least, testing.AllocsPerRun(runs, f))
	}
	return least
}

func poisonBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xFF
	}
	return b
}

// TestResidentRunHotPath runs prepared encodes and decodes back to back in every read-back memory mode and checks
// what a run does: one submission, no command-buffer recording, no descriptor set, no host allocation, at most one
// sleeping wait; the words a run reads back are reset by the run whatever they held before it (the encode's totals
// accumulate and the decode's verdict flags stick otherwise); results match the reference.
func TestResidentRunHotPath(t *testing.T) {
	for _, mode := range wordModes {
		for _, c := range []struct {
			blocks   int
			asBlocks bool
		}{{1, false}, {1, true}, {3, true}} {
			blocks := c.blocks
			t.Run(fmt.Sprintf("%s/blocks=%d/%v", mode, blocks, c.asBlocks), func(t *testing.T) {
				vb := openWordMode(t, mode)
				dev := vb.VK()
				ctx := context.Background()
				rp := newResidentPair(t, vb, blocks, c.asBlocks, 3*(1<<14)+100, uint64(7+blocks))
				wantDirect := mode == "unified" || mode == "discrete-mapped" && blocks == 1
				require.Equal(t, wantDirect, rp.enc.direct, "encode words in place")
				require.Equal(t, wantDirect, rp.dec.direct, "decode words in place")
				run := func() {
					size, err := rp.enc.Run(ctx)
					require.NoError(t, err)
					require.Equal(t, uint64(len(rp.want[0])), size)
					if blocks > 1 {
						sizes := make([]uint64, blocks)
						require.NoError(t, rp.enc.BlockSizes(sizes))
						for i := range sizes {
							require.Equal(t, uint64(len(rp.want[i])), sizes[i], "block %d", i)
						}
					}
					require.NoError(t, rp.dec.Run(ctx))
				}
				for round := range 3 {
					poisonBufs(t, dev, rp.p.body, rp.p.out)
					if wantDirect && round > 0 {
						rp.poisonWords()
					}
					before := dev.Stats()
					run()
					d := statsDiff(dev.Stats(), before)
					require.Equal(t, uint64(2), d.Submissions, "one submission each")
					require.Zero(t, d.Recordings, "no recording")
					require.Zero(t, d.BindingSets, "no descriptor set")
					require.LessOrEqual(t, d.BlockingWaits, uint64(2), "at most one sleeping wait each")
					rp.check(t, dev, mode)
				}
				require.Positive(t, int64(rp.enc.GPUTime()))
				require.GreaterOrEqual(t, len(rp.enc.PassTimes()), 2, "sz4 encodes in two timed passes")
				require.Positive(t, int64(rp.dec.GPUTime()))
				sizes := make([]uint64, blocks)
				var hotErr error
				allocs := steadyAllocs(3, 5, func() {
					_, err := rp.enc.Run(ctx)
					if err == nil {
						err = rp.enc.BlockSizes(sizes)
					}
					if err == nil {
						err = rp.dec.Run(ctx)
					}
					hotErr = cmp.Or(hotErr, err)
				})
				require.NoError(t, hotErr)
				require.Zero(t, allocs, "allocations per encode + decode")

				// A damaged body fails; restored, the next run is valid again (the verdict was reset).
				bad := append([]byte{}, rp.want[blocks-1]...)
				bad[len(bad)/2] ^= 0x10
				off := rp.p.bodies(blocks)[blocks-1].Offset
				require.NoError(t, dev.Upload(ctx, rp.p.body, off, bad))
				require.Error(t, rp.dec.Run(ctx))
				require.NoError(t, dev.Upload(ctx, rp.p.body, off, rp.want[blocks-1]))
				require.NoError(t, rp.dec.Run(ctx))
				if c.asBlocks {
					require.NoError(t, rp.dec.Run(ctx), "the same lengths again, without SetBodyLens")
				}
			})
		}
	}
}

// TestResidentTimestampsOnDemand checks that a run's GPU time is read after its Finish, whatever comes between,
// and is not reported for a run in flight.
func TestResidentTimestampsOnDemand(t *testing.T) {
	vb := openTest(t, Options{})
	ctx := context.Background()
	rp := newResidentPair(t, vb, 1, false, 1<<15, 3)
	_, err := rp.enc.Run(ctx)
	require.NoError(t, err)
	require.NoError(t, rp.dec.Run(ctx))
	g := rp.enc.GPUTime()
	require.Positive(t, int64(g))
	require.Equal(t, g, rp.enc.GPUTime(), "read once, then kept")
	require.Positive(t, int64(rp.dec.GPUTime()))
	require.NoError(t, rp.enc.SubmitWith(nil, nil))
	require.Zero(t, rp.enc.GPUTime(), "no time for a run in flight")
	require.Nil(t, rp.enc.PassTimes())
	_, err = rp.enc.Finish(ctx)
	require.NoError(t, err)
	require.Positive(t, int64(rp.enc.GPUTime()))
	require.Len(t, rp.enc.PassTimes(), 2)
}

func statsDiff(a, b vk.Stats) vk.Stats {
	return vk.Stats{Submissions: a.Submissions - b.Submissions, Recordings: a.Recordings - b.Recordings,
		BindingSets: a.BindingSets - b.BindingSets, FencePolls: a.FencePolls - b.FencePolls,
		BlockingWaits: a.BlockingWaits - b.BlockingWaits, Readbacks: a.Readbacks - b.Readbacks}
}

// BenchmarkResidentLatency times encode + decode of a resident tensor back to back, as `vkzip bench`'s latency
// figure does, and reports the host round trips of each pair.
func BenchmarkResidentLatency(b *testing.B) {
	for _, n := range []uint64{1 << 12, 1 << 19} { // 8 KiB and 1 MiB of BF16
		b.Run(fmt.Sprintf("%dKiB", 2*n>>10), func(b *testing.B) {
			vb := openTest(b, Options{})
			dev := vb.VK()
			ctx := context.Background()
			shift := uint(layout.DefaultChunkShift)
			g := layout.SZ4{N: n, Shift: shift}
			mk := func(size uint64) *vk.Buffer {
				x, err := dev.NewBuffer(size, vk.DeviceLocal)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { x.Close() })
				return x
			}
			in, body, out := mk(2*n), mk(g.MaxBodySize()), mk(2*n)
			src := kvLike(rand.New(rand.NewPCG(1, 1)), int(n), 0.002)
			if err := dev.Upload(ctx, in, 0, src); err != nil {
				b.Fatal(err)
			}
			enc, err := vb.PrepareEncode(ctx, EncodeSpec{Format: layout.FormatSplitZip4, N: n, Shift: shift,
				Codebook: &testCB, Checksums: true, Src: vk.BufferRange{Buf: in}, Dst: vk.BufferRange{Buf: body}})
			if err != nil {
				b.Fatal(err)
			}
			defer enc.Close()
			size, err := enc.Run(ctx)
			if err != nil {
				b.Fatal(err)
			}
			dec, err := vb.PrepareDecode(ctx, DecodeSpec{Format: layout.FormatSplitZip4, N: n, Shift: shift,
				Codebook: &testCB, Checksums: true, Body: vk.BufferRange{Buf: body}, BodyLen: size,
				Dst: vk.BufferRange{Buf: out}})
			if err != nil {
				b.Fatal(err)
			}
			defer dec.Close()
			b.ReportAllocs()
			before := dev.Stats()
			var gpu int64
			for b.Loop() {
				if _, err := enc.Run(ctx); err != nil {
					b.Fatal(err)
				}
				if err := dec.Run(ctx); err != nil {
					b.Fatal(err)
				}
				gpu += int64(enc.GPUTime() + dec.GPUTime())
			}
			d := statsDiff(dev.Stats(), before)
			per := func(x uint64) float64 { return float64(x) / float64(b.N) }
			b.ReportMetric(per(d.Submissions), "submits/op")
			b.ReportMetric(per(d.BlockingWaits), "sleeps/op")
			b.ReportMetric(per(d.FencePolls), "polls/op")
			b.ReportMetric(per(d.Recordings), "recordings/op")
			b.ReportMetric(float64(gpu)/float64(b.N), "gpu-ns/op")
		})
	}
}
