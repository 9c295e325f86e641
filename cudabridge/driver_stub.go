//go:build !(cgo && linux)

package cudabridge

// Stub build (no cgo, or not Linux): the API is identical, Load fails with
// ErrNoCUDA, and no driver call is ever made.

import "unsafe"

func openLibrary(path string) (unsafe.Pointer, string) {
	return nil, "built without cgo (or not on Linux): the CUDA driver cannot be loaded"
}

func (d *Driver) llErrorText(r Result) (string, string) { return r.String(), "" }

func (d *Driver) llInit() Result { return resultNoCUDA }

func (d *Driver) llVersion() (int, Result) { return 0, resultNoCUDA }

func (d *Driver) llDeviceCount() (int, Result) { return 0, resultNoCUDA }

func (d *Driver) llDeviceGet(ordinal int) (int, Result) { return 0, resultNoCUDA }

func (d *Driver) llDeviceName(dev int) (string, Result) { return "", resultNoCUDA }

func (d *Driver) llDeviceUUID(dev int) ([16]byte, Result) { return [16]byte{}, resultNoCUDA }

func (d *Driver) llDeviceTotalMem(dev int) (uint64, Result) { return 0, resultNoCUDA }

func (d *Driver) llDeviceAttribute(dev, attr int) (int, Result) { return 0, resultNoCUDA }

func (d *Driver) llPrimaryRetain(dev int) (uintptr, Result) { return 0, resultNoCUDA }

func (d *Driver) llPrimaryRelease(dev int) Result { return resultNoCUDA }

func (d *Driver) llCtxSynchronize(ctx uintptr) Result { return resultNoCUDA }

func (d *Driver) llStreamCreate(ctx uintptr) (uintptr, Result) { return 0, resultNoCUDA }

func (d *Driver) llStreamDestroy(ctx, s uintptr) Result { return resultNoCUDA }

func (d *Driver) llStreamSynchronize(ctx, s uintptr) Result { return resultNoCUDA }

func (d *Driver) llStreamQuery(ctx, s uintptr) Result { return resultNoCUDA }

func (d *Driver) llMemAlloc(ctx uintptr, size uint64) (DevicePtr, Result) { return 0, resultNoCUDA }

func (d *Driver) llMemFree(ctx uintptr, p DevicePtr) Result { return resultNoCUDA }

func (d *Driver) llMemcpyHtoD(ctx uintptr, dst DevicePtr, src []byte) Result { return resultNoCUDA }

func (d *Driver) llMemcpyDtoH(ctx uintptr, dst []byte, src DevicePtr) Result { return resultNoCUDA }

func (d *Driver) llMemcpyDtoDAsync(ctx uintptr, dst, src DevicePtr, n uint64, s uintptr) Result {
	return resultNoCUDA
}

func (d *Driver) llMemsetD8Async(ctx uintptr, dst DevicePtr, v byte, n uint64, s uintptr) Result {
	return resultNoCUDA
}

func (d *Driver) llImportMemory(ctx uintptr, fd int, size uint64, dedicated bool) (uintptr, Result) {
	return 0, resultNoCUDA
}

func (d *Driver) llMappedBuffer(ctx, mem uintptr, off, size uint64) (DevicePtr, Result) {
	return 0, resultNoCUDA
}

func (d *Driver) llDestroyMemory(ctx, mem uintptr) Result { return resultNoCUDA }

func (d *Driver) llImportSemaphore(ctx uintptr, fd int, timeline bool) (uintptr, Result) {
	return 0, resultNoCUDA
}

func (d *Driver) llSignalSemaphore(ctx, sem uintptr, v uint64, stream uintptr) Result {
	return resultNoCUDA
}

func (d *Driver) llWaitSemaphore(ctx, sem uintptr, v uint64, stream uintptr) Result {
	return resultNoCUDA
}

func (d *Driver) llDestroySemaphore(ctx, sem uintptr) Result { return resultNoCUDA }

func (d *Driver) llVMMGranularity(ctx uintptr, dev int, recommended bool) (uint64, Result) {
	return 0, resultNoCUDA
}

func (d *Driver) llVMMCreate(ctx uintptr, dev int, size uint64) (uint64, Result) {
	return 0, resultNoCUDA
}

func (d *Driver) llVMMRelease(ctx uintptr, h uint64) Result { return resultNoCUDA }

func (d *Driver) llVMMExportFD(ctx uintptr, h uint64) (int, Result) { return 0, resultNoCUDA }

func (d *Driver) llVMMImportFD(ctx uintptr, fd int) (uint64, Result) { return 0, resultNoCUDA }

func (d *Driver) llVMMReserve(ctx uintptr, size, align uint64) (DevicePtr, Result) {
	return 0, resultNoCUDA
}

func (d *Driver) llVMMFreeAddress(ctx uintptr, p DevicePtr, size uint64) Result { return resultNoCUDA }

func (d *Driver) llVMMMap(ctx uintptr, p DevicePtr, size, h uint64) Result { return resultNoCUDA }

func (d *Driver) llVMMUnmap(ctx uintptr, p DevicePtr, size uint64) Result { return resultNoCUDA }

func (d *Driver) llVMMSetAccess(ctx uintptr, p DevicePtr, size uint64, dev int) Result {
	return resultNoCUDA
}

func (d *Driver) llModuleLoad(ctx uintptr, image string) (uintptr, Result) { return 0, resultNoCUDA }

func (d *Driver) llModuleUnload(ctx, m uintptr) Result { return resultNoCUDA }

func (d *Driver) llModuleFunction(ctx, m uintptr, name string) (uintptr, Result) {
	return 0, resultNoCUDA
}

func (d *Driver) llLaunchU64(ctx, fn, stream uintptr, arg uint64) Result { return resultNoCUDA }

// builtWithDriver reports whether this build can load a driver at all.
const builtWithDriver = false
