package codec

import (
	"encoding/binary"

	"github.com/vkzip/vkzip/codec/layout"
)

// Payloads whose bytes lie elsewhere. A payload kept in device memory (a CUDA buffer holding a compressed KV block)
// is written and checked by the host without its body crossing to the host: the header is built or parsed here, and
// of the body only its checksum words are read, through a ReadAt the caller supplies (for the formats with a chunk
// table, Format.Table: the table alone, a few bytes per 65,536 values).

// ReadAt reads n bytes at byte offset off of a payload that is not in host memory. The slice it returns is only
// read before the next call.
type ReadAt func(off, n uint64) ([]byte, error)

// AppendPrecodedHead appends the header of the container AppendPrecoded makes for t, whose body (t.BodyLen bytes)
// the caller places right after the header, followed by the seal returned here (layout.SealSize bytes, for a
// version 2 codec; nil for version 1). read reads the body, offsets from its first byte, and is called only for the
// checksum words. Header, body and seal together equal AppendPrecoded's container byte for byte.
func (c *Codec) AppendPrecodedHead(dst []byte, t PrecodedTensor, final bool, read ReadAt) (head, seal []byte, err error) {
	base := len(dst)
	dst, dir, err := c.appendPrecodedHead(dst, t, final)
	if err != nil || c.o.version < layout.Version2 {
		return dst, nil, err
	}
	var s uint32
	if c.o.checksums {
		s, err = sealAt(&dir[0], 0, read, binary.LittleEndian.Uint32(dst[len(dst)-layout.MetaCRCSize:]), 0)
		if err != nil {
			return dst[:base], nil, withTensor(err, t.Name)
		}
	}
	return dst, binary.LittleEndian.AppendUint32(nil, s), nil
}

// PrecodedHeadLen is the length of the header AppendPrecodedHead writes for t when its body takes bodyLen bytes
// (the directory is compressed, so the length depends on the values it records): where a caller places a body
// before it knows the body's length.
func (c *Codec) PrecodedHeadLen(t PrecodedTensor, final bool, bodyLen uint64) (int, error) {
	t.BodyLen = bodyLen
	h, _, err := c.appendPrecodedHead(nil, t, final)
	return len(h), err
}

// sealAt is the seal of record r (index in its container, metaCRC its directory's CRC), whose body starts at byte
// bodyOff of what read reads. It reads the chunk table alone where the format places it from the geometry, and
// takes the seal from the table's bytes as read (a 512 MiB tensor has 4,096 entries); else the whole body.
func sealAt(r *ParsedRecord, bodyOff uint64, read ReadAt, metaCRC, index uint32) (uint32, error) {
	if f, ok := LookupFormat(r.Format); ok && f.Table != nil {
		tab, err := readTable(f, r, bodyOff, read)
		if err != nil {
			return 0, err
		}
		return sealOfTable(metaCRC, index, tab), nil
	}
	body, err := read(bodyOff, r.BodyLen)
	if err != nil {
		return 0, err
	}
	words, err := bodyWords(r, body, nil)
	if err != nil {
		return 0, err
	}
	return sealOf(metaCRC, index, words), nil
}

// readTable reads the chunk table of record r, whose format places it from the geometry (f.Table is set).
func readTable(f *Format, r *ParsedRecord, bodyOff uint64, read ReadAt) ([]byte, error) {
	off, entries, ok := f.Table(r.DType, r.Elements, uint(r.Shift))
	if !ok {
		return nil, errorf(ErrCorrupt, "%s does not code %v", f.Name, r.DType)
	}
	if off > r.BodyLen || entries > (r.BodyLen-off)/layout.ChunkEntrySize {
		return nil, errorf(ErrCorrupt, "chunk table of %d entries at %d outside the %d-byte body", entries, off, r.BodyLen)
	}
	tab, err := read(bodyOff+off, entries*layout.ChunkEntrySize)
	if err != nil {
		return nil, err
	}
	if uint64(len(tab)) != entries*layout.ChunkEntrySize {
		return nil, errorf(ErrTruncated, "chunk table read gave %d of %d bytes", len(tab), entries*layout.ChunkEntrySize)
	}
	return tab, nil
}

