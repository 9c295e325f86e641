//go:build cgo

package vk

/*
#include <stdlib.h>
#include "vkz.h"
*/
import "C"

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// Pipeline stage and access bits used by barriers.
const (
	stageCompute      = 0x800
	stageTransfer     = 0x1000
	stageBottomOfPipe = 0x2000
	stageHost         = 0x4000

	accessShaderRead    = 0x20
	accessShaderWrite   = 0x40
	accessTransferRead  = 0x800
	accessTransferWrite = 0x1000
	accessHostRead      = 0x2000
)

const pushScratchSize = 256 // >= maxPushConstantsSize on every known device

// Layout of a Commands' C scratch block: push constants, then the
// descriptor set and fence handle arrays vulkan-go takes as slices (in C
// memory, so neither cgo's pointer checks nor the garbage collector ever
// see a driver handle in a Go pointer slot).
const (
	scratchSetOff   = pushScratchSize
	scratchFenceOff = pushScratchSize + 8
	scratchSize     = pushScratchSize + 16
)

// Command buffer states.
const (
	cmdInitial = iota
	cmdRecording
	cmdExecutable
)

// Commands owns a command pool, one primary command buffer and a fence.
// A Commands must be used by one goroutine at a time; different Commands
// can be recorded and submitted concurrently without shared locks.
//
// Recording methods (Dispatch, Barrier, ...) do not return errors: the
// first error is kept and returned by End, and Submit refuses the buffer.
type Commands struct {
	dev   *Device
	pool  C.VkCommandPool
	cb    C.VkCommandBuffer
	vcb   vulkan.CommandBuffer // cb for vulkan-go
	fence C.VkFence
	push  unsafe.Pointer // C scratch (scratchSize): push constants, then setSlot and fences
	// setSlot is the one-element descriptor-set array in push's block;
	// sets and fences view it and the fence slot as vulkan-go slices.
	setSlot *C.VkDescriptorSet
	sets    []vulkan.DescriptorSet
	fences  []vulkan.Fence
	sems    unsafe.Pointer // C scratch for SubmitWith semaphore handles/values
	queue   uint32         // the device queue this buffer is submitted to

	state      int
	err        error
	lastPipe   C.VkPipeline
	lastLayout C.VkPipelineLayout
	lastSet    C.VkDescriptorSet
	dispatches uint64

	pending atomic.Bool
	sub     Submission
	closed  atomic.Bool
}

// NewCommands creates a command pool, a command buffer and a fence.
func (d *Device) NewCommands() (*Commands, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	c := &Commands{dev: d, queue: d.nextQueue.Add(1) % uint32(len(d.queueMu))}
	if err := c.create(); err != nil {
		c.destroyHandles()
		return nil, err
	}
	c.push = C.calloc(1, scratchSize)
	c.sems = C.calloc(4*maxSubmitSemaphores, 8)
	c.setSlot = (*C.VkDescriptorSet)(unsafe.Add(c.push, scratchSetOff))
	c.sets = unsafe.Slice((*vulkan.DescriptorSet)(unsafe.Pointer(c.setSlot)), 1)
	fenceSlot := (*C.VkFence)(unsafe.Add(c.push, scratchFenceOff))
	*fenceSlot = c.fence
	c.fences = unsafe.Slice((*vulkan.Fence)(unsafe.Pointer(fenceSlot)), 1)
	c.sub.c = c
	d.addLive(3) // command pool, command buffer, fence
	d.register(c)
	return c, nil
}

