//go:build cgo

package vk

/*
#include "vkz.h"
*/
import "C"

import (
	"context"
	"fmt"
	"sync/atomic"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// Buffer usage for every buffer: storage + transfer src/dst.
const bufferUsage = 0x20 | 0x1 | 0x2

// handleTypeOpaqueFD is VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT.
const handleTypeOpaqueFD = 0x1

// Buffer is a VkBuffer with its own (dedicated) VkDeviceMemory.
type Buffer struct {
	dev        *Device
	buf        C.VkBuffer
	mem        C.VkDeviceMemory
	size       uint64
	allocSize  uint64
	kind       BufferKind
	memType    uint32
	mapped     unsafe.Pointer
	exportable bool
	imported   bool
	closed     atomic.Bool
}

// NewBuffer creates a buffer of size bytes. Sizes above
// maxStorageBufferRange are allowed (bind sub-ranges); sizes above
// maxMemoryAllocationSize are rejected with ErrInvalid.
func (d *Device) NewBuffer(size uint64, kind BufferKind, opts ...BufferOptions) (*Buffer, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	var o BufferOptions
	for _, x := range opts {
		o.ExportableFD = o.ExportableFD || x.ExportableFD
	}
	if size == 0 {
		return nil, invalidf("buffer size 0")
	}
	if max := d.info.Limits.MaxMemoryAllocationSize; max != 0 && size > max {
		return nil, invalidf("buffer size %d exceeds maxMemoryAllocationSize %d of %s", size, max, d.info.Name)
	}
	var ext uint32
	if o.ExportableFD {
		if !d.features.ExternalMemoryFD {
			return nil, fmt.Errorf("%w: exportable buffers need VK_KHR_external_memory_fd", ErrUnsupported)
		}
		ext = handleTypeOpaqueFD
	}
	return d.newBuffer(size, kind, ext, -1, 0)
}

// ImportBufferFD imports memory exported as an opaque fd (e.g. by
// Buffer.ExportFD on another Device, or another API) as a DeviceLocal
// buffer of size bytes. On success Vulkan owns fd; on failure the caller
// still does. Fails with ErrUnsupported without VK_KHR_external_memory_fd.
func (d *Device) ImportBufferFD(fd int, size uint64, opts ...ImportOptions) (*Buffer, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if !d.features.ExternalMemoryFD {
		return nil, fmt.Errorf("%w: importing needs VK_KHR_external_memory_fd", ErrUnsupported)
	}
	if fd < 0 {
		return nil, invalidf("bad fd %d", fd)
	}
	if size == 0 {
		return nil, invalidf("buffer size 0")
	}
	var alloc uint64
	for _, o := range opts {
		if o.AllocationSize != 0 {
			alloc = o.AllocationSize
		}
	}
	return d.newBuffer(size, DeviceLocal, handleTypeOpaqueFD, fd, alloc)
}

func (d *Device) newBuffer(size uint64, kind BufferKind, extTypes uint32, importFD int, allocSize uint64) (*Buffer, error) {
	b := &Buffer{dev: d, size: size, kind: kind}
	r := Result(C.vkz_create_buffer(d.c, C.VkDeviceSize(size), bufferUsage, C.VkFlags(extTypes), &b.buf))
	if r != ResultSuccess {
		return nil, checkDetail("vkCreateBuffer", r, fmt.Sprintf("%d bytes", size))
	}
	if err := checkHandle("vkCreateBuffer", uint64(b.buf)); err != nil {
		return nil, err // leaked: vulkan-go cannot carry it to vkDestroyBuffer
	}
	d.addLive(1)
	fail := func(err error) (*Buffer, error) {
		if b.mem != 0 {
			vulkan.FreeMemory(d.vdev, vgDeviceMemory(b.mem), nil)
			d.addLive(-1)
		}
		vulkan.DestroyBuffer(d.vdev, vgBuffer(b.buf), nil)
		d.addLive(-1)
		return nil, err
	}
	var req vulkan.MemoryRequirements // fresh: vulkan-go caches a struct's C copy
	vulkan.GetBufferMemoryRequirements(d.vdev, vgBuffer(b.buf), &req)
	req.Deref()
	req.Free()
	if allocSize == 0 {
		allocSize = uint64(req.Size)
	}
	if max := d.info.Limits.MaxMemoryAllocationSize; max != 0 && allocSize > max {
		return fail(invalidf("allocation of %d bytes exceeds maxMemoryAllocationSize %d", allocSize, max))
	}
	mt, err := d.pickMemoryType(req.MemoryTypeBits, kind)
	if err != nil {
		return fail(err)
	}
	b.memType = mt
	b.allocSize = allocSize
	var exportTypes uint32
	if importFD < 0 {
		exportTypes = extTypes
	}
	r = Result(C.vkz_alloc_memory(d.c, C.VkDeviceSize(allocSize), C.uint32_t(mt), b.buf,
		C.VkFlags(exportTypes), C.int(importFD), &b.mem))
	if r != ResultSuccess {
		b.mem = 0
		return fail(checkDetail("vkAllocateMemory", r, fmt.Sprintf("%d bytes, %s", allocSize, kind)))
	}
	if err := checkHandle("vkAllocateMemory", uint64(b.mem)); err != nil {
		b.mem = 0 // leaked: vulkan-go cannot carry it to vkFreeMemory
		return fail(err)
	}
	d.addLive(1)
	if r := Result(vulkan.BindBufferMemory(d.vdev, vgBuffer(b.buf), vgDeviceMemory(b.mem), 0)); r != ResultSuccess {
		return fail(check("vkBindBufferMemory", r))
	}
	if kind.Mapped() {
		var p unsafe.Pointer
		if r := Result(vulkan.MapMemory(d.vdev, vgDeviceMemory(b.mem), 0, vulkan.DeviceSize(vulkan.WholeSize), 0, &p)); r != ResultSuccess {
			return fail(check("vkMapMemory", r))
		}
		b.mapped = p
	}
	b.exportable = extTypes != 0 && importFD < 0
	b.imported = importFD >= 0
	d.register(b)
	return b, nil
}

// Size returns the buffer size in bytes.
func (b *Buffer) Size() uint64 { return b.size }

// AllocationSize returns the size of the backing allocation (>= Size).
func (b *Buffer) AllocationSize() uint64 { return b.allocSize }

// Kind returns the buffer kind.
func (b *Buffer) Kind() BufferKind { return b.kind }

// Device returns the owning device.
func (b *Buffer) Device() *Device { return b.dev }

// Bytes returns the persistently mapped memory of a host-visible buffer.
// The slice is valid until Close; the memory is coherent, so host writes
// are visible to later submissions and device writes are visible after a
// BarrierToHost and a completed Wait.
func (b *Buffer) Bytes() ([]byte, error) {
	if b == nil || b.closed.Load() {
		return nil, ErrClosed
	}
	if b.mapped == nil {
		return nil, fmt.Errorf("%w: %s buffer is not host visible", ErrInvalid, b.kind)
	}
	return cBytesView(b.mapped, b.size), nil
}

// ExportFD returns a new opaque POSIX fd for the buffer memory (caller
// closes it). The buffer must have been created with ExportableFD.
func (b *Buffer) ExportFD() (int, error) {
	if b == nil || b.closed.Load() {
		return -1, ErrClosed
	}
	if err := b.dev.usable(); err != nil {
		return -1, err
	}
	if !b.exportable {
		return -1, fmt.Errorf("%w: buffer was not created with ExportableFD", ErrInvalid)
	}
	var fd C.int
	r := Result(C.vkz_get_memory_fd(b.dev.c, b.mem, &fd))
	if r == ResultMissingEntryPoint {
		return -1, fmt.Errorf("%w: vkGetMemoryFdKHR", ErrMissingEntryPoint)
	}
	if r != ResultSuccess {
		return -1, check("vkGetMemoryFdKHR", r)
	}
	return int(fd), nil
}

// Close destroys the buffer and frees its memory. The buffer must not be
// in use by a pending submission. Idempotent.
func (b *Buffer) Close() error {
	if b == nil || !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	if b.dev.unregister(b) {
		b.destroy()
	}
	return nil
}

func (b *Buffer) release() {
	b.closed.Store(true)
	b.destroy()
}

func (b *Buffer) destroy() {
	d := b.dev
	if b.mapped != nil {
		vulkan.UnmapMemory(d.vdev, vgDeviceMemory(b.mem))
		b.mapped = nil
	}
	vulkan.DestroyBuffer(d.vdev, vgBuffer(b.buf), nil)
	vulkan.FreeMemory(d.vdev, vgDeviceMemory(b.mem), nil)
	d.addLive(-2)
}

// stager is a reusable staging buffer plus its own command buffer.
type stager struct {
	buf *Buffer
	cmd *Commands
}

func (d *Device) getStager() (*stager, error) {
	d.stagingMu.Lock()
	if n := len(d.staging); n > 0 {
		s := d.staging[n-1]
		d.staging = d.staging[:n-1]
		d.stagingMu.Unlock()
		return s, nil
	}
	d.stagingMu.Unlock()
	// Each concurrent transfer gets its own stager: no global lock while copying.
	buf, err := d.newBuffer(d.stagingSize, Readback, 0, -1, 0)
	if err != nil {
		return nil, err
	}
	cmd, err := d.NewCommands()
	if err != nil {
		buf.Close()
		return nil, err
	}
	return &stager{buf: buf, cmd: cmd}, nil
}

func (d *Device) putStager(s *stager) {
	d.stagingMu.Lock()
	if !d.closed.Load() {
		d.staging = append(d.staging, s)
	}
	d.stagingMu.Unlock()
}

func (d *Device) checkTransfer(b *Buffer, off uint64, n int) error {
	if err := d.usable(); err != nil {
		return err
	}
	if b == nil || b.closed.Load() {
		return ErrClosed
	}
	if b.dev != d {
		return invalidf("buffer belongs to another device")
	}
	if off > b.size || uint64(n) > b.size-off {
		return invalidf("range [%d, %d) outside buffer of %d bytes", off, off+uint64(n), b.size)
	}
	return nil
}

// Upload copies src into dst at dstOff. Host-visible buffers are written
// directly; others go through a reusable host-visible staging buffer in
// chunks of DeviceOptions.StagingSize. It returns after the copy completed
// and made the data visible to later compute and transfer commands.
func (d *Device) Upload(ctx context.Context, dst *Buffer, dstOff uint64, src []byte) error {
	if err := d.checkTransfer(dst, dstOff, len(src)); err != nil {
		return err
	}
	if len(src) == 0 {
		return nil
	}
	if dst.mapped != nil {
		copy(cBytesView(dst.mapped, dst.size)[dstOff:], src)
		d.bytesUp.Add(uint64(len(src)))
		return nil
	}
	s, err := d.getStager()
	if err != nil {
		return err
	}
	stage := cBytesView(s.buf.mapped, s.buf.size)
	for len(src) > 0 {
		n := min(uint64(len(src)), s.buf.size)
		copy(stage, src[:n])
		if err := d.runStaged(ctx, s, func(c *Commands) {
			c.CopyBuffer(dst, dstOff, s.buf, 0, n)
			c.Barrier() // transfer write -> later compute/transfer access
		}); err != nil {
			return err
		}
		d.bytesUp.Add(n)
		src = src[n:]
		dstOff += n
	}
	d.putStager(s)
	return nil
}

// runStaged records the stager's command buffer (record) and waits for its submission. A recording or submission
// that fails returns the stager to the pool; one still in flight when the wait fails (or lost) keeps it:
// Device.Close frees it.
func (d *Device) runStaged(ctx context.Context, s *stager, record func(c *Commands)) error {
	sub, err := d.startStaged(s, record)
	if err != nil {
		return err
	}
	return sub.Wait(ctx)
}

// startStaged records and submits s's command buffer without waiting. Where recording or submitting fails, nothing
// is in flight and s goes back to the pool.
func (d *Device) startStaged(s *stager, record func(c *Commands)) (*Submission, error) {
	c := s.cmd
	err := c.Begin()
	if err == nil {
		record(c)
		err = c.End()
	}
	var sub *Submission
	if err == nil {
		sub, err = d.Submit(c)
	}
	if err != nil {
		d.putStager(s)
		return nil, err
	}
	return sub, nil
}

// UploadPieces writes each piece into dst at its offset, as Upload does, in one submission when together they fit
// the staging buffer (one Upload each otherwise): a header and a trailer around a body cost one round trip to the
// device, not two. Pieces must not overlap.
func (d *Device) UploadPieces(ctx context.Context, dst *Buffer, pieces []Piece) error {
	total := uint64(0)
	for _, p := range pieces {
		if err := d.checkTransfer(dst, p.Off, len(p.Data)); err != nil {
			return err
		}
		total += uint64(len(p.Data))
	}
	if total == 0 {
		return nil
	}
	if dst.mapped != nil || total > d.stagingSize {
		for _, p := range pieces {
			if err := d.Upload(ctx, dst, p.Off, p.Data); err != nil {
				return err
			}
		}
		return nil
	}
	s, err := d.getStager()
	if err != nil {
		return err
	}
	stage := cBytesView(s.buf.mapped, s.buf.size)
	if err := d.runStaged(ctx, s, func(c *Commands) {
		at := uint64(0)
		for _, p := range pieces {
			if len(p.Data) == 0 {
				continue
			}
			copy(stage[at:], p.Data)
			c.CopyBuffer(dst, p.Off, s.buf, at, uint64(len(p.Data)))
			at += uint64(len(p.Data))
		}
		c.Barrier() // transfer writes -> later compute/transfer access
	}); err != nil {
		return err
	}
	d.bytesUp.Add(total)
	d.putStager(s)
	return nil
}

// A Fetch is a staged download in flight, from StartFetch.
type Fetch struct {
	d      *Device
	s      *stager
	sub    *Submission
	pieces []Piece
	total  uint64
}

// StartFetch queues a copy of len(p.Data) bytes at p.Off of src for each piece, in one submission through a staging
// buffer, and returns without waiting: work submitted after it runs after it on the queue, and Wait returns once the
// copies are done, not that later work. A reader of a few scattered words (a payload's seal and chunk table) then
// overlaps them with the work it submits next instead of waiting for it. Together the pieces must fit the staging
// buffer (DeviceOptions.StagingSize) and lie in src; Wait fills each piece's Data and must be called once, error or
// not, before the Fetch is dropped.
func (d *Device) StartFetch(src *Buffer, pieces []Piece) (*Fetch, error) {
	f := &Fetch{d: d, pieces: pieces}
	for _, p := range pieces {
		if err := d.checkTransfer(src, p.Off, len(p.Data)); err != nil {
			return nil, err
		}
		f.total += uint64(len(p.Data))
	}
	if f.total > d.stagingSize {
		return nil, invalidf("pieces of %d bytes exceed the staging buffer of %d", f.total, d.stagingSize)
	}
	d.readbacks.Add(1)
	if f.total == 0 {
		return f, nil
	}
	s, err := d.getStager()
	if err != nil {
		return nil, err
	}
	f.sub, err = d.startStaged(s, func(c *Commands) {
		c.Barrier() // earlier shader writes -> these copies
		at := uint64(0)
		for _, p := range pieces {
			if len(p.Data) > 0 {
				c.CopyBuffer(s.buf, at, src, p.Off, uint64(len(p.Data)))
				at += uint64(len(p.Data))
			}
		}
		c.BarrierToHost()
	})
	if err != nil {
		return nil, err
	}
	f.s = s
	return f, nil
}

// Wait waits for the copies and fills each piece's Data.
func (f *Fetch) Wait(ctx context.Context) error {
	if f.s == nil {
		return nil
	}
	if err := f.sub.Wait(ctx); err != nil {
		return err
	}
	stage := cBytesView(f.s.buf.mapped, f.s.buf.size)
	at := uint64(0)
	for _, p := range f.pieces {
		at += uint64(copy(p.Data, stage[at:]))
	}
	f.d.bytesDown.Add(f.total)
	f.d.putStager(f.s)
	f.s = nil
	return nil
}

// Download copies len(dst) bytes from src at srcOff into dst through a
// staging buffer, or directly from the mapping of HostVisible, Upload and
// Readback buffers (then the caller must already have waited for the
// submission that wrote them). Each call counts one readback in Stats.
func (d *Device) Download(ctx context.Context, dst []byte, src *Buffer, srcOff uint64) error {
	if err := d.checkTransfer(src, srcOff, len(dst)); err != nil {
		return err
	}
	d.readbacks.Add(1)
	if len(dst) == 0 {
		return nil
	}
	// Mapped device-local memory is uncached over PCIe on discrete GPUs:
	// read it through staging like unmapped buffers.
	if src.mapped != nil && src.kind != DeviceLocalHostVisible {
		copy(dst, cBytesView(src.mapped, src.size)[srcOff:])
		d.bytesDown.Add(uint64(len(dst)))
		return nil
	}
	s, err := d.getStager()
	if err != nil {
		return err
	}
	stage := cBytesView(s.buf.mapped, s.buf.size)
	for len(dst) > 0 {
		n := min(uint64(len(dst)), s.buf.size)
		if err := d.runStaged(ctx, s, func(c *Commands) {
			c.Barrier() // earlier shader writes -> this copy
			c.CopyBuffer(s.buf, 0, src, srcOff, n)
			c.BarrierToHost()
		}); err != nil {
			return err
		}
		copy(dst[:n], stage)
		d.bytesDown.Add(n)
		dst = dst[n:]
		srcOff += n
	}
	d.putStager(s)
	return nil
}
