// Package codec is vkzip's payload format and codecs: the container (docs/FORMAT.md), the SplitZip-4 format for
// BF16, the pure-Go reference backend every other backend is checked against, and the whole-buffer and streaming
// APIs. GPU backends live in subpackages and plug in through Backend.
package codec

import (
	"context"
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
)

type options struct {
	formats     []uint8 // in order of preference (ParseFormats)
	shift       uint
	shiftSet    bool // WithChunkSize was given: formats with their own default shift (huff) take it too
	codebook    *Codebook
	checksums   bool
	backend     Backend
	backendName string
	device      string
	workers     int
	version     uint16 // container version written
}

// Option configures a Codec.
type Option func(*options) error

// WithFormat selects the formats of coded tensors: a name ("tbe3"; `vkzip formats` lists them) or a list ("tbe3,xw3")
// in order of preference. The rule, the same for `vkzip encode --format`: each tensor is coded in the first listed
// format that codes it (its dtype, 1 ≤ values ≤ the format's limit), and a tensor none of them codes is stored;
// listed formats are never topped up with defaults, so WithFormat("tbe3") stores F16 tensors (list xw3 too to
// code them). "" is the default list, splitzip4 then xw3: splitzip4 for BF16, xw3 for F8_E5M2, F8_E4M3, F16
// and F32 (DefaultFormatNames).
func WithFormat(spec string) Option {
	return func(o *options) error {
		ids, err := ParseFormats(spec)
		if err != nil {
			return err
		}
		o.formats = ids
		return nil
	}
}

// WithChunkSize sets the chunk size in values: a power of two from 1,024 to 65,536 (default 65,536).
func WithChunkSize(values int) Option {
	return func(o *options) error {
		for s := uint(layout.MinChunkShift); s <= layout.MaxChunkShift; s++ {
			if values == 1<<s {
				o.shift, o.shiftSet = s, true
				return nil
			}
		}
		return errorf(ErrInvalidInput, "chunk size %d is not a power of two in [%d, %d]", values,
			1<<layout.MinChunkShift, 1<<layout.MaxChunkShift)
	}
}

// WithCodebook fixes the codebook; without it each Encode calibrates on its own BF16 input.
func WithCodebook(cb Codebook) Option {
	return func(o *options) error {
		if err := cb.Validate(); err != nil {
			return err
		}
		o.codebook = &cb
		return nil
	}
}

// WithChecksums turns chunk checksums on (the default) or off. Off is faster but leaves corruption of tensor bodies
// undetected unless it breaks the format; the metadata is always checksummed.
func WithChecksums(on bool) Option { return func(o *options) error { o.checksums = on; return nil } }

// WithContainerVersion sets the container version encoders write: 2 (the default: every tensor body sealed to its
// record, its metadata and its stream position, docs/FORMAT.md §4.4) or 1, for readers that predate version 2.
// Decoders read both.
func WithContainerVersion(v int) Option {
	return func(o *options) error {
		if v != layout.Version1 && v != layout.Version2 {
			return errorf(ErrUnsupported, "container version %d (have %d and %d)", v, layout.Version1, layout.Version2)
		}
		o.version = uint16(v)
		return nil
	}
}

// WithBackend uses a backend the caller owns (and closes).
func WithBackend(b Backend) Option { return func(o *options) error { o.backend = b; return nil } }

// WithBackendName opens a registered backend by name ("auto", "cpu", "vulkan") on device ("" = default); the Codec
// owns it and closes it in Close.
func WithBackendName(name, device string) Option {
	return func(o *options) error { o.backendName, o.device = name, device; return nil }
}

// WithWorkers sets the goroutines of the CPU backend (default GOMAXPROCS).
func WithWorkers(n int) Option { return func(o *options) error { o.workers = n; return nil } }

// Codec encodes and decodes vkzip payloads. It is safe for concurrent use.
type Codec struct {
	o       options
	backend Backend
	own     bool
	note    string
	closed  atomic.Bool
}