// create makes the command pool (vulkan-go), its command buffer (C: the
// allocate info holds the pool handle) and the fence (vulkan-go).
//
// vulkan-go writes each new handle into a uint64 of its own (cgo rejects
// a pointer into c, which holds Go pointers); the uint64's bits are the
// handle, and no Go pointer slot ever holds it.
func (c *Commands) create() error {
	d := c.dev
	var h uint64
	pi := vulkan.CommandPoolCreateInfo{SType: vulkan.StructureTypeCommandPoolCreateInfo, QueueFamilyIndex: uint32(d.c.queueFamily)}
	r := Result(vulkan.CreateCommandPool(d.vdev, &pi, nil, (*vulkan.CommandPool)(unsafe.Pointer(&h))))
	pi.Free()
	c.pool = C.VkCommandPool(h)
	if r != ResultSuccess {
		return check("vkCreateCommandPool", r)
	}
	if err := checkHandle("vkCreateCommandPool", uint64(c.pool)); err != nil {
		c.pool = 0 // leaked: vulkan-go cannot carry it to vkDestroyCommandPool
		return err
	}
	if r := Result(C.vkz_alloc_command_buffer(d.c, c.pool, &c.cb)); r != ResultSuccess {
		c.cb = nil
		return check("vkAllocateCommandBuffers", r)
	}
	c.vcb = vgCommandBuffer(c.cb)
	fi := vulkan.FenceCreateInfo{SType: vulkan.StructureTypeFenceCreateInfo}
	h = 0
	r = Result(vulkan.CreateFence(d.vdev, &fi, nil, (*vulkan.Fence)(unsafe.Pointer(&h))))
	fi.Free()
	c.fence = C.VkFence(h)
	if r != ResultSuccess {
		c.fence = 0
		return check("vkCreateFence", r)
	}
	if err := checkHandle("vkCreateFence", uint64(c.fence)); err != nil {
		c.fence = 0 // leaked, as above
		return err
	}
	return nil
}

// destroyHandles destroys the fence and the command pool (which frees
// the command buffer), whichever exist.
func (c *Commands) destroyHandles() {
	d := c.dev
	if c.fence != 0 {
		vulkan.DestroyFence(d.vdev, vgFence(c.fence), nil)
		c.fence = 0
	}
	if c.pool != 0 {
		vulkan.DestroyCommandPool(d.vdev, vgCommandPool(c.pool), nil)
		c.pool = 0
	}
}

func (c *Commands) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// poll clears the pending flag if the last submission has completed.
func (c *Commands) poll() (bool, error) {
	if !c.pending.Load() {
		return true, nil
	}
	c.dev.fencePolls.Add(1)
	r := Result(vulkan.GetFenceStatus(c.dev.vdev, vgFence(c.fence)))
	switch r {
	case ResultSuccess:
		c.complete()
		return true, nil
	case ResultNotReady:
		return false, nil
	}
	c.dev.noteResult(r)
	return false, check("vkGetFenceStatus", r)
}

func (c *Commands) complete() {
	if c.pending.CompareAndSwap(true, false) {
		c.dev.inFlight.Add(-1)
	}
}

// Begin resets the command pool and starts recording. It fails with
// ErrBusy while a previous submission of this buffer is still executing.
func (c *Commands) Begin() error {
	if c == nil || c.closed.Load() {
		return ErrClosed
	}
	if err := c.dev.usable(); err != nil {
		return err
	}
	done, err := c.poll()
	if err != nil {
		return err
	}
	if !done {
		return ErrBusy
	}
	if r := Result(C.vkz_begin(c.dev.c, c.pool, c.cb)); r != ResultSuccess {
		c.state = cmdInitial
		return check("vkBeginCommandBuffer", r)
	}
	c.dev.recordings.Add(1)
	c.state = cmdRecording
	c.err = nil
	c.lastPipe, c.lastLayout, c.lastSet = 0, 0, 0
	c.dispatches = 0
	return nil
}

func (c *Commands) recording(op string) bool {
	if c.state != cmdRecording {
		c.fail(fmt.Errorf("%w: %s outside Begin/End", ErrInvalid, op))
		return false
	}
	return c.err == nil
}

