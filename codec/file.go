package codec

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/tensorfile"
)

// File streams (docs/FORMAT.md §8.1): EncodeFile writes a tensor file as a stream of frames, each holding up to
// FrameSize bytes of the file's content (its header as a blob, whole tensors, or consecutive slices of a tensor
// larger than a frame), so that decoding the frames in order and concatenating their records gives the file back
// byte for byte. Every stream reader (DecodeAll, DecodeStream, Reader, DecodeFile) decodes such a stream; a file
// that fits one frame is the same single container Encode writes for it.

// DefaultFileFrame is the input bytes per frame of EncodeFile: large enough that a GPU backend gets big batches
// and the per-frame overhead (a header of about 100 bytes, a codebook) is negligible; small enough that a frame
// of incompressible data and its payload fit in a few tens of MiB.
const DefaultFileFrame = 32 << 20

// fileRecordsPerFrame bounds the records of one EncodeFile frame, so that a file of very many small tensors still
// has directories of bounded size.
const fileRecordsPerFrame = 1 << 16

// fileDecodeBatch is the most decoded bytes DecodeFile verifies and writes in one step (a larger single record is
// decoded alone): a whole DefaultFileFrame frame, header blob included, is one batch.
const fileDecodeBatch = 2 * DefaultFileFrame

// maxStreamMeta bounds a container's preamble and metadata as DecodeFile reads them from a stream: a canonical
// DEFLATE stream of the largest directory (2^27 bytes, fixed Huffman codes of at most 9 bits per byte) is shorter.
const maxStreamMeta = layout.MaxMetaRaw/8*9 + 1<<16

// ErrVerify is the class of the error EncodeFile returns when, with FileOptions.Verify, the reference decoder does
// not decode a frame to the input it was encoded from: a faulty backend. Nothing of that frame has been written.
var ErrVerify = errors.New("verify failed")

// FileOptions say how EncodeFile reads its input and frames it.
type FileOptions struct {
	// OpenOptions: Kind (Auto detects safetensors, npy or raw) and the forced DType of npy and raw inputs, as for
	// tensorfile.Open.
	tensorfile.OpenOptions
	// Name is the input's file name, or "": format detection by extension, and the name of an npy or raw tensor.
	Name string
	// FrameSize is the input bytes per frame (0: DefaultFileFrame); it is rounded down to a multiple of 8, so that
	// a tensor's slices hold whole values, and must be at least 8 and at most MaxFrameSize/2.
	FrameSize int
	// Verify decodes every frame with the Go reference codec and compares it with its input before writing it;
	// a difference is an ErrVerify error.
	Verify bool
	// Header, if set, is called with the input's layout (Prefix and Tensors, no Data) once it has been read,
	// before anything is encoded.
	Header func(*tensorfile.File)
}

// FileStats describe an EncodeFile or DecodeFile run.
type FileStats struct {
	InputBytes  int64 // bytes read from the input
	OutputBytes int64 // bytes written to the output
	Frames      int   // containers
	Records     int   // records over all containers (a tensor cut into slices counts once per slice)
	Checksums   bool  // every container carries chunk checksums
	// EncodeFile only: the input's layout (no Data), tensor records per format in order of first use, the
	// chunks of coded tensors per format they are coded in (an auto body mixes them), in order of first use, and
	// the first frame's codebook (nil if it has none).
	Header   *tensorfile.File
	Formats  []FormatCount
	Chunks   []ChunkCount
	Codebook *Codebook
}

// FormatCount is how many tensor records of a payload are in one format.
type FormatCount struct {
	Format  string
	Tensors int
}

// ChunkCount sums the chunks of a payload coded in one format: how many, their values and their escapes
// (ChunkInfo.Escapes).
type ChunkCount struct {
	Format                  string
	Chunks, Values, Escapes uint64
}

