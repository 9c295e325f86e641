package codec

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"slices"
	"unicode/utf8"

	"github.com/vkzip/vkzip/codec/cdeflate"
	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
)

// Container framing (docs/FORMAT.md §2–4):
//
//	preamble   magic[8] version:u16 flags:u16 metaCompressedLen:u32 metaRawLen:u32
//	meta       canonical DEFLATE of the directory (codebooks, then records; blobs inline)
//	padding    zero bytes up to a multiple of 4 from the container start
//	metaCRC    CRC-32C of preamble, meta and padding
//	bodies     one per tensor record, in record order, each a multiple of 4 bytes

// Rec is one directory record: an inline blob or a tensor whose body follows the metadata.
type Rec struct {
	Blob     bool
	Data     []byte // blob bytes (Blob), else nil
	Name     string
	DType    layout.DType
	Format   uint8
	Shift    uint8  // chunk shift of coded formats, 0 for stored
	Codebook uint32 // index into Container.Codebooks, or layout.NoCodebook
	Shape    []uint64
	Elements uint64 // product of Shape (bytes for opaque dtypes)
	BodyLen  uint64
	BodyOff  uint64 // offset of the body from the container start (parsed containers)
}

// RawSize is the number of bytes the record decodes to.
func (r *Rec) RawSize() uint64 {
	if r.Blob {
		return uint64(len(r.Data))
	}
	return r.Elements * uint64(r.DType.Size())
}

// Container is a parsed preamble and directory.
type Container struct {
	Flags     uint16
	Codebooks []Codebook
	Recs      []Rec
	MetaLen   uint64 // bytes before the first body
	Size      uint64 // total container size, bodies included
}

// Checksums reports whether the container carries chunk checksums.
func (c *Container) Checksums() bool { return c.Flags&layout.FlagChecksums != 0 }

// maxElements bounds the element count of any tensor (2^48), far beyond real data, so size arithmetic cannot
// overflow.
const maxElements = 1 << 48

// appendDirectory serialises the uncompressed directory.
func appendDirectory(b []byte, cbs []Codebook, recs []Rec) []byte {
	le := binary.LittleEndian
	b = le.AppendUint32(b, uint32(len(cbs)))
	for i := range cbs {
		b = append(b, layout.CodebookExp8)
		b = append(b, cbs[i][:]...)
	}
	b = le.AppendUint32(b, uint32(len(recs)))
	for i := range recs {
		r := &recs[i]
		if r.Blob {
			b = append(b, layout.RecordBlob)
			b = le.AppendUint32(b, uint32(len(r.Data)))
			b = append(b, r.Data...)
			continue
		}
		b = append(b, layout.RecordTensor)
		b = le.AppendUint16(b, uint16(len(r.Name)))
		b = append(b, r.Name...)
		b = append(b, byte(r.DType), r.Format, r.Shift, 0)
		b = le.AppendUint32(b, r.Codebook)
		b = append(b, uint8(len(r.Shape)))
		for _, d := range r.Shape {
			b = le.AppendUint64(b, d)
		}
		b = le.AppendUint64(b, r.Elements)
		b = le.AppendUint64(b, r.BodyLen)
	}
	return b
}

