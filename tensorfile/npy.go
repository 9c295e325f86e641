package tensorfile

import (
	"bytes"
	"encoding/binary"
	"strconv"

	"github.com/vkzip/vkzip/codec/layout"
)

var npyMagic = []byte("\x93NUMPY")

// npyDescrs are the little-endian descrs this package reads, with their dtypes. "bfloat16" is how some tools
// spell ml_dtypes' type; NumPy itself writes BF16 arrays as '<V2' or '|V2', which needs a forced dtype.
var npyDescrs = map[string]layout.DType{
	"<f2": layout.DTypeF16, "<f4": layout.DTypeF32, "<f8": layout.DTypeF64,
	"|u1": layout.DTypeU8, "|i1": layout.DTypeI8, "|b1": layout.DTypeBool,
	"<u2": layout.DTypeU16, "<i2": layout.DTypeI16,
	"<u4": layout.DTypeU32, "<i4": layout.DTypeI32,
	"<u8": layout.DTypeU64, "<i8": layout.DTypeI64,
	"bfloat16": layout.DTypeBF16,
}

// npyHeader is the decoded header dictionary.
type npyHeader struct {
	descr        string
	fortranOrder bool
	shape        []uint64
}

// parseNPY parses a .npy file of format version 1.0, 2.0 or 3.0 holding one little-endian C-order array.
// parseNPY parses an npy file of size bytes whose first len(data) bytes are data (all of it, or the header).
func parseNPY(data []byte, size uint64, forced layout.DType, name string) (*File, error) {
	if !bytes.HasPrefix(data, npyMagic) {
		return nil, errorf(ErrInvalid, NPY, "missing the \\x93NUMPY magic")
	}
	if len(data) < 8 {
		return nil, errorf(ErrInvalid, NPY, "file ends inside the version")
	}
	major, minor := data[6], data[7]
	var n uint64 // header length; kept 64-bit so that it is checked before it is trusted as an int
	var start int
	switch {
	case minor != 0 || major < 1 || major > 3:
		return nil, errorf(ErrUnsupported, NPY, "format version %d.%d", major, minor)
	case major == 1:
		if len(data) < 10 {
			return nil, errorf(ErrInvalid, NPY, "file ends inside the header length")
		}
		n, start = uint64(binary.LittleEndian.Uint16(data[8:])), 10
	default:
		if len(data) < 12 {
			return nil, errorf(ErrInvalid, NPY, "file ends inside the header length")
		}
		n, start = uint64(binary.LittleEndian.Uint32(data[8:])), 12
	}
	if n > size-uint64(start) {
		return nil, errorf(ErrInvalid, NPY, "header length %d exceeds the %d bytes after it", n, size-uint64(start))
	}
	if uint64(start)+n > uint64(len(data)) {
		return nil, errorf(ErrInvalid, NPY, "header of %d bytes not read", n)
	}
	end := start + int(n)
	hdr := data[start:end]
	if len(hdr) == 0 || hdr[len(hdr)-1] != '\n' {
		return nil, errorf(ErrInvalid, NPY, "header does not end with a newline")
	}
	h, err := parseNPYHeader(hdr[:len(hdr)-1])
	if err != nil {
		return nil, err
	}
	if h.fortranOrder {
		return nil, errorf(ErrUnsupported, NPY, "fortran_order True: column-major arrays are not supported, save the array in C order")
	}

	dt, elem, err := npyDType(h.descr, forced)
	if err != nil {
		return nil, err
	}
	nbytes, ok := byteSize(h.shape, uint64(elem))
	if !ok {
		return nil, errorf(ErrInvalid, NPY, "shape %v of %q overflows 64 bits", h.shape, h.descr)
	}
	if have := size - uint64(end); nbytes != have {
		return nil, errorf(ErrInvalid, NPY, "shape %v of %q needs %d data bytes, the file has %d", h.shape, h.descr, nbytes, have)
	}
	t := Tensor{
		Name:      name,
		DType:     dt,
		DTypeName: h.descr,
		Shape:     h.shape,
		Offset:    int64(end),
		Size:      int64(size) - int64(end),
	}
	if uint64(len(data)) == size {
		t.Data = data[end:]
	}
	return &File{Kind: NPY, Prefix: data[:end:end], Tensors: []Tensor{t}, Size: int64(size)}, nil
}

// npyDType maps a descr to the tensor's dtype and element size, applying a forced dtype of the same size.
func npyDType(descr string, forced layout.DType) (layout.DType, int, error) {
	dt, known := npyDescrs[descr]
	elem := dt.Size()
	if !known {
		switch {
		case descr == "":
			return 0, 0, errorf(ErrInvalid, NPY, "empty descr")
		case descr[0] == '>':
			return 0, 0, errorf(ErrUnsupported, NPY, "big-endian descr %q: convert the array to little-endian", descr)
		case len(descr) > 2 && (descr[0] == '<' || descr[0] == '|') && descr[1] == 'V':
			// Void: opaque elements of a size the descr gives (a BF16 array saved by ml_dtypes is '<V2').
			n, err := strconv.ParseUint(descr[2:], 10, 31)
			if err != nil || n == 0 || descr[2] == '0' || descr[2] == '+' {
				return 0, 0, errorf(ErrUnsupported, NPY, "descr %q", descr)
			}
			dt, elem = layout.DTypeOpaque, int(n)
		default:
			return 0, 0, errorf(ErrUnsupported, NPY, "descr %q", descr)
		}
	}
	if forced != layout.DTypeOpaque && forced != dt {
		// Integer and void arrays are how tools store bit patterns NumPy has no type for; a float or bool
		// array read as something else would be a mistake.
		switch dt {
		case layout.DTypeOpaque, layout.DTypeU8, layout.DTypeI8, layout.DTypeU16, layout.DTypeI16,
			layout.DTypeU32, layout.DTypeI32, layout.DTypeU64, layout.DTypeI64:
		default:
			return 0, 0, errorf(ErrUnsupported, NPY, "descr %q is %s, which cannot be read as %s", descr, dt, forced)
		}
		if forced.Size() != elem {
			return 0, 0, errorf(ErrUnsupported, NPY, "descr %q has %d-byte elements, the forced dtype %s has %d",
				descr, elem, forced, forced.Size())
		}
		dt = forced
	}
	return dt, elem, nil
}