// New makes a Codec. Without a backend option it uses the Go CPU backend.
func New(opts ...Option) (*Codec, error) {
	o := options{formats: defaultFormats, shift: layout.DefaultChunkShift, checksums: true, version: layout.Version}
	for _, f := range opts {
		if err := f(&o); err != nil {
			return nil, err
		}
	}
	c := &Codec{o: o, backend: o.backend}
	switch {
	case c.backend != nil:
	case o.backendName != "":
		b, note, err := OpenBackend(o.backendName, o.device)
		if err != nil {
			return nil, err
		}
		c.backend, c.own, c.note = b, true, note
	default:
		c.backend, c.own = NewCPUBackend(o.workers), true
	}
	return c, nil
}

// Backend is the backend in use.
func (c *Codec) Backend() Backend { return c.backend }

// Note says how the backend was chosen when "auto" picked it ("" otherwise).
func (c *Codec) Note() string { return c.note }

// Close releases the backend if the Codec opened it.
func (c *Codec) Close() error {
	if c.closed.Swap(true) || !c.own {
		return nil
	}
	return c.backend.Close()
}

// Record is one piece of a container's content: a tensor (coded when its dtype has a format, stored otherwise) or
// an inline blob (headers and other small bytes that must come back verbatim).
type Record struct {
	Name  string
	DType layout.DType
	Shape []uint64 // nil means [elements]
	Data  []byte
	Blob  bool
}

// maxBlob bounds inline blobs: they live in the metadata block.
const maxBlob = 1 << 26

func (c *Codec) flags(final bool) uint16 {
	var f uint16
	if c.o.checksums {
		f |= layout.FlagChecksums
	}
	if final {
		f |= layout.FlagFinal
	}
	return f
}

// Encode appends one container holding recs to dst. final marks the last container of a stream (a file is a single
// final container).
func (c *Codec) Encode(ctx context.Context, dst []byte, recs []Record, final bool) ([]byte, error) {
	return c.encode(ctx, dst, recs, final, 0, nil)
}