// EncodeFile reads a tensor file (safetensors, npy or raw, as o says) from r and writes its payload to w: a stream
// of frames (docs/FORMAT.md §8.1) that DecodeFile, DecodeAll, DecodeStream and Reader decode to the input byte
// for byte. It reads the input once, in order, and never seeks, so r may be a pipe; for an *os.File of a regular
// file its remaining length is checked against the file's header.
//
// Memory is bounded whatever the input's size: about three frames (the frame's input, its encoded bytes and the
// backend's staging; four with Verify) plus the input's header, 100 to 150 MiB with DefaultFileFrame. Each frame
// is written as soon as it is encoded; on an error the output holds the frames written so far, whose stream has
// no final frame (a reader reports it truncated).
func (c *Codec) EncodeFile(ctx context.Context, w io.Writer, r io.Reader, o FileOptions) (*FileStats, error) {
	frame := o.FrameSize
	if frame == 0 {
		frame = DefaultFileFrame
	}
	if frame < 8 || frame > MaxFrameSize/2 {
		return nil, errorf(ErrInvalidInput, "frame size %d outside [8, %d]", frame, MaxFrameSize/2)
	}
	size := int64(-1)
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if off, err := f.Seek(0, io.SeekCurrent); err == nil {
				size = fi.Size() - off
			}
		}
	}
	cr := &countReader{r: r}
	br := bufio.NewReaderSize(cr, 1<<20)
	hdr, err := tensorfile.ReadHeader(br, size, o.Name, o.OpenOptions)
	if err != nil {
		return nil, err
	}
	if o.Header != nil {
		o.Header(hdr)
	}
	e := &fileEncoder{c: c, ctx: ctx, w: w, r: br, frame: int64(frame &^ 7), verify: o.Verify,
		st: &FileStats{Header: hdr, Checksums: c.o.checksums}}
	e.buf = make([]byte, e.frame)
	if o.Verify {
		if e.ref, err = New(WithBackend(NewCPUBackend(c.o.workers))); err != nil {
			return nil, err
		}
		defer e.ref.Close()
	}
	if len(hdr.Prefix) > 0 {
		e.recs = append(e.recs, Record{Blob: true, Data: hdr.Prefix})
		e.used = int64(len(hdr.Prefix))
	}
	for i := range hdr.Tensors {
		if err := e.tensor(&hdr.Tensors[i]); err != nil {
			return e.st, err
		}
	}
	if _, err := br.Peek(1); err == nil {
		return e.st, errorf(ErrInvalidInput, "the input goes on after its last tensor")
	} else if err != io.EOF {
		return e.st, err
	}
	if err := e.flush(true); err != nil {
		return e.st, err
	}
	e.st.InputBytes = cr.n
	return e.st, nil
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// fileEncoder packs a tensor file's content into frames: whole tensors while they fit the frame's free space, a
// tensor that does not fit starting a new frame, and a tensor larger than a frame in frame-sized slices.
type fileEncoder struct {
	c       *Codec
	ref     *Codec // the reference codec of Verify
	ctx     context.Context
	w       io.Writer
	r       *bufio.Reader
	frame   int64
	verify  bool
	buf     []byte // the frame's input; records point into it
	used    int64  // bytes of the frame taken (the header blob counts)
	recs    []Record
	out     []byte // the encoded frame, kept across frames
	scratch []byte // the encoder's staging, kept across frames
	vbuf    []byte // Verify's decode buffer, kept across frames
	seq     uint64
	st      *FileStats
}

