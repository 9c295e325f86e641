//go:build cgo

package vk

/*
// The counter is read into a Go variable on every poll: without noescape
// each read would allocate it on the heap.
#cgo noescape vkz_semaphore_value
#cgo nocallback vkz_semaphore_value
#include "vkz.h"
*/
import "C"

import (
	"context"
	"fmt"
	"sync/atomic"

	vulkan "github.com/vulkan-go/vulkan"
)

// handleTypeSemaphoreOpaqueFD is VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT.
const handleTypeSemaphoreOpaqueFD = 0x1

// maxSubmitSemaphores bounds waits/signals per submission (vkz_submit).
const maxSubmitSemaphores = 8

// Semaphore is a timeline semaphore (Vulkan 1.2 / VK_KHR_timeline_semaphore),
// optionally exportable as an opaque fd (VK_KHR_external_semaphore_fd) for
// synchronising with other APIs.
type Semaphore struct {
	dev        *Device
	sem        C.VkSemaphore
	exportable bool
	closed     atomic.Bool
}

// NewTimelineSemaphore creates a timeline semaphore with an initial value.
// ErrUnsupported when the device has no timeline semaphores (or, with
// ExportableFD, no VK_KHR_external_semaphore_fd).
func (d *Device) NewTimelineSemaphore(initial uint64, opts ...SemaphoreOptions) (*Semaphore, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if !d.features.TimelineSemaphore {
		return nil, fmt.Errorf("%w: timeline semaphores", ErrUnsupported)
	}
	var export uint32
	for _, o := range opts {
		if o.ExportableFD {
			if !d.features.ExternalSemaphoreFD {
				return nil, fmt.Errorf("%w: exportable semaphores need VK_KHR_external_semaphore_fd", ErrUnsupported)
			}
			export = handleTypeSemaphoreOpaqueFD
		}
	}
	s := &Semaphore{dev: d, exportable: export != 0}
	if r := Result(C.vkz_create_semaphore(d.c, 1, C.uint64_t(initial), C.VkFlags(export), &s.sem)); r != ResultSuccess {
		return nil, check("vkCreateSemaphore", r)
	}
	if err := checkHandle("vkCreateSemaphore", uint64(s.sem)); err != nil {
		return nil, err // leaked: vulkan-go cannot carry it to vkDestroySemaphore
	}
	d.addLive(1)
	d.register(s)
	return s, nil
}

func (s *Semaphore) ok() error {
	if s == nil || s.closed.Load() {
		return ErrClosed
	}
	return s.dev.usable()
}

// Value returns the current counter value.
func (s *Semaphore) Value() (uint64, error) {
	if err := s.ok(); err != nil {
		return 0, err
	}
	var v C.uint64_t
	r := Result(C.vkz_semaphore_value(s.dev.c, s.sem, &v))
	if r == ResultMissingEntryPoint {
		return 0, fmt.Errorf("%w: vkGetSemaphoreCounterValue", ErrMissingEntryPoint)
	}
	s.dev.noteResult(r)
	return uint64(v), check("vkGetSemaphoreCounterValue", r)
}

// Signal sets the counter to v from the host (must increase).
func (s *Semaphore) Signal(v uint64) error {
	if err := s.ok(); err != nil {
		return err
	}
	r := Result(C.vkz_semaphore_signal(s.dev.c, s.sem, C.uint64_t(v)))
	if r == ResultMissingEntryPoint {
		return fmt.Errorf("%w: vkSignalSemaphore", ErrMissingEntryPoint)
	}
	s.dev.noteResult(r)
	return check("vkSignalSemaphore", r)
}

// Wait blocks until the counter reaches v, ctx is done, or the device is lost.
func (s *Semaphore) Wait(ctx context.Context, v uint64) error {
	if err := s.ok(); err != nil {
		return err
	}
	doneCh := ctx.Done()
	slice := uint64(2_000_000)
	if doneCh == nil {
		slice = 100_000_000
	}
	s.dev.sleeps.Add(1)
	for {
		r := Result(C.vkz_semaphore_wait(s.dev.c, s.sem, C.uint64_t(v), C.uint64_t(slice)))
		switch r {
		case ResultSuccess:
			return nil
		case ResultTimeout:
			if doneCh != nil {
				select {
				case <-doneCh:
					return ctx.Err()
				default:
				}
			}
			if s.dev.lost.Load() {
				return &Error{Op: "vkWaitSemaphores", Result: ResultDeviceLost}
			}
		case ResultMissingEntryPoint:
			return fmt.Errorf("%w: vkWaitSemaphores", ErrMissingEntryPoint)
		default:
			s.dev.noteResult(r)
			return check("vkWaitSemaphores", r)
		}
	}
}

// ExportFD returns an opaque fd for the semaphore (caller closes it).
func (s *Semaphore) ExportFD() (int, error) {
	if err := s.ok(); err != nil {
		return -1, err
	}
	if !s.exportable {
		return -1, fmt.Errorf("%w: semaphore was not created with ExportableFD", ErrInvalid)
	}
	var fd C.int
	r := Result(C.vkz_get_semaphore_fd(s.dev.c, s.sem, &fd))
	if r == ResultMissingEntryPoint {
		return -1, fmt.Errorf("%w: vkGetSemaphoreFdKHR", ErrMissingEntryPoint)
	}
	if r != ResultSuccess {
		return -1, check("vkGetSemaphoreFdKHR", r)
	}
	return int(fd), nil
}

// Close destroys the semaphore; it must not be used by pending work.
func (s *Semaphore) Close() error {
	if s == nil || !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	if s.dev.unregister(s) {
		s.destroy()
	}
	return nil
}

func (s *Semaphore) release() {
	s.closed.Store(true)
	s.destroy()
}

func (s *Semaphore) destroy() {
	vulkan.DestroySemaphore(s.dev.vdev, vgSemaphore(s.sem), nil)
	s.dev.addLive(-1)
}