// encode is Encode of the container at index seq of its stream, with an optional caller-kept staging buffer (a
// Writer keeps one for all its frames, so a stream produces no garbage per frame); nil uses a pooled one.
func (c *Codec) encode(ctx context.Context, dst []byte, recs []Record, final bool, seq uint64, keep *[]byte) ([]byte, error) {
	if c.closed.Load() {
		return dst, errorf(ErrClosed, "encode")
	}
	if err := checkRecordCount(len(recs)); err != nil {
		return dst, err
	}
	h := dirHead{version: c.o.version, sequence: seq}
	sealed := h.version >= layout.Version2
	var sealSize int
	if sealed {
		sealSize = layout.SealSize
	}
	dir := make([]ParsedRecord, len(recs))
	var jobs []EncodeJob
	var jobRec []int
	var maxBody []uint64 // per job: the largest body it can have
	var hist ExpHistogram
	needCB, planned := false, true
	for i := range recs {
		r, d := &recs[i], &dir[i]
		if r.Blob {
			if len(r.Data) > maxBlob {
				return dst, errorf(ErrTooLarge, "blob of %d bytes exceeds the %d-byte inline limit", len(r.Data), maxBlob)
			}
			d.Blob, d.Data = true, r.Data
			continue
		}
		if err := fillTensorRec(d, r); err != nil {
			return dst, err
		}
		if f := pickFormat(c.o.formats, d.DType, d.Elements); f.ID != layout.FormatStored {
			d.Format, d.Codebook = f.ID, layout.NoCodebook
			if f.Chunked() {
				s := c.o.shift
				if !c.o.shiftSet && f.ShiftFor != nil {
					s = f.ShiftFor(d.Elements)
				}
				d.Shift = uint8(min(max(s, uint(f.MinShift)), uint(f.MaxShift)))
			}
			if f.UsesCodebook(d.DType) {
				d.Codebook = 0
				needCB = true
				if c.o.codebook == nil {
					hist.Add(r.Data)
				}
			}
			jobs = append(jobs, EncodeJob{Format: d.Format, DType: d.DType, Src: r.Data, N: d.Elements,
				Shift: uint(d.Shift), Checksums: c.o.checksums})
			jobRec = append(jobRec, i)
			maxBody = append(maxBody, f.MaxBodyOf(d.Elements, d.DType, uint(d.Shift)))
		} else {
			d.Format, d.Codebook = layout.FormatStored, layout.NoCodebook
			d.BodyLen = layout.StoredBody(d.RawSize())
		}
	}
	var cbs []Codebook
	if needCB {
		cb := c.o.codebook
		if cb == nil {
			x := CodebookFromHistogram(&hist)
			cb = &x
		}
		cbs = []Codebook{*cb}
		for j, i := range jobRec {
			if dir[i].Codebook == 0 {
				jobs[j].Codebook = cb
			}
		}
	}
	if err := c.resolveAuto(ctx, jobs, jobRec, dir, maxBody); err != nil {
		return dst, err
	}
	needCB = false
	for j, i := range jobRec {
		g, _ := LookupFormat(jobs[j].Format)
		planned = planned && g.planned
		needCB = needCB || dir[i].Codebook == 0
	}
	if !needCB {
		cbs = nil
	}
	var srcBytes uint64
	for _, i := range jobRec {
		srcBytes += dir[i].RawSize()
	}
	if pe, ok := c.backend.(PlannedEncoder); ok && srcBytes >= plannedMin && planned {
		// Count escapes first: with every body's length known, the header goes out first and each body is encoded
		// straight into its place in dst (no staging copy of the payload).
		plans, err := pe.PlanBodies(ctx, jobs)
		if err != nil {
			return dst, err
		}
		for j, i := range jobRec {
			dir[i].BodyLen = plans[j].Len
		}
		if err := checkMetaSize(len(appendDirectory(nil, h, cbs, dir))); err != nil {
			return dst, err
		}
		base := len(dst)
		dst = appendHeader(dst, h, c.flags(final), cbs, dir)
		metaEnd := len(dst)
		var total uint64
		for i := range dir {
			if !dir[i].Blob {
				total += dir[i].BodyLen + uint64(sealSize)
			}
		}
		pos := len(dst)
		dst = growTo(dst, pos+int(total))
		j := 0
		for i := range dir {
			switch {
			case dir[i].Blob:
			case dir[i].Format == layout.FormatStored:
				appendStored(dst[pos:pos], recs[i].Data, c.o.checksums)
				pos += int(dir[i].BodyLen) + sealSize
			default:
				jobs[j].Dst = dst[pos : pos+int(dir[i].BodyLen) : pos+int(dir[i].BodyLen)]
				pos += int(dir[i].BodyLen) + sealSize
				j++
			}
		}
		if err := pe.EncodePlanned(ctx, jobs, plans); err != nil {
			return dst, err
		}
		if sealed {
			if err := c.writeSeals(dst[base:], metaEnd-base, dir); err != nil {
				return dst[:base], err
			}
		}
		return dst, nil
	}
	// The header in front of the bodies holds their lengths, so it is only known once they are. The first body,
	// when a coded tensor leads, is encoded straight into dst behind a header sized for worst-case lengths (the
	// deflated directory nearly always comes out the same size; when not, the body moves once); the rest go to
	// pooled scratch and are copied behind it.
	base := len(dst)
	direct := len(jobs) > 0 && firstBody(dir) == jobRec[0]
	var hdrGuess int
	if direct {
		for j, i := range jobRec {
			dir[i].BodyLen = maxBody[j]
		}
		hdrGuess = len(appendHeader(nil, h, c.flags(final), cbs, dir))
		n := maxBody[0]
		dst = growTo(dst, base+hdrGuess+int(n))
		jobs[0].Dst = dst[base+hdrGuess : base+hdrGuess+int(n) : base+hdrGuess+int(n)]
	}
	staged := jobs
	if direct {
		staged = jobs[1:]
	}
	if len(jobs) > 0 {
		stagedMax := maxBody
		if direct {
			stagedMax = maxBody[1:]
		}
		var need uint64
		for j := range staged {
			need += stagedMax[j]
		}
		scratch := keep
		if scratch == nil {
			scratch = getScratch(need)
			defer putScratch(scratch)
		} else if uint64(cap(*scratch)) < need {
			*scratch = make([]byte, need)
		} else {
			*scratch = (*scratch)[:need]
		}
		buf := *scratch
		for j := range staged {
			n := stagedMax[j]
			staged[j].Dst, buf = buf[:n:n], buf[n:]
		}
		if err := c.backend.Encode(ctx, jobs); err != nil {
			return dst[:base], err
		}
		for j, i := range jobRec {
			dir[i].BodyLen = uint64(len(jobs[j].Out))
		}
	}
	if err := checkMetaSize(len(appendDirectory(nil, h, cbs, dir))); err != nil {
		return dst[:base], err
	}
	hdr := appendHeader(nil, h, c.flags(final), cbs, dir)
	j := 0
	if direct {
		body := jobs[0].Out
		end := base + len(hdr) + len(body)
		switch {
		case len(hdr) == hdrGuess:
			dst = dst[:end]
		case end <= cap(dst):
			dst = dst[:end]
			copy(dst[base+len(hdr):], body) // overlapping: copy moves like memmove
		default:
			nb := make([]byte, end, end+end/4)
			copy(nb, dst[:base])
			copy(nb[base+len(hdr):], body)
			dst = nb
		}
		copy(dst[base:], hdr)
		j = 1
	} else {
		dst = append(dst, hdr...)
	}
	for i := range dir {
		switch {
		case dir[i].Blob:
		case direct && i == jobRec[0]:
		case dir[i].Format == layout.FormatStored:
			dst = appendStored(dst, recs[i].Data, c.o.checksums)
		default:
			n := len(dst)
			dst = growTo(dst, n+len(jobs[j].Out))
			parallelCopy(dst[n:], jobs[j].Out)
			j++
		}
		if sealed && !dir[i].Blob {
			dst = append(dst, 0, 0, 0, 0) // written below, once every body is in place
		}
	}
	if sealed {
		if err := c.writeSeals(dst[base:], len(hdr), dir); err != nil {
			return dst[:base], err
		}
	}
	return dst, nil
}

