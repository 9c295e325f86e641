//go:build linux && (amd64 || arm64)

package cudabridge

import (
	"runtime"
	"syscall"
	"unsafe"
)

// memfd_create(2): not in package syscall, so by number.
func memfdCreate(name string) (int, error) {
	nr := uintptr(319) // amd64
	if runtime.GOARCH == "arm64" {
		nr = 279
	}
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return -1, err
	}
	const mfdCloexec = 1
	fd, _, errno := syscall.Syscall(nr, uintptr(unsafe.Pointer(p)), mfdCloexec, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}
