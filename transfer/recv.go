package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/vkzip/vkzip/codec"
)

// ReceiveOptions configure Receive.
type ReceiveOptions struct {
	Workers  int           // decode goroutines (0 = GOMAXPROCS)
	InFlight int           // chunks held at once (0 = 2×Workers, at least 2); memory is InFlight × 2 chunks
	Backend  codec.Backend // decodes containers; the caller owns it (nil: the Go CPU backend, one goroutine per call)
	// MaxChunkSize is the largest chunk size a sender may announce (0 = MaxChunkSize): it bounds memory.
	MaxChunkSize int
}

// recvSlot is one chunk in flight on the receiving side.
type recvSlot struct {
	buf []byte // the message as received
	raw []byte // compressed mode: the decoded chunk
	out []byte // the chunk's bytes, to write
	seq int64
	n   int
	sum [DigestSize]byte // the chunk's digest (chunk hashing)
}

// Receive accepts one transfer from a Send at the other end of t and writes the stream to dst in order: it
// receives chunks, decodes them on Workers goroutines (compressed mode), writes them, and at the end checks the
// SHA-256 and length of everything written against the sender's. It answers the sender with its verdict, so both
// ends fail alike: a mismatch is ErrHashMismatch, an undecodable chunk ErrPayload (wrapping the codec's error),
// anything malformed ErrProtocol. dst has received the bytes before they are verified: a caller that must not
// expose unverified output writes to a temporary place first. Receive does not close t.
func Receive(ctx context.Context, t Transport, dst io.Writer, o ReceiveOptions) (*Stats, error) {
	o.Workers, o.InFlight = pool(o.Workers, o.InFlight)
	if o.MaxChunkSize <= 0 {
		o.MaxChunkSize = MaxChunkSize
	}
	r := &receiver{o: o, t: withCounts(t), dst: dst}
	return r.run(ctx)
}

type receiver struct {
	o   ReceiveOptions
	t   Transport
	dst io.Writer
	h   *hello
	c   *codec.Codec
	cap int // message buffer size

	// Written by the writer goroutine, read after the pipeline has stopped.
	total int64
	sum   [32]byte

	chunks  int64
	payload int64
	end     *end
}

func (r *receiver) run(parent context.Context) (*Stats, error) {
	st := &Stats{Workers: r.o.Workers, InFlight: r.o.InFlight}
	sent0, recv0 := counts(r.t)
	defer func() {
		sent1, recv1 := counts(r.t)
		st.BytesSent, st.BytesReceived = sent1-sent0, recv1-recv0
	}()
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)

	hctx, hcancel := context.WithTimeoutCause(ctx, HelloTimeout,
		errorf(ErrConnection, "no hello within %v: is the peer a vkzip sender?", HelloTimeout))
	m, err := r.t.Recv(hctx, make([]byte, controlBuf))
	hcancel()
	if err != nil {
		if err == io.EOF {
			err = errorf(ErrConnection, "the sender closed the connection before its hello")
		}
		return st, err
	}
	start := time.Now()
	h, err := parseHello(m)
	if err == nil {
		err = r.check(h)
	}
	if err != nil {
		if !errors.Is(err, ErrRemote) {
			actx, acancel := context.WithTimeout(ctx, 2*time.Second)
			r.t.Send(actx, appendHelloAck(nil, statusOf(err), message(err)))
			acancel()
		}
		return st, err
	}
	r.h = h
	st.Mode, st.ChunkSize, st.Codebook, st.Checksums, st.ChunkHash, st.Hash = h.mode, int(h.chunk), h.codebook, h.checksums, h.chunkHash, h.hash
	if err := r.t.Send(ctx, appendHelloAck(nil, statusOK, "")); err != nil {
		return st, err
	}
	if h.mode == Compressed {
		b := r.o.Backend
		if b == nil {
			b = codec.NewCPUBackend(1)
		}
		if r.c, err = codec.New(codec.WithBackend(b)); err != nil {
			return st, err
		}
		defer r.c.Close()
		r.cap = dataHeaderSize + maxEncoded(int(h.chunk), 10)
	} else {
		r.cap = dataHeaderSize + int(h.chunk)
	}

	err = r.pipeline(ctx)
	st.Chunks, st.RawBytes, st.PayloadBytes, st.SHA256 = r.chunks, r.total, r.payload, r.sum
	if err == nil {
		e := r.end
		res := result{status: statusOK, total: r.total, sum: r.sum}
		if e.total != r.total || e.sum != r.sum {
			res.status = statusHash
			err = errorf(ErrHashMismatch, "delivered %d bytes with SHA-256 %x, the sender read %d bytes with SHA-256 %x",
				r.total, r.sum, e.total, e.sum)
			res.msg = message(err)
		}
		if serr := r.t.Send(ctx, appendResult(nil, &res)); serr != nil && err == nil {
			err = serr
		}
		st.Duration = time.Since(start)
		st.Verified = err == nil
		if err != nil && errors.Is(err, ErrHashMismatch) {
			return st, err
		}
	}
	if err != nil {
		err = r.fail(parent, ctx, err)
		cancel(err)
		return st, err
	}
	return st, nil
}