// writeSeals fills the seal after each tensor body of a version 2 container whose bodies are in place (cont: the
// container from its first byte; metaEnd: where its bodies start). With checksums off every seal is 0.
func (c *Codec) writeSeals(cont []byte, metaEnd int, dir []ParsedRecord) error {
	metaCRC := binary.LittleEndian.Uint32(cont[metaEnd-4:])
	off := uint64(metaEnd)
	var words []uint32
	for i := range dir {
		r := &dir[i]
		if r.Blob {
			continue
		}
		var seal uint32
		if c.o.checksums {
			var err error
			if words, err = bodyWords(r, cont[off:off+r.BodyLen], words[:0]); err != nil {
				return withTensor(err, r.Name)
			}
			seal = sealOf(metaCRC, uint32(i), words)
		}
		binary.LittleEndian.PutUint32(cont[off+r.BodyLen:], seal)
		off += r.BodyLen + layout.SealSize
	}
	return nil
}

// firstBody is the index of the first record with a body, or -1.
func firstBody(dir []ParsedRecord) int {
	for i := range dir {
		if !dir[i].Blob {
			return i
		}
	}
	return -1
}

var scratchPool sync.Pool // *[]byte

func getScratch(n uint64) *[]byte {
	if p, ok := scratchPool.Get().(*[]byte); ok && uint64(cap(*p)) >= n {
		*p = (*p)[:n]
		return p
	}
	b := make([]byte, n)
	return &b
}

func putScratch(p *[]byte) { scratchPool.Put(p) }

