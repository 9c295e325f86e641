package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/tensorfile"
)

// errVerify marks an encode whose payload did not decode to its input (encode --verify).
var errVerify = errors.New("verify failed")

// verifyPayload decodes payload with the Go reference codec (the oracle every backend is checked against) and
// compares the result, as it streams out, with the input file f: its prefix, then every tensor's data.
func verifyPayload(ctx context.Context, payload []byte, f *tensorfile.File) error {
	c, err := codec.New(codec.WithBackend(codec.NewCPUBackend(0)))
	if err != nil {
		return err
	}
	defer c.Close()
	want := &inputCursor{f: f, part: -1, rest: f.Prefix}
	err = c.DecodeStream(ctx, payload, func(_ *codec.Rec, d []byte) error { return want.match(d) })
	if err != nil {
		if errors.Is(err, errVerify) {
			return err
		}
		return fmt.Errorf("%w: the payload does not decode (nothing written): %w", errVerify, err)
	}
	if n := want.remaining(); n != 0 {
		return fmt.Errorf("%w: the payload decodes to %d bytes fewer than the input (nothing written)", errVerify, n)
	}
	return nil
}

// inputCursor walks a tensor file's bytes in order (prefix, then each tensor's data) without copying them.
type inputCursor struct {
	f    *tensorfile.File
	part int    // tensor whose data rest is in; -1: the prefix
	rest []byte // what is left of the current part
	off  int64  // bytes matched so far
}

// match compares d with the next len(d) bytes of the input.
func (c *inputCursor) match(d []byte) error {
	for len(d) > 0 {
		for len(c.rest) == 0 {
			if c.part+1 >= len(c.f.Tensors) {
				return fmt.Errorf("%w: the payload decodes to more bytes than the input's %d (nothing written)", errVerify, c.f.Size)
			}
			c.part++
			c.rest = c.f.Tensors[c.part].Data
		}
		n := min(len(d), len(c.rest))
		if !bytes.Equal(d[:n], c.rest[:n]) {
			i := 0
			for d[i] == c.rest[i] {
				i++
			}
			return fmt.Errorf("%w: the payload decodes to other bytes than the input, first at byte %d (nothing written)", errVerify, c.off+int64(i))
		}
		d, c.rest, c.off = d[n:], c.rest[n:], c.off+int64(n)
	}
	return nil
}

// remaining is the number of input bytes not matched yet.
func (c *inputCursor) remaining() int64 { return c.f.Size - c.off }
