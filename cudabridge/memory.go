package cudabridge

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// ExternalMemory is memory of another API (a Vulkan allocation exported as
// an opaque fd) imported into CUDA.
type ExternalMemory struct {
	c      *Context
	h      uintptr
	size   uint64
	mu     sync.Mutex
	maps   []DevicePtr
	closed atomic.Bool
}

// ImportMemoryFD imports an opaque fd of size bytes (the whole allocation:
// vk.Buffer.AllocationSize, not the buffer size). dedicated must be true
// for Vulkan dedicated allocations (every exportable vk.Buffer is one) and
// false otherwise. On success CUDA owns fd (dup it first to share it
// further); on failure the caller still does.
func (c *Context) ImportMemoryFD(fd int, size uint64, dedicated bool) (*ExternalMemory, error) {
	if err := c.ok(); err != nil {
		return nil, err
	}
	if fd < 0 || size == 0 {
		return nil, invalidf("import of fd %d, %d bytes", fd, size)
	}
	h, r := c.d.llImportMemory(c.ctx, fd, size, dedicated)
	if r != Success {
		return nil, c.d.err("cuImportExternalMemory", r, fmt.Sprintf("fd %d, %d bytes, dedicated %v", fd, size, dedicated))
	}
	return &ExternalMemory{c: c, h: h, size: size}, nil
}

// Size is the size of the imported allocation.
func (m *ExternalMemory) Size() uint64 { return m.size }

// MapBuffer maps [offset, offset+size) of the memory into the context's
// address space (cuExternalMemoryGetMappedBuffer). Mappings are freed by
// Close.
func (m *ExternalMemory) MapBuffer(offset, size uint64) (DevicePtr, error) {
	if m == nil || m.closed.Load() {
		return 0, ErrClosed
	}
	if err := m.c.ok(); err != nil {
		return 0, err
	}
	if size == 0 || offset > m.size || size > m.size-offset {
		return 0, invalidf("mapping [%d, +%d) of %d imported bytes", offset, size, m.size)
	}
	p, r := m.c.d.llMappedBuffer(m.c.ctx, m.h, offset, size)
	if r != Success {
		return 0, m.c.d.err("cuExternalMemoryGetMappedBuffer", r, fmt.Sprintf("[%d, +%d) of %d bytes", offset, size, m.size))
	}
	m.mu.Lock()
	m.maps = append(m.maps, p)
	m.mu.Unlock()
	return p, nil
}

// Close frees the mappings and destroys the import. CUDA work using the
// memory must have completed. Idempotent.
func (m *ExternalMemory) Close() error {
	if m == nil || !m.closed.CompareAndSwap(false, true) {
		return nil
	}
	var first error
	m.mu.Lock()
	for _, p := range m.maps {
		if err := m.c.d.check("cuMemFree", m.c.d.llMemFree(m.c.ctx, p), "mapped external buffer"); err != nil && first == nil {
			first = err
		}
	}
	m.maps = nil
	m.mu.Unlock()
	if err := m.c.d.check("cuDestroyExternalMemory", m.c.d.llDestroyMemory(m.c.ctx, m.h), ""); err != nil && first == nil {
		first = err
	}
	return first
}

// ExternalSemaphore is a Vulkan semaphore imported into CUDA. Signal and
// Wait enqueue on a stream: the host never blocks.
type ExternalSemaphore struct {
	c        *Context
	h        uintptr
	timeline bool
	closed   atomic.Bool
}

// ImportSemaphoreFD imports a semaphore exported as an opaque fd: a
// timeline semaphore (CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD)
// or a binary one (..._OPAQUE_FD). On success CUDA owns fd; on failure the
// caller still does.
func (c *Context) ImportSemaphoreFD(fd int, timeline bool) (*ExternalSemaphore, error) {
	if err := c.ok(); err != nil {
		return nil, err
	}
	if fd < 0 {
		return nil, invalidf("semaphore fd %d", fd)
	}
	if timeline && !c.info.TimelineSemaphores {
		return nil, fmt.Errorf("%w: %s has no timeline semaphore interop", ErrUnsupported, c.info.Name)
	}
	h, r := c.d.llImportSemaphore(c.ctx, fd, timeline)
	if r != Success {
		return nil, c.d.err("cuImportExternalSemaphore", r, fmt.Sprintf("fd %d, timeline %v", fd, timeline))
	}
	return &ExternalSemaphore{c: c, h: h, timeline: timeline}, nil
}