// parseNPYHeader parses the Python dict literal of an npy header (its trailing newline removed), as NumPy writes
// it: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } followed by spaces. It accepts the literal
// syntax ast.literal_eval would for these three keys, and nothing else: NumPy rejects other keys too.
func parseNPYHeader(b []byte) (npyHeader, error) {
	p := pyParser{b: b}
	var h npyHeader
	if !p.eat('{') {
		return h, p.fail("header does not start with '{'")
	}
	var have [3]bool // descr, fortran_order, shape
	for {
		p.space()
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return h, err
		}
		p.space()
		if !p.eat(':') {
			return h, p.fail("expected ':' after key '" + key + "'")
		}
		p.space()
		var field int
		switch key {
		case "descr":
			field = 0
			if p.peek() == '[' {
				return h, errorf(ErrUnsupported, NPY, "structured dtypes (a descr list) are not supported")
			}
			h.descr, err = p.str()
		case "fortran_order":
			field = 1
			h.fortranOrder, err = p.boolean()
		case "shape":
			field = 2
			h.shape, err = p.tuple()
		default:
			return h, errorf(ErrInvalid, NPY, "unknown header key %q", key)
		}
		if err != nil {
			return h, err
		}
		if have[field] {
			return h, errorf(ErrInvalid, NPY, "header key %q appears twice", key)
		}
		have[field] = true
		p.space()
		if p.eat('}') {
			break
		}
		if !p.eat(',') {
			return h, p.fail("expected ',' or '}' after the value of '" + key + "'")
		}
	}
	for i, k := range [3]string{"descr", "fortran_order", "shape"} {
		if !have[i] {
			return h, errorf(ErrInvalid, NPY, "header has no %q", k)
		}
	}
	// NumPy pads the header with spaces up to its alignment.
	if len(bytes.TrimLeft(p.b[p.i:], " ")) != 0 {
		return h, p.fail("unexpected data after the header dict")
	}
	return h, nil
}

// pyParser scans the few Python literals an npy header holds.
type pyParser struct {
	b []byte
	i int
}

func (p *pyParser) fail(msg string) error {
	return errorf(ErrInvalid, NPY, "header byte %d: %s", p.i, msg)
}

func (p *pyParser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *pyParser) eat(c byte) bool {
	if p.peek() == c && p.i < len(p.b) {
		p.i++
		return true
	}
	return false
}

// space skips the whitespace Python allows between tokens inside brackets.
func (p *pyParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\f', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

// str reads a quoted string without escapes; no descr or key needs one.
func (p *pyParser) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", p.fail("expected a string")
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch p.b[j] {
		case q:
			p.i = j + 1
			return string(p.b[start:j]), nil
		case '\\', '\n', '\r':
			p.i = j
			return "", p.fail("escape or line break in a string")
		}
	}
	return "", p.fail("unterminated string")
}

func (p *pyParser) boolean() (bool, error) {
	for _, w := range [2]string{"False", "True"} {
		if bytes.HasPrefix(p.b[p.i:], []byte(w)) {
			p.i += len(w)
			if c := p.peek(); c == '_' || c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z' {
				break // a longer identifier
			}
			return w == "True", nil
		}
	}
	return false, p.fail("fortran_order must be True or False")
}

// tuple reads a tuple of non-negative integers: (), (n,), (a, b) or (a, b,).
func (p *pyParser) tuple() ([]uint64, error) {
	if !p.eat('(') {
		return nil, p.fail("shape must be a tuple")
	}
	shape := []uint64{}
	for {
		p.space()
		if p.eat(')') {
			return shape, nil
		}
		v, err := p.uint()
		if err != nil {
			return nil, err
		}
		shape = append(shape, v)
		p.space()
		if p.eat(',') {
			continue
		}
		if !p.eat(')') {
			return nil, p.fail("expected ',' or ')' in shape")
		}
		if len(shape) == 1 {
			return nil, p.fail("shape (n) is an integer, not a tuple: it needs a trailing comma")
		}
		return shape, nil
	}
}

// uint reads a decimal integer as Python writes it: no sign, no leading zeros.
func (p *pyParser) uint() (uint64, error) {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	digits := p.b[start:p.i]
	switch {
	case len(digits) == 0:
		return 0, p.fail("expected a non-negative integer in shape")
	case len(digits) > 1 && digits[0] == '0':
		return 0, p.fail("integer with a leading zero in shape")
	}
	v, err := strconv.ParseUint(string(digits), 10, 64)
	if err != nil {
		return 0, errorf(ErrInvalid, NPY, "shape dimension %s does not fit in 64 bits", digits)
	}
	return v, nil
}
