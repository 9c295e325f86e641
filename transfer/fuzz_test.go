package transfer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/synth"
)

// The fuzz targets play one end of a transfer against messages from the fuzzer: whatever a peer sends, an end
// returns an error or a verified result, promptly, and never panics or hangs.

// scripted is a Transport whose Recv hands out a fixed list of messages, then io.EOF (the peer hung up). Sends
// succeed and are dropped, or fail once failSend of them went out (a peer that stopped reading).
type scripted struct {
	mu       sync.Mutex
	msgs     [][]byte
	sends    int
	failSend int // 0: never
}

func (s *scripted) Send(ctx context.Context, parts ...[]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sends++
	if s.failSend > 0 && s.sends >= s.failSend {
		return errorf(ErrConnection, "scripted send failure")
	}
	return ctx.Err()
}

func (s *scripted) Recv(ctx context.Context, buf []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(s.msgs) == 0 {
		return nil, io.EOF
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	if len(m) > cap(buf) {
		return nil, errorf(ErrTooLarge, "message of %d bytes", len(m))
	}
	return append(buf[:0], m...), nil
}

func (s *scripted) Close() error { return nil }

// recorder passes messages on and keeps a copy of each one it sends.
type recorder struct {
	Transport
	mu   sync.Mutex
	sent [][]byte
}

func (r *recorder) Send(ctx context.Context, parts ...[]byte) error {
	var m []byte
	for _, p := range parts {
		m = append(m, p...)
	}
	r.mu.Lock()
	r.sent = append(r.sent, m)
	r.mu.Unlock()
	return r.Transport.Send(ctx, parts...)
}

// frame packs messages into one fuzz input: a u16 length before each (longer messages are cut at 65535 bytes).
func frame(msgs [][]byte) []byte {
	var b []byte
	for _, m := range msgs {
		m = m[:min(len(m), 0xFFFF)]
		b = binary.LittleEndian.AppendUint16(b, uint16(len(m)))
		b = append(b, m...)
	}
	return b
}

// unframe is frame's inverse; a cut-off last message is kept as it is.
func unframe(b []byte) [][]byte {
	var msgs [][]byte
	for len(b) >= 2 && len(msgs) < 64 {
		n := int(binary.LittleEndian.Uint16(b))
		b = b[2:]
		n = min(n, len(b))
		msgs = append(msgs, b[:n])
		b = b[n:]
	}
	return msgs
}

// recordTransfer runs a real transfer of data with o and returns the messages each end sent.
func recordTransfer(t testing.TB, data []byte, o Options) (fromSender, fromReceiver [][]byte) {
	a, b := chanPair()
	ra, rb := &recorder{Transport: a}, &recorder{Transport: b}
	out := transfer(context.Background(), ra, rb, memSource(data), o, ReceiveOptions{Workers: 1}, nil)
	require.NoError(t, out.serr)
	require.NoError(t, out.rerr)
	return ra.sent, rb.sent
}

// seedOptions are the transfers the fuzz seeds record: raw and compressed, with each option that changes the
// messages.
var seedOptions = []Options{
	{Mode: Raw, ChunkSize: 2048},
	{Mode: Compressed, ChunkSize: 2048, CodecChunk: 1024},
	{Mode: Compressed, ChunkSize: 2048, CodecChunk: 1024, Codebook: ptr(synth.KVCodebook()), Hash: XXH3},
	{Mode: Compressed, ChunkSize: 2048, CodecChunk: 1024, ChunkHash: true, NoChecksums: true},
}

// seedData is what the seeds send: 6000 bytes, two full 2 KiB chunks and a short one.
func seedData() []byte { return synth.KVLike(3000, 7) }

// fuzzSeeds records a real transfer of seedData with each of seedOptions.
func fuzzSeeds(t testing.TB) (fromSender, fromReceiver [][][]byte) {
	for _, o := range seedOptions {
		s, r := recordTransfer(t, seedData(), o)
		fromSender = append(fromSender, s)
		fromReceiver = append(fromReceiver, r)
	}
	return fromSender, fromReceiver
}

func ptr[T any](v T) *T { return &v }

// within fails the fuzz case when f takes longer than a peer's misbehaviour may hold an end up.
func within(t *testing.T, f func()) {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the end did not return within 10 s")
	}
}

// FuzzReceive feeds Receive the messages of a sender.
func FuzzReceive(f *testing.F) {
	fromSender, _ := fuzzSeeds(f)
	for _, msgs := range fromSender {
		f.Add(frame(msgs))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		msgs := unframe(in)
		var out bytes.Buffer
		var st *Stats
		var err error
		within(t, func() {
			st, err = Receive(context.Background(), &scripted{msgs: msgs}, &out,
				ReceiveOptions{Workers: 2, InFlight: 2, MaxChunkSize: 1 << 16})
		})
		if err != nil {
			require.True(t, classified(err), "unclassified error %v", err)
			return
		}
		// Accepted: the sender's End named the hash and length of exactly what was written.
		require.Equal(t, int64(out.Len()), st.RawBytes)
	})
}

// FuzzSendAnswers feeds Send, with one of seedOptions, the answers of a receiver (its HelloAck, Result or Abort).
func FuzzSendAnswers(f *testing.F) {
	_, fromReceiver := fuzzSeeds(f)
	for i, msgs := range fromReceiver {
		f.Add(frame(msgs), uint8(i), uint8(0))
	}
	data := seedData()
	f.Fuzz(func(t *testing.T, in []byte, opt, failSend uint8) {
		s := &scripted{msgs: unframe(in), failSend: int(failSend % 8)}
		o := seedOptions[int(opt)%len(seedOptions)]
		o.Workers, o.InFlight = 2, 2
		var err error
		within(t, func() { _, err = SendBytes(context.Background(), s, data, o) })
		if err != nil {
			require.True(t, classified(err), "unclassified error %v", err)
		}
	})
}

// classified reports whether err carries one of the package's error classes, as every error of an end must.
func classified(err error) bool {
	for _, c := range []error{ErrProtocol, ErrVersion, ErrHashMismatch, ErrPayload, ErrTooLarge, ErrConnection, ErrRemote, ErrFailed} {
		if errors.Is(err, c) {
			return true
		}
	}
	return false
}

// TestScriptedReplay checks the fuzz harness: replayed to one end, the messages of a real transfer make it
// succeed, so the fuzz targets start from cases that reach the end of a transfer.
func TestScriptedReplay(t *testing.T) {
	noLeaks(t)
	data := seedData()
	fromSender, fromReceiver := fuzzSeeds(t)
	for i, msgs := range fromSender {
		var out bytes.Buffer
		st, err := Receive(context.Background(), &scripted{msgs: unframe(frame(msgs))}, &out, ReceiveOptions{Workers: 2})
		require.NoError(t, err, "seed %d", i)
		require.Equal(t, data, out.Bytes())
		require.Equal(t, int64(len(data)), st.RawBytes)
	}
	for i, msgs := range fromReceiver {
		st, err := SendBytes(context.Background(), &scripted{msgs: msgs}, data, seedOptions[i])
		require.NoError(t, err, "seed %d", i)
		require.Equal(t, int64(len(data)), st.RawBytes)
	}
	// And a damaged one fails with a class.
	msgs := fromSender[1]
	bad := append([]byte(nil), msgs[1]...)
	bad[len(bad)-1] ^= 1
	_, err := Receive(context.Background(), &scripted{msgs: [][]byte{msgs[0], bad, msgs[2], msgs[3], msgs[4]}}, io.Discard, ReceiveOptions{})
	require.Error(t, err)
	require.True(t, classified(err), "%v", err)
}
