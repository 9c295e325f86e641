package transfer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeebo/xxh3"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/synth"
)

// noLeaks fails the test if goroutines started during it are still running shortly after it ends.
func noLeaks(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("%d goroutines before, %d after:\n%s", before, n, buf)
		}
	})
}

// tcpPair connects two ConnTransports over loopback TCP.
func tcpPair(t testing.TB) (snd, rcv *ConnTransport) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	ctx := context.Background()
	var acc *ConnTransport
	var aerr error
	done := make(chan struct{})
	go func() {
		acc, aerr = Accept(ctx, l)
		close(done)
	}()
	snd, err = Dial(ctx, l.Addr().String(), time.Second)
	require.NoError(t, err)
	<-done
	require.NoError(t, aerr)
	t.Cleanup(func() { snd.Close(); acc.Close() })
	return snd, acc
}

func pipePair(t testing.TB) (Transport, Transport) {
	a, b := net.Pipe()
	ta, tb := NewConnTransport(a), NewConnTransport(b)
	t.Cleanup(func() { ta.Close(); tb.Close() })
	return ta, tb
}

type outcome struct {
	sst, rst   *Stats
	serr, rerr error
	got        []byte
}

// transfer runs Send and Receive on the two ends and waits for both.
func transfer(ctx context.Context, snd, rcv Transport, src io.Reader, o Options, ro ReceiveOptions, dst io.Writer) outcome {
	var out outcome
	var buf bytes.Buffer
	if dst == nil {
		dst = &buf
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		out.rst, out.rerr = Receive(ctx, rcv, dst, ro)
		// As the CLI does: a failed receiver hangs up.
		if out.rerr != nil {
			rcv.Close()
		}
	}()
	if m, ok := src.(memSource); ok {
		out.sst, out.serr = SendBytes(ctx, snd, m, o)
	} else {
		out.sst, out.serr = Send(ctx, snd, src, o)
	}
	if out.serr != nil {
		snd.Close()
	}
	wg.Wait()
	out.got = buf.Bytes()
	return out
}

// memSource makes transfer use SendBytes.
type memSource []byte

func (memSource) Read([]byte) (int, error) { panic("SendBytes reads no Reader") }

func kv(n int, seed uint64) []byte { return synth.KVLike(n/2+1, seed)[:n] }

func TestRoundTrip(t *testing.T) {
	noLeaks(t)
	const chunk = 4096
	for _, mode := range []Mode{Raw, Compressed} {
		for i, n := range []int{0, 1, 2, 3, 255, chunk - 1, chunk, chunk + 1, 2 * chunk, 3*chunk + 7, 100_001} {
			snd, rcv := tcpPair(t)
			data := kv(n, uint64(n))
			var src io.Reader = bytes.NewReader(data)
			if i%2 == 1 {
				src = memSource(data)
			}
			keep := bytes.Clone(data)
			out := transfer(context.Background(), snd, rcv, src, Options{Mode: mode, ChunkSize: chunk},
				ReceiveOptions{}, nil)
			require.Equal(t, keep, data, "SendBytes leaves its data as it was")
			require.NoError(t, out.serr, "%v %d", mode, n)
			require.NoError(t, out.rerr, "%v %d", mode, n)
			require.True(t, bytes.Equal(data, out.got), "%v %d: output differs", mode, n)
			for _, st := range []*Stats{out.sst, out.rst} {
				assert.True(t, st.Verified)
				assert.Equal(t, int64(n), st.RawBytes)
				assert.Equal(t, int64((n+chunk-1)/chunk), st.Chunks)
				assert.Equal(t, mode, st.Mode)
				assert.Equal(t, chunk, st.ChunkSize)
			}
			assert.Equal(t, out.sst.SHA256, out.rst.SHA256)
			assert.Equal(t, out.sst.PayloadBytes, out.rst.PayloadBytes)
			assert.Equal(t, out.sst.BytesSent, out.rst.BytesReceived)
			assert.Equal(t, out.sst.BytesReceived, out.rst.BytesSent)
			if mode == Raw {
				assert.Equal(t, int64(n), out.sst.PayloadBytes)
			}
		}
	}
}

