package spec

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"math/bits"
	"unicode/utf8"
)

// The container (docs/FORMAT.md §1–§4, §8) in versions 1 and 2 (version 2: a sequence number in the directory and a
// seal after each tensor body).

// Magic opens every container (§2).
var Magic = [8]byte{0x89, 'V', 'K', 'Z', '\r', '\n', 0x1A, '\n'}

// Flags (§2).
const (
	FlagChecksums = 1 << 0
	FlagFinal     = 1 << 1
)

// Format ids (§4) this package codes in containers.
const (
	FormatStored    = 0
	FormatSplitZip4 = 1
)

// Dtype ids (§3.2).
const (
	DTypeOpaque = 0
	DTypeBF16   = 1
	DTypeF16    = 2
	DTypeF32    = 3
	DTypeU8     = 8
	DTypeI32    = 13
)

// dtypeSize is the size in bytes of dtypes 0..15 (§3.2).
var dtypeSize = [16]uint64{1, 2, 2, 4, 8, 1, 1, 1, 1, 1, 2, 2, 4, 4, 8, 8}

// DTypeSize is the size of a dtype's values, 0 for an unknown id.
func DTypeSize(dt uint8) int {
	if int(dt) >= len(dtypeSize) {
		return 0
	}
	return int(dtypeSize[dt])
}

// NoCodebook is a tensor record's codebook field when it references none.
const NoCodebook = 0xFFFFFFFF

const (
	maxMetaRaw  = 1 << 27
	maxElements = 1 << 48
	preambleLen = 20
)

// Record is one record of a container: a blob, or a tensor with its values (Data, elements × dtype size bytes).
type Record struct {
	Blob  bool
	Name  string
	DType uint8
	Shape []uint64
	Data  []byte
	// Set by the decoder: how the tensor was coded.
	Format   uint8
	Shift    uint8
	Codebook uint32
	Body     []byte
}

// Elements is the element count of a tensor's shape (1 for a scalar).
func (r *Record) Elements() uint64 {
	n := uint64(1)
	for _, d := range r.Shape {
		n *= d
	}
	return n
}

// EncodeOptions are a container encoder's choices.
type EncodeOptions struct {
	Version   int  // 1 or 2
	Checksums bool // flag CHECKSUMS
	Final     bool // flag FINAL
	Shift     uint // SplitZip-4 chunk shift
	// Codebook is used for SplitZip-4 tensors; nil calibrates (§5.1) on the BF16 data of the tensors so coded.
	Codebook *Codebook
	Sequence uint64 // the container's index in its stream (version 2)
}

// codesSZ4 is §4's rule for the default list's first entry: BF16 tensors of 1 to 2^32 − 1 values.
func codesSZ4(r *Record) bool {
	n := r.Elements()
	return !r.Blob && r.DType == DTypeBF16 && n >= 1 && n <= SZ4MaxValues
}

