package transfer

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Transport carries the messages of one transfer between its two ends: whole messages, reliably and in order, in
// both directions. One goroutine may Send while another Recvs; neither is called concurrently with itself.
//
// The TCP implementation is ConnTransport. Another link for host memory (RDMA, a shared-memory ring) plugs in by
// implementing these three methods: Send as a length followed by the bytes, Recv into the caller's buffer, Close
// releasing the link. (GPU-resident tensors between two GPUs go through transfer/gpulink instead.) Messages are at most a few MiB (a chunk and its 24-byte header), so staging them through a fixed
// pinned buffer per direction is enough. The pipeline never needs more than one outstanding Send and one Recv.
type Transport interface {
	// Send transmits the concatenation of parts as one message (a header and a payload, without copying them
	// together). It does not keep the parts after it returns. When ctx is done it returns promptly. A message cut
	// off half way may leave the transport broken (every later call fails); ConnTransport instead keeps the
	// unwritten rest and writes it first on the next Send, so a later message (an Abort) still arrives whole.
	Send(ctx context.Context, parts ...[]byte) error
	// Recv receives the next message into buf[:cap(buf)] and returns it. A message longer than cap(buf) is an
	// error (ErrTooLarge), so the caller's buffers bound memory. A peer that closed between messages gives io.EOF.
	Recv(ctx context.Context, buf []byte) ([]byte, error)
	// Close releases the link; pending calls return errors.
	Close() error
}

// Counter is implemented by transports that count the bytes they move, framing included.
type Counter interface {
	Counts() (sent, received int64)
}

// ConnTransport is a Transport over a stream connection (TCP, a Unix socket, net.Pipe): each message is a 4-byte
// little-endian length followed by the message.
type ConnTransport struct {
	conn net.Conn
	r    *bufio.Reader

	sent, received atomic.Int64
	wbroken        atomic.Bool // a write failed inside a message: the stream's framing is lost
	// wrest is what a cancelled Send left unwritten of its message (a copy: the caller's buffers are theirs
	// again). The next Send writes it first, so an Abort after a cancel still reaches the peer as a message.
	wrest      []byte
	rbroken    atomic.Bool // a read was cut off inside a message
	closeOnce  sync.Once
	closeErr   error
	wlen, rlen [4]byte // length prefixes: Send and Recv run concurrently
}

// maxConnMessage is the largest message the 4-byte length can carry here.
const maxConnMessage = 1<<31 - 1

// NewConnTransport wraps c; Close closes it.
func NewConnTransport(c net.Conn) *ConnTransport {
	return &ConnTransport{conn: c, r: bufio.NewReaderSize(c, 64<<10)}
}

// Conn is the underlying connection.
func (t *ConnTransport) Conn() net.Conn { return t.conn }

// Counts returns the bytes sent and received so far, length prefixes included.
func (t *ConnTransport) Counts() (sent, received int64) { return t.sent.Load(), t.received.Load() }

// Close closes the connection.
func (t *ConnTransport) Close() error {
	t.closeOnce.Do(func() { t.closeErr = t.conn.Close() })
	return t.closeErr
}

// longAgo is a deadline in the past: it makes pending reads and writes return at once.
var longAgo = time.Unix(1, 0)

// interrupter makes ctx's end cut off the connection's reads or writes (set is SetReadDeadline or
// SetWriteDeadline). done reports whether it did, and when so clears the deadline again.
func interrupter(ctx context.Context, set func(time.Time) error) (done func() bool) {
	if ctx.Done() == nil {
		return func() bool { return false }
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		set(longAgo)
		close(fired)
	})
	return func() bool {
		if stop() {
			return false
		}
		<-fired
		set(time.Time{})
		return true
	}
}

