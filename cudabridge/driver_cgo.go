//go:build cgo && linux

package cudabridge

/*
#cgo LDFLAGS: -ldl
#include "cub.h"
*/
import "C"

import (
	"unsafe"
)

// The low-level layer: one method per driver call, results as Result.
// Handles cross the boundary as integers (C memory, never Go pointers).

func (d *Driver) c() *C.cub_lib { return (*C.cub_lib)(d.lib) }

func openLibrary(path string) (unsafe.Pointer, string) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var buf [512]C.char
	l := C.cub_open(cpath, &buf[0], C.size_t(len(buf)))
	if l == nil {
		return nil, C.GoString(&buf[0])
	}
	return unsafe.Pointer(l), ""
}

func (d *Driver) llInit() Result { return Result(C.cub_init(d.c())) }

func (d *Driver) llVersion() (int, Result) {
	var v C.int
	r := Result(C.cub_driver_version(d.c(), &v))
	return int(v), r
}

func (d *Driver) llErrorText(r Result) (string, string) {
	if r < 0 {
		return r.String(), ""
	}
	return C.GoString(C.cub_error_name(d.c(), C.CUresult(r))), C.GoString(C.cub_error_string(d.c(), C.CUresult(r)))
}

func (d *Driver) llDeviceCount() (int, Result) {
	var n C.int
	r := Result(C.cub_device_count(d.c(), &n))
	return int(n), r
}

func (d *Driver) llDeviceGet(ordinal int) (int, Result) {
	var dev C.int
	r := Result(C.cub_device_get(d.c(), C.int(ordinal), &dev))
	return int(dev), r
}

func (d *Driver) llDeviceName(dev int) (string, Result) {
	var buf [256]C.char
	r := Result(C.cub_device_name(d.c(), C.int(dev), &buf[0], C.int(len(buf)-1)))
	if r != Success {
		return "", r
	}
	return C.GoString(&buf[0]), r
}

func (d *Driver) llDeviceUUID(dev int) ([16]byte, Result) {
	var u [16]C.uchar
	r := Result(C.cub_device_uuid(d.c(), C.int(dev), &u[0]))
	var out [16]byte
	for i := range u {
		out[i] = byte(u[i])
	}
	return out, r
}

func (d *Driver) llDeviceTotalMem(dev int) (uint64, Result) {
	var n C.uint64_t
	r := Result(C.cub_device_total_mem(d.c(), C.int(dev), &n))
	return uint64(n), r
}

func (d *Driver) llDeviceAttribute(dev, attr int) (int, Result) {
	var v C.int
	r := Result(C.cub_device_attribute(d.c(), C.int(dev), C.int(attr), &v))
	return int(v), r
}

func (d *Driver) llPrimaryRetain(dev int) (uintptr, Result) {
	var ctx C.uintptr_t
	r := Result(C.cub_primary_retain(d.c(), C.int(dev), &ctx))
	return uintptr(ctx), r
}

func (d *Driver) llPrimaryRelease(dev int) Result {
	return Result(C.cub_primary_release(d.c(), C.int(dev)))
}

func (d *Driver) llCtxSynchronize(ctx uintptr) Result {
	return Result(C.cub_ctx_synchronize(d.c(), C.uintptr_t(ctx)))
}

func (d *Driver) llStreamCreate(ctx uintptr) (uintptr, Result) {
	var s C.uintptr_t
	r := Result(C.cub_stream_create(d.c(), C.uintptr_t(ctx), &s))
	return uintptr(s), r
}

func (d *Driver) llStreamDestroy(ctx, s uintptr) Result {
	return Result(C.cub_stream_destroy(d.c(), C.uintptr_t(ctx), C.uintptr_t(s)))
}

func (d *Driver) llStreamSynchronize(ctx, s uintptr) Result {
	return Result(C.cub_stream_synchronize(d.c(), C.uintptr_t(ctx), C.uintptr_t(s)))
}

func (d *Driver) llStreamQuery(ctx, s uintptr) Result {
	return Result(C.cub_stream_query(d.c(), C.uintptr_t(ctx), C.uintptr_t(s)))
}

