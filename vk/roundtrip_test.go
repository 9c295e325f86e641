package vk_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/vk"
	"github.com/vkzip/vkzip/vk/vktest"
)

// TestNanosInto reads timestamps into a caller's slice without allocating, gives what Nanos gives, and refuses
// ranges outside the pool and queries not written.
func TestNanosInto(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	if dev.Info().Limits.TimestampValidBits == 0 {
		t.Skip("compute queue has no timestamps")
	}
	qp, err := dev.NewQueryPool(4)
	require.NoError(t, err)
	defer qp.Close()
	cmd, err := dev.NewCommands()
	require.NoError(t, err)
	defer cmd.Close()
	require.NoError(t, cmd.Begin())
	cmd.ResetQueries(qp, 0, 4)
	cmd.Timestamp(qp, 0)
	cmd.Barrier()
	cmd.Timestamp(qp, 1)
	cmd.Timestamp(qp, 2)
	require.NoError(t, cmd.End())
	submitWait(t, dev, cmd)

	want, err := qp.Nanos(0, 3)
	require.NoError(t, err)
	got := []uint64{^uint64(0), ^uint64(0), ^uint64(0)}
	require.NoError(t, qp.NanosInto(got, 0))
	assert.Equal(t, want, got)
	assert.Zero(t, testing.AllocsPerRun(20, func() { _ = qp.NanosInto(got, 0) }), "allocations per read")
	one := []uint64{0}
	require.NoError(t, qp.NanosInto(one, 2))
	assert.Equal(t, want[2], one[0])

	assert.Error(t, qp.NanosInto(got, 2), "past the pool's end")
	assert.Error(t, qp.NanosInto(nil, 0), "empty range")
	assert.Error(t, qp.NanosInto(make([]uint64, 5), 0), "more than the pool")
	assert.Error(t, qp.NanosInto(one, 3), "never written")
	require.NoError(t, qp.Close())
	assert.ErrorIs(t, qp.NanosInto(one, 0), vk.ErrClosed)
}

// TestRoundTripCounters checks the counters that tell a hot path's host round trips apart: recordings, descriptor
// sets, fence polls and sleeping waits.
func TestRoundTripCounters(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	p := newPipeline(t, dev, vk.PipelineDesc{Name: "inc", SPIRV: incSPV, Bindings: 1, PushConstantSize: 8})
	buf, err := dev.NewBuffer(4*256, vk.DeviceLocal)
	require.NoError(t, err)
	defer buf.Close()
	s0 := dev.Stats()
	b, err := dev.NewBindings(p, []vk.BufferRange{{Buf: buf}})
	require.NoError(t, err)
	defer b.Close()
	cmd, err := dev.NewCommands()
	require.NoError(t, err)
	defer cmd.Close()
	require.NoError(t, cmd.Begin())
	cmd.Dispatch(p, b, push32(256, 1), 4, 1, 1)
	require.NoError(t, cmd.End())
	s1 := dev.Stats()
	assert.Equal(t, uint64(1), s1.BindingSets-s0.BindingSets)
	assert.Equal(t, uint64(1), s1.Recordings-s0.Recordings)
	for range 3 {
		submitWait(t, dev, cmd)
	}
	s2 := dev.Stats()
	assert.Equal(t, uint64(3), s2.Submissions-s1.Submissions)
	assert.Zero(t, s2.Recordings-s1.Recordings, "resubmitted as recorded")
	assert.Zero(t, s2.BindingSets-s1.BindingSets)
	// Each wait either saw the fence signalled while polling or slept once.
	waited := s2.BlockingWaits - s1.BlockingWaits
	assert.LessOrEqual(t, waited, uint64(3))
	assert.True(t, waited > 0 || s2.FencePolls > s1.FencePolls, "waits are counted")
	sem, err := dev.NewTimelineSemaphore(0)
	if err == nil {
		defer sem.Close()
		require.NoError(t, sem.Signal(1))
		require.NoError(t, sem.Wait(context.Background(), 1))
		assert.Equal(t, uint64(1), dev.Stats().BlockingWaits-s2.BlockingWaits, "a semaphore wait")
		assert.Zero(t, testing.AllocsPerRun(20, func() { _, _ = sem.Value() }), "allocations per counter read")
		v, err := sem.Value()
		require.NoError(t, err)
		assert.Equal(t, uint64(1), v)
	}
}