// tensor reads tensor t's data (t.Size bytes, or up to the end of the input when it is -1) into frames.
func (e *fileEncoder) tensor(t *tensorfile.Tensor) error {
	elem := int64(max(t.DType.Size(), 1))
	if e.used > 0 && (t.Size < 0 || t.Size > e.frame-e.used) {
		if err := e.flush(false); err != nil {
			return err
		}
	}
	left := t.Size
	for first := true; ; first = false {
		free := (e.frame - e.used) / elem * elem
		if free <= 0 || len(e.recs) >= fileRecordsPerFrame {
			if err := e.flush(false); err != nil {
				return err
			}
			free = e.frame / elem * elem
		}
		want := free
		if left >= 0 {
			want = min(free, left)
		}
		n, err := io.ReadFull(e.r, e.buf[e.used:e.used+want])
		eof := false
		switch {
		case err == nil:
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			if left >= 0 {
				return errorf(ErrInvalidInput, "the input ends inside tensor %q", t.Name)
			}
			if int64(n)%elem != 0 {
				return errorf(ErrInvalidInput, "the input is not a whole number of %d-byte %v values", elem, t.DType)
			}
			eof = true
		default:
			return err
		}
		if n > 0 || first {
			rec := Record{Name: t.Name, DType: t.DType, Data: e.buf[e.used : e.used+int64(n)]}
			if first && int64(n) == t.Size && t.DType != layout.DTypeOpaque {
				// The whole tensor in one record keeps its shape; a slice is a flat run of values.
				rec.Shape = t.Shape
				if rec.Shape == nil {
					rec.Shape = []uint64{} // a scalar; nil would mean "flat"
				}
			}
			e.recs = append(e.recs, rec)
		}
		e.used += int64(n)
		if left >= 0 {
			if left -= int64(n); left == 0 {
				return nil
			}
		}
		if eof {
			return nil
		}
		if left < 0 {
			if _, err := e.r.Peek(1); errors.Is(err, io.EOF) {
				return nil
			}
		}
	}
}

// flush encodes the frame's records as the next container of the stream and writes it.
func (e *fileEncoder) flush(final bool) error {
	if err := e.ctx.Err(); err != nil {
		return err
	}
	var err error
	e.out, err = e.c.encode(e.ctx, e.out[:0], e.recs, final, e.seq, &e.scratch)
	if err != nil {
		return err
	}
	if err := e.summarise(); err != nil {
		return err
	}
	if e.verify {
		if err := e.check(); err != nil {
			return err
		}
	}
	if _, err := e.w.Write(e.out); err != nil {
		return err
	}
	e.seq++
	e.st.Frames++
	e.st.Records += len(e.recs)
	e.st.OutputBytes += int64(len(e.out))
	clear(e.recs) // drop the references into buf and the header
	e.recs, e.used = e.recs[:0], 0
	return nil
}

// summarise adds the frame's formats, escapes and codebook to the stats, from its directory and chunk tables.
func (e *fileEncoder) summarise() error {
	ct, err := ParseHeader(e.out)
	if err != nil {
		return err
	}
	if e.st.Frames == 0 && len(ct.Codebooks) > 0 {
		cb := ct.Codebooks[0]
		e.st.Codebook = &cb
	}
next:
	for i := range ct.Recs {
		r := &ct.Recs[i]
		if r.Blob {
			continue
		}
		name := FormatName(r.Format)
		if f, _ := LookupFormat(r.Format); f != nil && f.Chunks != nil {
			chunks, err := f.Chunks(e.out[r.BodyOff:r.BodyOff+r.BodyLen], r.DType, r.Elements, uint(r.Shift))
			if err != nil {
				return withTensor(err, r.Name)
			}
		chunk:
			for _, ch := range chunks {
				for k := range e.st.Chunks {
					if c := &e.st.Chunks[k]; c.Format == ch.Format {
						c.Chunks, c.Values, c.Escapes = c.Chunks+1, c.Values+ch.Values, c.Escapes+ch.Escapes
						continue chunk
					}
				}
				e.st.Chunks = append(e.st.Chunks, ChunkCount{Format: ch.Format, Chunks: 1, Values: ch.Values, Escapes: ch.Escapes})
			}
		}
		for k := range e.st.Formats {
			if e.st.Formats[k].Format == name {
				e.st.Formats[k].Tensors++
				continue next
			}
		}
		e.st.Formats = append(e.st.Formats, FormatCount{Format: name, Tensors: 1})
	}
	return nil
}