func (d *Driver) llMemAlloc(ctx uintptr, size uint64) (DevicePtr, Result) {
	var p C.uint64_t
	r := Result(C.cub_mem_alloc(d.c(), C.uintptr_t(ctx), C.uint64_t(size), &p))
	return DevicePtr(p), r
}

func (d *Driver) llMemFree(ctx uintptr, p DevicePtr) Result {
	return Result(C.cub_mem_free(d.c(), C.uintptr_t(ctx), C.uint64_t(p)))
}

// llMemcpyHtoD and llMemcpyDtoH are synchronous: the Go slice is only used
// for the duration of the call.
func (d *Driver) llMemcpyHtoD(ctx uintptr, dst DevicePtr, src []byte) Result {
	if len(src) == 0 {
		return Success
	}
	return Result(C.cub_memcpy_htod(d.c(), C.uintptr_t(ctx), C.uint64_t(dst), unsafe.Pointer(&src[0]), C.uint64_t(len(src))))
}

func (d *Driver) llMemcpyDtoH(ctx uintptr, dst []byte, src DevicePtr) Result {
	if len(dst) == 0 {
		return Success
	}
	return Result(C.cub_memcpy_dtoh(d.c(), C.uintptr_t(ctx), unsafe.Pointer(&dst[0]), C.uint64_t(src), C.uint64_t(len(dst))))
}

func (d *Driver) llMemcpyDtoDAsync(ctx uintptr, dst, src DevicePtr, n uint64, s uintptr) Result {
	return Result(C.cub_memcpy_dtod_async(d.c(), C.uintptr_t(ctx), C.uint64_t(dst), C.uint64_t(src), C.uint64_t(n), C.uintptr_t(s)))
}

func (d *Driver) llMemsetD8Async(ctx uintptr, dst DevicePtr, v byte, n uint64, s uintptr) Result {
	return Result(C.cub_memset_d8_async(d.c(), C.uintptr_t(ctx), C.uint64_t(dst), C.uchar(v), C.uint64_t(n), C.uintptr_t(s)))
}

func (d *Driver) llImportMemory(ctx uintptr, fd int, size uint64, dedicated bool) (uintptr, Result) {
	var m C.uintptr_t
	ded := C.int(0)
	if dedicated {
		ded = 1
	}
	r := Result(C.cub_import_memory(d.c(), C.uintptr_t(ctx), C.int(fd), C.uint64_t(size), ded, &m))
	return uintptr(m), r
}

func (d *Driver) llMappedBuffer(ctx, mem uintptr, off, size uint64) (DevicePtr, Result) {
	var p C.uint64_t
	r := Result(C.cub_mapped_buffer(d.c(), C.uintptr_t(ctx), C.uintptr_t(mem), C.uint64_t(off), C.uint64_t(size), &p))
	return DevicePtr(p), r
}

func (d *Driver) llDestroyMemory(ctx, mem uintptr) Result {
	return Result(C.cub_destroy_memory(d.c(), C.uintptr_t(ctx), C.uintptr_t(mem)))
}

func (d *Driver) llImportSemaphore(ctx uintptr, fd int, timeline bool) (uintptr, Result) {
	var s C.uintptr_t
	tl := C.int(0)
	if timeline {
		tl = 1
	}
	r := Result(C.cub_import_semaphore(d.c(), C.uintptr_t(ctx), C.int(fd), tl, &s))
	return uintptr(s), r
}

func (d *Driver) llSignalSemaphore(ctx, sem uintptr, v uint64, stream uintptr) Result {
	return Result(C.cub_signal_semaphore(d.c(), C.uintptr_t(ctx), C.uintptr_t(sem), C.uint64_t(v), C.uintptr_t(stream)))
}

func (d *Driver) llWaitSemaphore(ctx, sem uintptr, v uint64, stream uintptr) Result {
	return Result(C.cub_wait_semaphore(d.c(), C.uintptr_t(ctx), C.uintptr_t(sem), C.uint64_t(v), C.uintptr_t(stream)))
}

func (d *Driver) llDestroySemaphore(ctx, sem uintptr) Result {
	return Result(C.cub_destroy_semaphore(d.c(), C.uintptr_t(ctx), C.uintptr_t(sem)))
}