func TestRoundTripPools(t *testing.T) {
	noLeaks(t)
	data := kv(1<<20+3, 7)
	cb := synth.KVCodebook()
	for _, p := range []struct {
		w, f int
		ch   bool
	}{{1, 1, false}, {1, 2, true}, {3, 3, false}, {4, 16, true}} {
		for _, mode := range []Mode{Raw, Compressed} {
			snd, rcv := pipePair(t)
			o := Options{Mode: mode, ChunkSize: 32 << 10, Workers: p.w, InFlight: p.f, Codebook: &cb, CodecChunk: 1024,
				ChunkHash: p.ch}
			out := transfer(context.Background(), snd, rcv, bytes.NewReader(data), o,
				ReceiveOptions{Workers: p.f, InFlight: p.w}, nil)
			require.NoError(t, out.serr)
			require.NoError(t, out.rerr)
			require.True(t, bytes.Equal(data, out.got))
			assert.Equal(t, p.ch, out.rst.ChunkHash)
			assert.Equal(t, out.sst.SHA256, out.rst.SHA256)
			if !p.ch {
				assert.Equal(t, sha256.Sum256(data), out.sst.SHA256, "the SHA-256 of the stream")
			}
			if mode == Compressed {
				assert.Equal(t, cb, *out.rst.Codebook)
				assert.Greater(t, out.sst.Ratio(), 1.25, "KV-like data compresses by a third")
			}
		}
	}
}

// tamper is a Transport that lets a test change, drop or add outgoing messages.
type tamper struct {
	Transport
	n  int
	fn func(i int, msg []byte) [][]byte // the messages to send instead of msg
}