// Dispatch records bind pipeline / descriptor set (only when they change),
// push constants (when the pipeline has any) and vkCmdDispatch(x, y, z).
// b may be nil for pipelines without bindings. len(push) must equal the
// pipeline's PushConstantSize (so no push constant is left undefined).
func (c *Commands) Dispatch(p *Pipeline, b *Bindings, push []byte, x, y, z uint32) {
	if !c.recording("Dispatch") {
		return
	}
	switch {
	case p == nil || p.closed.Load():
		c.fail(fmt.Errorf("%w: Dispatch with nil or closed pipeline", ErrInvalid))
		return
	case p.dev != c.dev:
		c.fail(fmt.Errorf("%w: pipeline %s belongs to another device", ErrInvalid, p.name))
		return
	case p.bindings > 0 && (b == nil || b.closed.Load()):
		c.fail(fmt.Errorf("%w: pipeline %s needs %d bindings, got none", ErrInvalid, p.name, p.bindings))
		return
	case b != nil && (b.dev != c.dev || b.n != p.bindings):
		c.fail(fmt.Errorf("%w: bindings (%d slots) do not fit pipeline %s (%d)", ErrInvalid, b.n, p.name, p.bindings))
		return
	case uint32(len(push)) != p.pushSize:
		c.fail(fmt.Errorf("%w: %d push-constant bytes for pipeline %s (needs exactly %d)",
			ErrInvalid, len(push), p.name, p.pushSize))
		return
	}
	if b != nil {
		for i := range b.ranges {
			if b.ranges[i].Buf.closed.Load() {
				c.fail(fmt.Errorf("%w: binding %d of pipeline %s refers to a closed buffer", ErrInvalid, i, p.name))
				return
			}
		}
	}
	lim := &c.dev.info.Limits.MaxComputeWorkGroupCount
	if x == 0 || y == 0 || z == 0 || x > lim[0] || y > lim[1] || z > lim[2] {
		c.fail(fmt.Errorf("%w: dispatch %dx%dx%d (max %v) for %s", ErrInvalid, x, y, z, *lim, p.name))
		return
	}
	// Each call below is one vulkan-go call (one cgo crossing, no
	// allocation): no struct is passed, the set array and push constants
	// are in C scratch.
	if p.pipe != c.lastPipe {
		vulkan.CmdBindPipeline(c.vcb, vulkan.PipelineBindPointCompute, vgPipeline(p.pipe))
	}
	if b != nil && b.set != 0 && (b.set != c.lastSet || p.layout != c.lastLayout) {
		*c.setSlot = b.set
		vulkan.CmdBindDescriptorSets(c.vcb, vulkan.PipelineBindPointCompute, vgPipelineLayout(p.layout), 0, 1, c.sets, 0, nil)
		c.lastSet = b.set
	}
	c.lastPipe, c.lastLayout = p.pipe, p.layout
	if n := len(push); n > 0 {
		copy(unsafe.Slice((*byte)(c.push), pushScratchSize), push)
		vulkan.CmdPushConstants(c.vcb, vgPipelineLayout(p.layout), vulkan.ShaderStageFlags(vulkan.ShaderStageComputeBit), 0, uint32(n), c.push)
	}
	vulkan.CmdDispatch(c.vcb, x, y, z)
	c.dispatches++
}

// Barrier records a memory barrier from earlier compute-shader and transfer
// writes to later compute-shader and transfer reads/writes.
func (c *Commands) Barrier() {
	if !c.recording("Barrier") {
		return
	}
	C.vkz_cmd_barrier(c.dev.c, c.cb, stageCompute|stageTransfer, stageCompute|stageTransfer,
		accessShaderWrite|accessTransferWrite,
		accessShaderRead|accessShaderWrite|accessTransferRead|accessTransferWrite)
}

// BarrierToHost makes compute-shader and transfer writes visible to host
// reads once the submission's Wait returns.
func (c *Commands) BarrierToHost() {
	if !c.recording("BarrierToHost") {
		return
	}
	C.vkz_cmd_barrier(c.dev.c, c.cb, stageCompute|stageTransfer, stageHost,
		accessShaderWrite|accessTransferWrite, accessHostRead)
}

// rawBarrier records an arbitrary memory barrier (tests provoke validation
// errors with it).
func (c *Commands) rawBarrier(srcStage, dstStage, srcAccess, dstAccess uint32) {
	if !c.recording("Barrier") {
		return
	}
	C.vkz_cmd_barrier(c.dev.c, c.cb, C.VkFlags(srcStage), C.VkFlags(dstStage), C.VkFlags(srcAccess), C.VkFlags(dstAccess))
}

// FillBuffer records vkCmdFillBuffer (offset and size multiples of 4).
// Meant for small buffers such as status words; add a Barrier before a
// dispatch reads the result.
func (c *Commands) FillBuffer(b *Buffer, off, size uint64, value uint32) {
	if !c.recording("FillBuffer") {
		return
	}
	if b == nil || b.closed.Load() || b.dev != c.dev {
		c.fail(fmt.Errorf("%w: FillBuffer with nil, closed or foreign buffer", ErrInvalid))
		return
	}
	if off%4 != 0 || size%4 != 0 || size == 0 || off > b.size || size > b.size-off {
		c.fail(fmt.Errorf("%w: FillBuffer range [%d,+%d) of %d-byte buffer (multiples of 4)", ErrInvalid, off, size, b.size))
		return
	}
	vulkan.CmdFillBuffer(c.vcb, vgBuffer(b.buf), vulkan.DeviceSize(off), vulkan.DeviceSize(size), value)
}

