package tensorfile

import (
	"errors"
	"fmt"
)

// Error classes. Every error about a file's content that this package returns wraps exactly one of them, so callers
// can branch with errors.Is. Errors from the operating system (a missing file, say) are returned as they are.
var (
	ErrInvalid     = errors.New("invalid tensor file")     // content that breaks its format's rules
	ErrUnsupported = errors.New("unsupported tensor file") // valid content this package does not read
	ErrTooLarge    = errors.New("tensor file too large")   // sizes beyond the format's or this platform's limits
)

// Error describes a problem with a tensor file. Unwrap gives the class.
type Error struct {
	Class  error  // ErrInvalid, ErrUnsupported or ErrTooLarge
	Path   string // file path, when known
	Kind   Kind   // format being read, or Auto before it was known
	Tensor string // tensor name, when the problem is within one tensor's entry
	Detail string // what exactly is wrong
}

func (e *Error) Error() string {
	s := "tensorfile: "
	if e.Path != "" {
		s += e.Path + ": "
	}
	s += e.Class.Error()
	if e.Kind != Auto {
		s += " (" + e.Kind.String()
		if e.Tensor != "" {
			s += fmt.Sprintf(", tensor %q", e.Tensor)
		}
		s += ")"
	} else if e.Tensor != "" {
		s += fmt.Sprintf(" (tensor %q)", e.Tensor)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *Error) Unwrap() error { return e.Class }

func errorf(cls error, kind Kind, format string, args ...any) *Error {
	return &Error{Class: cls, Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

func tensorErrorf(cls error, kind Kind, tensor, format string, args ...any) *Error {
	return &Error{Class: cls, Kind: kind, Tensor: tensor, Detail: fmt.Sprintf(format, args...)}
}

// withPath sets the path on an *Error that has none.
func withPath(err error, path string) error {
	var e *Error
	if errors.As(err, &e) && e.Path == "" {
		c := *e
		c.Path = path
		return &c
	}
	return err
}
