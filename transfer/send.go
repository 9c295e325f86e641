package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
)

// Chunk sizes: raw bytes per data frame.
const (
	DefaultChunkSize = 4 << 20
	MinChunkSize     = 256
	MaxChunkSize     = 64 << 20
)

// HelloTimeout bounds the wait for the other end's opening message: a peer that is not a vkzip transfer.
var HelloTimeout = 30 * time.Second

// Options configure Send.
type Options struct {
	Mode      Mode // Raw or Compressed
	ChunkSize int  // raw bytes per data frame: even, MinChunkSize to MaxChunkSize (0 = DefaultChunkSize)
	// Workers is the number of encode goroutines (0 = GOMAXPROCS). Each encodes whole chunks, one at a time.
	Workers int
	// InFlight bounds the chunks held at once, read but not yet handed to the transport (0 = 2×Workers, at least
	// 2). Memory is InFlight × (ChunkSize + its largest encoding), whatever the length of the stream.
	InFlight int
	// Backend runs the codec (compressed mode); the caller owns it. nil: the Go CPU backend, one goroutine per
	// call (the workers give the parallelism).
	Backend codec.Backend
	// Codebook fixes the SplitZip-4 codebook; nil calibrates every chunk on its own values.
	Codebook *codec.Codebook
	// CodecChunk is the SplitZip-4 chunk in values (0 = 65,536).
	CodecChunk  int
	NoChecksums bool // leave out the per-chunk CRC-32C of the containers
	// ChunkHash verifies delivery with the SHA-256 of the chunks' SHA-256 digests, computed by the workers in
	// parallel, instead of the SHA-256 of the stream, which runs on one core at each end (about 1-2 GB/s).
	ChunkHash bool
	// Hash is the digest that verifies delivery (SHA256, the default, or XXH3).
	Hash Hash
}

func (o *Options) fill() error {
	if o.Mode != Raw && o.Mode != Compressed {
		return fmt.Errorf("transfer: unknown mode %d", o.Mode)
	}
	if o.ChunkSize == 0 {
		o.ChunkSize = DefaultChunkSize
	}
	if o.ChunkSize < MinChunkSize || o.ChunkSize > MaxChunkSize || o.ChunkSize%2 != 0 {
		return fmt.Errorf("transfer: chunk size %d is not an even number of bytes in [%d, %d]", o.ChunkSize,
			MinChunkSize, MaxChunkSize)
	}
	if o.CodecChunk == 0 {
		o.CodecChunk = 1 << layout.DefaultChunkShift
	}
	if !o.Hash.valid() {
		return fmt.Errorf("transfer: unknown hash %d", o.Hash)
	}
	o.Workers, o.InFlight = pool(o.Workers, o.InFlight)
	return nil
}

func pool(workers, inflight int) (int, int) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if inflight <= 0 {
		inflight = 2 * workers
	}
	return workers, max(inflight, 2)
}

// Stats describe one transfer, from either end.
type Stats struct {
	Mode      Mode
	ChunkSize int
	Chunks    int64
	RawBytes  int64 // stream bytes sent (Send) or delivered (Receive)
	// PayloadBytes are the data frames' payloads: RawBytes in raw mode, the containers in compressed mode.
	PayloadBytes int64
	// BytesSent and BytesReceived are what this end moved through the transport: every message, with the
	// transport's framing where it counts its bytes (Counter), else the messages' bytes.
	BytesSent, BytesReceived int64
	SHA256                   [32]byte // the digest (Hash) of the raw stream, or of its chunks' digests (ChunkHash)
	ChunkHash                bool
	Hash                     Hash
	Verified                 bool // the receiver's hash and length matched the sender's
	Duration                 time.Duration
	Codebook                 *codec.Codebook // the fixed codebook announced in the hello, if any
	Checksums                bool
	Workers, InFlight        int // this end's pool
}

// Ratio is raw bytes per payload byte.
func (s *Stats) Ratio() float64 {
	if s.PayloadBytes == 0 {
		return 0
	}
	return float64(s.RawBytes) / float64(s.PayloadBytes)
}

// GBps is the effective rate: raw bytes delivered per second, in 1e9 bytes.
func (s *Stats) GBps() float64 {
	if s.Duration <= 0 {
		return 0
	}
	return float64(s.RawBytes) / s.Duration.Seconds() / 1e9
}

// counts reads a transport's byte counters.
func counts(t Transport) (int64, int64) {
	if c, ok := t.(Counter); ok {
		return c.Counts()
	}
	return 0, 0
}

// withCounts gives a transport that does not count its bytes a count of its messages' bytes.
func withCounts(t Transport) Transport {
	if _, ok := t.(Counter); ok {
		return t
	}
	return &counted{Transport: t}
}