// CopyBuffer records vkCmdCopyBuffer. It is slow relative to a compute
// copy on some implementations and is not meant for hot paths; it backs
// Upload/Download.
func (c *Commands) CopyBuffer(dst *Buffer, dstOff uint64, src *Buffer, srcOff, size uint64) {
	if !c.recording("CopyBuffer") {
		return
	}
	for _, b := range []*Buffer{dst, src} {
		if b == nil || b.closed.Load() || b.dev != c.dev {
			c.fail(fmt.Errorf("%w: CopyBuffer with nil, closed or foreign buffer", ErrInvalid))
			return
		}
	}
	if size == 0 || dstOff > dst.size || size > dst.size-dstOff || srcOff > src.size || size > src.size-srcOff {
		c.fail(fmt.Errorf("%w: CopyBuffer of %d bytes out of range", ErrInvalid, size))
		return
	}
	C.vkz_cmd_copy(c.dev.c, c.cb, src.buf, dst.buf, C.VkDeviceSize(srcOff), C.VkDeviceSize(dstOff), C.VkDeviceSize(size))
}

// ResetQueries records vkCmdResetQueryPool for [first, first+count).
// Queries must be reset before each Timestamp write.
func (c *Commands) ResetQueries(qp *QueryPool, first, count uint32) {
	if !c.recording("ResetQueries") {
		return
	}
	if qp == nil || qp.closed.Load() || qp.dev != c.dev || first > qp.n || count > qp.n-first {
		c.fail(fmt.Errorf("%w: ResetQueries [%d,+%d) on bad query pool", ErrInvalid, first, count))
		return
	}
	vulkan.CmdResetQueryPool(c.vcb, vgQueryPool(qp.qp), first, count)
}

// Timestamp records a timestamp write after all previous commands complete.
func (c *Commands) Timestamp(qp *QueryPool, index uint32) {
	if !c.recording("Timestamp") {
		return
	}
	if qp == nil || qp.closed.Load() || qp.dev != c.dev || index >= qp.n {
		c.fail(fmt.Errorf("%w: Timestamp %d on bad query pool", ErrInvalid, index))
		return
	}
	if c.dev.info.Limits.TimestampValidBits == 0 {
		c.fail(fmt.Errorf("%w: queue family has no timestamps", ErrUnsupported))
		return
	}
	vulkan.CmdWriteTimestamp(c.vcb, stageBottomOfPipe, vgQueryPool(qp.qp), index)
}

// End finishes recording and returns the first recording error.
func (c *Commands) End() error {
	if c == nil || c.closed.Load() {
		return ErrClosed
	}
	if c.state != cmdRecording {
		return fmt.Errorf("%w: End without Begin", ErrInvalid)
	}
	r := Result(vulkan.EndCommandBuffer(c.vcb))
	if c.err == nil && r != ResultSuccess {
		c.err = check("vkEndCommandBuffer", r)
	}
	if c.err != nil {
		c.state = cmdInitial
		return c.err
	}
	c.state = cmdExecutable
	return nil
}

// Err returns the first recording error since Begin.
func (c *Commands) Err() error { return c.err }

// Pending reports whether a submission of this buffer may still execute.
func (c *Commands) Pending() bool {
	done, _ := c.poll()
	return !done
}

// Close destroys the command pool, buffer and fence (waiting first for a
// pending submission).
func (c *Commands) Close() error {
	if c == nil || !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	if c.dev.unregister(c) {
		c.destroy(true)
	}
	return nil
}

func (c *Commands) release() {
	c.closed.Store(true)
	c.destroy(false) // Device.Close already waited for idle
}

func (c *Commands) destroy(wait bool) {
	d := c.dev
	if wait && c.pending.Load() && !d.lost.Load() {
		vulkan.WaitForFences(d.vdev, 1, c.fences, vulkan.True, math.MaxUint64)
	}
	c.complete()
	c.destroyHandles()
	c.sets, c.fences, c.setSlot = nil, nil, nil
	C.free(c.push)
	C.free(c.sems)
	c.push, c.sems = nil, nil
	d.addLive(-3)
}

