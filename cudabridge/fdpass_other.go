//go:build !unix

package cudabridge

import "fmt"

// CloseFDs is a no-op where there are no POSIX file descriptors.
func CloseFDs(fds []int) {}

// DupFD is unsupported where there are no POSIX file descriptors.
func DupFD(fd int) (int, error) {
	return -1, fmt.Errorf("%w: file descriptors need a Unix system", ErrUnsupported)
}