func (d *Driver) llVMMGranularity(ctx uintptr, dev int, recommended bool) (uint64, Result) {
	var g C.uint64_t
	rec := C.int(0)
	if recommended {
		rec = 1
	}
	r := Result(C.cub_vmm_granularity(d.c(), C.uintptr_t(ctx), C.int(dev), rec, &g))
	return uint64(g), r
}

func (d *Driver) llVMMCreate(ctx uintptr, dev int, size uint64) (uint64, Result) {
	var h C.uint64_t
	r := Result(C.cub_vmm_create(d.c(), C.uintptr_t(ctx), C.int(dev), C.uint64_t(size), &h))
	return uint64(h), r
}

func (d *Driver) llVMMRelease(ctx uintptr, h uint64) Result {
	return Result(C.cub_vmm_release(d.c(), C.uintptr_t(ctx), C.uint64_t(h)))
}

func (d *Driver) llVMMExportFD(ctx uintptr, h uint64) (int, Result) {
	var fd C.int
	r := Result(C.cub_vmm_export_fd(d.c(), C.uintptr_t(ctx), C.uint64_t(h), &fd))
	return int(fd), r
}

func (d *Driver) llVMMImportFD(ctx uintptr, fd int) (uint64, Result) {
	var h C.uint64_t
	r := Result(C.cub_vmm_import_fd(d.c(), C.uintptr_t(ctx), C.int(fd), &h))
	return uint64(h), r
}

func (d *Driver) llVMMReserve(ctx uintptr, size, align uint64) (DevicePtr, Result) {
	var p C.uint64_t
	r := Result(C.cub_vmm_reserve(d.c(), C.uintptr_t(ctx), C.uint64_t(size), C.uint64_t(align), &p))
	return DevicePtr(p), r
}

func (d *Driver) llVMMFreeAddress(ctx uintptr, p DevicePtr, size uint64) Result {
	return Result(C.cub_vmm_free_address(d.c(), C.uintptr_t(ctx), C.uint64_t(p), C.uint64_t(size)))
}

func (d *Driver) llVMMMap(ctx uintptr, p DevicePtr, size, h uint64) Result {
	return Result(C.cub_vmm_map(d.c(), C.uintptr_t(ctx), C.uint64_t(p), C.uint64_t(size), C.uint64_t(h)))
}

func (d *Driver) llVMMUnmap(ctx uintptr, p DevicePtr, size uint64) Result {
	return Result(C.cub_vmm_unmap(d.c(), C.uintptr_t(ctx), C.uint64_t(p), C.uint64_t(size)))
}

func (d *Driver) llVMMSetAccess(ctx uintptr, p DevicePtr, size uint64, dev int) Result {
	return Result(C.cub_vmm_set_access(d.c(), C.uintptr_t(ctx), C.uint64_t(p), C.uint64_t(size), C.int(dev)))
}

func (d *Driver) llModuleLoad(ctx uintptr, image string) (uintptr, Result) {
	ci := C.CString(image)
	defer C.free(unsafe.Pointer(ci))
	var m C.uintptr_t
	r := Result(C.cub_module_load(d.c(), C.uintptr_t(ctx), ci, &m))
	return uintptr(m), r
}

func (d *Driver) llModuleUnload(ctx, m uintptr) Result {
	return Result(C.cub_module_unload(d.c(), C.uintptr_t(ctx), C.uintptr_t(m)))
}

func (d *Driver) llModuleFunction(ctx, m uintptr, name string) (uintptr, Result) {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	var f C.uintptr_t
	r := Result(C.cub_module_function(d.c(), C.uintptr_t(ctx), C.uintptr_t(m), cn, &f))
	return uintptr(f), r
}

func (d *Driver) llLaunchU64(ctx, fn, stream uintptr, arg uint64) Result {
	return Result(C.cub_launch_u64(d.c(), C.uintptr_t(ctx), C.uintptr_t(fn), C.uintptr_t(stream), C.uint64_t(arg)))
}

// builtWithDriver reports whether this build can load a driver at all.
const builtWithDriver = true