func fillTensorRec(d *ParsedRecord, r *Record) error {
	if !r.DType.Valid() {
		return errorf(ErrInvalidInput, "tensor %q: unknown dtype %d", r.Name, r.DType)
	}
	if len(r.Name) > 0xFFFF {
		return errorf(ErrInvalidInput, "tensor name of %d bytes exceeds 65535", len(r.Name))
	}
	d.Name, d.DType = r.Name, r.DType
	size := uint64(r.DType.Size())
	if r.Shape == nil {
		if uint64(len(r.Data))%size != 0 {
			return errorf(ErrInvalidInput, "tensor %q: %d bytes is not a whole number of %v values", r.Name,
				len(r.Data), r.DType)
		}
		d.Shape = []uint64{uint64(len(r.Data)) / size}
	} else {
		if len(r.Shape) > 255 {
			return errorf(ErrUnsupported, "tensor %q has rank %d (at most 255)", r.Name, len(r.Shape))
		}
		d.Shape = r.Shape
	}
	if r.DType == layout.DTypeOpaque && len(d.Shape) != 1 {
		d.Shape = []uint64{uint64(len(r.Data))}
	}
	n := uint64(1)
	for _, x := range d.Shape {
		if x != 0 && n > maxElements/x {
			return errorf(ErrTooLarge, "tensor %q: shape %v", r.Name, d.Shape)
		}
		n *= x
	}
	if n*size != uint64(len(r.Data)) {
		return errorf(ErrInvalidInput, "tensor %q: shape %v of %v needs %d bytes, have %d", r.Name, d.Shape,
			r.DType, n*size, len(r.Data))
	}
	d.Elements = n
	return nil
}

func appendStored(dst, data []byte, checksums bool) []byte {
	start := len(dst)
	dst = append(dst, data...)
	for (len(dst)-start)%4 != 0 {
		dst = append(dst, 0)
	}
	var crc uint32
	if checksums {
		crc = crc32c.Checksum(dst[start:])
	}
	return binary.LittleEndian.AppendUint32(dst, crc)
}

// checkStored verifies a stored body and returns its data.
func checkStored(body []byte, r *ParsedRecord, checksums bool) ([]byte, error) {
	n := r.RawSize()
	pad := body[n : len(body)-4]
	stored := binary.LittleEndian.Uint32(body[len(body)-4:])
	fail := func(cls error, f string, a ...any) error {
		e := errorf(cls, f, a...)
		e.Tensor = r.Name
		return e
	}
	if checksums {
		if got := crc32c.Checksum(body[:len(body)-4]); got != stored {
			return nil, fail(ErrChecksum, "stored body CRC-32C %08x, stored %08x", got, stored)
		}
	} else if stored != 0 {
		return nil, fail(ErrNonCanonical, "CRC field %08x in a payload without checksums", stored)
	}
	if !allZero(pad) {
		return nil, fail(ErrNonCanonical, "stored body padding is not zero")
	}
	return body[:n], nil
}

// EncodeAll encodes a stream of little-endian BF16 values (a trailing odd byte is kept verbatim) as one final
// container appended to dst.
func (c *Codec) EncodeAll(src, dst []byte) ([]byte, error) {
	return c.Encode(context.Background(), dst, streamRecords(src), true)
}

func streamRecords(src []byte) []Record {
	even := len(src) &^ 1
	recs := []Record{{DType: layout.DTypeBF16, Data: src[:even]}}
	if even != len(src) {
		recs = append(recs, Record{Blob: true, Data: src[even:]})
	}
	return recs
}

// DecodeAll decodes every container in src (one file, or the frames of a stream) and appends the decoded bytes to
// dst. It decodes straight into dst: no intermediate copies.
func (c *Codec) DecodeAll(src, dst []byte) ([]byte, error) {
	ctx := context.Background()
	var first uint16
	for k := uint64(0); ; k++ {
		ct, err := c.header(src)
		if err != nil {
			return dst, err
		}
		if k == 0 {
			first = ct.Version
		}
		if err := ct.CheckStreamPosition(k, first); err != nil {
			return dst, err
		}
		var total uint64
		for i := range ct.Recs {
			total += ct.Recs[i].RawSize()
		}
		if total > uint64(maxInt)-uint64(len(dst)) {
			return dst, errorf(ErrTooLarge, "decoded size %d", total)
		}
		n := len(dst)
		dst = growTo(dst, n+int(total))
		if err := c.decodeInto(ctx, src, ct, 0, len(ct.Recs), dst[n:], true); err != nil {
			return dst[:n], err
		}
		src = src[ct.Size:]
		if ct.Flags&layout.FlagFinal != 0 {
			if len(src) != 0 {
				return dst, errorf(ErrCorrupt, "%d bytes after the final container", len(src))
			}
			return dst, nil
		}
		if len(src) == 0 {
			return dst, errorf(ErrTruncated, "stream ends without a final container")
		}
	}
}

const maxInt = int(^uint(0) >> 1)