func (t *tamper) Send(ctx context.Context, parts ...[]byte) error {
	i := t.n
	t.n++
	var msg []byte
	for _, p := range parts {
		msg = append(msg, p...)
	}
	for _, m := range t.fn(i, msg) {
		if err := t.Transport.Send(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// at applies f to message i only (message 0 is the hello, 1.. the data frames, then the end).
func at(i int, f func(m []byte) [][]byte) func(int, []byte) [][]byte {
	return func(j int, m []byte) [][]byte {
		if j == i {
			return f(m)
		}
		return [][]byte{m}
	}
}

func one(f func(m []byte)) func(m []byte) [][]byte {
	return func(m []byte) [][]byte {
		f(m)
		return [][]byte{m}
	}
}

func TestTamper(t *testing.T) {
	noLeaks(t)
	const chunk = 4096
	data := kv(5*chunk+1, 3)
	for _, tc := range []struct {
		name     string
		mode     Mode
		noCRC    bool
		chunkSum bool
		fn       func(int, []byte) [][]byte
		class    error // both ends
		rclass   error // receiver only, when it says more
		remoteAt string
	}{
		{"raw payload bit, chunk hash", Raw, false, true, at(3, one(func(m []byte) { m[dataHeaderSize+100] ^= 1 })), ErrHashMismatch, nil, ""},
		{"raw payload bit", Raw, false, false, at(2, one(func(m []byte) { m[dataHeaderSize+100] ^= 1 })), ErrHashMismatch, nil, ""},
		{"compressed payload bit", Compressed, false, false, at(2, one(func(m []byte) { m[len(m)-200] ^= 1 })), ErrPayload, codec.ErrChecksum, "send"},
		{"compressed without checksums", Compressed, true, false, at(3, one(func(m []byte) { m[len(m)-200] ^= 0x10 })), ErrHashMismatch, nil, ""},
		{"compressed metadata", Compressed, false, false, at(1, one(func(m []byte) { m[dataHeaderSize+22] ^= 1 })), ErrPayload, codec.ErrChecksum, "send"},
		{"end hash", Compressed, false, false, at(7, one(func(m []byte) { m[30] ^= 1 })), ErrHashMismatch, nil, ""},
		{"end length", Raw, false, false, at(7, one(func(m []byte) { m[16]++ })), ErrHashMismatch, nil, ""},
		{"raw payload bit, xxh3", Raw, false, false, at(2, one(func(m []byte) { m[dataHeaderSize+100] ^= 1 })), ErrHashMismatch, nil, ""},
		{"raw payload bit, xxh3 chunk hash", Raw, false, true, at(3, one(func(m []byte) { m[dataHeaderSize+9] ^= 4 })), ErrHashMismatch, nil, ""},
		{"end hash, xxh3", Compressed, false, false, at(7, one(func(m []byte) { m[40] ^= 1 })), ErrHashMismatch, nil, ""},
		{"end chunk count", Raw, false, false, at(7, one(func(m []byte) { m[8]-- })), ErrProtocol, nil, "send"},
		{"kind", Raw, false, false, at(3, one(func(m []byte) { m[0] = 99 })), ErrProtocol, nil, "send"},
		{"sequence", Compressed, false, false, at(3, one(func(m []byte) { m[8] = 9 })), ErrProtocol, nil, "send"},
		{"dropped frame", Raw, false, false, at(4, func([]byte) [][]byte { return nil }), ErrProtocol, nil, "send"},
		{"repeated frame", Raw, false, false, at(4, func(m []byte) [][]byte { return [][]byte{m, m} }), ErrProtocol, nil, "send"},
		{"raw length beyond chunk", Raw, false, false, at(2, one(func(m []byte) { m[5] = 0x20 })), ErrProtocol, nil, "send"},
		{"raw length below payload", Raw, false, false, at(2, one(func(m []byte) { m[4]-- })), ErrProtocol, nil, "send"},
		{"compressed raw length", Compressed, false, false, at(2, one(func(m []byte) { m[5]-- })), ErrPayload, nil, "send"},
		{"payload length", Raw, false, false, at(2, one(func(m []byte) { m[16]-- })), ErrProtocol, nil, "send"},
		{"reserved", Raw, false, false, at(2, one(func(m []byte) { m[21] = 1 })), ErrProtocol, nil, "send"},
		{"truncated frame", Compressed, false, false, at(2, func(m []byte) [][]byte { return [][]byte{m[:dataHeaderSize+50]} }), ErrProtocol, nil, "send"},
		{"truncated container", Compressed, false, false, at(2, func(m []byte) [][]byte {
			m = m[:len(m)-8]
			le.PutUint32(m[16:], uint32(len(m)-dataHeaderSize))
			return [][]byte{m}
		}), ErrPayload, codec.ErrTruncated, "send"},
		{"not a container", Compressed, false, false, at(2, one(func(m []byte) { copy(m[dataHeaderSize:], "NOTVKZIP") })), ErrPayload, codec.ErrFormat, "send"},
		{"version", Raw, false, false, at(0, one(func(m []byte) { m[5] = 2 })), ErrVersion, nil, "send"},
		{"garbage hello", Raw, false, false, at(0, one(func(m []byte) { m[1] = 'X' })), ErrProtocol, nil, "send"},
		{"hello mode", Raw, false, false, at(0, one(func(m []byte) { m[7] = 7 })), ErrProtocol, nil, "send"},
		{"hello chunk", Raw, false, false, at(0, one(func(m []byte) { m[9]++ })), ErrTooLarge, nil, "send"},
		{"stray message", Raw, false, false, at(2, func(m []byte) [][]byte { return [][]byte{{kindResult}} }), ErrProtocol, nil, "send"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeaks(t)
			snd, rcv := tcpPair(t)
			o := Options{Mode: tc.mode, ChunkSize: chunk, NoChecksums: tc.noCRC, Workers: 2, InFlight: 3, ChunkHash: tc.chunkSum}
			if strings.Contains(tc.name, "xxh3") {
				o.Hash = XXH3
			}
			out := transfer(context.Background(), &tamper{Transport: snd, fn: tc.fn}, rcv, bytes.NewReader(data), o,
				ReceiveOptions{}, io.Discard)
			require.Error(t, out.rerr)
			require.Error(t, out.serr)
			assert.ErrorIs(t, out.rerr, tc.class, "receiver: %v", out.rerr)
			assert.ErrorIs(t, out.serr, tc.class, "sender: %v", out.serr)
			if tc.rclass != nil {
				assert.ErrorIs(t, out.rerr, tc.rclass, "receiver: %v", out.rerr)
			}
			if tc.remoteAt == "send" {
				assert.ErrorIs(t, out.serr, ErrRemote, "sender: %v", out.serr)
				assert.NotErrorIs(t, out.rerr, ErrRemote)
			}
			var te *Error
			assert.True(t, errors.As(out.rerr, &te), "typed: %T %v", out.rerr, out.rerr)
			assert.NotContains(t, out.serr.Error()[7:], "vkzip: ", "one prefix: %v", out.serr)
		})
	}
}

// source is an endless stream of KV-like bytes (a block repeated, with the block number in it).
type source struct {
	block []byte
	off   int
	n     int64
	limit int64 // -1: endless
	after func(n int64)
}

func newSource(limit int64) *source {
	return &source{block: synth.KVLike(1<<19, 9), limit: limit}
}

func (s *source) Read(p []byte) (int, error) {
	if s.limit >= 0 && s.n >= s.limit {
		return 0, io.EOF
	}
	if s.limit >= 0 && int64(len(p)) > s.limit-s.n {
		p = p[:s.limit-s.n]
	}
	k := copy(p, s.block[s.off:])
	if k > 0 {
		p[0] ^= byte(s.n >> 20)
	}
	s.off = (s.off + k) % len(s.block)
	s.n += int64(k)
	if s.after != nil {
		s.after(s.n)
	}
	return k, nil
}

func TestConnectionLoss(t *testing.T) {
	for _, side := range []string{"sender", "receiver"} {
		for _, mode := range []Mode{Raw, Compressed} {
			t.Run(side+"/"+mode.String(), func(t *testing.T) {
				noLeaks(t)
				snd, rcv := tcpPair(t)
				src := newSource(-1)
				victim := snd
				if side == "receiver" {
					victim = rcv
				}
				var once sync.Once
				src.after = func(n int64) {
					if n > 8<<20 {
						once.Do(func() { victim.Conn().Close() })
					}
				}
				start := time.Now()
				out := transfer(context.Background(), snd, rcv, src, Options{Mode: mode, ChunkSize: 64 << 10}, ReceiveOptions{}, io.Discard)
				assert.Less(t, time.Since(start), 5*time.Second)
				require.Error(t, out.serr)
				require.Error(t, out.rerr)
				assert.ErrorIs(t, out.rerr, ErrConnection, "%v", out.rerr)
				assert.ErrorIs(t, out.serr, ErrConnection, "%v", out.serr)
			})
		}
	}
}

func TestCancel(t *testing.T) {
	for _, side := range []string{"sender", "receiver", "both"} {
		for _, mode := range []Mode{Raw, Compressed} {
			t.Run(side+"/"+mode.String(), func(t *testing.T) {
				noLeaks(t)
				snd, rcv := tcpPair(t)
				sctx, scancel := context.WithCancel(context.Background())
				rctx, rcancel := context.WithCancel(context.Background())
				defer scancel()
				defer rcancel()
				var once sync.Once
				src := newSource(-1)
				src.after = func(n int64) {
					if n > 4<<20 {
						once.Do(func() {
							if side != "receiver" {
								scancel()
							}
							if side != "sender" {
								rcancel()
							}
						})
					}
				}
				var rst *Stats
				var rerr error
				done := make(chan struct{})
				go func() {
					rst, rerr = Receive(rctx, rcv, io.Discard, ReceiveOptions{})
					_ = rst
					rcv.Close()
					close(done)
				}()
				_, serr := Send(sctx, snd, src, Options{Mode: mode, ChunkSize: 64 << 10})
				snd.Close()
				<-done
				switch side {
				case "sender":
					assert.ErrorIs(t, serr, context.Canceled)
					assert.ErrorIs(t, rerr, ErrRemote, "%v", rerr)
					assert.Contains(t, rerr.Error(), "interrupted")
				case "receiver":
					assert.ErrorIs(t, rerr, context.Canceled)
					assert.ErrorIs(t, serr, ErrRemote, "%v", serr)
					assert.Contains(t, serr.Error(), "interrupted")
				default:
					assert.Error(t, serr)
					assert.Error(t, rerr)
				}
			})
		}
	}
}

type failWriter struct{ n, limit int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.limit {
		return 0, errors.New("disk full")
	}
	w.n += len(p)
	return len(p), nil
}

type failReader struct{ r io.Reader }

func (f failReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return 0, errors.New("input device gone")
	}
	return n, err
}

func TestEndpointErrors(t *testing.T) {
	noLeaks(t)
	data := kv(1<<20, 4)

	snd, rcv := tcpPair(t)
	out := transfer(context.Background(), snd, rcv, bytes.NewReader(data), Options{Mode: Compressed, ChunkSize: 64 << 10},
		ReceiveOptions{}, &failWriter{limit: 300 << 10})
	assert.ErrorContains(t, out.rerr, "disk full")
	assert.ErrorIs(t, out.serr, ErrRemote)
	assert.ErrorIs(t, out.serr, ErrFailed)
	assert.ErrorContains(t, out.serr, "disk full")

	snd, rcv = tcpPair(t)
	out = transfer(context.Background(), snd, rcv, failReader{bytes.NewReader(data)}, Options{ChunkSize: 64 << 10},
		ReceiveOptions{}, io.Discard)
	assert.ErrorContains(t, out.serr, "input device gone")
	assert.ErrorIs(t, out.rerr, ErrRemote)
	assert.ErrorContains(t, out.rerr, "input device gone")

	// A receiver that hears nothing but a closed connection.
	snd, rcv = tcpPair(t)
	snd.Close()
	_, err := Receive(context.Background(), rcv, io.Discard, ReceiveOptions{})
	assert.ErrorIs(t, err, ErrConnection)
}

func TestBoundedMemory(t *testing.T) {
	noLeaks(t)
	total := int64(512 << 20)
	if raceEnabled || testing.Short() {
		total = 32 << 20
	}
	const chunk = 256 << 10
	snd, rcv := tcpPair(t)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
		}
	}()
	out := transfer(context.Background(), snd, rcv, newSource(total), Options{Mode: Compressed, ChunkSize: chunk,
		Workers: 2, InFlight: 4}, ReceiveOptions{Workers: 2, InFlight: 4}, io.Discard)
	close(stop)
	<-sampled
	require.NoError(t, out.serr)
	require.NoError(t, out.rerr)
	assert.Equal(t, total, out.rst.RawBytes)
	// Each end holds 4 slots of about two chunks: ~4 MiB; the rest is garbage between collections.
	growth := int64(peak) - int64(base)
	t.Logf("stream %d MiB, heap growth at peak %.1f MiB", total>>20, float64(growth)/(1<<20))
	assert.Less(t, growth, int64(32<<20), "memory must not grow with the stream")
}

