package cudabridge

import (
	"fmt"

	"github.com/vkzip/vkzip/vk"
)

// OpenForVulkan opens the CUDA device that is the same GPU as the Vulkan
// device: the one whose cuDeviceGetUuid equals VkPhysicalDeviceIDProperties
// ::deviceUUID. Memory and semaphores can only be shared within one GPU.
func (d *Driver) OpenForVulkan(info vk.DeviceInfo) (*Context, error) {
	if info.UUID == ([16]byte{}) {
		return nil, fmt.Errorf("%w: Vulkan device %q reports no deviceUUID", ErrNoDevice, info.Name)
	}
	c, err := d.OpenUUID(info.UUID)
	if err != nil {
		return nil, fmt.Errorf("no CUDA device for Vulkan device %q: %w", info.Name, err)
	}
	return c, nil
}

// SharedBuffer is Vulkan memory that CUDA sees too (direction a of the
// bridge): an exportable vk.Buffer (a dedicated allocation exported as an
// opaque fd) imported with cuImportExternalMemory and mapped with
// cuExternalMemoryGetMappedBuffer. Kernels of both APIs read and write it
// in place; order their accesses with a SharedSemaphore.
type SharedBuffer struct {
	VK     *vk.Buffer
	Ptr    DevicePtr // CUDA address of the buffer's first byte
	Size   uint64
	mem    *ExternalMemory
	ownsVK bool
}

// NewSharedBuffer allocates size bytes of device-local Vulkan memory
// exportable as an opaque fd and maps it into c.
func NewSharedBuffer(c *Context, dev *vk.Device, size uint64) (*SharedBuffer, error) {
	b, err := dev.NewBuffer(size, vk.DeviceLocal, vk.BufferOptions{ExportableFD: true})
	if err != nil {
		return nil, err
	}
	s, err := ShareVulkanBuffer(c, b)
	if err != nil {
		b.Close()
		return nil, err
	}
	s.ownsVK = true
	return s, nil
}

// ShareVulkanBuffer maps an exportable vk.Buffer into c (the buffer stays
// the caller's: SharedBuffer.Close leaves it open).
func ShareVulkanBuffer(c *Context, b *vk.Buffer) (*SharedBuffer, error) {
	fd, err := b.ExportFD()
	if err != nil {
		return nil, err
	}
	// vk.Buffer memory is always a dedicated allocation: import it as one,
	// with the allocation's size (not the buffer's).
	mem, err := c.ImportMemoryFD(fd, b.AllocationSize(), true)
	if err != nil {
		CloseFDs([]int{fd})
		return nil, err
	}
	p, err := mem.MapBuffer(0, b.Size())
	if err != nil {
		mem.Close()
		return nil, err
	}
	return &SharedBuffer{VK: b, Ptr: p, Size: b.Size(), mem: mem}, nil
}

// Range is the whole buffer as a Vulkan binding.
func (s *SharedBuffer) Range() vk.BufferRange { return vk.BufferRange{Buf: s.VK} }

// Close unmaps the buffer from CUDA and, when NewSharedBuffer made it,
// frees the Vulkan buffer. Work of both APIs on it must have completed.
func (s *SharedBuffer) Close() error {
	if s == nil {
		return nil
	}
	err := s.mem.Close()
	if s.ownsVK {
		if e := s.VK.Close(); err == nil {
			err = e
		}
	}
	return err
}

// ImportVMMToVulkan makes a CUDA VMM allocation (made with POSIX fd handles,
// see Context.AllocShareable) a Vulkan buffer of size bytes (direction b of
// the bridge). The Vulkan buffer keeps the memory alive after a.Close.
func ImportVMMToVulkan(dev *vk.Device, a *VMMAllocation, size uint64) (*vk.Buffer, error) {
	if size == 0 || size > a.Size() {
		return nil, invalidf("Vulkan buffer of %d bytes on a %d-byte CUDA allocation", size, a.Size())
	}
	fd, err := a.ExportFD()
	if err != nil {
		return nil, err
	}
	b, err := dev.ImportBufferFD(fd, size, vk.ImportOptions{AllocationSize: a.Size()})
	if err != nil {
		CloseFDs([]int{fd}) // Vulkan owns fd only on success
		return nil, err
	}
	return b, nil
}

// SharedSemaphore is a Vulkan timeline semaphore exported as an opaque fd
// and imported into CUDA: CUDA streams signal and wait on it
// (ExternalSemaphore.Signal/Wait), Vulkan submissions too
// (vk.SemaphoreValue{Sem: s.VK}), with no host wait on either side.
type SharedSemaphore struct {
	VK *vk.Semaphore
	CU *ExternalSemaphore
}

// NewSharedSemaphore creates the pair with the given initial value.
func NewSharedSemaphore(c *Context, dev *vk.Device, initial uint64) (*SharedSemaphore, error) {
	sem, err := dev.NewTimelineSemaphore(initial, vk.SemaphoreOptions{ExportableFD: true})
	if err != nil {
		return nil, err
	}
	fd, err := sem.ExportFD()
	if err != nil {
		sem.Close()
		return nil, err
	}
	cu, err := c.ImportSemaphoreFD(fd, true)
	if err != nil {
		CloseFDs([]int{fd})
		sem.Close()
		return nil, err
	}
	return &SharedSemaphore{VK: sem, CU: cu}, nil
}

// At is a Vulkan wait or signal of value.
func (s *SharedSemaphore) At(value uint64) vk.SemaphoreValue {
	return vk.SemaphoreValue{Sem: s.VK, Value: value}
}

// Close destroys both sides; no pending work may use them.
func (s *SharedSemaphore) Close() error {
	if s == nil {
		return nil
	}
	err := s.CU.Close()
	if e := s.VK.Close(); err == nil {
		err = e
	}
	return err
}
