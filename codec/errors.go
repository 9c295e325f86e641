package codec

import (
	"errors"
	"fmt"
)

// Error classes. Every error returned by this package (and by the backends) wraps exactly one of them, so callers
// can branch with errors.Is; conformance checks that all backends give the same class for the same payload.
var (
	ErrFormat       = errors.New("not a vkzip payload")        // bad magic
	ErrVersion      = errors.New("unsupported format version") // a version or feature this reader does not know
	ErrTruncated    = errors.New("payload truncated")          // input ends before the structures it declares
	ErrChecksum     = errors.New("checksum mismatch")          // a CRC-32C does not match
	ErrCorrupt      = errors.New("payload corrupt")            // structures that contradict each other
	ErrNonCanonical = errors.New("payload not canonical")      // decodable, but never produced by an encoder
	ErrTooLarge     = errors.New("size out of range")          // sizes beyond the format's or the caller's limits
	ErrInvalidInput = errors.New("invalid input")              // encoder input it cannot represent
	ErrUnsupported  = errors.New("unsupported")                // a format, dtype or option this build lacks
	ErrNoDevice     = errors.New("no usable device")           // a backend that needs a device found none
	ErrDeviceLost   = errors.New("device lost")                // the GPU was lost during the operation
	ErrClosed       = errors.New("codec closed")               // use after Close
)

// Error carries the class plus where the problem is. Unwrap gives the class.
type Error struct {
	Class  error  // one of the Err* values above
	Tensor string // tensor name, if any
	Chunk  int64  // chunk index, or -1
	Detail string // what exactly is wrong
}

func (e *Error) Error() string {
	s := "vkzip: " + e.Class.Error()
	if e.Tensor != "" {
		s += fmt.Sprintf(" (tensor %q", e.Tensor)
		if e.Chunk >= 0 {
			s += fmt.Sprintf(", chunk %d", e.Chunk)
		}
		s += ")"
	} else if e.Chunk >= 0 {
		s += fmt.Sprintf(" (chunk %d)", e.Chunk)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *Error) Unwrap() error { return e.Class }

// errorf builds an *Error of class cls without tensor or chunk context.
func errorf(cls error, format string, args ...any) *Error {
	return &Error{Class: cls, Chunk: -1, Detail: fmt.Sprintf(format, args...)}
}

// chunkErr builds an *Error located at a chunk.
func chunkErr(cls error, chunk uint64, format string, args ...any) *Error {
	return &Error{Class: cls, Chunk: int64(chunk), Detail: fmt.Sprintf(format, args...)}
}

// withTensor sets the tensor name on an *Error that has none.
func withTensor(err error, name string) error {
	var e *Error
	if errors.As(err, &e) && e.Tensor == "" {
		c := *e
		c.Tensor = name
		return &c
	}
	return err
}