type counted struct {
	Transport
	sent, received atomic.Int64
}

func (c *counted) Send(ctx context.Context, parts ...[]byte) error {
	err := c.Transport.Send(ctx, parts...)
	if err == nil {
		c.sent.Add(int64(msgSize(parts)))
	}
	return err
}

func (c *counted) Recv(ctx context.Context, buf []byte) ([]byte, error) {
	m, err := c.Transport.Recv(ctx, buf)
	c.received.Add(int64(len(m)))
	return m, err
}

func (c *counted) Counts() (int64, int64) { return c.sent.Load(), c.received.Load() }

// group runs goroutines whose first error cancels the rest.
type group struct {
	wg     sync.WaitGroup
	cancel context.CancelCauseFunc
}

func (g *group) Go(f func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := f(); err != nil {
			g.cancel(err)
		}
	}()
}

// maxEncoded bounds the container of a chunk of n bytes: raw SplitZip-4 chunks everywhere, plus the metadata.
func maxEncoded(n int, shift uint) int {
	return int(layout.SZ4{N: uint64(n / 2), Shift: shift}.MaxBodySize()) + 4096
}

func chunkShift(values int) uint {
	s := uint(0)
	for 1<<s < values {
		s++
	}
	return s
}

// records lays a chunk out as container records: its BF16 values, and a trailing odd byte as a blob.
func records(b []byte) []codec.Record {
	even := len(b) &^ 1
	recs := []codec.Record{{DType: layout.DTypeBF16, Data: b[:even]}}
	if even != len(b) {
		recs = append(recs, codec.Record{Blob: true, Data: b[even:]})
	}
	return recs
}

// sendSlot is one chunk in flight on the sending side.
type sendSlot struct {
	buf     []byte // the chunk as read from the source (not used when sending from memory)
	raw     []byte // the chunk: buf[:n], or a piece of the caller's data
	enc     []byte // compressed mode: the container
	hdr     [dataHeaderSize]byte
	payload []byte // raw or enc
	seq     int64
	sum     [DigestSize]byte // the chunk's digest (ChunkHash)
}

// Send streams src over t to a Receive at the other end: it reads src in chunks, encodes them on Workers
// goroutines (compressed mode), sends them in order, and returns once the receiver has confirmed that the SHA-256
// and length of what it delivered match what was read. It does not close t. A failure at the receiver comes back
// with the receiver's class (errors.Is(err, ErrRemote) tells it apart); when ctx ends Send returns ctx's error.
// Send waits for a pending src.Read to return before it does.
func Send(ctx context.Context, t Transport, src io.Reader, o Options) (*Stats, error) {
	return send(ctx, t, &sender{src: src}, o)
}

// SendBytes is Send from memory (a KV cache in host memory, a mapped file): the chunks are pieces of data, sent or
// encoded where they lie, with no copy. data must not change until SendBytes returns.
func SendBytes(ctx context.Context, t Transport, data []byte, o Options) (*Stats, error) {
	return send(ctx, t, &sender{data: data, mem: true}, o)
}

func send(ctx context.Context, t Transport, s *sender, o Options) (*Stats, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	var c *codec.Codec
	if o.Mode == Compressed {
		b := o.Backend
		if b == nil {
			b = codec.NewCPUBackend(1)
		}
		opts := []codec.Option{codec.WithBackend(b), codec.WithChunkSize(o.CodecChunk), codec.WithChecksums(!o.NoChecksums)}
		if o.Codebook != nil {
			opts = append(opts, codec.WithCodebook(*o.Codebook))
		}
		var err error
		if c, err = codec.New(opts...); err != nil {
			return nil, err
		}
		defer c.Close()
	}
	s.o, s.c, s.t = o, c, withCounts(t)
	return s.run(ctx)
}

type sender struct {
	o    Options
	c    *codec.Codec
	t    Transport
	src  io.Reader
	data []byte // the stream, when sending from memory (mem)
	mem  bool

	// Written by the reader goroutine, read after the pipeline has stopped.
	total  int64
	chunks int64
	sum    [32]byte

	payload int64
}

// verdict is what the control goroutine heard from the receiver after the hello.
type verdict struct {
	res *result
	err error
}