// check validates a hello against this receiver's limits.
func (r *receiver) check(h *hello) error {
	if h.chunk < MinChunkSize || int64(h.chunk) > int64(r.o.MaxChunkSize) || h.chunk%2 != 0 {
		return errorf(ErrTooLarge, "the sender's chunk size %d is not an even number of bytes in [%d, %d]", h.chunk,
			MinChunkSize, r.o.MaxChunkSize)
	}
	return nil
}

// fail reports err to the sender (unless the sender is where it came from, or the link is gone) and gives the
// sender a moment to read it before the caller closes the connection.
func (r *receiver) fail(parent, ctx context.Context, err error) error {
	if parent.Err() != nil {
		err = parent.Err()
	} else if cause := context.Cause(ctx); cause != nil {
		err = cause
	}
	if errors.Is(err, ErrRemote) || errors.Is(err, ErrConnection) {
		return err
	}
	actx, acancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer acancel()
	if r.t.Send(actx, appendAbort(nil, statusOf(err), message(err))) != nil {
		return err
	}
	// Closing with unread data would reset the connection, and the sender could lose the reason with it: read
	// until the sender, having read the abort, hangs up.
	buf := make([]byte, max(r.cap, controlBuf))
	for {
		if _, rerr := r.t.Recv(actx, buf); rerr != nil {
			return err
		}
	}
}

// pipeline receives, decodes and writes every chunk, up to the end message.
func (r *receiver) pipeline(parent context.Context) error {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	g := &group{cancel: cancel}
	n := r.o.InFlight
	free := make(chan *recvSlot, n)
	for i := 0; i < n; i++ {
		free <- &recvSlot{}
	}
	work := make(chan *recvSlot, n)
	done := make(chan *recvSlot, n)
	workers := make(chan struct{})
	for i := 0; i < r.o.Workers; i++ {
		g.Go(func() error {
			defer func() { workers <- struct{}{} }()
			return r.decode(ctx, work, done)
		})
	}
	g.Go(func() error {
		for i := 0; i < r.o.Workers; i++ {
			<-workers
		}
		close(done)
		return nil
	})
	g.Go(func() error { return r.write(ctx, done, free) })
	if err := r.recvLoop(ctx, free, work); err != nil {
		cancel(err)
	}
	g.wg.Wait()
	return context.Cause(ctx)
}

