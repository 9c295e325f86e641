package vk_test

import (
	"context"
	"testing"

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
	sub, err := dev.Submit(cmd)
	require.NoError(t, err)
	require.NoError(t, sub.Wait(context.Background()))

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
		sub, err := dev.Submit(cmd)
		require.NoError(t, err)
		require.NoError(t, sub.Wait(context.Background()))
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
	}
}
