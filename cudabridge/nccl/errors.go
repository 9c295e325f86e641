package nccl

import (
	"errors"
	"fmt"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrNoNCCL: no usable NCCL — libnccl.so.2 (or $VKZIP_NCCL_LIB) cannot
	// be loaded, is not NCCL (an entry point of NCCL 2.7 is missing), or the
	// package was built without cgo or for another OS.
	ErrNoNCCL = errors.New("nccl: NCCL library not available")
	// ErrUnsupported: the library lacks an optional entry point the call
	// needs (an older NCCL).
	ErrUnsupported = errors.New("nccl: not supported by this NCCL")
	// ErrInvalid: bad arguments (device lists, counts, ranks, closed
	// communicators in an operation).
	ErrInvalid = errors.New("nccl: invalid argument")
	// ErrClosed: the communicator was already destroyed.
	ErrClosed = errors.New("nccl: use of a destroyed communicator")
)

// Result is an ncclResult_t.
type Result int32

// ncclResult_t values (nccl.h).
const (
	Success            Result = 0
	UnhandledCudaError Result = 1
	SystemError        Result = 2
	InternalError      Result = 3
	InvalidArgument    Result = 4
	InvalidUsage       Result = 5
	RemoteError        Result = 6
	InProgress         Result = 7
	Timeout            Result = 8 // NCCL 2.28+
	// ResultMissingSymbol is not an ncclResult_t: the library lacks the
	// entry point.
	ResultMissingSymbol Result = -1
	// resultNoNCCL is not an ncclResult_t: the stub build has no NCCL.
	resultNoNCCL Result = -2
)

var resultNames = map[Result]string{
	Success:             "ncclSuccess",
	UnhandledCudaError:  "ncclUnhandledCudaError",
	SystemError:         "ncclSystemError",
	InternalError:       "ncclInternalError",
	InvalidArgument:     "ncclInvalidArgument",
	InvalidUsage:        "ncclInvalidUsage",
	RemoteError:         "ncclRemoteError",
	InProgress:          "ncclInProgress",
	Timeout:             "ncclTimeout",
	ResultMissingSymbol: "missing entry point",
	resultNoNCCL:        "no NCCL",
}

func (r Result) String() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("ncclResult_t(%d)", int32(r))
}

// Error is a failed NCCL call: which function, its result, NCCL's
// description of the result and its last error message when it has them.
type Error struct {
	Func   string // NCCL entry point, e.g. "ncclGroupEnd"
	Code   Result
	Desc   string // ncclGetErrorString
	Last   string // ncclGetLastError (NCCL 2.13+; may be empty)
	Detail string // what the call was doing
}

func (e *Error) Error() string {
	s := fmt.Sprintf("nccl: %s: %s", e.Func, e.Code)
	if e.Desc != "" {
		s += " (" + e.Desc + ")"
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Last != "" {
		s += "; last error: " + e.Last
	}
	return s
}

// Is maps result classes onto the sentinels.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnsupported:
		return e.Code == ResultMissingSymbol
	case ErrNoNCCL:
		return e.Code == resultNoNCCL
	case ErrInvalid:
		return e.Code == InvalidArgument || e.Code == InvalidUsage
	}
	return false
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
