//go:build unix

package cudabridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"syscall"
)

// SendFDs writes data to a Unix socket with fds attached as one
// SCM_RIGHTS message (they arrive with data's first byte). The fds stay
// open here: the receiver gets its own duplicates.
func SendFDs(c *net.UnixConn, data []byte, fds []int) error {
	if len(data) == 0 {
		return invalidf("SCM_RIGHTS needs at least one data byte")
	}
	if len(fds) > MaxFDs {
		return invalidf("%d fds (at most %d)", len(fds), MaxFDs)
	}
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	n, oobn, err := c.WriteMsgUnix(data, oob, nil)
	if err != nil {
		return err
	}
	if oobn != len(oob) {
		return fmt.Errorf("cudabridge: sent %d of %d control bytes", oobn, len(oob))
	}
	for n < len(data) {
		m, err := c.Write(data[n:])
		if err != nil {
			return err
		}
		n += m
	}
	return nil
}

// RecvFDs reads up to len(buf) bytes and any fds that came with them (at
// most maxFDs; more, or truncated control data, is an error and closes
// what did arrive). The caller owns the returned fds. io.EOF at end of
// stream.
func RecvFDs(c *net.UnixConn, buf []byte, maxFDs int) (int, []int, error) {
	if maxFDs < 1 {
		maxFDs = 1
	}
	oob := make([]byte, syscall.CmsgSpace(4*maxFDs))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	var fds []int
	if oobn > 0 {
		msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn])
		if perr != nil && err == nil {
			err = perr
		}
		for i := range msgs {
			if msgs[i].Header.Level != syscall.SOL_SOCKET || msgs[i].Header.Type != syscall.SCM_RIGHTS {
				continue
			}
			got, perr := syscall.ParseUnixRights(&msgs[i])
			if perr != nil && err == nil {
				err = perr
			}
			fds = append(fds, got...)
		}
	}
	if err == nil && flags&syscall.MSG_CTRUNC != 0 {
		err = protocolf("control data truncated: more than %d fds sent", maxFDs)
	}
	if err == nil && n == 0 && len(buf) > 0 {
		err = io.EOF
	}
	if err != nil && errors.Is(err, io.EOF) {
		err = io.EOF
	}
	if err != nil {
		CloseFDs(fds)
		return n, nil, err
	}
	return n, fds, nil
}

// CloseFDs closes every fd (errors ignored).
func CloseFDs(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			syscall.Close(fd)
		}
	}
}

// DupFD duplicates fd (close-on-exec): CUDA and Vulkan take ownership of
// the fds they import, so share a duplicate when the original is still
// needed.
func DupFD(fd int) (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	nfd, err := syscall.Dup(fd)
	if err != nil {
		return -1, fmt.Errorf("cudabridge: dup(%d): %w", fd, err)
	}
	syscall.CloseOnExec(nfd)
	return nfd, nil
}

// SendFrame sends one frame with fds attached.
func SendFrame(c *net.UnixConn, kind FrameKind, payload []byte, fds []int) error {
	return SendFDs(c, AppendFrame(make([]byte, 0, FrameHeaderSize+len(payload)), kind, payload), fds)
}

// SendControl sends a control message (a JSON object with an "op").
func SendControl(c *net.UnixConn, msg any) error {
	payload, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if len(payload) > MaxJSONPayload {
		return invalidf("control message of %d bytes", len(payload))
	}
	return SendFrame(c, KindControl, payload, nil)
}

// SendHandshake validates h and sends it with its fds (in the order the
// handshake's fd indexes refer to).
func SendHandshake(c *net.UnixConn, h *Handshake, fds []int) error {
	frame, err := MarshalHandshake(h, len(fds))
	if err != nil {
		return err
	}
	return SendFDs(c, frame, fds)
}

// RecvFrame reads one frame and the fds attached to it (the caller owns
// them). Data frames may carry up to maxData bytes.
func RecvFrame(c *net.UnixConn, maxData uint32) (FrameKind, []byte, []int, error) {
	var fds []int
	fail := func(err error) (FrameKind, []byte, []int, error) {
		CloseFDs(fds)
		return 0, nil, nil, err
	}
	read := func(buf []byte) error {
		for off := 0; off < len(buf); {
			n, got, err := RecvFDs(c, buf[off:], MaxFDs)
			fds = append(fds, got...)
			if len(fds) > MaxFDs {
				return protocolf("more than %d fds with one frame", MaxFDs)
			}
			if err != nil {
				if err == io.EOF && off > 0 {
					return io.ErrUnexpectedEOF
				}
				return err
			}
			off += n
		}
		return nil
	}
	var h [FrameHeaderSize]byte
	if err := read(h[:]); err != nil {
		return fail(err)
	}
	fh, err := ParseFrameHeader(h[:], maxData)
	if err != nil {
		return fail(err)
	}
	payload := make([]byte, fh.Length)
	if err := read(payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fail(err)
	}
	if crc32.ChecksumIEEE(payload) != fh.CRC {
		return fail(protocolf("%s payload CRC mismatch", fh.Kind))
	}
	if fh.Kind != KindHandshake && len(fds) > 0 {
		return fail(protocolf("%d fds with a %s frame", len(fds), fh.Kind))
	}
	return fh.Kind, payload, fds, nil
}

// RecvHandshake reads a handshake frame and its fds; on any error the fds
// are closed.
func RecvHandshake(c *net.UnixConn) (*Handshake, []int, error) {
	kind, payload, fds, err := RecvFrame(c, 0)
	if err != nil {
		return nil, nil, err
	}
	if kind != KindHandshake {
		CloseFDs(fds)
		return nil, nil, protocolf("expected a handshake, got a %s frame", kind)
	}
	h, err := parseHandshakePayload(payload, len(fds))
	if err != nil {
		CloseFDs(fds)
		return nil, nil, err
	}
	return h, fds, nil
}

// RecvControl reads a control frame.
func RecvControl(c *net.UnixConn) (Control, error) {
	kind, payload, _, err := RecvFrame(c, 0)
	if err != nil {
		return nil, err
	}
	if kind != KindControl {
		return nil, protocolf("expected a control message, got a %s frame", kind)
	}
	return ParseControl(payload)
}