// Submission is the in-flight execution of a Commands. The Submit result
// is owned by the Commands and reused by its next Submit (no allocation).
type Submission struct {
	c *Commands
}

// Submit queues an ended command buffer on the compute queue. Only the
// vkQueueSubmit call itself is serialised (per queue); a Commands may be
// re-submitted after its previous submission completed (ErrBusy otherwise).
func (d *Device) Submit(c *Commands) (*Submission, error) {
	return d.SubmitWith(c, nil, nil)
}

// SubmitWith is Submit with timeline-semaphore waits (before any command of
// c runs) and signals (after all of them complete), at most 8 of each.
func (d *Device) SubmitWith(c *Commands, waits, signals []SemaphoreValue) (*Submission, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if c == nil || c.closed.Load() {
		return nil, ErrClosed
	}
	if c.dev != d {
		return nil, invalidf("commands belong to another device")
	}
	if c.state != cmdExecutable {
		if c.err != nil {
			return nil, fmt.Errorf("%w: command buffer has a recording error: %v", ErrInvalid, c.err)
		}
		return nil, invalidf("command buffer not ended")
	}
	if err := d.takeFault("vkQueueSubmit"); err != nil {
		return nil, err
	}
	done, err := c.poll()
	if err != nil {
		return nil, err
	}
	if !done {
		return nil, ErrBusy
	}
	if r := Result(vulkan.ResetFences(d.vdev, 1, c.fences)); r != ResultSuccess {
		d.noteResult(r)
		return nil, check("vkResetFences", r)
	}
	if len(waits) > maxSubmitSemaphores || len(signals) > maxSubmitSemaphores {
		return nil, invalidf("at most %d semaphore waits and signals", maxSubmitSemaphores)
	}
	// Semaphore handles and values go through per-Commands C scratch.
	sc := unsafe.Slice((*C.uint64_t)(c.sems), 4*maxSubmitSemaphores)
	for i, w := range waits {
		if err := w.Sem.ok(); err != nil || w.Sem.dev != d {
			return nil, invalidf("wait semaphore %d closed or from another device", i)
		}
		sc[i], sc[maxSubmitSemaphores+i] = C.uint64_t(w.Sem.sem), C.uint64_t(w.Value)
	}
	for i, sg := range signals {
		if err := sg.Sem.ok(); err != nil || sg.Sem.dev != d {
			return nil, invalidf("signal semaphore %d closed or from another device", i)
		}
		sc[2*maxSubmitSemaphores+i], sc[3*maxSubmitSemaphores+i] = C.uint64_t(sg.Sem.sem), C.uint64_t(sg.Value)
	}
	var wp, wv, sp, sv *C.uint64_t
	if len(waits) > 0 {
		wp, wv = &sc[0], &sc[maxSubmitSemaphores]
	}
	if len(signals) > 0 {
		sp, sv = &sc[2*maxSubmitSemaphores], &sc[3*maxSubmitSemaphores]
	}
	d.queueMu[c.queue].Lock()
	r := Result(C.vkz_submit(d.c, C.uint32_t(c.queue), c.cb, c.fence, C.uint32_t(len(waits)), wp, wv, C.uint32_t(len(signals)), sp, sv))
	d.queueMu[c.queue].Unlock()
	if r != ResultSuccess {
		d.noteResult(r)
		return nil, check("vkQueueSubmit", r)
	}
	c.pending.Store(true)
	d.submissions.Add(1)
	d.dispatches.Add(c.dispatches)
	n := d.inFlight.Add(1)
	for {
		m := d.maxInFlight.Load()
		if n <= m || d.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	return &c.sub, nil
}

// Done reports whether the submission has completed (non-blocking).
func (s *Submission) Done() bool {
	done, err := s.c.poll()
	return done || err != nil
}

// Wait blocks until the submission completes, ctx is done (ctx.Err() is
// returned; the work keeps running and must be waited for again before the
// Commands is reused), or the device is lost (ErrDeviceLost).
func (s *Submission) Wait(ctx context.Context) error {
	c := s.c
	d := c.dev
	if err := d.takeFault("vkWaitForFences"); err != nil {
		return err
	}
	if !c.pending.Load() {
		return nil
	}
	if d.lost.Load() {
		return &Error{Op: "vkWaitForFences", Result: ResultDeviceLost}
	}
	if c.closed.Load() || d.closed.Load() {
		return ErrClosed
	}
	// Poll briefly first: blocking fence waits wake up tens of
	// microseconds late on some drivers (~20 µs on NVIDIA), which would
	// dominate short submissions.
	if spin := d.waitSpin; spin > 0 {
		// Polls are counted once per wait: waits on several goroutines
		// would otherwise contend for the counter on every poll.
		deadline, polls := time.Now().Add(spin), uint64(0)
		for {
			polls++
			r := Result(vulkan.GetFenceStatus(d.vdev, vgFence(c.fence)))
			if r == ResultSuccess {
				d.fencePolls.Add(polls)
				c.complete()
				return nil
			}
			if r != ResultNotReady {
				d.fencePolls.Add(polls)
				d.noteResult(r)
				return check("vkGetFenceStatus", r)
			}
			if time.Now().After(deadline) {
				break
			}
			runtime.Gosched()
		}
		d.fencePolls.Add(polls)
	}
	doneCh := ctx.Done()
	// Short slices keep cancellation latency low; without a Done channel
	// longer ones avoid needless wake-ups.
	slice := uint64(2_000_000) // 2 ms
	if doneCh == nil {
		slice = 100_000_000
	}
	d.sleeps.Add(1)
	for {
		r := Result(vulkan.WaitForFences(d.vdev, 1, c.fences, vulkan.True, slice))
		switch r {
		case ResultSuccess:
			c.complete()
			return nil
		case ResultTimeout:
			if doneCh != nil {
				select {
				case <-doneCh:
					return ctx.Err()
				default:
				}
			}
			if d.lost.Load() {
				return &Error{Op: "vkWaitForFences", Result: ResultDeviceLost}
			}
		default:
			d.noteResult(r)
			return check("vkWaitForFences", r)
		}
	}
}

// QueryPool is a pool of timestamp queries. Its read methods share one
// result buffer: call them from one goroutine at a time.
type QueryPool struct {
	dev    *Device
	qp     C.VkQueryPool
	n      uint32
	raw    unsafe.Pointer // C memory for n (value, availability) pairs: reads allocate nothing
	closed atomic.Bool
}

// NewQueryPool creates n timestamp queries. Reset them with
// Commands.ResetQueries before writing.
func (d *Device) NewQueryPool(n uint32) (*QueryPool, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, invalidf("query pool of 0 queries")
	}
	if d.info.Limits.TimestampValidBits == 0 {
		return nil, fmt.Errorf("%w: compute queue has no timestamp support", ErrUnsupported)
	}
	q := &QueryPool{dev: d, n: n}
	ci := vulkan.QueryPoolCreateInfo{SType: vulkan.StructureTypeQueryPoolCreateInfo, QueryType: vulkan.QueryTypeTimestamp, QueryCount: n}
	var h uint64 // see Commands.create
	r := Result(vulkan.CreateQueryPool(d.vdev, &ci, nil, (*vulkan.QueryPool)(unsafe.Pointer(&h))))
	ci.Free()
	q.qp = C.VkQueryPool(h)
	if r != ResultSuccess {
		return nil, check("vkCreateQueryPool", r)
	}
	if err := checkHandle("vkCreateQueryPool", uint64(q.qp)); err != nil {
		return nil, err // a handle vulkan-go cannot carry cannot be destroyed through it either
	}
	d.addLive(1)
	if q.raw = C.calloc(C.size_t(n)*2, 8); q.raw == nil {
		q.destroy()
		return nil, fmt.Errorf("%w: query results of %d queries", ErrOutOfMemory, n)
	}
	d.register(q)
	return q, nil
}