// EncodeContainer writes one container of recs: BF16 tensors SplitZip-4 coded, every other tensor stored.
func EncodeContainer(recs []Record, o EncodeOptions) ([]byte, error) {
	if o.Version != 1 && o.Version != 2 {
		return nil, fmt.Errorf("%w: version %d", ErrInput, o.Version)
	}
	var cb Codebook
	usesCB := false
	var calib []byte
	for i := range recs {
		r := &recs[i]
		if r.Blob {
			continue
		}
		if DTypeSize(r.DType) == 0 {
			return nil, fmt.Errorf("%w: dtype %d", ErrInput, r.DType)
		}
		if r.Elements()*uint64(DTypeSize(r.DType)) != uint64(len(r.Data)) {
			return nil, fmt.Errorf("%w: record %d: %d bytes for %d elements", ErrInput, i, len(r.Data), r.Elements())
		}
		if codesSZ4(r) {
			usesCB = true
			calib = append(calib, r.Data...)
		}
	}
	if usesCB {
		if o.Codebook != nil {
			cb = *o.Codebook
		} else {
			cb = Calibrate(calib)
		}
	}
	var dir []byte
	if o.Version == 2 {
		dir = app64(dir, o.Sequence)
	}
	if usesCB {
		dir = app32(dir, 1)
		dir = append(append(dir, 1), cb[:]...)
	} else {
		dir = app32(dir, 0)
	}
	dir = app32(dir, uint32(len(recs)))
	var bodies [][]byte
	var formats []uint8
	for i := range recs {
		r := &recs[i]
		if r.Blob {
			dir = append(dir, 1)
			dir = app32(dir, uint32(len(r.Data)))
			dir = append(dir, r.Data...)
			bodies, formats = append(bodies, nil), append(formats, 0)
			continue
		}
		format, shift, ref := uint8(FormatStored), uint8(0), uint32(NoCodebook)
		var body []byte
		if codesSZ4(r) {
			var err error
			if body, err = SZ4Encode(r.Data, o.Shift, cb, o.Checksums); err != nil {
				return nil, err
			}
			format, shift, ref = FormatSplitZip4, uint8(o.Shift), 0
		} else {
			body = StoredEncode(r.Data, o.Checksums)
		}
		dir = append(dir, 2)
		dir = app16(dir, uint16(len(r.Name)))
		dir = append(dir, r.Name...)
		dir = append(dir, r.DType, format, shift, 0)
		dir = app32(dir, ref)
		dir = append(dir, uint8(len(r.Shape)))
		for _, d := range r.Shape {
			dir = app64(dir, d)
		}
		dir = app64(dir, r.Elements())
		dir = app64(dir, uint64(len(body)))
		bodies, formats = append(bodies, body), append(formats, format)
	}
	meta := Deflate(dir)
	flags := uint16(0)
	if o.Checksums {
		flags |= FlagChecksums
	}
	if o.Final {
		flags |= FlagFinal
	}
	out := append([]byte{}, Magic[:]...)
	out = app16(out, uint16(o.Version))
	out = app16(out, flags)
	out = app32(out, uint32(len(meta)))
	out = app32(out, uint32(len(dir)))
	out = append(out, meta...)
	for len(out)%4 != 0 {
		out = append(out, 0)
	}
	metaCRC := CRC32C(out)
	out = app32(out, metaCRC)
	for i, b := range bodies {
		if recs[i].Blob {
			continue
		}
		out = append(out, b...)
		if o.Version == 2 {
			out = app32(out, seal(o.Checksums, metaCRC, uint32(i), checksumWords(formats[i], b, &recs[i], o.Shift)))
		}
	}
	return out, nil
}

// checksumWords are the body's own CRC words in the order a v2 seal takes them.
func checksumWords(format uint8, body []byte, r *Record, shift uint) []uint32 {
	if format == FormatSplitZip4 {
		return SZ4ChecksumWords(body, r.Elements(), shift)
	}
	return []uint32{le32(body[len(body)-4:])}
}

// seal is a v2 record's seal: CRC-32C of metaCRC, the record index and the body's checksum words; 0 without
// checksums.
func seal(checksums bool, metaCRC, index uint32, words []uint32) uint32 {
	if !checksums {
		return 0
	}
	msg := app32(app32(nil, metaCRC), index)
	for _, w := range words {
		msg = app32(msg, w)
	}
	return CRC32C(msg)
}

// StoredEncode is a stored body (§4.3): data, zero padding to 4, CRC-32C of both (0 without checksums).
func StoredEncode(data []byte, checksums bool) []byte {
	b := append([]byte{}, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	crc := uint32(0)
	if checksums {
		crc = CRC32C(b)
	}
	return app32(b, crc)
}

// StoredDecode checks a stored body of size data bytes and returns the data.
func StoredDecode(body []byte, size uint64, checksums bool) ([]byte, error) {
	if uint64(len(body)) != align4(size)+4 {
		return nil, classErr(ErrCorrupt, "stored body of %d bytes for %d bytes of data", len(body), size)
	}
	p := align4(size)
	crc := le32(body[p:])
	if checksums && crc != CRC32C(body[:p]) {
		return nil, classErr(ErrChecksum, "stored body crc")
	}
	if !checksums && crc != 0 {
		return nil, classErr(ErrNonCanonical, "stored crc %08x without checksums", crc)
	}
	for _, x := range body[size:p] {
		if x != 0 {
			return nil, classErr(ErrNonCanonical, "stored padding")
		}
	}
	return body[:size], nil
}

// Container is a decoded container.
type Container struct {
	Version   int
	Flags     uint16
	Sequence  uint64 // version 2
	Codebooks []Codebook
	Records   []Record
	Len       int // bytes of the input the container takes
}

// Data is the concatenation of the records' decoded bytes.
func (c *Container) Data() []byte {
	var out []byte
	for _, r := range c.Records {
		out = append(out, r.Data...)
	}
	return out
}

// reader reads the directory; running out of bytes is corrupt (§3.1).
type reader struct {
	b   []byte
	p   int
	err error
}

func (r *reader) take(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.p) {
		r.err = classErr(ErrCorrupt, "directory ends inside a record")
		return nil
	}
	s := r.b[r.p : r.p+int(n)]
	r.p += int(n)
	return s
}

