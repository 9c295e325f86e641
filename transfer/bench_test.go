package transfer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"testing"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/synth"
)

// The stages of the pipeline, each on one core, and the whole over loopback TCP.

func BenchmarkSHA256(b *testing.B) {
	data := synth.KVLike(2<<20, 1)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		sha256.Sum256(data)
	}
}

func benchEncode(b *testing.B, cb *codec.Codebook) {
	data := synth.KVLike(2<<20, 1)
	opts := []codec.Option{codec.WithBackend(codec.NewCPUBackend(1))}
	if cb != nil {
		opts = append(opts, codec.WithCodebook(*cb))
	}
	c, _ := codec.New(opts...)
	dst := make([]byte, 0, maxEncoded(len(data), 10))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := c.Encode(context.Background(), dst[:0], records(data), true); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeChunk(b *testing.B)         { benchEncode(b, nil) }
func BenchmarkEncodeChunkCodebook(b *testing.B) { cb := synth.KVCodebook(); benchEncode(b, &cb) }

func BenchmarkDecodeChunk(b *testing.B) {
	data := synth.KVLike(2<<20, 1)
	c, _ := codec.New(codec.WithBackend(codec.NewCPUBackend(1)))
	enc, _ := c.Encode(context.Background(), nil, records(data), true)
	dst := make([]byte, 0, len(data))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := c.DecodeAll(enc, dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func benchLoopback(b *testing.B, mode Mode) {
	data := synth.KVLike(64<<20, 1)
	cb := synth.KVCodebook()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		b.StopTimer()
		snd, rcv := tcpPair(b)
		b.StartTimer()
		out := transfer(context.Background(), snd, rcv, bytes.NewReader(data), Options{Mode: mode, Codebook: &cb},
			ReceiveOptions{}, io.Discard)
		if out.serr != nil || out.rerr != nil {
			b.Fatal(out.serr, out.rerr)
		}
		b.StopTimer()
		snd.Close()
		rcv.Close()
		b.StartTimer()
	}
}

func BenchmarkLoopbackRaw(b *testing.B)        { benchLoopback(b, Raw) }
func BenchmarkLoopbackCompressed(b *testing.B) { benchLoopback(b, Compressed) }
