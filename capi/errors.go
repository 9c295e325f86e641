package main

/*
#cgo CFLAGS: -I${SRCDIR}/include
#include <stdlib.h>
#include "vkzip.h"
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime/debug"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/cudabridge"
	"github.com/vkzip/vkzip/tensorfile"
)

// statusError is an error with its status decided here (argument checks, short buffers).
type statusError struct {
	status C.int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

// invalidf is a VKZIP_E_INVALID_ARGUMENT error.
func invalidf(format string, args ...any) error {
	return &statusError{C.VKZIP_E_INVALID_ARGUMENT, "vkzip: invalid argument: " + fmt.Sprintf(format, args...)}
}

// statusf is an error of status st.
func statusf(st C.int, format string, args ...any) error {
	return &statusError{st, "vkzip: " + fmt.Sprintf(format, args...)}
}

// classes maps each codec error class (and the tensor-file, CUDA and I/O classes around it) to its status. The
// first match wins, so the codec's classes, which every codec error wraps exactly one of, come first.
var classes = []struct {
	err    error
	status C.int
}{
	{codec.ErrFormat, C.VKZIP_E_FORMAT},
	{codec.ErrVersion, C.VKZIP_E_VERSION},
	{codec.ErrTruncated, C.VKZIP_E_TRUNCATED},
	{codec.ErrChecksum, C.VKZIP_E_CHECKSUM},
	{codec.ErrCorrupt, C.VKZIP_E_CORRUPT},
	{codec.ErrNonCanonical, C.VKZIP_E_NONCANONICAL},
	{codec.ErrTooLarge, C.VKZIP_E_TOO_LARGE},
	{codec.ErrInvalidInput, C.VKZIP_E_INVALID_ARGUMENT},
	{codec.ErrUnsupported, C.VKZIP_E_UNSUPPORTED},
	{codec.ErrNoDevice, C.VKZIP_E_NO_DEVICE},
	{codec.ErrDeviceLost, C.VKZIP_E_DEVICE_LOST},
	{codec.ErrClosed, C.VKZIP_E_INVALID_ARGUMENT},
	{tensorfile.ErrInvalid, C.VKZIP_E_INVALID_ARGUMENT},
	{tensorfile.ErrUnsupported, C.VKZIP_E_UNSUPPORTED},
	{tensorfile.ErrTooLarge, C.VKZIP_E_TOO_LARGE},
	{cudabridge.ErrNoCUDA, C.VKZIP_E_NO_DEVICE},
	{cudabridge.ErrNoDevice, C.VKZIP_E_NO_DEVICE},
	{cudabridge.ErrUnsupported, C.VKZIP_E_UNSUPPORTED},
	{cudabridge.ErrInvalid, C.VKZIP_E_INVALID_ARGUMENT},
	{cudabridge.ErrClosed, C.VKZIP_E_INVALID_ARGUMENT},
	{context.Canceled, C.VKZIP_E_INTERNAL},
}

// statusOf is the status of err (nil: VKZIP_OK).
func statusOf(err error) C.int {
	if err == nil {
		return C.VKZIP_OK
	}
	var se *statusError
	if errors.As(err, &se) {
		return se.status
	}
	for _, c := range classes {
		if errors.Is(err, c.err) {
			return c.status
		}
	}
	var ce *cudabridge.Error
	if errors.As(err, &ce) {
		return C.VKZIP_E_CUDA
	}
	var pe *fs.PathError
	if errors.As(err, &pe) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return C.VKZIP_E_IO
	}
	return C.VKZIP_E_INTERNAL
}

// setError stores msg as this thread's last error. It runs on the caller's thread: an export called from C stays
// on that thread until it returns, and so do its calls back into C.
func setError(msg string) { C.vkzip__set_error(C.CString(msg)) }

// guard runs fn for an export and returns its status, with the message of a failure stored for
// vkzip_last_error. A panic in fn (a bug, or a fault on a bad pointer the caller passed, which SetPanicOnFault
// turns into a panic on this goroutine) becomes VKZIP_E_INTERNAL: no Go panic unwinds into C.
func guard(fn func() error) (status C.int) {
	defer func() {
		if p := recover(); p != nil {
			status = C.VKZIP_E_INTERNAL
			setError(fmt.Sprintf("vkzip: internal error: %v", p))
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	err := fn()
	status = statusOf(err)
	if err != nil {
		setError(err.Error())
	}
	return status
}

// className is vkzip_error_class(st) in Go.
func className(st C.int) string { return C.GoString(C.vkzip_error_class(st)) }
