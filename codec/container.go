package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/vkzip/vkzip/codec/cdeflate"
	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
)

// Container framing (docs/FORMAT.md §2–4):
//
//	preamble   magic[8] version:u16 flags:u16 metaCompressedLen:u32 metaRawLen:u32
//	meta       canonical DEFLATE of the directory (version 2: the sequence, then codebooks and records; blobs inline)
//	padding    zero bytes up to a multiple of 4 from the container start
//	metaCRC    CRC-32C of preamble, meta and padding
//	bodies     one per tensor record, in record order, each a multiple of 4 bytes; in version 2 each is followed
//	           by its u32 seal (sealOf)

// ParsedRecord is one directory record of a parsed container: an inline blob, or a tensor whose body follows the
// metadata. (Record is what an encoder is given.)
type ParsedRecord struct {
	Data     []byte // blob bytes (Blob), else nil
	Name     string
	Shape    []uint64
	Elements uint64 // product of Shape (bytes for opaque dtypes)
	BodyLen  uint64 // the body alone: a version 2 seal follows it and is not counted
	BodyOff  uint64 // offset of the body from the container start (parsed containers)
	Codebook uint32 // index into Container.Codebooks, or layout.NoCodebook
	Blob     bool
	DType    layout.DType
	Format   uint8
	Shift    uint8 // chunk shift of coded formats, 0 for stored
}

// RawSize is the number of bytes the record decodes to.
func (r *ParsedRecord) RawSize() uint64 {
	if r.Blob {
		return uint64(len(r.Data))
	}
	return r.Elements * uint64(r.DType.Size())
}

// Container is a parsed preamble and directory.
type Container struct {
	Version   uint16 // layout.Version1 or layout.Version2
	Flags     uint16
	MetaCRC   uint32 // the metadata CRC-32C, which every version 2 seal covers
	Sequence  uint64 // index of the container in its stream (version 2; 0 in version 1)
	Codebooks []Codebook
	Recs      []ParsedRecord
	MetaLen   uint64 // bytes before the first body
	Size      uint64 // total container size, bodies included
}

// Checksums reports whether the container carries chunk checksums.
func (c *Container) Checksums() bool { return c.Flags&layout.FlagChecksums != 0 }

// Sealed reports whether every tensor body is followed by a seal (version 2).
func (c *Container) Sealed() bool { return c.Version >= layout.Version2 }

// SealOff is the offset of tensor record r's seal from the container start (sealed containers).
func (r *ParsedRecord) SealOff() uint64 { return r.BodyOff + r.BodyLen }

// CheckStreamPosition checks that the container may stand at index k of a stream whose first container has
// version first (docs/FORMAT.md §8): one version throughout, and a version 2 container carries sequence k.
func (c *Container) CheckStreamPosition(k uint64, first uint16) error {
	if c.Version != first {
		return errorf(ErrCorrupt, "container %d has version %d, the stream's first has %d", k, c.Version, first)
	}
	if c.Sealed() && c.Sequence != k {
		return errorf(ErrCorrupt, "container %d carries sequence %d", k, c.Sequence)
	}
	return nil
}

// maxElements bounds the element count of any tensor (2^48), far beyond real data, so size arithmetic cannot
// overflow.
const maxElements = 1 << 48

// dirHead is what precedes the codebooks in a directory: its container's version and (version 2) sequence.
type dirHead struct {
	version  uint16
	sequence uint64
}

