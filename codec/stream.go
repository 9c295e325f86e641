package codec

import (
	"bytes"
	"context"
	"io"

	"github.com/vkzip/vkzip/codec/layout"
)

// The stream format is a sequence of containers ("frames"), each holding up to FrameSize bytes of input as one BF16
// tensor (plus a one-byte blob if the stream's length is odd); only the last frame has FlagFinal, so a stream cut at
// a frame boundary is detected, and in version 2 frame k carries sequence k, so frames reordered, dropped or moved
// between streams are detected too (a body moved between frames fails its seal). Memory stays bounded by a few
// frames on either side.

// DefaultFrameSize is the input bytes per frame of NewWriter.
const DefaultFrameSize = 4 << 20

// MaxFrameSize bounds the frame size a Writer accepts and the encoded frame a Reader buffers.
const MaxFrameSize = 1 << 28

// Writer compresses a byte stream of little-endian BF16 values into frames written to an io.Writer.
type Writer struct {
	c       *Codec
	ctx     context.Context
	w       io.Writer
	buf     []byte
	out     []byte
	scratch []byte // staging for encoded bodies, kept across frames
	frame   int
	seq     uint64 // index of the next frame in the stream
	err     error
	written int64
}

// NewWriter returns a Writer on c with frames of frameSize input bytes (0 = DefaultFrameSize; rounded to even).
func (c *Codec) NewWriter(ctx context.Context, w io.Writer, frameSize int) (*Writer, error) {
	if frameSize == 0 {
		frameSize = DefaultFrameSize
	}
	if frameSize < 2 || frameSize > MaxFrameSize {
		return nil, errorf(ErrInvalidInput, "frame size %d outside [2, %d]", frameSize, MaxFrameSize)
	}
	frameSize &^= 1
	return &Writer{c: c, ctx: ctx, w: w, frame: frameSize, buf: make([]byte, 0, frameSize)}, nil
}

// Write buffers p and emits every full frame.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n := 0
	for len(p) > 0 {
		k := min(len(p), w.frame-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p, n = p[k:], n+k
		// Keep a full frame buffered until more input arrives, so the final frame is never empty for
		// non-empty input.
		if len(w.buf) == w.frame && len(p) > 0 {
			if err := w.emit(false); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

func (w *Writer) emit(final bool) error {
	var err error
	w.out, err = w.c.encode(w.ctx, w.out[:0], streamRecords(w.buf), final, w.seq, &w.scratch)
	w.seq++
	if err == nil {
		_, err = w.w.Write(w.out)
		w.written += int64(len(w.out))
	}
	w.buf = w.buf[:0]
	if err != nil {
		w.err = err
	}
	return err
}

// Close writes the final frame. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	err := w.emit(true)
	if err == nil {
		w.err = errorf(ErrClosed, "writer closed")
	}
	return err
}

// Written is the number of compressed bytes written so far.
func (w *Writer) Written() int64 { return w.written }

// Reader decompresses a stream of frames from an io.Reader.
type Reader struct {
	c     *Codec
	ctx   context.Context
	r     io.Reader
	frame []byte
	dec   []byte
	out   bytes.Buffer
	done  bool
	err   error
	seq   uint64 // index of the next frame
	ver   uint16 // version of the first frame
}

// NewReader returns a Reader on c.
func (c *Codec) NewReader(ctx context.Context, r io.Reader) *Reader {
	return &Reader{c: c, ctx: ctx, r: r}
}

// Read returns decompressed bytes; io.EOF after the final frame, an error for anything else (a stream that ends
// early gives ErrTruncated).
func (r *Reader) Read(p []byte) (int, error) {
	for r.out.Len() == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.done {
			// Bytes after the final frame are an error, not silently ignored.
			var one [1]byte
			if n, _ := io.ReadFull(r.r, one[:]); n > 0 {
				r.err = errorf(ErrCorrupt, "data after the final frame")
				return 0, r.err
			}
			return 0, io.EOF
		}
		if err := r.next(); err != nil {
			r.err = err
			return 0, err
		}
	}
	return r.out.Read(p)
}

func (r *Reader) readFull(b []byte, what string) error {
	if _, err := io.ReadFull(r.r, b); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return errorf(ErrTruncated, "stream ends inside %s", what)
		}
		return err
	}
	return nil
}

func (r *Reader) next() error {
	r.frame = append(r.frame[:0], make([]byte, layout.PreambleSize)...)
	if err := r.readFull(r.frame, "a frame preamble"); err != nil {
		return err
	}
	if !bytes.Equal(r.frame[:8], layout.Magic[:]) {
		return errorf(ErrFormat, "bad magic")
	}
	end := metaEnd(r.frame)
	if end > MaxFrameSize {
		return errorf(ErrTooLarge, "frame metadata of %d bytes", end)
	}
	r.frame = append(r.frame, make([]byte, end-layout.PreambleSize)...)
	if err := r.readFull(r.frame[layout.PreambleSize:], "frame metadata"); err != nil {
		return err
	}
	ct, err := parseMeta(r.frame)
	if err != nil {
		return err
	}
	if r.seq == 0 {
		r.ver = ct.Version
	}
	if err := ct.CheckStreamPosition(r.seq, r.ver); err != nil {
		return err
	}
	r.seq++
	if ct.Size > MaxFrameSize {
		return errorf(ErrTooLarge, "frame of %d bytes exceeds the %d-byte limit", ct.Size, MaxFrameSize)
	}
	r.frame = append(r.frame, make([]byte, ct.Size-end)...)
	if err := r.readFull(r.frame[end:], "a frame body"); err != nil {
		return err
	}
	if ct, err = r.c.header(r.frame); err != nil {
		return err
	}
	err = r.c.decodeRecords(r.ctx, r.frame, ct, &r.dec, func(_ *ParsedRecord, d []byte) error {
		r.out.Write(d)
		return nil
	})
	if err != nil {
		return err
	}
	r.done = ct.Flags&layout.FlagFinal != 0
	return nil
}