// Count returns the number of queries.
func (q *QueryPool) Count() uint32 { return q.n }

// Reset resets [first, first+count) from the host (vkResetQueryPool), as
// Commands.ResetQueries does in a command buffer: no submission that uses
// them may be pending. ErrUnsupported where the device has no host query
// reset (EnabledFeatures.HostQueryReset).
func (q *QueryPool) Reset(first, count uint32) error {
	if q == nil || q.closed.Load() {
		return ErrClosed
	}
	if err := q.dev.usable(); err != nil {
		return err
	}
	if !q.dev.features.HostQueryReset {
		return fmt.Errorf("%w: host query reset", ErrUnsupported)
	}
	if count == 0 || first > q.n || count > q.n-first {
		return invalidf("query range [%d,+%d) of %d", first, count, q.n)
	}
	if r := Result(C.vkz_reset_query_pool(q.dev.c, q.qp, C.uint32_t(first), C.uint32_t(count))); r != ResultSuccess {
		return check("vkResetQueryPool", r)
	}
	return nil
}

// Ticks returns raw timestamps (masked to timestampValidBits) for
// [first, first+count). Queries not yet available give an *Error with
// ResultNotReady.
func (q *QueryPool) Ticks(first, count uint32) ([]uint64, error) {
	if q == nil || q.closed.Load() {
		return nil, ErrClosed
	}
	if count == 0 || first > q.n || count > q.n-first {
		return nil, invalidf("query range [%d,+%d) of %d", first, count, q.n)
	}
	out := make([]uint64, count)
	if err := q.TicksInto(out, first); err != nil {
		return nil, err
	}
	return out, nil
}