// appendDirectory serialises the uncompressed directory.
func appendDirectory(b []byte, h dirHead, cbs []Codebook, recs []ParsedRecord) []byte {
	le := binary.LittleEndian
	if h.version >= layout.Version2 {
		b = le.AppendUint64(b, h.sequence)
	}
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
func appendHeader(b []byte, h dirHead, flags uint16, cbs []Codebook, recs []ParsedRecord) []byte {
	dir := appendDirectory(nil, h, cbs, recs)
	start := len(b)
	b = append(b, layout.Magic[:]...)
	b = binary.LittleEndian.AppendUint16(b, h.version)
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
	return ParseHead(src, uint64(len(src)))
}

// checkPlacement checks that every body and seal lies within the first total bytes of the payload.
func (c *Container) checkPlacement(total uint64) error {
	for i := range c.Recs {
		r := &c.Recs[i]
		if !r.Blob && r.BodyOff+r.BodyLen > total {
			return &Error{Class: ErrTruncated, Tensor: r.Name, Chunk: -1,
				Detail: "body runs past the end of the input"}
		}
		if !r.Blob && c.Sealed() && r.SealOff()+layout.SealSize > total {
			return &Error{Class: ErrTruncated, Tensor: r.Name, Chunk: -1,
				Detail: "seal runs past the end of the input"}
		}
	}
	return nil
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
	if ver != layout.Version1 && ver != layout.Version2 {
		return nil, errorf(ErrVersion, "version %d (this reader knows %d and %d)", ver, layout.Version1, layout.Version2)
	}
	end := metaEnd(src)
	if uint64(len(src)) < end {
		return nil, errorf(ErrTruncated, "metadata block of %d bytes runs past the end of the input", clen)
	}
	metaCRC := le.Uint32(src[end-4:])
	if got := crc32c.Checksum(src[:end-4]); got != metaCRC {
		return nil, errorf(ErrChecksum, "metadata CRC-32C %08x, stored %08x", got, metaCRC)
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
	c := &Container{Version: ver, Flags: flags, MetaCRC: metaCRC, MetaLen: end}
	if err := c.parseDirectory(dir); err != nil {
		return nil, err
	}
	off := end
	for i := range c.Recs {
		r := &c.Recs[i]
		if !r.Blob {
			r.BodyOff = off
			off += r.BodyLen // each ≤ 2^50, at most 2^20 of them: no overflow
			if c.Sealed() {
				off += layout.SealSize
			}
		}
	}
	c.Size = off
	return c, nil
}

func (c *Container) parseDirectory(dir []byte) error {
	r := &reader{b: dir}
	if c.Sealed() {
		c.Sequence = r.u64()
	}
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
	if r.err == nil && nrec > layout.MaxRecords {
		return errorf(ErrTooLarge, "%d records exceed the %d-record limit", nrec, layout.MaxRecords)
	}
	if r.err == nil {
		c.Recs = make([]ParsedRecord, 0, nrec) // bounded above: no growth, no garbage
	}
	var dims dimArena
	nextCB := uint32(0) // codebooks must be first referenced in order
	for i := uint32(0); i < nrec && r.err == nil; i++ {
		var rec ParsedRecord
		switch t := r.u8(); t {
		case layout.RecordBlob:
			rec.Blob = true
			rec.Data = r.need(int(r.u32()))
		case layout.RecordTensor:
			if err := c.parseTensor(r, &rec, &nextCB, &dims); err != nil {
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

// dimArena hands out the shapes of a directory's tensors from shared blocks, so that a directory of many small
// tensors costs one allocation per block, not one per tensor.
type dimArena struct{ free []uint64 }

func (a *dimArena) take(n int) []uint64 {
	if n == 0 {
		return []uint64{}
	}
	if n > len(a.free) {
		a.free = make([]uint64, max(n, 4096))
	}
	s := a.free[:n:n]
	a.free = a.free[n:]
	return s
}

func (c *Container) parseTensor(r *reader, rec *ParsedRecord, nextCB *uint32, dims *dimArena) error {
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
	rec.Shape = dims.take(rank)
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

// checkRecordCount guards the record limit when writing.
func checkRecordCount(n int) error {
	if n > layout.MaxRecords {
		return errorf(ErrTooLarge, "%d records exceed the %d-record limit of a container", n, layout.MaxRecords)
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

// sealOf is a version 2 seal (docs/FORMAT.md §4.4): the CRC-32C of metaCRC, the record's index and the body's
// checksum words, each a little-endian u32. It costs O(words), the body's chunk count.
func sealOf(metaCRC, index uint32, words []uint32) uint32 {
	if len(words) >= sealBlock/8 {
		return sealOfLong(metaCRC, index, words)
	}
	// Table-driven over a few words: no buffer, so nothing escapes to the heap per record.
	t := crc32c.Table()
	crc := ^uint32(0)
	word := func(w uint32) {
		for k := 0; k < 4; k++ {
			crc = t[byte(crc)^byte(w)] ^ crc>>8
			w >>= 8
		}
	}
	word(metaCRC)
	word(index)
	for _, w := range words {
		word(w)
	}
	return ^crc
}

// sealBlock is the bytes of words a blockSealer hands the CRC at a time.
const sealBlock = 1024

var sealBufs = sync.Pool{New: func() any { return new([sealBlock]byte) }}

// blockSealer computes a seal over many words through a pooled buffer, a block at a time, so the CRC runs on the
// CPU's CRC instructions, several times faster than byte-at-a-time lookups. sum returns the buffer to the pool.
type blockSealer struct {
	buf *[sealBlock]byte
	n   int
	crc uint32
}

func newBlockSealer(metaCRC, index uint32) blockSealer {
	s := blockSealer{buf: sealBufs.Get().(*[sealBlock]byte), n: 8}
	binary.LittleEndian.PutUint32(s.buf[0:], metaCRC)
	binary.LittleEndian.PutUint32(s.buf[4:], index)
	return s
}

// word adds the little-endian bytes of w.
func (s *blockSealer) word(w uint32) {
	if s.n == sealBlock {
		s.flush()
	}
	binary.LittleEndian.PutUint32(s.buf[s.n:], w)
	s.n += 4
}

// flush hands a full buffer to the CRC (out of word, so that word inlines into its callers' loops).
func (s *blockSealer) flush() { s.crc, s.n = crc32c.Update(s.crc, s.buf[:]), 0 }

func (s *blockSealer) sum() uint32 {
	crc := crc32c.Update(s.crc, s.buf[:s.n])
	sealBufs.Put(s.buf)
	return crc
}

// sealOfLong is sealOf of many words (a 512 MiB tensor has 4,096 chunks).
func sealOfLong(metaCRC, index uint32, words []uint32) uint32 {
	s := newBlockSealer(metaCRC, index)
	for _, w := range words {
		s.word(w)
	}
	return s.sum()
}

// sealOfTable is sealOf of the crc words (word layout.EntryCRC) of the chunk-table entries in tab, read in place.
func sealOfTable(metaCRC, index uint32, tab []byte) uint32 {
	const size, at = layout.ChunkEntrySize, 4 * layout.EntryCRC
	s := newBlockSealer(metaCRC, index)
	for ; len(tab) >= size; tab = tab[size:] {
		s.word(binary.LittleEndian.Uint32(tab[at:]))
	}
	return s.sum()
}

// bodyWords appends to dst the checksum words of a tensor body that has passed its format's structural checks:
// a stored body's CRC word, or what the format's CRCWords reads from its chunk table.
func bodyWords(r *ParsedRecord, body []byte, dst []uint32) ([]uint32, error) {
	if r.Format == layout.FormatStored {
		if len(body) < 4 {
			return dst, errorf(ErrCorrupt, "stored body of %d bytes", len(body))
		}
		return append(dst, binary.LittleEndian.Uint32(body[len(body)-4:])), nil
	}
	f, ok := LookupFormat(r.Format)
	if !ok || f.CRCWords == nil {
		return dst, errorf(ErrUnsupported, "format %d has no checksum words", r.Format)
	}
	return f.CRCWords(body, r.DType, r.Elements, uint(r.Shift), dst)
}

// checkSeal verifies the seal of record index of a sealed container src (parsed as ct), whose body has passed its
// format's checks. words is scratch for the body's checksum words; the grown scratch is returned.
func (ct *Container) checkSeal(src []byte, index int, words []uint32) ([]uint32, error) {
	r := &ct.Recs[index]
	end := r.SealOff() + layout.SealSize
	if end > uint64(len(src)) || end < r.SealOff() {
		return words, &Error{Class: ErrTruncated, Tensor: r.Name, Chunk: -1, Detail: "seal runs past the end of the input"}
	}
	stored := binary.LittleEndian.Uint32(src[r.SealOff():])
	if !ct.Checksums() {
		return words, unsealedSeal(r, stored)
	}
	got, words, err := ct.sealOf(src, index, words)
	if err != nil {
		return words, err
	}
	return words, sealMatch(r, stored, got)
}

// unsealedSeal checks the seal stored after record r's body in a container without checksums: it must be 0.
func unsealedSeal(r *ParsedRecord, stored uint32) error {
	if stored != 0 {
		return &Error{Class: ErrNonCanonical, Tensor: r.Name, Chunk: -1,
			Detail: fmt.Sprintf("seal %08x in a payload without checksums", stored)}
	}
	return nil
}

// sealMatch compares the seal stored after record r's body with the one its checksum words give.
func sealMatch(r *ParsedRecord, stored, got uint32) error {
	if got != stored {
		return &Error{Class: ErrChecksum, Tensor: r.Name, Chunk: -1,
			Detail: fmt.Sprintf("seal %08x, expected %08x: the body is not the one its directory was written with", stored, got)}
	}
	return nil
}

// SealOf computes the seal record index of a parsed sealed container src should carry, from its body's checksum
// words (0 without checksums). It checks nothing else: Inspect reports it beside the stored seal.
func (ct *Container) SealOf(src []byte, index int) (uint32, error) {
	seal, _, err := ct.sealOf(src, index, nil)
	return seal, err
}

// sealOf is SealOf with a caller-kept scratch for the checksum words, returned grown.
func (ct *Container) sealOf(src []byte, index int, words []uint32) (uint32, []uint32, error) {
	r := &ct.Recs[index]
	if !ct.Checksums() {
		return 0, words, nil
	}
	if r.SealOff() > uint64(len(src)) {
		return 0, words, &Error{Class: ErrTruncated, Tensor: r.Name, Chunk: -1, Detail: "body runs past the end of the input"}
	}
	words, err := bodyWords(r, src[r.BodyOff:r.SealOff()], words[:0])
	if err != nil {
		return 0, words, withTensor(err, r.Name)
	}
	return sealOf(ct.MetaCRC, uint32(index), words), words, nil
}