// check decodes the encoded frame with the reference codec and compares every record with its input.
func (e *fileEncoder) check() error {
	ct, err := e.ref.header(e.out)
	if err == nil && ct.Size != uint64(len(e.out)) {
		err = errorf(ErrCorrupt, "frame of %d bytes holds a container of %d", len(e.out), ct.Size)
	}
	k := 0
	if err == nil {
		err = e.ref.decodeRecords(e.ctx, e.out, ct, &e.vbuf, func(_ *ParsedRecord, d []byte) error {
			if k >= len(e.recs) || !bytes.Equal(d, e.recs[k].Data) {
				return fmt.Errorf("%w: frame %d decodes to other bytes than its input, record %d", ErrVerify, e.seq, k)
			}
			k++
			return nil
		})
	}
	if err == nil && k != len(e.recs) {
		err = fmt.Errorf("%w: frame %d decodes to %d records, its input has %d", ErrVerify, e.seq, k, len(e.recs))
	}
	if err != nil && !errors.Is(err, ErrVerify) {
		// %v: the decoder's class is not the error's; a verify failure is the encoder's fault, not the payload's.
		err = fmt.Errorf("%w: frame %d does not decode: %v", ErrVerify, e.seq, err)
	}
	return err
}

// ReadHeader reads one container's preamble and metadata from r and parses them (the checks of ParseHeader but
// the bodies' placement), leaving r at the container's first body; Size tells where the container ends. It reads
// at most the metadata's length, bounded by the format's directory limit.
func ReadHeader(r io.Reader) (*Container, error) {
	ct, _, err := readHeader(r, nil)
	return ct, err
}

// readHeader is ReadHeader with a caller-kept buffer for the metadata, returned grown.
func readHeader(r io.Reader, buf []byte) (*Container, []byte, error) {
	buf = growTo(buf[:0], layout.PreambleSize)
	if n, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			_, perr := parseMeta(buf[:n])
			return nil, buf, perr
		}
		return nil, buf, err
	}
	end := metaEnd(buf)
	if end > maxStreamMeta {
		if _, err := parseMeta(buf); errors.Is(err, ErrFormat) || errors.Is(err, ErrVersion) {
			return nil, buf, err
		}
		return nil, buf, errorf(ErrTooLarge, "metadata block of %d bytes", end)
	}
	buf = growTo(buf, int(end))
	if n, err := io.ReadFull(r, buf[layout.PreambleSize:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			_, perr := parseMeta(buf[:layout.PreambleSize+n])
			return nil, buf, perr
		}
		return nil, buf, err
	}
	ct, err := parseMeta(buf)
	return ct, buf, err
}