// Timeline reports whether the semaphore is a timeline semaphore.
func (s *ExternalSemaphore) Timeline() bool { return s.timeline }

func (s *ExternalSemaphore) use(st *Stream) error {
	if s == nil || s.closed.Load() {
		return ErrClosed
	}
	if err := st.ok(); err != nil {
		return err
	}
	if st.c.ctx != s.c.ctx {
		return invalidf("stream and semaphore belong to different contexts")
	}
	return nil
}

// Signal enqueues on st a signal of the semaphore to value (timeline; the
// value is ignored for binary semaphores) after all earlier work of st.
func (s *ExternalSemaphore) Signal(st *Stream, value uint64) error {
	if err := s.use(st); err != nil {
		return err
	}
	r := s.c.d.llSignalSemaphore(s.c.ctx, s.h, value, st.h)
	return s.c.d.check("cuSignalExternalSemaphoresAsync", r, fmt.Sprintf("value %d", value))
}

// Wait makes later work of st wait until the semaphore reaches value
// (timeline) or is signalled (binary). The host does not block.
func (s *ExternalSemaphore) Wait(st *Stream, value uint64) error {
	if err := s.use(st); err != nil {
		return err
	}
	r := s.c.d.llWaitSemaphore(s.c.ctx, s.h, value, st.h)
	return s.c.d.check("cuWaitExternalSemaphoresAsync", r, fmt.Sprintf("value %d", value))
}

// Close destroys the import. Idempotent.
func (s *ExternalSemaphore) Close() error {
	if s == nil || !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	return s.c.d.check("cuDestroyExternalSemaphore", s.c.d.llDestroySemaphore(s.c.ctx, s.h), "")
}

// VMMAllocation is CUDA memory made with the virtual memory management
// API (cuMemCreate with POSIX file-descriptor handles), mapped read-write
// into the context: the CUDA-side memory that Vulkan (and other processes)
// can import.
type VMMAllocation struct {
	c      *Context
	h      uint64 // CUmemGenericAllocationHandle
	ptr    DevicePtr
	size   uint64
	closed atomic.Bool
}

// VMMGranularity is the minimum size and alignment granularity of
// shareable allocations on this device.
func (c *Context) VMMGranularity() (uint64, error) {
	if err := c.ok(); err != nil {
		return 0, err
	}
	if !c.info.VMM || !c.info.POSIXFD {
		return 0, fmt.Errorf("%w: %s: VMM %v, POSIX fd handles %v", ErrUnsupported, c.info.Name, c.info.VMM, c.info.POSIXFD)
	}
	g, r := c.d.llVMMGranularity(c.ctx, c.dev, false)
	if r != Success {
		return 0, c.d.err("cuMemGetAllocationGranularity", r, "")
	}
	if g == 0 {
		g = 2 << 20
	}
	return g, nil
}

// AllocShareable allocates size bytes (rounded up to the granularity) of
// device memory exportable as a POSIX fd, and maps it into the context.
func (c *Context) AllocShareable(size uint64) (*VMMAllocation, error) {
	if size == 0 {
		return nil, invalidf("allocation of 0 bytes")
	}
	g, err := c.VMMGranularity()
	if err != nil {
		return nil, err
	}
	size = (size + g - 1) / g * g
	h, r := c.d.llVMMCreate(c.ctx, c.dev, size)
	if r != Success {
		return nil, c.d.err("cuMemCreate", r, fmt.Sprintf("%d bytes, POSIX fd handle", size))
	}
	a, err := c.mapVMM(h, size, g)
	if err != nil {
		c.d.llVMMRelease(c.ctx, h)
		return nil, err
	}
	return a, nil
}

// ImportShareable maps an allocation that another process (or Vulkan)
// exported as a POSIX fd from cuMemExportToShareableHandle. The caller
// keeps fd and may close it once this returns.
func (c *Context) ImportShareable(fd int, size uint64) (*VMMAllocation, error) {
	if fd < 0 || size == 0 {
		return nil, invalidf("import of fd %d, %d bytes", fd, size)
	}
	g, err := c.VMMGranularity()
	if err != nil {
		return nil, err
	}
	if size%g != 0 {
		return nil, invalidf("shareable allocation size %d is not a multiple of the granularity %d", size, g)
	}
	h, r := c.d.llVMMImportFD(c.ctx, fd)
	if r != Success {
		return nil, c.d.err("cuMemImportFromShareableHandle", r, fmt.Sprintf("fd %d", fd))
	}
	a, err := c.mapVMM(h, size, g)
	if err != nil {
		c.d.llVMMRelease(c.ctx, h)
		return nil, err
	}
	return a, nil
}