// Send writes the length and the parts in one writev.
func (t *ConnTransport) Send(ctx context.Context, parts ...[]byte) error {
	if t.wbroken.Load() {
		return errorf(ErrConnection, "an earlier send was cut off")
	}
	size := msgSize(parts)
	if size > maxConnMessage {
		return errorf(ErrTooLarge, "message of %d bytes", size)
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if len(t.wrest) > 0 {
		rest := net.Buffers{t.wrest}
		if err := t.write(ctx, rest, int64(len(t.wrest))); err != nil {
			return err
		}
	}
	binary.LittleEndian.PutUint32(t.wlen[:], uint32(size))
	bufs := make(net.Buffers, 0, 1+len(parts))
	bufs = append(append(bufs, t.wlen[:]), parts...)
	return t.write(ctx, bufs, int64(4+size))
}

// write writes bufs (want bytes, one message or the rest of one). A write that ctx's end cuts off inside the
// message keeps the unwritten rest in t.wrest; any other failure inside it breaks the stream for good.
func (t *ConnTransport) write(ctx context.Context, bufs net.Buffers, want int64) error {
	stop := interrupter(ctx, t.conn.SetWriteDeadline)
	n, err := bufs.WriteTo(t.conn) // consumes bufs up to what it wrote
	cut := stop()
	t.sent.Add(n)
	if err == nil {
		t.wrest = nil
		return nil
	}
	partial := n > 0 && n < want
	if cut {
		if partial {
			rest := make([]byte, 0, want-n)
			for _, b := range bufs {
				rest = append(rest, b...)
			}
			t.wrest = rest
		}
		return context.Cause(ctx)
	}
	if partial || len(t.wrest) > 0 {
		t.wbroken.Store(true)
	}
	return connErr("send", err)
}

func msgSize(parts [][]byte) int {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return n
}

// Recv reads one message into buf.
func (t *ConnTransport) Recv(ctx context.Context, buf []byte) ([]byte, error) {
	if t.rbroken.Load() {
		return nil, errorf(ErrConnection, "an earlier receive was cut off")
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	stop := interrupter(ctx, t.conn.SetReadDeadline)
	var got int64
	msg, err := func() ([]byte, error) {
		n, err := io.ReadFull(t.r, t.rlen[:])
		got += int64(n)
		if err != nil {
			if n == 0 && err == io.EOF {
				return nil, io.EOF
			}
			return nil, err
		}
		size := int(binary.LittleEndian.Uint32(t.rlen[:]))
		if size > cap(buf) {
			t.rbroken.Store(true)
			return nil, errorf(ErrTooLarge, "a message of %d bytes, more than the %d this end accepts", size, cap(buf))
		}
		n, err = io.ReadFull(t.r, buf[:size])
		got += int64(n)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return buf[:size], err
	}()
	cut := stop()
	t.received.Add(got)
	if err == nil {
		return msg, nil
	}
	var te *Error
	if errors.As(err, &te) {
		return nil, err
	}
	if got > 0 {
		t.rbroken.Store(true)
	}
	if cut {
		return nil, context.Cause(ctx)
	}
	if err == io.EOF {
		return nil, io.EOF
	}
	return nil, connErr("receive", err)
}

// connErr classes a transport failure as ErrConnection, keeping the cause.
func connErr(op string, err error) error {
	if err == io.ErrUnexpectedEOF {
		return &Error{Class: ErrConnection, Seq: -1, Detail: op + ": the peer closed the connection inside a message"}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return &Error{Class: ErrConnection, Seq: -1, Detail: op + ": timed out", Err: err}
	}
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return &Error{Class: ErrConnection, Seq: -1, Detail: op + ": the peer closed the connection", Err: err}
	}
	return &Error{Class: ErrConnection, Seq: -1, Detail: op, Err: err}
}

// Dial connects to a TCP address, retrying refused connections until wait has passed (so a sender may start
// before its receiver listens), and returns the connection as a Transport.
func Dial(ctx context.Context, addr string, wait time.Duration) (*ConnTransport, error) {
	deadline := time.Now().Add(wait)
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			tuneTCP(c)
			return NewConnTransport(c), nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			return nil, &Error{Class: ErrConnection, Seq: -1, Detail: "connecting to " + addr, Err: err}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Accept waits for one connection on l and returns it as a Transport; ctx's end stops the wait (for listeners
// with SetDeadline, as TCP and Unix ones have).
func Accept(ctx context.Context, l net.Listener) (*ConnTransport, error) {
	setDL := func(time.Time) error { return nil }
	if d, ok := l.(interface{ SetDeadline(time.Time) error }); ok {
		setDL = d.SetDeadline
	}
	stop := interrupter(ctx, setDL)
	c, err := l.Accept()
	if stop() {
		if c != nil {
			c.Close()
		}
		return nil, context.Cause(ctx)
	}
	if err != nil {
		return nil, &Error{Class: ErrConnection, Seq: -1, Detail: "accepting a connection", Err: err}
	}
	tuneTCP(c)
	return NewConnTransport(c), nil
}

func tuneTCP(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
}

// Paced wraps a Transport so that its sends keep to rate bytes per second on average (a token bucket of burst
// bytes, refilled continuously), for a shaped link without root and tc. Receives are not paced.
func Paced(t Transport, rate float64, burst int) Transport {
	if burst <= 0 {
		burst = 64 << 10
	}
	return &paced{Transport: t, rate: rate, burst: float64(burst), tokens: float64(burst), last: time.Now()}
}

type paced struct {
	Transport
	rate, burst, tokens float64
	last                time.Time
}

func (p *paced) Send(ctx context.Context, parts ...[]byte) error {
	now := time.Now()
	p.tokens = min(p.burst, p.tokens+now.Sub(p.last).Seconds()*p.rate)
	p.last = now
	p.tokens -= float64(msgSize(parts) + 4)
	if p.tokens < 0 {
		wait := time.Duration(-p.tokens / p.rate * float64(time.Second))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
	}
	return p.Transport.Send(ctx, parts...)
}

func (p *paced) Counts() (int64, int64) {
	if c, ok := p.Transport.(Counter); ok {
		return c.Counts()
	}
	return 0, 0
}