// DecodeFile decodes a payload from r (a file from Encode or EncodeFile, or any stream of frames; version 1 and
// 2) and writes the decoded bytes to w. It reads r once, in order, so r may be a pipe, and writes as it goes: the
// records of each container are decoded in batches of at most 64 MiB of output, and a batch is written only once
// every checksum and seal of its records has been verified. On an error, w holds the verified output of the
// batches before the one that failed.
//
// Memory is bounded by one batch and its encoded bytes (about 130 MiB for the frames of EncodeFile), whatever the
// payload's length; a single record larger than a batch (a whole-file payload of one large tensor) is held
// whole.
func (c *Codec) DecodeFile(ctx context.Context, w io.Writer, r io.Reader) (*FileStats, error) {
	// A regular file's length bounds what its directories may claim, so a record larger than a batch (a whole-file
	// payload of one large tensor) is read into a buffer of its exact size instead of one grown as it arrives.
	left := int64(-1)
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if off, err := f.Seek(0, io.SeekCurrent); err == nil {
				left = fi.Size() - off
			}
		}
	}
	cr := &countReader{r: r}
	br := bufio.NewReaderSize(cr, 1<<20)
	st := &FileStats{Checksums: true}
	defer func() { st.InputBytes = cr.n }()
	var meta, win, out []byte
	var first uint16
	for k := uint64(0); ; k++ {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if c.closed.Load() {
			return st, errorf(ErrClosed, "decode")
		}
		var ct *Container
		var err error
		if ct, meta, err = readHeader(br, meta); err != nil {
			return st, err
		}
		if k == 0 {
			first = ct.Version
		}
		if err := ct.CheckStreamPosition(k, first); err != nil {
			return st, err
		}
		st.Checksums = st.Checksums && ct.Checksums()
		pos := ct.MetaLen
		for i := 0; i < len(ct.Recs); {
			// Records [i, j): their bodies (and seals) are contiguous from pos.
			j, raw, end := i, uint64(0), pos
			for ; j < len(ct.Recs) && (j == i || raw+ct.Recs[j].RawSize() <= fileDecodeBatch); j++ {
				rec := &ct.Recs[j]
				raw += rec.RawSize()
				if !rec.Blob {
					end = rec.BodyOff + rec.BodyLen
					if ct.Sealed() {
						end += layout.SealSize
					}
				}
			}
			if raw > uint64(maxInt) || end-pos > uint64(maxInt) {
				return st, errorf(ErrTooLarge, "record of %d bytes", raw)
			}
			if left >= 0 && end-pos > uint64(left-(cr.n-int64(br.Buffered()))) {
				return st, &Error{Class: ErrTruncated, Tensor: ct.Recs[i].Name, Chunk: -1,
					Detail: "body runs past the end of the input"}
			}
			if win, err = readGrow(br, win, end-pos, left >= 0); err != nil {
				if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					return st, &Error{Class: ErrTruncated, Tensor: ct.Recs[i].Name, Chunk: -1,
						Detail: "body runs past the end of the input"}
				}
				return st, err
			}
			out = growTo(out[:0], int(raw))
			if err := c.decodeWindow(ctx, win, pos, ct, i, j, out); err != nil {
				return st, err
			}
			if j == len(ct.Recs) && ct.Flags&layout.FlagFinal != 0 {
				// The stream's last bytes go out only once nothing follows them: a complete output with an
				// error after it would be easy to take for a good one.
				if err := checkEnd(br); err != nil {
					return st, err
				}
			}
			n, err := w.Write(out)
			st.OutputBytes += int64(n)
			if err != nil {
				return st, err
			}
			pos, i = end, j
			if cap(win) > 4*fileDecodeBatch || cap(out) > 4*fileDecodeBatch {
				win, out = nil, nil // a large record's buffers go back to the runtime
			}
		}
		st.Frames++
		st.Records += len(ct.Recs)
		if ct.Flags&layout.FlagFinal != 0 {
			return st, checkEnd(br)
		}
	}
}

// checkEnd reports an error unless r is at its end.
func checkEnd(r *bufio.Reader) error {
	if _, err := r.Peek(1); err == nil {
		return errorf(ErrCorrupt, "data after the final container")
	} else if err != io.EOF {
		return err
	}
	return nil
}

// readGrow reads n bytes from r into buf (reused). Unless the caller has checked that the input holds them
// (sized), the buffer grows as the bytes arrive, doubling: a length a corrupt directory claims costs memory only
// as far as the input really goes.
func readGrow(r io.Reader, buf []byte, n uint64, sized bool) ([]byte, error) {
	if sized || n <= fileDecodeBatch {
		buf = growTo(buf[:0], int(n))
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	buf = buf[:0]
	for uint64(len(buf)) < n {
		start := len(buf)
		next := min(n, max(2*uint64(start), fileDecodeBatch))
		if uint64(cap(buf)) < next {
			nb := make([]byte, start, next)
			copy(nb, buf)
			buf = nb
		}
		buf = buf[:next]
		if _, err := io.ReadFull(r, buf[start:]); err != nil {
			return buf[:start], err
		}
	}
	return buf, nil
}

// decodeWindow decodes records [i, j) of container ct from win, which holds the container's bytes from offset
// base on (the records' bodies and seals), into out.
func (c *Codec) decodeWindow(ctx context.Context, win []byte, base uint64, ct *Container, i, j int, out []byte) error {
	// decodeInto finds bodies and seals at their offsets in the container and checks each seal with its record's
	// index, so the records keep their indices and their offsets move to the window for the call.
	for k := i; k < j; k++ {
		if !ct.Recs[k].Blob {
			ct.Recs[k].BodyOff -= base
		}
	}
	err := c.decodeInto(ctx, win, ct, i, j, out, true)
	for k := i; k < j; k++ {
		if !ct.Recs[k].Blob {
			ct.Recs[k].BodyOff += base
		}
	}
	return err
}