func (c *Context) mapVMM(h, size, align uint64) (*VMMAllocation, error) {
	p, r := c.d.llVMMReserve(c.ctx, size, align)
	if r != Success {
		return nil, c.d.err("cuMemAddressReserve", r, fmt.Sprintf("%d bytes", size))
	}
	if r := c.d.llVMMMap(c.ctx, p, size, h); r != Success {
		c.d.llVMMFreeAddress(c.ctx, p, size)
		return nil, c.d.err("cuMemMap", r, fmt.Sprintf("%d bytes", size))
	}
	if r := c.d.llVMMSetAccess(c.ctx, p, size, c.dev); r != Success {
		c.d.llVMMUnmap(c.ctx, p, size)
		c.d.llVMMFreeAddress(c.ctx, p, size)
		return nil, c.d.err("cuMemSetAccess", r, fmt.Sprintf("%d bytes, read-write", size))
	}
	return &VMMAllocation{c: c, h: h, ptr: p, size: size}, nil
}

// Ptr is the mapped device address.
func (a *VMMAllocation) Ptr() DevicePtr { return a.ptr }

// Size is the allocation size (a multiple of the granularity).
func (a *VMMAllocation) Size() uint64 { return a.size }

// ExportFD returns a new POSIX fd for the allocation (the caller owns it;
// Vulkan's ImportBufferFD takes it over on success).
func (a *VMMAllocation) ExportFD() (int, error) {
	if a == nil || a.closed.Load() {
		return -1, ErrClosed
	}
	fd, r := a.c.d.llVMMExportFD(a.c.ctx, a.h)
	if r != Success {
		return -1, a.c.d.err("cuMemExportToShareableHandle", r, "POSIX fd")
	}
	return fd, nil
}

// Close unmaps and releases the allocation (the memory lives on while
// other importers hold it). Idempotent.
func (a *VMMAllocation) Close() error {
	if a == nil || !a.closed.CompareAndSwap(false, true) {
		return nil
	}
	d, ctx := a.c.d, a.c.ctx
	err := d.check("cuMemUnmap", d.llVMMUnmap(ctx, a.ptr, a.size), "")
	if e := d.check("cuMemAddressFree", d.llVMMFreeAddress(ctx, a.ptr, a.size), ""); err == nil {
		err = e
	}
	if e := d.check("cuMemRelease", d.llVMMRelease(ctx, a.h), ""); err == nil {
		err = e
	}
	return err
}

// DeviceMemory is ordinary device memory (cuMemAlloc, what cudaMalloc and
// PyTorch's caching allocator hand out). Vulkan cannot import it: use the
// copy path (CopyAsync into a shared buffer).
type DeviceMemory struct {
	c      *Context
	ptr    DevicePtr
	size   uint64
	closed atomic.Bool
}

// Alloc allocates ordinary device memory.
func (c *Context) Alloc(size uint64) (*DeviceMemory, error) {
	if err := c.ok(); err != nil {
		return nil, err
	}
	if size == 0 {
		return nil, invalidf("allocation of 0 bytes")
	}
	p, r := c.d.llMemAlloc(c.ctx, size)
	if r != Success {
		return nil, c.d.err("cuMemAlloc", r, fmt.Sprintf("%d bytes", size))
	}
	return &DeviceMemory{c: c, ptr: p, size: size}, nil
}

// Ptr is the device address.
func (m *DeviceMemory) Ptr() DevicePtr { return m.ptr }

// Size is the allocation size.
func (m *DeviceMemory) Size() uint64 { return m.size }

// Close frees the memory. Idempotent.
func (m *DeviceMemory) Close() error {
	if m == nil || !m.closed.CompareAndSwap(false, true) {
		return nil
	}
	return m.c.d.check("cuMemFree", m.c.d.llMemFree(m.c.ctx, m.ptr), "")
}

// CopyAsync enqueues a device-to-device copy of n bytes on st. It is the
// copy path's single copy for memory that cannot be shared (cudaMalloc,
// PyTorch's caching allocator) into or out of a shared buffer, and is
// counted in Counters.DeviceCopyBytes.
func (c *Context) CopyAsync(st *Stream, dst, src DevicePtr, n uint64) error {
	if err := st.ok(); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	r := c.d.llMemcpyDtoDAsync(c.ctx, dst, src, n, st.h)
	if err := c.d.check("cuMemcpyDtoDAsync", r, fmt.Sprintf("%d bytes", n)); err != nil {
		return err
	}
	countDeviceCopy(n)
	return nil
}