// BenchmarkRoundTrip times one submission and its wait, back to back, of command buffers recorded once: what each
// kind of command adds to a short operation's wall time on the device under test (a 1 MiB tensor's encode is one
// such round trip, its passes a few dispatches). Sub-benchmarks:
//
//	empty      nothing recorded: the submission and the fence alone
//	timestamps a query reset and two timestamps (every prepared operation has them)
//	fill       a 64-byte vkCmdFillBuffer and a barrier (a status reset on the device)
//	dispatch   one small dispatch and a barrier
//	copy       a dispatch, a 64-byte copy to host memory and the barrier to the host (a read-back staged)
//	sleep      the dispatch, waited for without polling the fence
//	queues     the dispatch, alternately from two command buffers on two queues (as an encode and a decode are)
//	one-queue  the same from two command buffers on one queue
//	timeline   the dispatch, its end seen by polling a timeline semaphore it signals (then its fence, once)
func BenchmarkRoundTrip(b *testing.B) {
	for _, name := range []string{"empty", "timestamps", "fill", "dispatch", "copy", "sleep", "queues", "one-queue",
		"timeline"} {
		b.Run(name, func(b *testing.B) {
			var o vktest.Options
			if name == "sleep" {
				o.Device.WaitSpin = -1
			}
			dev := vktest.OpenTestDeviceWith(b, o)
			p := newPipeline(b, dev, vk.PipelineDesc{Name: "inc", SPIRV: incSPV, Bindings: 1, PushConstantSize: 8})
			buf, err := dev.NewBuffer(4*256, vk.DeviceLocal)
			require.NoError(b, err)
			host, err := dev.NewBuffer(256, vk.Readback)
			require.NoError(b, err)
			bind, err := dev.NewBindings(p, []vk.BufferRange{{Buf: buf}})
			require.NoError(b, err)
			// Command buffers take the device's queues in turn: the first and the last of Queues()+1 share one.
			var cmds []*vk.Commands
			for range dev.Queues() + 1 {
				c, err := dev.NewCommands()
				require.NoError(b, err)
				defer c.Close()
				cmds = append(cmds, c)
			}
			if name == "queues" || name == "one-queue" {
				if dev.Queues() < 2 {
					b.Skip("one queue")
				}
				last := cmds[len(cmds)-1]
				if name == "queues" {
					last = cmds[1]
				}
				for _, c := range []*vk.Commands{cmds[0], last} {
					require.NoError(b, c.Begin())
					c.Dispatch(p, bind, push32(256, 1), 1, 1, 1)
					c.Barrier()
					require.NoError(b, c.End())
				}
				pair := []*vk.Commands{cmds[0], last}
				ctx := context.Background()
				i := 0
				for b.Loop() {
					sub, err := dev.Submit(pair[i%2])
					if err != nil {
						b.Fatal(err)
					}
					if err := sub.Wait(ctx); err != nil {
						b.Fatal(err)
					}
					i++
				}
				return
			}
			cmd := cmds[0]
			if name == "timeline" {
				sem, err := dev.NewTimelineSemaphore(0)
				if err != nil {
					b.Skip(err)
				}
				defer sem.Close()
				require.NoError(b, cmd.Begin())
				cmd.Dispatch(p, bind, push32(256, 1), 1, 1, 1)
				cmd.Barrier()
				require.NoError(b, cmd.End())
				ctx := context.Background()
				signal := []vk.SemaphoreValue{{Sem: sem}}
				for v := uint64(1); b.Loop(); v++ {
					signal[0].Value = v
					sub, err := dev.SubmitWith(cmd, nil, signal)
					if err != nil {
						b.Fatal(err)
					}
					for {
						got, err := sem.Value()
						if err != nil {
							b.Fatal(err)
						}
						if got >= v {
							break
						}
					}
					if err := sub.Wait(ctx); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			require.NoError(b, cmd.Begin())
			switch name {
			case "timestamps":
				qp, err := dev.NewQueryPool(2)
				require.NoError(b, err)
				cmd.ResetQueries(qp, 0, 2)
				cmd.Timestamp(qp, 0)
				cmd.Timestamp(qp, 1)
			case "fill":
				cmd.FillBuffer(buf, 0, 64, 0)
				cmd.Barrier()
			case "dispatch", "sleep":
				cmd.Dispatch(p, bind, push32(256, 1), 1, 1, 1)
				cmd.Barrier()
			case "copy":
				cmd.Dispatch(p, bind, push32(256, 1), 1, 1, 1)
				cmd.Barrier()
				cmd.CopyBuffer(host, 0, buf, 0, 64)
				cmd.BarrierToHost()
			}
			require.NoError(b, cmd.End())
			ctx := context.Background()
			for b.Loop() {
				sub, err := dev.Submit(cmd)
				if err != nil {
					b.Fatal(err)
				}
				if err := sub.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMappedRead times the host's read of 4 and of 32 bytes of a mapped buffer: host memory (Readback) and,
// where the device has it, device memory the host maps (DeviceLocalHostVisible; each read crosses the bus
// uncached on a discrete device).
func BenchmarkMappedRead(b *testing.B) {
	dev := vktest.OpenTestDevice(b)
	for _, kind := range []vk.BufferKind{vk.Readback, vk.DeviceLocalHostVisible} {
		buf, err := dev.NewBuffer(256, kind)
		if err != nil {
			b.Logf("%s: %v", kind, err)
			continue
		}
		defer buf.Close()
		m, err := buf.Bytes()
		require.NoError(b, err)
		for _, n := range []int{4, 32} {
			b.Run(fmt.Sprintf("%s/%dB", kind, n), func(b *testing.B) {
				var dst [32]byte
				var sum byte
				for b.Loop() {
					copy(dst[:n], m[:n])
					sum += dst[0]
				}
				_ = sum
			})
		}
	}
}

// BenchmarkPoll times one poll of an unfinished submission's fence (what each iteration of Submission.Wait's
// polling costs; the submission is a long dispatch, resubmitted when it ends) and one read of a timeline semaphore's
// counter.
func BenchmarkPoll(b *testing.B) {
	dev := vktest.OpenTestDevice(b)
	b.Run("fence", func(b *testing.B) {
		p := newPipeline(b, dev, vk.PipelineDesc{Name: "spin", SPIRV: spinSPV, Bindings: 1, PushConstantSize: 4})
		buf, err := dev.NewBuffer(64*4, vk.DeviceLocal)
		require.NoError(b, err)
		defer buf.Close()
		bind, err := dev.NewBindings(p, []vk.BufferRange{{Buf: buf}})
		require.NoError(b, err)
		cmd, err := dev.NewCommands()
		require.NoError(b, err)
		defer cmd.Close()
		iters := uint32(1 << 22)
		if dev.Info().Type == vk.DeviceTypeCPU {
			iters = 1 << 16
		}
		require.NoError(b, cmd.Begin())
		cmd.Dispatch(p, bind, push32(iters), 1, 1, 1)
		require.NoError(b, cmd.End())
		polls, subs := dev.Stats().FencePolls, 0
		for b.Loop() {
			if !cmd.Pending() {
				if _, err := dev.Submit(cmd); err != nil {
					b.Fatal(err)
				}
				subs++
			}
		}
		b.ReportMetric(float64(dev.Stats().FencePolls-polls)/float64(b.N), "polls/op")
		b.ReportMetric(float64(subs)/float64(b.N), "submits/op")
		sub, err := dev.Submit(cmd)
		if err == nil {
			_ = sub.Wait(context.Background())
		}
	})
	b.Run("semaphore", func(b *testing.B) {
		sem, err := dev.NewTimelineSemaphore(0)
		if err != nil {
			b.Skip(err)
		}
		defer sem.Close()
		for b.Loop() {
			if _, err := sem.Value(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestQueryHostReset resets queries from the host instead of in the command buffer: a buffer that only writes
// timestamps gives fresh values each submission after a Reset, and a Reset makes them unavailable again.
func TestQueryHostReset(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	if dev.Info().Limits.TimestampValidBits == 0 {
		t.Skip("compute queue has no timestamps")
	}
	qp, err := dev.NewQueryPool(2)
	require.NoError(t, err)
	defer qp.Close()
	if !dev.Features().HostQueryReset {
		require.ErrorIs(t, qp.Reset(0, 2), vk.ErrUnsupported)
		t.Skip("no host query reset")
	}
	require.Error(t, qp.Reset(1, 2), "past the pool's end")
	cmd, err := dev.NewCommands()
	require.NoError(t, err)
	defer cmd.Close()
	require.NoError(t, cmd.Begin())
	cmd.Timestamp(qp, 0)
	cmd.Barrier()
	cmd.Timestamp(qp, 1)
	require.NoError(t, cmd.End())
	ns := make([]uint64, 2)
	var last uint64
	for i := range 3 {
		require.NoError(t, qp.Reset(0, 2))
		require.Error(t, qp.NanosInto(ns, 0), "unavailable after a reset")
		submitWait(t, dev, cmd)
		require.NoError(t, qp.NanosInto(ns, 0), "run %d", i)
		require.LessOrEqual(t, ns[0], ns[1])
		require.Greater(t, ns[0], last, "a new value each run")
		last = ns[0]
	}
	require.NoError(t, qp.Close())
	require.ErrorIs(t, qp.Reset(0, 1), vk.ErrClosed)
}

// TestWaitPollsThenSleeps checks Submission.Wait's two phases through the counters: with a spin long enough for a
// small dispatch it only polls; with a spin far shorter than a long dispatch it polls, then sleeps once.
func TestWaitPollsThenSleeps(t *testing.T) {
	for _, c := range []struct {
		spin  time.Duration
		iters uint32
		sleep bool
	}{{10 * time.Second, 1, false}, {time.Microsecond, 1 << 16, true}} {
		dev := vktest.OpenTestDeviceWith(t, vktest.Options{Device: vk.DeviceOptions{WaitSpin: c.spin}})
		p := newPipeline(t, dev, vk.PipelineDesc{Name: "spin", SPIRV: spinSPV, Bindings: 1, PushConstantSize: 4})
		buf, err := dev.NewBuffer(64*64*4, vk.DeviceLocal)
		require.NoError(t, err)
		bind, err := dev.NewBindings(p, []vk.BufferRange{{Buf: buf}})
		require.NoError(t, err)
		cmd, err := dev.NewCommands()
		require.NoError(t, err)
		require.NoError(t, cmd.Begin())
		cmd.Dispatch(p, bind, push32(c.iters), 64, 1, 1)
		require.NoError(t, cmd.End())
		before := dev.Stats()
		submitWait(t, dev, cmd)
		after := dev.Stats()
		assert.Positive(t, after.FencePolls-before.FencePolls, "spin %v: polled", c.spin)
		if c.sleep {
			assert.Equal(t, uint64(1), after.BlockingWaits-before.BlockingWaits, "spin %v: slept once", c.spin)
		} else {
			assert.Zero(t, after.BlockingWaits-before.BlockingWaits, "spin %v: never slept", c.spin)
		}
		assert.False(t, cmd.Pending())
	}
}