// parallelCopy copies large buffers on every core: the staged encode path copies whole payloads, and one core's
// copy would otherwise be the part of the encode that does not scale.
func parallelCopy(dst, src []byte) {
	const piece = 256 << 10 // below this, starting a goroutine costs more than it saves
	w := min(runtime.GOMAXPROCS(0), len(src)/piece)
	if w <= 1 {
		copy(dst, src)
		return
	}
	var wg sync.WaitGroup
	step := (len(src) + w - 1) / w
	for lo := 0; lo < len(src); lo += step {
		hi := min(lo+step, len(src))
		wg.Add(1)
		go func() {
			defer wg.Done()
			copy(dst[lo:hi], src[lo:hi])
		}()
	}
	wg.Wait()
}

// growTo returns b extended to length n, reallocating only when its capacity is short.
func growTo(b []byte, n int) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	nb := make([]byte, n, max(n, cap(b)+cap(b)/4)) // like append's growth for large slices: bounded memory
	copy(nb, b)
	return nb
}

func (c *Codec) header(src []byte) (*Container, error) {
	if c.closed.Load() {
		return nil, errorf(ErrClosed, "decode")
	}
	return ParseHeader(src)
}

// decodeInto decodes records [from, to) of a parsed container into out (their decoded bytes, concatenated; with
// blobs false, the tensors' only: blobs are the caller's to take from the directory). The first invalid record in
// record order decides the error.
func (c *Codec) decodeInto(ctx context.Context, src []byte, ct *Container, from, to int, out []byte, blobs bool) error {
	outSize := func(r *ParsedRecord) int {
		if r.Blob && !blobs {
			return 0
		}
		return int(r.RawSize())
	}
	var jobs []DecodeJob
	pos := 0
	for k := from; k < to; k++ {
		r := &ct.Recs[k]
		size := outSize(r)
		if !r.Blob && r.Format != layout.FormatStored {
			var cb *Codebook
			if r.Codebook != layout.NoCodebook { // parsing checked the index for formats that use one
				cb = &ct.Codebooks[r.Codebook]
			}
			jobs = append(jobs, DecodeJob{Name: r.Name, Format: r.Format, DType: r.DType,
				Body: src[r.BodyOff : r.BodyOff+r.BodyLen], N: r.Elements, Shift: uint(r.Shift), Codebook: cb,
				Checksums: ct.Checksums(), Dst: out[pos : pos+size : pos+size]})
		}
		pos += size
	}
	if len(jobs) > 0 {
		if err := c.backend.Decode(ctx, jobs); err != nil {
			return err
		}
	}
	pos, jk := 0, 0
	var words []uint32
	for k := from; k < to; k++ {
		r := &ct.Recs[k]
		size := outSize(r)
		switch {
		case r.Blob:
			copy(out[pos:pos+size], r.Data)
		case r.Format == layout.FormatStored:
			d, err := checkStored(src[r.BodyOff:r.BodyOff+r.BodyLen], r, ct.Checksums())
			if err != nil {
				return err
			}
			copy(out[pos:], d)
		default:
			if err := jobs[jk].Err; err != nil {
				return err
			}
			jk++
		}
		// The seal comes after the body's own verdict (docs/FORMAT.md §6): it binds a valid body to this record.
		if !r.Blob && ct.Sealed() {
			var err error
			if words, err = ct.checkSeal(src, k, words); err != nil {
				return err
			}
		}
		pos += size
	}
	return nil
}

// DecodeStream decodes the containers in src in order and hands each record's decoded bytes to fn, which must not
// keep them. src must end exactly after a final container.
func (c *Codec) DecodeStream(ctx context.Context, src []byte, fn func(r *ParsedRecord, data []byte) error) error {
	var first uint16
	var buf []byte
	for k := uint64(0); ; k++ {
		ct, err := c.decodeContainerAt(ctx, src, &buf, k, &first, fn)
		if err != nil {
			return err
		}
		src = src[ct.Size:]
		if ct.Flags&layout.FlagFinal != 0 {
			if len(src) != 0 {
				return errorf(ErrCorrupt, "%d bytes after the final container", len(src))
			}
			return nil
		}
		if len(src) == 0 {
			return errorf(ErrTruncated, "stream ends without a final container")
		}
	}
}