// MemsetAsync enqueues a byte fill on st (a CUDA write into any memory,
// shared or not; not counted).
func (c *Context) MemsetAsync(st *Stream, dst DevicePtr, v byte, n uint64) error {
	if err := st.ok(); err != nil {
		return err
	}
	r := c.d.llMemsetD8Async(c.ctx, dst, v, n, st.h)
	return c.d.check("cuMemsetD8Async", r, fmt.Sprintf("%d bytes", n))
}

// CopyFromHost copies src to device memory synchronously: host staging,
// counted in Counters.HostStagedBytes.
func (c *Context) CopyFromHost(dst DevicePtr, src []byte) error {
	if err := c.copyFromHost(dst, src); err != nil {
		return err
	}
	counters.hostStaged.Add(uint64(len(src)))
	return nil
}

// CopyToHost copies device memory to dst synchronously: host staging,
// counted in Counters.HostStagedBytes.
func (c *Context) CopyToHost(dst []byte, src DevicePtr) error {
	if err := c.copyToHost(dst, src); err != nil {
		return err
	}
	counters.hostStaged.Add(uint64(len(dst)))
	return nil
}

// CopyFromHostUncounted is CopyFromHost left out of the bridge's
// counters (ReadCounters): for a benchmark's or test's set-up and check
// copies, which are not traffic of the path it measures.
func (c *Context) CopyFromHostUncounted(dst DevicePtr, src []byte) error {
	return c.copyFromHost(dst, src)
}

// CopyToHostUncounted is CopyToHost left out of the bridge's counters.
func (c *Context) CopyToHostUncounted(dst []byte, src DevicePtr) error { return c.copyToHost(dst, src) }

// copyFromHost and copyToHost are the uncounted copies of set-up and
// verification, which are not part of a measured data path.
func (c *Context) copyFromHost(dst DevicePtr, src []byte) error {
	if err := c.ok(); err != nil {
		return err
	}
	return c.d.check("cuMemcpyHtoD", c.d.llMemcpyHtoD(c.ctx, dst, src), fmt.Sprintf("%d bytes", len(src)))
}

func (c *Context) copyToHost(dst []byte, src DevicePtr) error {
	if err := c.ok(); err != nil {
		return err
	}
	return c.d.check("cuMemcpyDtoH", c.d.llMemcpyDtoH(c.ctx, dst, src), fmt.Sprintf("%d bytes", len(dst)))
}

// spinPTX is a one-thread kernel that busy-waits for a number of GPU clock
// cycles: a long CUDA operation for ordering tests, JIT-compiled by the
// driver from PTX (no CUDA toolkit involved).
const spinPTX = `.version 6.0
.target sm_50
.address_size 64

.visible .entry vkzip_spin(
	.param .u64 vkzip_spin_cycles
)
{
	.reg .pred %p<2>;
	.reg .b64 %rd<5>;

	ld.param.u64 %rd1, [vkzip_spin_cycles];
	mov.u64 %rd2, %clock64;
$L_spin:
	mov.u64 %rd3, %clock64;
	sub.s64 %rd4, %rd3, %rd2;
	setp.lt.u64 %p1, %rd4, %rd1;
	@%p1 bra $L_spin;
	ret;
}
`

// SpinAsync enqueues on st a kernel that busy-waits for cycles GPU clock
// cycles (about cycles / 1.98e9 s on an H200).
func (c *Context) SpinAsync(st *Stream, cycles uint64) error {
	if err := st.ok(); err != nil {
		return err
	}
	c.spinMu.Lock()
	if c.spinFn == 0 {
		m, r := c.d.llModuleLoad(c.ctx, spinPTX)
		if r != Success {
			c.spinMu.Unlock()
			return c.d.err("cuModuleLoadData", r, "spin kernel PTX")
		}
		f, r := c.d.llModuleFunction(c.ctx, m, "vkzip_spin")
		if r != Success {
			c.d.llModuleUnload(c.ctx, m)
			c.spinMu.Unlock()
			return c.d.err("cuModuleGetFunction", r, "vkzip_spin")
		}
		c.spinMod, c.spinFn = m, f
	}
	fn := c.spinFn
	c.spinMu.Unlock()
	return c.d.check("cuLaunchKernel", c.d.llLaunchU64(c.ctx, fn, st.h, cycles), "vkzip_spin")
}