func (r *reader) u8() uint8 {
	if s := r.take(1); s != nil {
		return s[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if s := r.take(2); s != nil {
		return uint16(s[0]) | uint16(s[1])<<8
	}
	return 0
}

func (r *reader) u32() uint32 {
	if s := r.take(4); s != nil {
		return le32(s)
	}
	return 0
}

func (r *reader) u64() uint64 {
	lo := r.u32()
	return uint64(lo) | uint64(r.u32())<<32
}

// DecodeContainer decodes the container at the start of p, checking it in the order of §2, §3, §4 and §6. The
// input may continue after it (the next container of a stream): Len says where it ended.
func DecodeContainer(p []byte) (*Container, error) {
	if len(p) < 8 {
		return nil, classErr(ErrTruncated, "%d bytes", len(p))
	}
	if !bytes.Equal(p[:8], Magic[:]) {
		return nil, classErr(ErrFormat, "magic % x", p[:8])
	}
	if len(p) < preambleLen {
		return nil, classErr(ErrTruncated, "%d-byte preamble", len(p))
	}
	c := &Container{Version: int(uint16(p[8]) | uint16(p[9])<<8), Flags: uint16(p[10]) | uint16(p[11])<<8}
	if c.Version != 1 && c.Version != 2 {
		return nil, classErr(ErrVersion, "version %d", c.Version)
	}
	mc, mr := uint64(le32(p[12:])), uint64(le32(p[16:]))
	metaEnd := preambleLen + mc
	crcAt := align4(metaEnd)
	if crcAt+4 > uint64(len(p)) {
		return nil, classErr(ErrTruncated, "metadata ends at %d of %d bytes", crcAt+4, len(p))
	}
	metaCRC := le32(p[crcAt:])
	if got := CRC32C(p[:crcAt]); got != metaCRC {
		return nil, classErr(ErrChecksum, "metaCRC %08x, computed %08x", metaCRC, got)
	}
	if c.Flags&^(FlagChecksums|FlagFinal) != 0 {
		return nil, classErr(ErrVersion, "flags %#x", c.Flags)
	}
	if mr > maxMetaRaw || mr > 172*mc+16 {
		return nil, classErr(ErrTooLarge, "metaRawLen %d for %d compressed bytes", mr, mc)
	}
	for _, x := range p[metaEnd:crcAt] {
		if x != 0 {
			return nil, classErr(ErrNonCanonical, "metadata padding")
		}
	}
	meta := p[preambleLen:metaEnd]
	dir, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(meta)), int64(mr)+1))
	if err != nil || uint64(len(dir)) != mr {
		return nil, classErr(ErrCorrupt, "metadata inflates to %d bytes (%v), metaRawLen %d", len(dir), err, mr)
	}
	if !bytes.Equal(Deflate(dir), meta) {
		return nil, classErr(ErrNonCanonical, "metadata is not the canonical DEFLATE of its directory")
	}
	checksums := c.Flags&FlagChecksums != 0
	// Directory.
	r := &reader{b: dir}
	if c.Version == 2 {
		c.Sequence = r.u64()
	}
	ncb := r.u32()
	if r.err == nil && uint64(ncb)*17 > uint64(len(dir)) {
		return nil, classErr(ErrCorrupt, "%d codebooks", ncb)
	}
	for i := uint32(0); i < ncb && r.err == nil; i++ {
		kind := r.u8()
		var cb Codebook
		copy(cb[:], r.take(16))
		if r.err == nil && kind != 1 {
			return nil, classErr(ErrCorrupt, "codebook %d of kind %d", i, kind)
		}
		if r.err == nil && !ValidCodebook(cb) {
			return nil, classErr(ErrCorrupt, "codebook %d has repeated exponents", i)
		}
		c.Codebooks = append(c.Codebooks, cb)
	}
	nrec := r.u32()
	if r.err == nil && uint64(nrec) > uint64(len(dir)) {
		return nil, classErr(ErrCorrupt, "%d records", nrec)
	}
	nextCB := uint32(0)
	for i := uint32(0); i < nrec && r.err == nil; i++ {
		var rec Record
		switch typ := r.u8(); {
		case r.err != nil:
		case typ == 1:
			rec.Blob = true
			rec.Data = r.take(uint64(r.u32()))
		case typ == 2:
			name := r.take(uint64(r.u16()))
			if r.err == nil && !utf8.Valid(name) {
				return nil, classErr(ErrCorrupt, "record %d: name is not UTF-8", i)
			}
			rec.Name = string(name)
			rec.DType, rec.Format, rec.Shift = r.u8(), r.u8(), r.u8()
			reserved := r.u8()
			rec.Codebook = r.u32()
			rank := r.u8()
			for d := uint8(0); d < rank && r.err == nil; d++ {
				rec.Shape = append(rec.Shape, r.u64())
			}
			elements, bodyLen := r.u64(), r.u64()
			if r.err != nil {
				break
			}
			if err := checkTensor(&rec, reserved, elements, bodyLen, uint32(len(c.Codebooks)), &nextCB); err != nil {
				return nil, fmt.Errorf("record %d (%q): %w", i, rec.Name, err)
			}
			rec.Body = make([]byte, bodyLen) // placeholder for the length; filled below
		default:
			return nil, classErr(ErrCorrupt, "record %d of type %d", i, typ)
		}
		c.Records = append(c.Records, rec)
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.p != len(dir) {
		return nil, classErr(ErrCorrupt, "%d bytes after the last record", len(dir)-r.p)
	}
	if nextCB != uint32(len(c.Codebooks)) {
		return nil, classErr(ErrNonCanonical, "codebook %d is never referenced", nextCB)
	}
	// Bodies, in record order.
	pos := crcAt + 4
	for i := range c.Records {
		rec := &c.Records[i]
		if rec.Blob {
			continue
		}
		bl := uint64(len(rec.Body))
		if bl > uint64(len(p))-pos {
			return nil, fmt.Errorf("record %d (%q): %w", i, rec.Name,
				classErr(ErrTruncated, "body ends at %d of %d bytes", pos+bl, len(p)))
		}
		rec.Body = p[pos : pos+bl]
		pos += bl
		var err error
		switch rec.Format {
		case FormatSplitZip4:
			rec.Data, err = SZ4Decode(rec.Body, rec.Elements(), uint(rec.Shift), c.Codebooks[rec.Codebook], checksums)
		default:
			rec.Data, err = StoredDecode(rec.Body, rec.Elements()*dtypeSize[rec.DType], checksums)
		}
		if err != nil {
			return nil, fmt.Errorf("record %d (%q): %w", i, rec.Name, err)
		}
		if c.Version == 2 {
			if pos+4 > uint64(len(p)) {
				return nil, fmt.Errorf("record %d (%q): %w", i, rec.Name, classErr(ErrTruncated, "seal outside the input"))
			}
			got := le32(p[pos:])
			pos += 4
			want := seal(checksums, metaCRC, uint32(i), checksumWords(rec.Format, rec.Body, rec, uint(rec.Shift)))
			switch {
			case !checksums && got != 0:
				return nil, fmt.Errorf("record %d (%q): %w", i, rec.Name, classErr(ErrNonCanonical, "seal without checksums"))
			case got != want:
				return nil, fmt.Errorf("record %d (%q): %w", i, rec.Name, classErr(ErrChecksum, "seal %08x, computed %08x", got, want))
			}
		}
	}
	c.Len = int(pos)
	return c, nil
}

