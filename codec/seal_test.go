package codec_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/internal/splicetest"
)

// TestSealsCatchSplices: every splice of valid bodies (swapped, duplicated, another encoding's metadata, a body
// moved between frames, frames reordered) decodes silently in version 1 and is refused in version 2, on the
// reference backend (the Vulkan backend runs the same in codec/vkcodec).
func TestSealsCatchSplices(t *testing.T) {
	c, err := codec.New(codec.WithBackend(codec.NewCPUBackend(0)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	splicetest.Check(t, c, nil)
}

// TestStreamSequence: a version 2 stream with a frame dropped, or whose frames mix container versions, is corrupt;
// each frame alone carries its index.
func TestStreamSequence(t *testing.T) {
	frames := func(version int) [][]byte {
		c, err := codec.New(codec.WithContainerVersion(version), codec.WithChunkSize(1024))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var out bytes.Buffer
		w, err := c.NewWriter(context.Background(), &out, 4096)
		if err != nil {
			t.Fatal(err)
		}
		in := make([]byte, 3*4096)
		for i := range in {
			in[i] = byte(i * 7)
		}
		if _, err := w.Write(in); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		var fs [][]byte
		for p := out.Bytes(); len(p) > 0; {
			ct, err := codec.ParseHeader(p)
			if err != nil {
				t.Fatal(err)
			}
			if version == 2 && ct.Sequence != uint64(len(fs)) {
				t.Fatalf("frame %d carries sequence %d", len(fs), ct.Sequence)
			}
			fs, p = append(fs, p[:ct.Size]), p[ct.Size:]
		}
		return fs
	}
	v1, v2 := frames(1), frames(2)
	if len(v1) != 3 || len(v2) != 3 {
		t.Fatalf("%d and %d frames, want 3", len(v1), len(v2))
	}
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for name, p := range map[string][]byte{
		"dropped frame": bytes.Join([][]byte{v2[0], v2[2]}, nil),
		"v1 then v2":    bytes.Join([][]byte{v1[0], v2[1], v2[2]}, nil),
		"v2 then v1":    bytes.Join([][]byte{v2[0], v1[1], v1[2]}, nil),
	} {
		if _, err := c.DecodeAll(p, nil); !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("%s: DecodeAll: %v, want corrupt", name, err)
		}
		if _, err := io.ReadAll(c.NewReader(context.Background(), bytes.NewReader(p))); !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("%s: Reader: %v, want corrupt", name, err)
		}
		if _, err := codec.Inspect(p); !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("%s: Inspect: %v, want corrupt", name, err)
		}
	}
	for _, p := range [][]byte{bytes.Join(v1, nil), bytes.Join(v2, nil)} {
		if _, err := c.DecodeAll(p, nil); err != nil {
			t.Errorf("intact stream: %v", err)
		}
	}
}
