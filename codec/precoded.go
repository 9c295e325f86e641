package codec

import (
	"github.com/vkzip/vkzip/codec/layout"
)

// Tensors encoded elsewhere. A device encoder that codes values already in device memory (CUDA memory shared with
// Vulkan, a serving stack's KV blocks) produces only the body; PlanTensor says which body the Codec's Encode would
// write for that tensor, and AppendPrecoded wraps such a body into the container Encode makes from the same values,
// byte for byte.

// TensorPlan is how Encode codes one tensor: the record's format, chunk shift and codebook.
type TensorPlan struct {
	Format    uint8
	Shift     uint   // chunk shift (0 for formats without chunks)
	Checksums bool   // the bodies carry checksums (the Codec's setting)
	MaxBody   uint64 // the largest body of the tensor in Format
	// UsesCodebook: the body is coded with a codebook, recorded in the container. Codebook is the Codec's fixed
	// one, or nil when each encode calibrates on its values: then the caller sets it to CodebookFromHistogram of the
	// values' exponent histogram, as Encode does.
	UsesCodebook bool
	Codebook     *Codebook
}

// PlanTensor returns the plan of a tensor of n values of d, as Encode codes it under the Codec's options. A tensor
// that no listed format codes is stored, and a tensor listed as auto gets its format from its values: both are
// refused with ErrUnsupported, since their bodies are not a device encoder's.
func (c *Codec) PlanTensor(d layout.DType, n uint64) (TensorPlan, error) {
	if !d.Valid() || d == layout.DTypeOpaque {
		return TensorPlan{}, errorf(ErrInvalidInput, "dtype %v has no coded format", d)
	}
	if n == 0 || n > maxElements {
		return TensorPlan{}, errorf(ErrInvalidInput, "tensor of %d values", n)
	}
	f := pickFormat(c.o.formats, d, n)
	switch f.ID {
	case layout.FormatStored:
		return TensorPlan{}, errorf(ErrUnsupported, "a %v tensor of %d values is stored, not coded, under this format list", d, n)
	case layout.FormatAuto:
		return TensorPlan{}, errorf(ErrUnsupported, "format auto picks a %v tensor's coding from its values", d)
	}
	p := TensorPlan{Format: f.ID, Checksums: c.o.checksums}
	if f.Chunked() {
		s := c.o.shift
		if !c.o.shiftSet && f.ShiftFor != nil {
			s = f.ShiftFor(n)
		}
		p.Shift = min(max(s, uint(f.MinShift)), uint(f.MaxShift))
	}
	p.MaxBody = f.MaxBodyOf(n, d, p.Shift)
	if f.UsesCodebook(d) {
		p.UsesCodebook, p.Codebook = true, c.o.codebook
	}
	return p, nil
}

// PrecodedTensor is a tensor whose body was encoded elsewhere under Plan (from PlanTensor of the same Codec).
type PrecodedTensor struct {
	Name    string
	DType   layout.DType
	Shape   []uint64 // nil means [N]
	N       uint64   // values
	Plan    TensorPlan
	BodyLen uint64 // bytes of the body (a multiple of 4, at most Plan.MaxBody)
}

// AppendPrecoded appends one container holding the tensor t to dst: the header Encode writes for it, then the body,
// which fill writes in place (exactly t.BodyLen bytes: it must be the body the plan's format makes of the values),
// then the seal over it. final marks the last container of a stream. With the body Encode would make, the container
// equals Encode's of the same values byte for byte. The body is not decoded here: a body that contradicts its own
// chunk table fails with its error class (the seal reads the table), any other wrong body is found only by a
// decoder.
func (c *Codec) AppendPrecoded(dst []byte, t PrecodedTensor, final bool, fill func(body []byte) error) ([]byte, error) {
	base := len(dst)
	dst, dir, err := c.appendPrecodedHead(dst, t, final)
	if err != nil {
		return dst, err
	}
	metaEnd := len(dst)
	end := metaEnd + int(t.BodyLen)
	if c.o.version >= layout.Version2 {
		end += layout.SealSize
	}
	dst = growTo(dst, end)
	if err := fill(dst[metaEnd : metaEnd+int(t.BodyLen) : metaEnd+int(t.BodyLen)]); err != nil {
		return dst[:base], err
	}
	if c.o.version >= layout.Version2 {
		if err := c.writeSeals(dst[base:], metaEnd-base, dir); err != nil {
			return dst[:base], err
		}
	}
	return dst, nil
}