// TicksInto is Ticks of [first, first+len(dst)) into dst, without allocating.
func (q *QueryPool) TicksInto(dst []uint64, first uint32) error {
	if q == nil || q.closed.Load() {
		return ErrClosed
	}
	if err := q.dev.usable(); err != nil {
		return err
	}
	count := uint32(len(dst))
	if len(dst) == 0 || uint64(len(dst)) > uint64(q.n) || first > q.n || count > q.n-first {
		return invalidf("query range [%d,+%d) of %d", first, len(dst), q.n)
	}
	// Pairs of (value, availability); never WAIT, since waiting on a query
	// that is never written would block forever.
	r := Result(vulkan.GetQueryPoolResults(q.dev.vdev, vgQueryPool(q.qp), first, count, uint(count)*16, q.raw, 16,
		vulkan.QueryResultFlags(vulkan.QueryResult64Bit|vulkan.QueryResultWithAvailabilityBit)))
	if r != ResultSuccess && r != ResultNotReady {
		q.dev.noteResult(r)
		return check("vkGetQueryPoolResults", r)
	}
	pairs := unsafe.Slice((*C.uint64_t)(q.raw), int(count)*2)
	bitsValid := q.dev.info.Limits.TimestampValidBits
	mask := ^uint64(0)
	if bitsValid < 64 {
		mask = 1<<bitsValid - 1
	}
	for i := range dst {
		if pairs[2*i+1] == 0 {
			return &Error{Op: "vkGetQueryPoolResults", Result: ResultNotReady, Detail: fmt.Sprintf("query %d unavailable", first+uint32(i))}
		}
		dst[i] = uint64(pairs[2*i]) & mask
	}
	return nil
}

// Nanos returns the timestamps of [first, first+count) in nanoseconds
// (ticks × timestampPeriod, computed exactly in integer arithmetic).
func (q *QueryPool) Nanos(first, count uint32) ([]uint64, error) {
	t, err := q.Ticks(first, count)
	if err != nil {
		return nil, err
	}
	for i, v := range t {
		t[i] = ticksToNanos(v, q.dev.info.Limits.TimestampPeriod)
	}
	return t, nil
}

// NanosInto is Nanos of [first, first+len(dst)) into dst, without allocating.
func (q *QueryPool) NanosInto(dst []uint64, first uint32) error {
	if err := q.TicksInto(dst, first); err != nil {
		return err
	}
	for i, v := range dst {
		dst[i] = ticksToNanos(v, q.dev.info.Limits.TimestampPeriod)
	}
	return nil
}

// Close destroys the query pool.
func (q *QueryPool) Close() error {
	if q == nil || !q.closed.CompareAndSwap(false, true) {
		return nil
	}
	if q.dev.unregister(q) {
		q.destroy()
	}
	return nil
}

func (q *QueryPool) release() {
	q.closed.Store(true)
	q.destroy()
}

func (q *QueryPool) destroy() {
	vulkan.DestroyQueryPool(q.dev.vdev, vgQueryPool(q.qp), nil)
	C.free(q.raw)
	q.raw = nil
	q.dev.addLive(-1)
}