// recvLoop receives messages into free slots and hands data chunks to the decoders, until the end message.
func (r *receiver) recvLoop(ctx context.Context, free chan *recvSlot, work chan<- *recvSlot) error {
	defer close(work)
	for next := int64(0); ; {
		var sl *recvSlot
		select {
		case sl = <-free:
		case <-ctx.Done():
			return nil
		}
		if sl.buf == nil {
			sl.buf = make([]byte, r.cap)
		}
		m, err := r.t.Recv(ctx, sl.buf)
		if err != nil {
			if err == io.EOF {
				return errorf(ErrConnection, "the sender closed the connection after %d chunks, before the end of the stream", next)
			}
			return err
		}
		switch firstByte(m) {
		case kindData:
			d, err := parseDataHeader(m)
			if err != nil {
				return err
			}
			switch {
			case d.seq != next:
				return seqErr(ErrProtocol, d.seq, nil, "chunk %d arrived where chunk %d was due", d.seq, next)
			case d.rawLen <= 0 || d.rawLen > int(r.h.chunk):
				return seqErr(ErrProtocol, d.seq, nil, "chunk of %d bytes (chunk size %d)", d.rawLen, r.h.chunk)
			case r.h.mode == Raw && d.payloadLen != d.rawLen:
				return seqErr(ErrProtocol, d.seq, nil, "raw chunk of %d bytes carries %d", d.rawLen, d.payloadLen)
			}
			sl.seq, sl.n = d.seq, d.rawLen
			sl.out = m[dataHeaderSize:]
			r.payload += int64(d.payloadLen)
			next++
			r.chunks = next
			work <- sl // never blocks
		case kindEnd:
			e, err := parseEnd(m)
			if err != nil {
				return err
			}
			if e.chunks != next {
				return errorf(ErrProtocol, "the sender ended after %d chunks, %d arrived", e.chunks, next)
			}
			r.end = e
			free <- sl
			return nil
		case kindAbort:
			status, msg := parseAbort(m)
			return remoteErr("the sender", status, msg)
		default:
			return errorf(ErrProtocol, "unexpected message of kind %d after %d chunks", firstByte(m), next)
		}
	}
}

// decode turns data payloads into the chunks' bytes.
func (r *receiver) decode(ctx context.Context, work <-chan *recvSlot, done chan<- *recvSlot) error {
	for {
		var sl *recvSlot
		select {
		case x, ok := <-work:
			if !ok {
				return nil
			}
			sl = x
		case <-ctx.Done():
			return nil
		}
		if r.c != nil {
			payload := sl.out
			ct, err := codec.ParseHeader(payload)
			if err != nil {
				return seqErr(ErrPayload, sl.seq, err, "container")
			}
			var size uint64
			for i := range ct.Recs {
				size += ct.Recs[i].RawSize()
			}
			if size != uint64(sl.n) {
				return seqErr(ErrPayload, sl.seq, nil, "the container holds %d bytes, the header says %d", size, sl.n)
			}
			if sl.raw == nil {
				sl.raw = make([]byte, 0, r.h.chunk)
			}
			out, err := r.c.DecodeAll(payload, sl.raw[:0])
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return seqErr(ErrPayload, sl.seq, err, "decoding")
			}
			if len(out) != sl.n {
				return seqErr(ErrPayload, sl.seq, nil, "decoded %d bytes, the header says %d", len(out), sl.n)
			}
			sl.out = out
		}
		if r.h.chunkHash {
			sl.sum = r.h.hash.sum(sl.out)
		}
		done <- sl // never blocks
	}
}

// write hashes and writes chunks in sequence order and returns their slots to the pool.
func (r *receiver) write(ctx context.Context, done <-chan *recvSlot, free chan<- *recvSlot) error {
	h := r.h.hash.newDigest()
	pending := make(map[int64]*recvSlot, r.o.InFlight)
	next := int64(0)
	for {
		select {
		case sl, ok := <-done:
			if !ok {
				r.sum = h.Sum()
				return nil
			}
			pending[sl.seq] = sl
			for p := pending[next]; p != nil; p = pending[next] {
				delete(pending, next)
				if r.h.chunkHash {
					h.Write(p.sum[:])
				} else {
					h.Write(p.out)
				}
				if _, err := r.dst.Write(p.out); err != nil {
					return fmt.Errorf("writing the output: %w", err)
				}
				r.total += int64(len(p.out))
				free <- p
				next++
			}
		case <-ctx.Done():
			return nil
		}
	}
}