func TestHelloTimeout(t *testing.T) {
	noLeaks(t)
	defer func(d time.Duration) { HelloTimeout = d }(HelloTimeout)
	HelloTimeout = 100 * time.Millisecond
	a, b := tcpPair(t)
	_, err := Receive(context.Background(), b, io.Discard, ReceiveOptions{})
	assert.ErrorIs(t, err, ErrConnection)
	assert.ErrorContains(t, err, "no hello")
	_, err = Send(context.Background(), a, bytes.NewReader(nil), Options{})
	assert.ErrorIs(t, err, ErrConnection)
	assert.ErrorContains(t, err, "no answer to the hello")
}

// chanTransport is a message-passing Transport with no byte stream underneath, as an NCCL one would be: each
// message is one buffer handed over whole.
type chanTransport struct {
	in, out chan []byte
	closed  chan struct{}
	once    *sync.Once
}

func chanPair() (chanTransport, chanTransport) {
	ab, ba, closed, once := make(chan []byte, 2), make(chan []byte, 2), make(chan struct{}), &sync.Once{}
	return chanTransport{in: ba, out: ab, closed: closed, once: once}, chanTransport{in: ab, out: ba, closed: closed, once: once}
}

func (c chanTransport) Send(ctx context.Context, parts ...[]byte) error {
	var msg []byte
	for _, p := range parts {
		msg = append(msg, p...)
	}
	select {
	case c.out <- msg:
		return nil
	case <-c.closed:
		return errorf(ErrConnection, "closed")
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (c chanTransport) Recv(ctx context.Context, buf []byte) ([]byte, error) {
	select {
	case m := <-c.in:
		if len(m) > cap(buf) {
			return nil, errorf(ErrTooLarge, "%d bytes", len(m))
		}
		return append(buf[:0], m...), nil
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (c chanTransport) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func TestMessageTransport(t *testing.T) {
	noLeaks(t)
	data := kv(3<<20+1, 11)
	for _, mode := range []Mode{Raw, Compressed} {
		a, b := chanPair()
		out := transfer(context.Background(), a, b, bytes.NewReader(data), Options{Mode: mode, ChunkSize: 1 << 20},
			ReceiveOptions{}, nil)
		require.NoError(t, out.serr)
		require.NoError(t, out.rerr)
		require.True(t, bytes.Equal(data, out.got))
		chunks := int64(len(data)+(1<<20)-1) >> 20
		assert.Equal(t, helloSize+out.sst.PayloadBytes+chunks*dataHeaderSize+endSize, out.sst.BytesSent,
			"without a Counter, the messages' bytes")
		assert.Equal(t, out.sst.BytesSent, out.rst.BytesReceived)
	}
}

func TestConnTransport(t *testing.T) {
	noLeaks(t)
	a, b := tcpPair(t)
	ctx := context.Background()
	require.NoError(t, a.Send(ctx, []byte("hello")))
	require.NoError(t, a.Send(ctx, nil))
	require.NoError(t, a.Send(ctx, make([]byte, 100)))
	m, err := b.Recv(ctx, make([]byte, 16))
	require.NoError(t, err)
	assert.Equal(t, "hello", string(m))
	m, err = b.Recv(ctx, make([]byte, 16))
	require.NoError(t, err)
	assert.Empty(t, m)
	_, err = b.Recv(ctx, make([]byte, 16))
	assert.ErrorIs(t, err, ErrTooLarge)
	_, err = b.Recv(ctx, make([]byte, 1000))
	assert.ErrorIs(t, err, ErrConnection, "a cut-off message breaks the transport")
	sent, _ := a.Counts()
	_, recv := b.Counts()
	assert.Equal(t, int64(3*4+5+100), sent)
	assert.Equal(t, int64(3*4+5), recv)

	// Cancellation interrupts a blocked Recv, and the transport still works when nothing was cut off.
	a, b = tcpPair(t)
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = b.Recv(cctx, make([]byte, 16))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, a.Send(ctx, []byte("again")))
	m, err = b.Recv(ctx, make([]byte, 16))
	require.NoError(t, err)
	assert.Equal(t, "again", string(m))
	a.Close()
	_, err = b.Recv(ctx, make([]byte, 16))
	assert.Equal(t, io.EOF, err)
}

// A Send that cancellation cuts off inside its message leaves the rest to the next Send, so a message sent after
// a cancel (the Abort that says why) still reaches the peer whole and in order.
func TestSendCutOffFinishesLater(t *testing.T) {
	noLeaks(t)
	ca, cb := net.Pipe() // unbuffered: a write blocks until the other end reads
	a, b := NewConnTransport(ca), NewConnTransport(cb)
	defer a.Close()
	defer b.Close()
	big := kv(1<<20, 3)
	ctx, cancel := context.WithCancel(context.Background())
	first := make([]byte, 64<<10)
	read := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(cb, first) // read part of the message, then stop reading and cancel the sender
		cancel()
		read <- err
	}()
	err := a.Send(ctx, big[:100], big[100:])
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, <-read)
	sent, _ := a.Counts()
	require.Less(t, sent, int64(4+len(big)), "the cancel cut the message off")

	rest := make(chan []byte, 1)
	go func() {
		buf := make([]byte, 4+len(big)+4+5-len(first))
		_, err := io.ReadFull(cb, buf)
		assert.NoError(t, err)
		rest <- buf
	}()
	require.NoError(t, a.Send(context.Background(), []byte("abort")))
	stream := append(first, <-rest...)
	assert.Equal(t, uint32(len(big)), binary.LittleEndian.Uint32(stream))
	assert.True(t, bytes.Equal(big, stream[4:4+len(big)]), "the cut-off message is finished first")
	tail := stream[4+len(big):]
	assert.Equal(t, uint32(5), binary.LittleEndian.Uint32(tail))
	assert.Equal(t, "abort", string(tail[4:]))
	sent, _ = a.Counts()
	assert.Equal(t, int64(len(stream)), sent)
}

func TestPaced(t *testing.T) {
	noLeaks(t)
	snd, rcv := tcpPair(t)
	data := kv(2<<20, 5)
	start := time.Now()
	out := transfer(context.Background(), Paced(snd, 20e6, 64<<10), rcv, bytes.NewReader(data),
		Options{Mode: Raw, ChunkSize: 256 << 10}, ReceiveOptions{}, nil)
	require.NoError(t, out.serr)
	require.NoError(t, out.rerr)
	el := time.Since(start)
	assert.Greater(t, el, 80*time.Millisecond, "2 MiB at 20 MB/s")
	assert.Positive(t, out.sst.BytesSent, "counts pass through")
}

func TestProtocol(t *testing.T) {
	cb := synth.KVCodebook()
	for _, h := range []hello{
		{version: Version, mode: Raw, chunk: 4096},
		{version: Version, mode: Compressed, checksums: true, chunk: 4 << 20, codecChunk: 65536, codebook: &cb},
		{version: Version, mode: Compressed, chunkHash: true, hash: XXH3, chunk: 1 << 20, codecChunk: 1024},
	} {
		m := appendHello(nil, &h)
		require.Len(t, m, helloSize)
		got, err := parseHello(m)
		require.NoError(t, err)
		assert.Equal(t, h, *got)
	}
	e := end{chunks: 3, total: 12345}
	e.sum[5] = 9
	got, err := parseEnd(appendEnd(nil, &e))
	require.NoError(t, err)
	assert.Equal(t, e, *got)
	r := result{status: statusHash, total: 7, msg: "why"}
	gr, err := parseResult(appendResult(nil, &r))
	require.NoError(t, err)
	assert.Equal(t, r, *gr)
	for _, class := range []error{ErrProtocol, ErrVersion, ErrHashMismatch, ErrPayload, ErrTooLarge, ErrFailed} {
		assert.Equal(t, class, classOf(statusOf(errorf(class, "x"))))
	}
	_, err = parseHello([]byte{kindHello, 'V', 'K', 'Z', 'T', 1})
	assert.ErrorIs(t, err, ErrProtocol)
	_, err = parseDataHeader(make([]byte, 10))
	assert.ErrorIs(t, err, ErrProtocol)
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{{ChunkSize: 3}, {ChunkSize: 100}, {ChunkSize: MaxChunkSize + 2}, {Mode: 9}, {Hash: 7}} {
		_, err := Send(context.Background(), nil, nil, o)
		assert.Error(t, err, "%+v", o)
	}
	_, err := Send(context.Background(), nil, nil, Options{Mode: Compressed, CodecChunk: 1000})
	assert.ErrorIs(t, err, codec.ErrInvalidInput)
}

// TestXXH3 checks the fast digest end to end: both ends agree, the digest is the XXH3-128 of the stream (computed
// independently here), and with chunk hashing the XXH3-128 of the chunks' XXH3-128 digests.
func TestXXH3(t *testing.T) {
	noLeaks(t)
	const chunk = 32 << 10
	data := kv(5*chunk+77, 11)
	for _, ch := range []bool{false, true} {
		for _, mode := range []Mode{Raw, Compressed} {
			snd, rcv := pipePair(t)
			o := Options{Mode: mode, ChunkSize: chunk, Workers: 2, InFlight: 3, ChunkHash: ch, Hash: XXH3}
			out := transfer(context.Background(), snd, rcv, bytes.NewReader(data), o, ReceiveOptions{}, nil)
			require.NoError(t, out.serr)
			require.NoError(t, out.rerr)
			require.True(t, bytes.Equal(data, out.got))
			assert.Equal(t, XXH3, out.rst.Hash, "the receiver learns the hash from the hello")
			assert.Equal(t, out.sst.SHA256, out.rst.SHA256)
			var want [DigestSize]byte
			if ch {
				h := xxh3.New()
				for off := 0; off < len(data); off += chunk {
					d := xxh3.Hash128(data[off:min(off+chunk, len(data))]).Bytes()
					h.Write(append(d[:], make([]byte, 16)...))
				}
				v := h.Sum128().Bytes()
				copy(want[:], v[:])
			} else {
				v := xxh3.Hash128(data).Bytes()
				copy(want[:], v[:])
			}
			assert.Equal(t, want, out.sst.SHA256, "chunk hash %v, %v", ch, mode)
		}
	}
	h, err := ParseHash("xxh3")
	require.NoError(t, err)
	assert.Equal(t, XXH3, h)
	_, err = ParseHash("md5")
	assert.Error(t, err)
}