// appendHeader writes preamble, compressed directory, padding and CRC.
func appendHeader(b []byte, flags uint16, cbs []Codebook, recs []Rec) []byte {
	dir := appendDirectory(nil, cbs, recs)
	start := len(b)
	b = append(b, layout.Magic[:]...)
	b = binary.LittleEndian.AppendUint16(b, layout.Version)
	b = binary.LittleEndian.AppendUint16(b, flags)
	b = append(b, make([]byte, 8)...) // lengths, filled below
	n0 := len(b)
	b = cdeflate.Compress(b, dir)
	binary.LittleEndian.PutUint32(b[start+12:], uint32(len(b)-n0))
	binary.LittleEndian.PutUint32(b[start+16:], uint32(len(dir)))
	for (len(b)-start)%layout.BodyAlignment != 0 {
		b = append(b, 0)
	}
	return binary.LittleEndian.AppendUint32(b, crc32c.Checksum(b[start:]))
}

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) need(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b)-r.off < n {
		r.err = errorf(ErrCorrupt, "directory ends inside a record")
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}
func (r *reader) u8() uint8 {
	if p := r.need(1); p != nil {
		return p[0]
	}
	return 0
}
func (r *reader) u16() uint16 {
	if p := r.need(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}
func (r *reader) u32() uint32 {
	if p := r.need(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}
func (r *reader) u64() uint64 {
	if p := r.need(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

// ParseHeader parses the container starting at src[0]: preamble, directory, and body placement. It checks
// everything that does not need the bodies' contents, and that the bodies lie within src.
func ParseHeader(src []byte) (*Container, error) {
	c, err := parseMeta(src)
	if err != nil {
		return nil, err
	}
	for i := range c.Recs {
		r := &c.Recs[i]
		if !r.Blob && r.BodyOff+r.BodyLen > uint64(len(src)) {
			return nil, &Error{Class: ErrTruncated, Tensor: r.Name, Chunk: -1,
				Detail: "body runs past the end of the input"}
		}
	}
	return c, nil
}

// metaEnd tells, from a complete preamble, how many bytes the preamble, metadata, padding and CRC take.
func metaEnd(pre []byte) uint64 {
	return layout.Align4(layout.PreambleSize+uint64(binary.LittleEndian.Uint32(pre[12:]))) + layout.MetaCRCSize
}

// parseMeta parses preamble and directory from src, which must hold at least the metadata; body placement is
// computed (Size) but not checked against len(src).
func parseMeta(src []byte) (*Container, error) {
	if len(src) < layout.PreambleSize {
		if len(src) >= len(layout.Magic) && string(src[:8]) != string(layout.Magic[:]) {
			return nil, errorf(ErrFormat, "bad magic")
		}
		return nil, errorf(ErrTruncated, "%d bytes is shorter than the %d-byte preamble", len(src), layout.PreambleSize)
	}
	if string(src[:8]) != string(layout.Magic[:]) {
		return nil, errorf(ErrFormat, "bad magic")
	}
	le := binary.LittleEndian
	ver, flags := le.Uint16(src[8:]), le.Uint16(src[10:])
	clen, rlen := uint64(le.Uint32(src[12:])), uint64(le.Uint32(src[16:]))
	if ver != layout.Version {
		return nil, errorf(ErrVersion, "version %d (this reader knows %d)", ver, layout.Version)
	}
	end := metaEnd(src)
	if uint64(len(src)) < end {
		return nil, errorf(ErrTruncated, "metadata block of %d bytes runs past the end of the input", clen)
	}
	if got, want := crc32c.Checksum(src[:end-4]), le.Uint32(src[end-4:]); got != want {
		return nil, errorf(ErrChecksum, "metadata CRC-32C %08x, stored %08x", got, want)
	}
	// Only now, with the preamble verified, interpret the flags and lengths.
	if flags&^layout.FlagsKnown != 0 {
		return nil, errorf(ErrVersion, "unknown flags %#x", flags&^layout.FlagsKnown)
	}
	if rlen > layout.MaxMetaRaw || rlen > 172*clen+16 {
		return nil, errorf(ErrTooLarge, "metadata claims %d bytes from %d compressed", rlen, clen)
	}
	for _, p := range src[layout.PreambleSize+clen : end-4] {
		if p != 0 {
			return nil, errorf(ErrNonCanonical, "metadata padding is not zero")
		}
	}
	dir, err := cdeflate.Decompress(src[layout.PreambleSize:layout.PreambleSize+clen], int(rlen))
	if err != nil {
		if errors.Is(err, cdeflate.ErrNonCanonical) {
			return nil, errorf(ErrNonCanonical, "%v", err)
		}
		return nil, errorf(ErrCorrupt, "%v", err)
	}
	c := &Container{Flags: flags, MetaLen: end}
	if err := c.parseDirectory(dir); err != nil {
		return nil, err
	}
	off := end
	for i := range c.Recs {
		r := &c.Recs[i]
		if !r.Blob {
			r.BodyOff = off
			off += r.BodyLen // each ≤ 2^50: no overflow
		}
	}
	c.Size = off
	return c, nil
}

func (c *Container) parseDirectory(dir []byte) error {
	r := &reader{b: dir}
	ncb := r.u32()
	if r.err == nil && uint64(ncb)*17 > uint64(len(dir)) {
		return errorf(ErrCorrupt, "%d codebooks do not fit the directory", ncb)
	}
	for i := uint32(0); i < ncb && r.err == nil; i++ {
		if kind := r.u8(); r.err == nil && kind != layout.CodebookExp8 {
			return errorf(ErrCorrupt, "codebook %d has unknown kind %d", i, kind)
		}
		var cb Codebook
		copy(cb[:], r.need(layout.CodebookSize))
		if r.err == nil {
			if err := cb.Validate(); err != nil {
				return err
			}
		}
		c.Codebooks = append(c.Codebooks, cb)
	}
	nrec := r.u32()
	if r.err == nil && uint64(nrec) > uint64(len(dir)-r.off) {
		return errorf(ErrCorrupt, "%d records do not fit the directory", nrec)
	}
	nextCB := uint32(0) // codebooks must be first referenced in order
	for i := uint32(0); i < nrec && r.err == nil; i++ {
		var rec Rec
		switch t := r.u8(); t {
		case layout.RecordBlob:
			rec.Blob = true
			rec.Data = r.need(int(r.u32()))
		case layout.RecordTensor:
			if err := c.parseTensor(r, &rec, &nextCB); err != nil {
				return err
			}
		default:
			if r.err == nil {
				return errorf(ErrCorrupt, "record %d has unknown type %d", i, t)
			}
		}
		c.Recs = append(c.Recs, rec)
	}
	if r.err != nil {
		return r.err
	}
	if r.off != len(dir) {
		return errorf(ErrCorrupt, "%d bytes after the last record", len(dir)-r.off)
	}
	if nextCB != uint32(len(c.Codebooks)) {
		return errorf(ErrNonCanonical, "codebook %d is never referenced", nextCB)
	}
	return nil
}

func (c *Container) parseTensor(r *reader, rec *Rec, nextCB *uint32) error {
	rec.Name = string(r.need(int(r.u16())))
	rec.DType = layout.DType(r.u8())
	rec.Format = r.u8()
	rec.Shift = r.u8()
	reserved := r.u8()
	rec.Codebook = r.u32()
	rank := int(r.u8())
	shape := r.need(8 * rank)
	rec.Elements = r.u64()
	rec.BodyLen = r.u64()
	if r.err != nil {
		return r.err
	}
	bad := func(cls error, f string, a ...any) error {
		e := errorf(cls, f, a...)
		e.Tensor = rec.Name
		return e
	}
	if !utf8.ValidString(rec.Name) {
		return bad(ErrCorrupt, "name is not UTF-8")
	}
	if reserved != 0 {
		return bad(ErrNonCanonical, "reserved byte is %d", reserved)
	}
	if !rec.DType.Valid() {
		return bad(ErrCorrupt, "unknown dtype %d", rec.DType)
	}
	rec.Shape = make([]uint64, rank)
	prod := uint64(1)
	for d := range rec.Shape {
		rec.Shape[d] = binary.LittleEndian.Uint64(shape[8*d:])
		hi, lo := bits.Mul64(prod, rec.Shape[d])
		if hi != 0 || lo > maxElements {
			return bad(ErrTooLarge, "shape %v has more than 2^48 elements", rec.Shape[:d+1])
		}
		prod = lo
	}
	if rec.DType == layout.DTypeOpaque {
		if rank != 1 {
			return bad(ErrCorrupt, "opaque tensor of rank %d", rank)
		}
	}
	if prod != rec.Elements {
		return bad(ErrCorrupt, "shape %v has %d elements, record says %d", rec.Shape, prod, rec.Elements)
	}
	f, ok := LookupFormat(rec.Format)
	if !ok {
		return bad(ErrUnsupported, "format %d", rec.Format)
	}
	if rec.Format == layout.FormatStored {
		if rec.Shift != 0 || rec.Codebook != layout.NoCodebook {
			return bad(ErrNonCanonical, "stored tensor with a chunk size or codebook")
		}
		if lo, _ := f.BodyBounds(rec.Elements, rec.DType, 0); rec.BodyLen != lo {
			return bad(ErrCorrupt, "stored body of %d bytes, expected %d", rec.BodyLen, lo)
		}
		return nil
	}
	if !slices.Contains(f.DTypeList(), rec.DType) {
		return bad(ErrCorrupt, "%s does not code %v", f.Name, rec.DType)
	}
	if f.Chunked() && (rec.Shift < f.MinShift || rec.Shift > f.MaxShift) {
		return bad(ErrCorrupt, "chunk shift %d outside [%d, %d]", rec.Shift, f.MinShift, f.MaxShift)
	}
	if !f.Chunked() && rec.Shift != 0 {
		return bad(ErrNonCanonical, "%s tensor with a chunk shift", f.Name)
	}
	if rec.Elements > f.MaxValues {
		return bad(ErrTooLarge, "%d values exceed the %s limit", rec.Elements, f.Name)
	}
	if f.NoEmpty && rec.Elements == 0 {
		return bad(ErrNonCanonical, "%s tensor with no elements (an empty tensor is stored)", f.Name)
	}
	if f.UsesCodebook(rec.DType) {
		if rec.Codebook >= uint32(len(c.Codebooks)) {
			return bad(ErrCorrupt, "codebook %d of %d", rec.Codebook, len(c.Codebooks))
		}
		if rec.Codebook > *nextCB {
			return bad(ErrNonCanonical, "codebook %d referenced before codebook %d", rec.Codebook, *nextCB)
		}
		if rec.Codebook == *nextCB {
			*nextCB++
		}
	} else if rec.Codebook != layout.NoCodebook {
		return bad(ErrNonCanonical, "%s tensor with a codebook", f.Name)
	}
	lo, hi := f.BodyBounds(rec.Elements, rec.DType, uint(rec.Shift))
	if rec.BodyLen < lo || rec.BodyLen > hi || rec.BodyLen%4 != 0 {
		return bad(ErrCorrupt, "body of %d bytes outside [%d, %d] for %d values", rec.BodyLen, lo, hi, rec.Elements)
	}
	return nil
}

// checkMetaSize guards the 32-bit length fields of the preamble when writing.
func checkMetaSize(dirLen int) error {
	if dirLen > layout.MaxMetaRaw {
		return errorf(ErrTooLarge, "directory of %d bytes exceeds the %d-byte limit", dirLen, layout.MaxMetaRaw)
	}
	return nil
}