func (s *sender) run(parent context.Context) (*Stats, error) {
	st := &Stats{Mode: s.o.Mode, ChunkSize: s.o.ChunkSize, Codebook: s.o.Codebook, Checksums: !s.o.NoChecksums,
		Workers: s.o.Workers, InFlight: s.o.InFlight, ChunkHash: s.o.ChunkHash, Hash: s.o.Hash}
	sent0, recv0 := counts(s.t)
	defer func() {
		sent1, recv1 := counts(s.t)
		st.BytesSent, st.BytesReceived = sent1-sent0, recv1-recv0
	}()
	start := time.Now()
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)

	h := hello{version: Version, mode: s.o.Mode, checksums: !s.o.NoChecksums, chunk: uint32(s.o.ChunkSize),
		codecChunk: uint32(s.o.CodecChunk), codebook: s.o.Codebook, chunkHash: s.o.ChunkHash, hash: s.o.Hash}
	if s.o.Mode == Raw {
		h.checksums, h.codecChunk, h.codebook = false, 0, nil
		st.Codebook, st.Checksums = nil, false
	}
	if err := s.t.Send(ctx, appendHello(nil, &h)); err != nil {
		return st, err
	}
	hctx, hcancel := context.WithTimeoutCause(ctx, HelloTimeout,
		errorf(ErrConnection, "no answer to the hello within %v: is a vkzip receiver listening there?", HelloTimeout))
	m, err := s.t.Recv(hctx, make([]byte, controlBuf))
	hcancel()
	if err != nil {
		if err == io.EOF {
			err = errorf(ErrConnection, "the receiver closed the connection before answering the hello")
		}
		return st, err
	}
	switch {
	case len(m) >= 4 && m[0] == kindHelloAck:
		if m[1] != statusOK {
			return st, remoteErr("the receiver", m[1], string(m[4:]))
		}
	case len(m) > 0 && m[0] == kindAbort:
		status, msg := parseAbort(m)
		return st, remoteErr("the receiver", status, msg)
	default:
		return st, errorf(ErrProtocol, "the receiver answered the hello with a message of kind %d", firstByte(m))
	}

	// The control goroutine waits for the receiver's verdict; a failure the receiver reports before it stops
	// the pipeline at once.
	verdicts := make(chan verdict, 1)
	go func() {
		m, err := s.t.Recv(ctx, make([]byte, controlBuf))
		v := verdict{err: err}
		switch {
		case err == io.EOF:
			v.err = errorf(ErrConnection, "the receiver closed the connection before its verdict")
		case err != nil:
		case len(m) > 0 && m[0] == kindResult:
			v.res, v.err = parseResult(m)
		case len(m) > 0 && m[0] == kindAbort:
			status, msg := parseAbort(m)
			v.err = remoteErr("the receiver", status, msg)
		default:
			v.err = errorf(ErrProtocol, "unexpected message of kind %d from the receiver", firstByte(m))
		}
		if v.err != nil {
			cancel(v.err)
		}
		verdicts <- v
	}()

	err = s.pipeline(ctx)
	st.RawBytes, st.Chunks, st.PayloadBytes, st.SHA256 = s.total, s.chunks, s.payload, s.sum
	if err == nil {
		err = s.t.Send(ctx, appendEnd(nil, &end{chunks: s.chunks, total: s.total, sum: s.sum}))
	}
	if err != nil {
		err = s.fail(parent, ctx, err, verdicts)
		cancel(err)
		<-verdicts
		return st, err
	}
	v := <-verdicts
	st.Duration = time.Since(start)
	if v.err != nil {
		if parent.Err() != nil {
			return st, parent.Err()
		}
		return st, v.err
	}
	r := v.res
	if r.status == statusHash || (r.status == statusOK && (r.total != s.total || r.sum != s.sum)) {
		return st, errorf(ErrHashMismatch, "the receiver delivered %d bytes with SHA-256 %x, the sender read %d bytes with SHA-256 %x",
			r.total, r.sum, s.total, s.sum)
	}
	if r.status != statusOK {
		return st, remoteErr("the receiver", r.status, r.msg)
	}
	st.Verified = true
	return st, nil
}

// fail picks the error to report when the pipeline stopped with err, and tells the receiver why when it did not
// hear it from there.
func (s *sender) fail(parent, ctx context.Context, err error, verdicts chan verdict) error {
	if parent.Err() != nil {
		err = parent.Err()
	} else if cause := context.Cause(ctx); cause != nil {
		err = cause
	}
	if errors.Is(err, ErrRemote) {
		return err
	}
	if errors.Is(err, ErrConnection) {
		// The receiver may have said why before it went away: prefer its reason.
		select {
		case v := <-verdicts:
			verdicts <- v
			if v.err != nil && errors.Is(v.err, ErrRemote) {
				return v.err
			}
		case <-time.After(time.Second):
		}
		return err
	}
	actx, acancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer acancel()
	s.t.Send(actx, appendAbort(nil, statusOf(err), message(err)))
	return err
}

// message is err's text without the "vkzip: " prefixes, for the peer.
func message(err error) string {
	if errors.Is(err, context.Canceled) {
		return "interrupted"
	}
	s := strings.TrimPrefix(err.Error(), "vkzip: ")
	return strings.ReplaceAll(s, ": vkzip: ", ": ")
}

