package cudabridge

import (
	"errors"
	"fmt"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrNoCUDA: no usable CUDA driver — libcuda.so.1 (or $VKZIP_CUDA_LIB)
	// cannot be loaded, is not a CUDA driver, cuInit fails, or the package
	// was built without cgo or for another OS.
	ErrNoCUDA = errors.New("cudabridge: CUDA driver not available")
	// ErrNoDevice: no CUDA device matches (by UUID or ordinal).
	ErrNoDevice = errors.New("cudabridge: no matching CUDA device")
	// ErrUnsupported: the driver or device lacks what the call needs (an
	// entry point of a newer driver, VMM, POSIX fd handles, timeline
	// semaphore interop, CUDA_ERROR_NOT_SUPPORTED).
	ErrUnsupported = errors.New("cudabridge: not supported")
	// ErrInvalid: bad arguments (sizes, offsets, fds, closed peers).
	ErrInvalid = errors.New("cudabridge: invalid argument")
	// ErrClosed: the object was already closed.
	ErrClosed = errors.New("cudabridge: use of closed object")
	// ErrProtocol: a malformed, unexpected or incompatible handshake message.
	ErrProtocol = errors.New("cudabridge: protocol error")
)

// Result is a CUresult.
type Result int32

// CUresult values this package names (cuda.h); cuGetErrorName supplies the
// others when the driver is loaded.
const (
	Success             Result = 0
	ErrorInvalidValue   Result = 1
	ErrorOutOfMemory    Result = 2
	ErrorNotInitialized Result = 3
	ErrorDeinitialized  Result = 4
	ErrorNoDevice       Result = 100
	ErrorInvalidDevice  Result = 101
	ErrorInvalidContext Result = 201
	ErrorOperatingSys   Result = 304
	ErrorInvalidHandle  Result = 400
	ErrorNotFound       Result = 500
	ErrorNotReady       Result = 600
	ErrorIllegalAddress Result = 700
	ErrorLaunchFailed   Result = 719
	ErrorNotPermitted   Result = 800
	ErrorNotSupported   Result = 801
	ErrorUnknown        Result = 999
	// ResultMissingSymbol is not a CUresult: the driver library lacks the
	// entry point (an older driver).
	ResultMissingSymbol Result = -1
	// resultNoCUDA is not a CUresult: the stub build has no driver.
	resultNoCUDA Result = -2
)

var resultNames = map[Result]string{
	Success:             "CUDA_SUCCESS",
	ErrorInvalidValue:   "CUDA_ERROR_INVALID_VALUE",
	ErrorOutOfMemory:    "CUDA_ERROR_OUT_OF_MEMORY",
	ErrorNotInitialized: "CUDA_ERROR_NOT_INITIALIZED",
	ErrorDeinitialized:  "CUDA_ERROR_DEINITIALIZED",
	ErrorNoDevice:       "CUDA_ERROR_NO_DEVICE",
	ErrorInvalidDevice:  "CUDA_ERROR_INVALID_DEVICE",
	ErrorInvalidContext: "CUDA_ERROR_INVALID_CONTEXT",
	ErrorOperatingSys:   "CUDA_ERROR_OPERATING_SYSTEM",
	ErrorInvalidHandle:  "CUDA_ERROR_INVALID_HANDLE",
	ErrorNotFound:       "CUDA_ERROR_NOT_FOUND",
	ErrorNotReady:       "CUDA_ERROR_NOT_READY",
	ErrorIllegalAddress: "CUDA_ERROR_ILLEGAL_ADDRESS",
	ErrorLaunchFailed:   "CUDA_ERROR_LAUNCH_FAILED",
	ErrorNotPermitted:   "CUDA_ERROR_NOT_PERMITTED",
	ErrorNotSupported:   "CUDA_ERROR_NOT_SUPPORTED",
	ErrorUnknown:        "CUDA_ERROR_UNKNOWN",
	ResultMissingSymbol: "missing entry point",
	resultNoCUDA:        "no CUDA driver",
}

func (r Result) String() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("CUresult(%d)", int32(r))
}

// Error is a failed driver call: which function, its CUresult, and the
// driver's own name and description of it when the driver provides them.
type Error struct {
	Func   string // driver entry point, e.g. "cuImportExternalMemory"
	Code   Result
	Name   string // cuGetErrorName, or Code.String()
	Desc   string // cuGetErrorString (may be empty)
	Detail string // what the call was doing (sizes, fds)
}

func (e *Error) Error() string {
	s := fmt.Sprintf("cudabridge: %s: %s", e.Func, e.Name)
	if e.Desc != "" {
		s += " (" + e.Desc + ")"
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Is maps result classes onto the sentinels.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnsupported:
		return e.Code == ErrorNotSupported || e.Code == ResultMissingSymbol
	case ErrNoCUDA:
		return e.Code == resultNoCUDA
	case ErrNoDevice:
		return e.Code == ErrorNoDevice || e.Code == ErrorInvalidDevice
	case ErrInvalid:
		return e.Code == ErrorInvalidValue || e.Code == ErrorInvalidHandle
	}
	return false
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

func protocolf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrProtocol}, args...)...)
}
