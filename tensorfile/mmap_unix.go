//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package tensorfile

import (
	"os"
	"syscall"
)

// mapFile maps the whole file read-only. golang.org/x/exp/mmap would map it too, but its ReaderAt hides the
// mapped bytes behind ReadAt copies, and tensor views must be zero-copy for inputs of many GiB.
func mapFile(path string) (data []byte, unmap func() error, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		// Pipes and devices cannot be mapped and have no size to check against: read what they hold.
		data, err := readAll(f)
		return data, nil, err
	}
	size := fi.Size()
	if size == 0 {
		return []byte{}, nil, nil // mmap rejects length 0
	}
	if int64(int(size)) != size || size < 0 {
		return nil, nil, errorf(ErrTooLarge, Auto, "file size %d cannot be mapped on this platform", size)
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, &os.PathError{Op: "mmap", Path: path, Err: err}
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