func firstByte(m []byte) int {
	if len(m) == 0 {
		return -1
	}
	return int(m[0])
}

// pipeline reads, encodes and sends every chunk; it returns when all are sent or the first stage fails.
func (s *sender) pipeline(parent context.Context) error {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	g := &group{cancel: cancel}
	n := s.o.InFlight
	free := make(chan *sendSlot, n)
	for i := 0; i < n; i++ {
		free <- &sendSlot{}
	}
	work := make(chan *sendSlot, n)
	done := make(chan *sendSlot, n)

	g.Go(func() error { return s.read(ctx, free, work) })
	var workers sync.WaitGroup
	for i := 0; i < s.o.Workers; i++ {
		workers.Add(1)
		g.Go(func() error {
			defer workers.Done()
			return s.encode(ctx, work, done)
		})
	}
	g.Go(func() error {
		workers.Wait()
		close(done)
		return nil
	})
	if err := s.sendInOrder(ctx, done, free); err != nil {
		cancel(err)
	}
	g.wg.Wait()
	return context.Cause(ctx)
}

// read fills free slots from src (or takes pieces of data), hashing as it goes, and hands them to the encoders in
// sequence order.
func (s *sender) read(ctx context.Context, free <-chan *sendSlot, work chan<- *sendSlot) error {
	defer close(work)
	h := s.o.Hash.newDigest()
	for seq := int64(0); ; seq++ {
		var sl *sendSlot
		select {
		case sl = <-free:
		case <-ctx.Done():
			return nil
		}
		var n int
		var err error
		if s.mem {
			n = min(s.o.ChunkSize, len(s.data)-int(s.total))
			sl.raw = s.data[s.total : s.total+int64(n)]
			if n < s.o.ChunkSize {
				err = io.EOF
			}
		} else {
			if sl.buf == nil {
				sl.buf = make([]byte, s.o.ChunkSize)
			}
			n, err = io.ReadFull(s.src, sl.buf)
			sl.raw = sl.buf[:n]
		}
		if n > 0 {
			if !s.o.ChunkHash {
				h.Write(sl.raw)
			}
			sl.seq = seq
			s.total += int64(n)
			s.chunks = seq + 1
			work <- sl // never blocks: the channel holds every slot
		}
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			if !s.o.ChunkHash {
				s.sum = h.Sum()
			}
			return nil
		case err != nil:
			return fmt.Errorf("reading the input: %w", err)
		}
	}
}

// encode turns chunks into data messages.
func (s *sender) encode(ctx context.Context, work <-chan *sendSlot, done chan<- *sendSlot) error {
	for {
		var sl *sendSlot
		select {
		case x, ok := <-work:
			if !ok {
				return nil
			}
			sl = x
		case <-ctx.Done():
			return nil
		}
		if s.o.ChunkHash {
			sl.sum = s.o.Hash.sum(sl.raw)
		}
		if s.c != nil {
			if sl.enc == nil {
				sl.enc = make([]byte, 0, maxEncoded(s.o.ChunkSize, chunkShift(s.o.CodecChunk)))
			}
			out, err := s.c.Encode(ctx, sl.enc[:0], records(sl.raw), true)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("encoding chunk %d: %w", sl.seq, err)
			}
			sl.enc, sl.payload = out, out
		} else {
			sl.payload = sl.raw
		}
		putDataHeader(sl.hdr[:], dataHeader{seq: sl.seq, rawLen: len(sl.raw), payloadLen: len(sl.payload)})
		done <- sl // never blocks
	}
}

// sendInOrder sends encoded chunks in sequence order and returns their slots to the pool.
func (s *sender) sendInOrder(ctx context.Context, done <-chan *sendSlot, free chan<- *sendSlot) error {
	pending := make(map[int64]*sendSlot, s.o.InFlight)
	next := int64(0)
	h := s.o.Hash.newDigest() // of the chunk digests (ChunkHash)
	for {
		select {
		case sl, ok := <-done:
			if !ok {
				if s.o.ChunkHash {
					s.sum = h.Sum()
				}
				return nil
			}
			pending[sl.seq] = sl
			for p := pending[next]; p != nil; p = pending[next] {
				delete(pending, next)
				if err := s.t.Send(ctx, p.hdr[:], p.payload); err != nil {
					return err
				}
				s.payload += int64(len(p.payload))
				p.raw, p.payload = nil, nil
				if s.o.ChunkHash {
					h.Write(p.sum[:])
				}
				free <- p
				next++
			}
		case <-ctx.Done():
			return nil
		}
	}
}
