package transfer

import (
	"errors"
	"fmt"
)

// Error classes. Every error the transfer functions return for a failure of the transfer itself wraps exactly one
// of them (errors.Is); errors that come from the caller's own reader, writer or context are returned as they are.
var (
	ErrProtocol     = errors.New("protocol error")                   // a malformed or unexpected message
	ErrVersion      = errors.New("unsupported protocol version")     // the peer speaks another protocol version
	ErrHashMismatch = errors.New("hash mismatch")                    // the delivered bytes differ from the sent ones
	ErrPayload      = errors.New("bad payload")                      // a compressed chunk did not decode (wraps the codec error)
	ErrTooLarge     = errors.New("message too large")                // a message beyond the receiver's limit
	ErrConnection   = errors.New("connection failed")                // no connection, a failed transport, a peer gone
	ErrRemote       = errors.New("the peer reported a failure")      // joined to the class the peer reported
	ErrFailed       = errors.New("transfer failed at the other end") // a peer failure of no other class (its output, its input)
)

// Error is a transfer failure: its class, where in the stream, and the cause underneath (a codec error, a network
// error, or ErrRemote when the peer reported it). errors.Is matches both the class and the cause.
type Error struct {
	Class  error  // one of the Err* classes above
	Seq    int64  // data frame (chunk) sequence number, or -1
	Detail string // what exactly went wrong
	Err    error  // underlying cause, or nil
}

func (e *Error) Error() string {
	s := "vkzip: " + e.Class.Error()
	if e.Seq >= 0 {
		s += fmt.Sprintf(" (chunk %d)", e.Seq)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil && e.Err != ErrRemote {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap gives the class and the cause.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Class}
	}
	return []error{e.Class, e.Err}
}

func errorf(class error, format string, args ...any) *Error {
	return &Error{Class: class, Seq: -1, Detail: fmt.Sprintf(format, args...)}
}

func seqErr(class error, seq int64, cause error, format string, args ...any) *Error {
	return &Error{Class: class, Seq: seq, Detail: fmt.Sprintf(format, args...), Err: cause}
}

// Status codes carried by Abort and Result messages: the class of a failure, so that both ends report the same one.
const (
	statusOK       = 0
	statusProtocol = 1
	statusVersion  = 2
	statusHash     = 3
	statusPayload  = 4
	statusTooLarge = 5
	statusFailed   = 6 // anything else: a reader or writer failure, cancellation
)

func statusOf(err error) uint8 {
	switch {
	case err == nil:
		return statusOK
	case errors.Is(err, ErrProtocol):
		return statusProtocol
	case errors.Is(err, ErrVersion):
		return statusVersion
	case errors.Is(err, ErrHashMismatch):
		return statusHash
	case errors.Is(err, ErrPayload):
		return statusPayload
	case errors.Is(err, ErrTooLarge):
		return statusTooLarge
	}
	return statusFailed
}

func classOf(status uint8) error {
	switch status {
	case statusProtocol:
		return ErrProtocol
	case statusVersion:
		return ErrVersion
	case statusHash:
		return ErrHashMismatch
	case statusPayload:
		return ErrPayload
	case statusTooLarge:
		return ErrTooLarge
	}
	return ErrFailed
}

// remoteErr is the local error for a failure the peer reported.
func remoteErr(who string, status uint8, msg string) *Error {
	return &Error{Class: classOf(status), Seq: -1, Detail: who + " reported: " + msg, Err: ErrRemote}
}