// appendPrecodedHead appends the header of the container holding the precoded tensor t (what AppendPrecoded writes
// before the body) and returns its one-record directory.
func (c *Codec) appendPrecodedHead(dst []byte, t PrecodedTensor, final bool) ([]byte, []ParsedRecord, error) {
	if c.closed.Load() {
		return dst, nil, errorf(ErrClosed, "encode")
	}
	p := &t.Plan
	f, ok := LookupFormat(p.Format)
	if !ok || p.Format == layout.FormatStored || p.Format == layout.FormatAuto {
		return dst, nil, errorf(ErrInvalidInput, "precoded tensor in format %s", FormatName(p.Format))
	}
	if p.Checksums != c.o.checksums {
		return dst, nil, errorf(ErrInvalidInput, "precoded body with checksums %v for a codec with checksums %v", p.Checksums, c.o.checksums)
	}
	if p.UsesCodebook != f.UsesCodebook(t.DType) || (p.UsesCodebook && p.Codebook == nil) {
		return dst, nil, errorf(ErrInvalidInput, "precoded %s tensor of %v: plan without its codebook", f.Name, t.DType)
	}
	if p.UsesCodebook {
		if err := p.Codebook.Validate(); err != nil {
			return dst, nil, err
		}
	}
	shape := t.Shape
	if shape == nil {
		shape = []uint64{t.N}
	}
	// The checks of fillTensorRec, with the value count in place of the values' bytes.
	d := ParsedRecord{Name: t.Name, DType: t.DType, Shape: shape, Format: p.Format, Shift: uint8(p.Shift), Codebook: layout.NoCodebook}
	if len(t.Name) > 0xFFFF || len(shape) > 255 {
		return dst, nil, errorf(ErrInvalidInput, "tensor name of %d bytes or rank %d", len(t.Name), len(shape))
	}
	n := uint64(1)
	for _, x := range shape {
		if x != 0 && n > maxElements/x {
			return dst, nil, errorf(ErrTooLarge, "tensor %q: shape %v", t.Name, shape)
		}
		n *= x
	}
	if n != t.N || !f.Accepts(t.DType, n) {
		return dst, nil, errorf(ErrInvalidInput, "tensor %q: shape %v of %d values for %d values of %v in %s", t.Name,
			shape, n, t.N, t.DType, f.Name)
	}
	d.Elements = n
	if want := f.MaxBodyOf(n, t.DType, p.Shift); p.MaxBody != want || t.BodyLen == 0 || t.BodyLen > want || t.BodyLen%4 != 0 {
		return dst, nil, errorf(ErrCorrupt, "tensor %q: precoded body of %d bytes (at most %d, whole words)", t.Name, t.BodyLen, want)
	}
	d.BodyLen = t.BodyLen
	var cbs []Codebook
	if p.UsesCodebook {
		d.Codebook, cbs = 0, []Codebook{*p.Codebook}
	}
	dir := []ParsedRecord{d}
	h := dirHead{version: c.o.version}
	if err := checkMetaSize(len(appendDirectory(nil, h, cbs, dir))); err != nil {
		return dst, nil, err
	}
	return appendHeader(dst, h, c.flags(final), cbs, dir), dir, nil
}

// CheckSeal verifies the seal after tensor record index's body (sealed containers; src holds the container from
// its first byte), as a decoder does before it trusts the body: ErrChecksum when the body is not the one the
// directory was written with, ErrNonCanonical for a seal in a container without checksums. A decoder that runs the
// body elsewhere (a device decoder) calls it first.
func (ct *Container) CheckSeal(src []byte, index int) error {
	if index < 0 || index >= len(ct.Recs) || ct.Recs[index].Blob {
		return errorf(ErrInvalidInput, "record %d has no body", index)
	}
	if !ct.Sealed() {
		return nil
	}
	_, err := ct.checkSeal(src, index, nil)
	return err
}