// checkTensor applies §3.1's and §4's directory rules to a tensor record, in §4's order.
func checkTensor(rec *Record, reserved uint8, elements, bodyLen uint64, ncb uint32, nextCB *uint32) error {
	if rec.DType >= 16 {
		return classErr(ErrCorrupt, "dtype %d", rec.DType)
	}
	if rec.DType == DTypeOpaque && len(rec.Shape) != 1 {
		return classErr(ErrCorrupt, "opaque tensor of rank %d", len(rec.Shape))
	}
	prod, over := uint64(1), false
	for _, d := range rec.Shape {
		hi, lo := bits.Mul64(prod, d)
		over, prod = over || hi != 0, lo
	}
	if elements > maxElements {
		return classErr(ErrTooLarge, "%d elements", elements)
	}
	if over || prod != elements {
		return classErr(ErrCorrupt, "%d elements for shape %v", elements, rec.Shape)
	}
	if reserved != 0 {
		return classErr(ErrNonCanonical, "reserved byte %d", reserved)
	}
	useCB := func() error {
		if rec.Codebook == NoCodebook {
			return classErr(ErrNonCanonical, "no codebook")
		}
		if rec.Codebook >= ncb {
			return classErr(ErrCorrupt, "codebook %d of %d", rec.Codebook, ncb)
		}
		if rec.Codebook > *nextCB {
			return classErr(ErrNonCanonical, "codebook %d referenced before codebook %d", rec.Codebook, *nextCB)
		}
		if rec.Codebook == *nextCB {
			*nextCB++
		}
		return nil
	}
	switch rec.Format {
	case FormatStored:
		if rec.Shift != 0 || rec.Codebook != NoCodebook {
			return classErr(ErrNonCanonical, "stored tensor with chunk shift %d, codebook %#x", rec.Shift, rec.Codebook)
		}
		if bodyLen != align4(elements*dtypeSize[rec.DType])+4 {
			return classErr(ErrCorrupt, "stored body of %d bytes", bodyLen)
		}
	case FormatSplitZip4:
		if rec.DType != DTypeBF16 {
			return classErr(ErrCorrupt, "splitzip4 tensor of dtype %d", rec.DType)
		}
		if err := checkShift(uint(rec.Shift)); err != nil {
			return err
		}
		if elements > SZ4MaxValues {
			return classErr(ErrTooLarge, "%d values", elements)
		}
		if err := useCB(); err != nil {
			return err
		}
		lo, hi := SZ4BodyBounds(elements, uint(rec.Shift))
		if bodyLen%4 != 0 || bodyLen < lo || bodyLen > hi {
			return classErr(ErrCorrupt, "body of %d bytes outside [%d, %d]", bodyLen, lo, hi)
		}
	default:
		return classErr(ErrUnsupported, "format %d", rec.Format)
	}
	return nil
}

// DecodeStream decodes a stream of containers (§8): every container but the last has FINAL clear, nothing follows
// the final one, all have one version, and version 2 containers carry sequence numbers 0, 1, 2, ...
func DecodeStream(p []byte) ([]byte, error) {
	var out []byte
	version := 0
	for k := uint64(0); ; k++ {
		if k > 0 && len(p) == 0 {
			return nil, classErr(ErrTruncated, "stream ends after non-final container %d", k-1)
		}
		c, err := DecodeContainer(p)
		if err != nil {
			return nil, fmt.Errorf("container %d: %w", k, err)
		}
		if version != 0 && c.Version != version {
			return nil, classErr(ErrCorrupt, "container %d of version %d in a stream of version %d", k, c.Version, version)
		}
		version = c.Version
		if c.Version == 2 && c.Sequence != k {
			return nil, classErr(ErrCorrupt, "container %d carries sequence %d", k, c.Sequence)
		}
		out = append(out, c.Data()...)
		p = p[c.Len:]
		if c.Flags&FlagFinal != 0 {
			if len(p) != 0 {
				return nil, classErr(ErrCorrupt, "%d bytes after the final container", len(p))
			}
			return out, nil
		}
	}
}