// HeadLen reports how many bytes of a payload ParseHead needs, from at least its first layout.PreambleSize bytes.
func HeadLen(pre []byte) (uint64, error) {
	if len(pre) < layout.PreambleSize {
		_, err := parseMeta(pre) // bad magic or truncated
		return 0, err
	}
	if string(pre[:8]) != string(layout.Magic[:]) {
		return 0, errorf(ErrFormat, "bad magic")
	}
	return metaEnd(pre), nil
}

// ParseHead parses the header of a payload of total bytes from its first HeadLen bytes, as ParseHeader does from
// the whole payload: it checks everything that does not need the bodies, and that they lie within total bytes.
func ParseHead(head []byte, total uint64) (*Container, error) {
	c, err := parseMeta(head)
	if err != nil {
		return nil, err
	}
	if err := c.checkPlacement(total); err != nil {
		return nil, err
	}
	return c, nil
}

// ParseHeadAt is ParseHead of the container that starts at byte off of a payload of total bytes read through read
// (its bodies within the payload's end): one read takes the header of any container of a few tensors' shapes and
// codebooks, a longer header a second.
func ParseHeadAt(read ReadAt, off, total uint64) (*Container, error) {
	if off > total {
		return nil, errorf(ErrTruncated, "a container at %d of a %d-byte payload", off, total)
	}
	rest := total - off
	head, err := read(off, min(rest, 4096))
	if err != nil {
		return nil, err
	}
	hl, err := HeadLen(head)
	if err != nil {
		return nil, err
	}
	if hl <= uint64(len(head)) {
		head = head[:hl]
	} else if head, err = read(off, min(hl, rest)); err != nil {
		return nil, err
	}
	return ParseHead(head, rest)
}

// A Span is a byte range of a payload: Len bytes at offset Off.
type Span struct{ Off, Len uint64 }

// SealSpans are the byte ranges, offsets from the container's first byte, that CheckSealAt(index, read) reads, in
// the order it reads them: none for an unsealed container, else the seal, then (with checksums) the chunk table of a
// format that places one by the geometry. ok is false where CheckSealAt would read the whole body, or fail before
// reading. A caller whose reads are slow fetches the spans together, ahead of other work.
func (ct *Container) SealSpans(index int) (spans []Span, ok bool) {
	if index < 0 || index >= len(ct.Recs) || ct.Recs[index].Blob {
		return nil, false
	}
	if !ct.Sealed() {
		return nil, true
	}
	r := &ct.Recs[index]
	spans = []Span{{r.SealOff(), layout.SealSize}}
	if !ct.Checksums() {
		return spans, true
	}
	f, found := LookupFormat(r.Format)
	if !found || f.Table == nil {
		return nil, false
	}
	off, entries, geom := f.Table(r.DType, r.Elements, uint(r.Shift))
	if !geom || off > r.BodyLen || entries > (r.BodyLen-off)/layout.ChunkEntrySize {
		return nil, false
	}
	return append(spans, Span{r.BodyOff + off, entries * layout.ChunkEntrySize}), true
}

// CheckSealAt is CheckSeal for a payload read through read (offsets from the container's first byte): it reads
// the seal and the body's checksum words, nothing else of the body.
func (ct *Container) CheckSealAt(index int, read ReadAt) error {
	if index < 0 || index >= len(ct.Recs) || ct.Recs[index].Blob {
		return errorf(ErrInvalidInput, "record %d has no body", index)
	}
	if !ct.Sealed() {
		return nil
	}
	r := &ct.Recs[index]
	b, err := read(r.SealOff(), layout.SealSize)
	if err != nil {
		return err
	}
	stored := binary.LittleEndian.Uint32(b)
	if !ct.Checksums() {
		return unsealedSeal(r, stored)
	}
	got, err := sealAt(r, r.BodyOff, read, ct.MetaCRC, uint32(index))
	if err != nil {
		return withTensor(err, r.Name)
	}
	return sealMatch(r, stored, got)
}