// decodeBatch is the most decoded bytes DecodeContainer holds at once (a larger single record is decoded alone).
const decodeBatch = 256 << 20

// DecodeContainer decodes the container at the start of src, calling fn for each record in order, and returns its
// parsed header (Size tells how many bytes it took). Records are decoded in batches of bounded size.
// It does not check the container's place in a stream: a caller that walks a stream container by container checks
// each with Container.CheckStreamPosition (DecodeStream, DecodeAll and Reader do).
func (c *Codec) DecodeContainer(ctx context.Context, src []byte, fn func(r *ParsedRecord, data []byte) error) (*Container, error) {
	ct, err := c.header(src)
	if err != nil {
		return nil, err
	}
	var buf []byte
	if err := c.decodeRecords(ctx, src, ct, &buf, fn); err != nil {
		return nil, err
	}
	return ct, nil
}

// decodeContainerAt decodes the container at index k of a stream (first: the version of the stream's first
// container, set when k is 0) with a caller-kept output buffer, reused across calls.
func (c *Codec) decodeContainerAt(ctx context.Context, src []byte, bufp *[]byte, k uint64, first *uint16, fn func(r *ParsedRecord, data []byte) error) (*Container, error) {
	ct, err := c.header(src)
	if err != nil {
		return nil, err
	}
	if k == 0 {
		*first = ct.Version
	}
	if err := ct.CheckStreamPosition(k, *first); err != nil {
		return nil, err
	}
	if err := c.decodeRecords(ctx, src, ct, bufp, fn); err != nil {
		return nil, err
	}
	return ct, nil
}

// decodeRecords decodes the records of a parsed container in batches of bounded size, calling fn for each.
func (c *Codec) decodeRecords(ctx context.Context, src []byte, ct *Container, bufp *[]byte, fn func(r *ParsedRecord, data []byte) error) error {
	buf := *bufp
	defer func() { *bufp = buf }()
	// Blobs are handed to fn straight from the directory: only tensors take room in the batch buffer.
	tensorSize := func(r *ParsedRecord) uint64 {
		if r.Blob {
			return 0
		}
		return r.RawSize()
	}
	for i := 0; i < len(ct.Recs); {
		var size uint64
		j := i
		for ; j < len(ct.Recs) && (j == i || size+tensorSize(&ct.Recs[j]) <= decodeBatch); j++ {
			size += tensorSize(&ct.Recs[j])
		}
		buf = growTo(buf[:0], int(size))
		if err := c.decodeInto(ctx, src, ct, i, j, buf, false); err != nil {
			return err
		}
		pos := 0
		for k := i; k < j; k++ {
			r := &ct.Recs[k]
			d := r.Data
			if !r.Blob {
				n := int(r.RawSize())
				d, pos = buf[pos:pos+n], pos+n
			}
			if err := fn(r, d); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

// resolveAuto writes each auto job's tensor in its smallest coding: one candidate format throughout, or auto's
// per-chunk mix when that is smaller despite its chunk table. It updates the jobs, their records and body bounds,
// and drops the codebook of tensors whose format uses none.
func (c *Codec) resolveAuto(ctx context.Context, jobs []EncodeJob, jobRec []int, dir []ParsedRecord, maxBody []uint64) error {
	var sub []EncodeJob
	var at []int
	for j := range jobs {
		if jobs[j].Format == layout.FormatAuto {
			sub, at = append(sub, jobs[j]), append(at, j)
		}
	}
	if len(sub) == 0 {
		return nil
	}
	ids, err := autoTensorFormats(ctx, NewCPUBackend(c.o.workers), sub)
	if err != nil {
		return err
	}
	for k, j := range at {
		i := jobRec[j]
		g, _ := LookupFormat(ids[k])
		jobs[j].Format, dir[i].Format = g.ID, g.ID
		maxBody[j] = g.MaxBodyOf(dir[i].Elements, dir[i].DType, uint(dir[i].Shift))
		if !g.UsesCodebook(dir[i].DType) {
			jobs[j].Codebook, dir[i].Codebook = nil, layout.NoCodebook
		}
	}
	return nil
}
