package tensorfile

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/vkzip/vkzip/codec/layout"
)

// Safetensors header limits, as in the reference implementation.
const (
	minHeader = 2           // "{}"
	maxHeader = 100_000_000 // bytes of JSON
)

const metadataKey = "__metadata__"

// stEntry is one tensor entry of a safetensors header, as declared.
type stEntry struct {
	name       string
	dtype      string
	shape      []uint64
	begin, end uint64
}

// parseSafetensors parses and validates a safetensors file: the rules are those of the reference implementation
// (huggingface/safetensors), made stricter where it is lenient: duplicate keys and unknown fields in tensor
// entries are rejected, and unknown dtypes are kept as opaque byte ranges rather than refused.
// parseSafetensors parses a safetensors file of size bytes whose first len(data) bytes are data: all of it (Data
// views are set), or at least the header (a layout only, Data nil).
func parseSafetensors(data []byte, size uint64) (*File, error) {
	if size < 8 || len(data) < 8 {
		return nil, errorf(ErrInvalid, Safetensors, "%d bytes is too short for the 8-byte header length", size)
	}
	n := binary.LittleEndian.Uint64(data)
	switch {
	case n > size-8:
		return nil, errorf(ErrInvalid, Safetensors, "header length %d exceeds the %d bytes after it", n, size-8)
	case n > maxHeader: // a header that is really there, just larger than readers accept
		return nil, errorf(ErrTooLarge, Safetensors, "header length %d exceeds the limit of %d", n, maxHeader)
	case n < minHeader:
		return nil, errorf(ErrInvalid, Safetensors, "header length %d is too short for a JSON object", n)
	}
	if 8+n > uint64(len(data)) {
		return nil, errorf(ErrInvalid, Safetensors, "header of %d bytes not read", n)
	}
	hdr := data[8 : 8+n]
	if hdr[0] != '{' {
		return nil, errorf(ErrInvalid, Safetensors, "header does not start with '{'")
	}
	if !utf8.Valid(hdr) {
		return nil, errorf(ErrInvalid, Safetensors, "header is not valid UTF-8")
	}
	if err := checkSurrogates(hdr); err != nil {
		return nil, err
	}
	entries, meta, err := decodeHeader(hdr)
	if err != nil {
		return nil, err
	}

	dataStart := 8 + n
	dataLen := size - dataStart
	tensors := make([]Tensor, len(entries))
	for i := range entries {
		e := &entries[i]
		dt, known := layout.ParseDType(e.dtype)
		if e.end < e.begin {
			return nil, tensorErrorf(ErrInvalid, Safetensors, e.name, "data_offsets [%d, %d] end before they begin", e.begin, e.end)
		}
		if e.end > dataLen {
			return nil, tensorErrorf(ErrInvalid, Safetensors, e.name, "data_offsets [%d, %d] reach beyond the %d-byte data section", e.begin, e.end, dataLen)
		}
		if known {
			nbytes, ok := byteSize(e.shape, uint64(dt.Size()))
			if !ok {
				return nil, tensorErrorf(ErrInvalid, Safetensors, e.name, "shape %v of %s overflows 64 bits", e.shape, dt)
			}
			if nbytes != e.end-e.begin {
				return nil, tensorErrorf(ErrInvalid, Safetensors, e.name, "shape %v of %s needs %d bytes, data_offsets [%d, %d] hold %d",
					e.shape, dt, nbytes, e.begin, e.end, e.end-e.begin)
			}
		}
		off := dataStart + e.begin
		tensors[i] = Tensor{
			Name:      e.name,
			DType:     dt,
			DTypeName: e.dtype,
			Shape:     e.shape,
			Offset:    int64(off),
			Size:      int64(e.end - e.begin),
		}
		if dataStart+e.end <= uint64(len(data)) {
			tensors[i].Data = data[off : dataStart+e.end : dataStart+e.end]
		}
	}

	// Data order; names break ties between empty tensors so that the order is deterministic.
	slices.SortFunc(tensors, func(a, b Tensor) int {
		return cmp.Or(cmp.Compare(a.Offset, b.Offset), cmp.Compare(a.Size, b.Size), strings.Compare(a.Name, b.Name))
	})
	pos := int64(dataStart)
	for i := range tensors {
		t := &tensors[i]
		switch {
		case t.Offset > pos:
			return nil, tensorErrorf(ErrInvalid, Safetensors, t.Name, "gap of %d bytes in the data section before it", t.Offset-pos)
		case t.Offset < pos:
			return nil, tensorErrorf(ErrInvalid, Safetensors, t.Name, "data overlaps the tensor before it")
		}
		pos += t.Size
	}
	if pos != int64(size) {
		return nil, errorf(ErrInvalid, Safetensors, "tensors cover %d of the %d bytes of the data section", pos-int64(dataStart), dataLen)
	}
	return &File{Kind: Safetensors, Prefix: data[:dataStart:dataStart], Tensors: tensors, Metadata: meta, Size: int64(size)}, nil
}

// byteSize is the product of the dimensions times the element size; ok is false if it overflows. Like the
// reference implementation it fails on overflow even when a later dimension is zero.
func byteSize(shape []uint64, elem uint64) (n uint64, ok bool) {
	n = 1
	for _, d := range shape {
		hi, lo := bits.Mul64(n, d)
		if hi != 0 {
			return 0, false
		}
		n = lo
	}
	hi, lo := bits.Mul64(n, elem)
	return lo, hi == 0
}

// checkSurrogates rejects \u escapes of unpaired UTF-16 surrogates. encoding/json would silently decode them to
// U+FFFD, so a name would not read back as written; serde_json, which the reference implementation uses, rejects
// them. A backslash can only occur inside a string in valid JSON; invalid JSON is left to the decoder to report.
func checkSurrogates(b []byte) error {
	for i := 0; i+1 < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if b[i+1] != 'u' {
			i++ // skip the escaped character, which may be a backslash
			continue
		}
		r, ok := hex4(b[i+2:])
		if !ok {
			return nil
		}
		i += 5
		switch {
		case 0xDC00 <= r && r <= 0xDFFF:
			return errorf(ErrInvalid, Safetensors, "header has an unpaired surrogate escape \\u%04x", r)
		case 0xD800 <= r && r <= 0xDBFF:
			lo, ok := uint16(0), false
			if i+2 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
				lo, ok = hex4(b[i+3:])
			}
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return errorf(ErrInvalid, Safetensors, "header has an unpaired surrogate escape \\u%04x", r)
			}
			i += 6
		}
	}
	return nil
}

func hex4(b []byte) (uint16, bool) {
	if len(b) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return uint16(v), err == nil
}

// headerDecoder walks the JSON header token by token, so that it can reject duplicate keys and wrong types
// with the name of the field and tensor, which encoding/json's Unmarshal cannot.
type headerDecoder struct {
	dec *json.Decoder
}

func decodeHeader(hdr []byte) ([]stEntry, map[string]string, error) {
	d := headerDecoder{json.NewDecoder(bytes.NewReader(hdr))}
	d.dec.UseNumber()
	if err := d.delim('{', "", "header"); err != nil {
		return nil, nil, err
	}
	var (
		entries []stEntry
		meta    map[string]string
		seen    = make(map[string]struct{})
	)
	for d.dec.More() {
		key, err := d.key("")
		if err != nil {
			return nil, nil, err
		}
		if _, dup := seen[key]; dup {
			return nil, nil, tensorErrorf(ErrInvalid, Safetensors, key, "duplicate key in header")
		}
		seen[key] = struct{}{}
		if key == metadataKey {
			if meta, err = d.metadata(); err != nil {
				return nil, nil, err
			}
			continue
		}
		e, err := d.tensor(key)
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, e)
	}
	if err := d.delim('}', "", "header"); err != nil {
		return nil, nil, err
	}
	// Writers pad the header with spaces; anything but whitespace after the object is not JSON.
	if rest := hdr[d.dec.InputOffset():]; len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return nil, nil, errorf(ErrInvalid, Safetensors, "header has data after its JSON object")
	}
	return entries, meta, nil
}

func (d *headerDecoder) token(tensor string) (json.Token, error) {
	t, err := d.dec.Token()
	if err == io.EOF {
		return nil, tensorErrorf(ErrInvalid, Safetensors, tensor, "header JSON ends early")
	}
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, tensorErrorf(ErrInvalid, Safetensors, tensor, "header JSON at byte %d: %v", 8+se.Offset, se)
		}
		return nil, tensorErrorf(ErrInvalid, Safetensors, tensor, "header JSON: %v", err)
	}
	return t, nil
}

func (d *headerDecoder) delim(want json.Delim, tensor, what string) error {
	t, err := d.token(tensor)
	if err != nil {
		return err
	}
	if t != want {
		kind := "an object"
		if want == '[' || want == ']' {
			kind = "an array"
		}
		if want == '}' || want == ']' {
			return tensorErrorf(ErrInvalid, Safetensors, tensor, "%s: unexpected %s", what, describe(t))
		}
		return tensorErrorf(ErrInvalid, Safetensors, tensor, "%s must be %s, not %s", what, kind, describe(t))
	}
	return nil
}

func (d *headerDecoder) key(tensor string) (string, error) {
	t, err := d.token(tensor)
	if err != nil {
		return "", err
	}
	s, ok := t.(string)
	if !ok { // the decoder reports non-string keys as syntax errors; this is a safeguard
		return "", tensorErrorf(ErrInvalid, Safetensors, tensor, "header key is %s, not a string", describe(t))
	}
	return s, nil
}

func (d *headerDecoder) metadata() (map[string]string, error) {
	t, err := d.token(metadataKey)
	if err != nil {
		return nil, err
	}
	if t == nil { // the reference implementation reads an absent and a null __metadata__ alike
		return nil, nil
	}
	if t != json.Delim('{') {
		return nil, errorf(ErrInvalid, Safetensors, "%s must be an object, not %s", metadataKey, describe(t))
	}
	meta := make(map[string]string)
	for d.dec.More() {
		k, err := d.key(metadataKey)
		if err != nil {
			return nil, err
		}
		if _, dup := meta[k]; dup {
			return nil, errorf(ErrInvalid, Safetensors, "%s has the key %q twice", metadataKey, k)
		}
		t, err := d.token(metadataKey)
		if err != nil {
			return nil, err
		}
		v, ok := t.(string)
		if !ok {
			return nil, errorf(ErrInvalid, Safetensors, "%s value of %q must be a string, not %s", metadataKey, k, describe(t))
		}
		meta[k] = v
	}
	return meta, d.delim('}', metadataKey, metadataKey)
}

func (d *headerDecoder) tensor(name string) (stEntry, error) {
	e := stEntry{name: name}
	if err := d.delim('{', name, "entry"); err != nil {
		return e, err
	}
	var have [3]bool // dtype, shape, data_offsets
	for d.dec.More() {
		k, err := d.key(name)
		if err != nil {
			return e, err
		}
		var field int
		switch k {
		case "dtype":
			field = 0
		case "shape":
			field = 1
		case "data_offsets":
			field = 2
		default:
			return e, tensorErrorf(ErrInvalid, Safetensors, name, "unknown field %q", k)
		}
		if have[field] {
			return e, tensorErrorf(ErrInvalid, Safetensors, name, "field %q appears twice", k)
		}
		have[field] = true
		switch field {
		case 0:
			t, err := d.token(name)
			if err != nil {
				return e, err
			}
			s, ok := t.(string)
			if !ok {
				return e, tensorErrorf(ErrInvalid, Safetensors, name, "dtype must be a string, not %s", describe(t))
			}
			e.dtype = s
		case 1:
			if e.shape, err = d.uints(name, "shape"); err != nil {
				return e, err
			}
			if e.shape == nil {
				e.shape = []uint64{} // a scalar: distinct from "no shape" for callers that compare
			}
		case 2:
			offs, err := d.uints(name, "data_offsets")
			if err != nil {
				return e, err
			}
			if len(offs) != 2 {
				return e, tensorErrorf(ErrInvalid, Safetensors, name, "data_offsets must have 2 entries, not %d", len(offs))
			}
			e.begin, e.end = offs[0], offs[1]
		}
	}
	if err := d.delim('}', name, "entry"); err != nil {
		return e, err
	}
	for i, f := range [3]string{"dtype", "shape", "data_offsets"} {
		if !have[i] {
			return e, tensorErrorf(ErrInvalid, Safetensors, name, "missing field %q", f)
		}
	}
	return e, nil
}

// uints reads an array of non-negative integers that fit in 64 bits.
func (d *headerDecoder) uints(tensor, field string) ([]uint64, error) {
	if err := d.delim('[', tensor, field); err != nil {
		return nil, err
	}
	var v []uint64
	for d.dec.More() {
		t, err := d.token(tensor)
		if err != nil {
			return nil, err
		}
		num, ok := t.(json.Number)
		if !ok {
			return nil, tensorErrorf(ErrInvalid, Safetensors, tensor, "%s entry %d must be an integer, not %s", field, len(v), describe(t))
		}
		x, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil {
			why := "is not an integer"
			switch {
			case strings.HasPrefix(string(num), "-"):
				why = "is negative"
			case errors.Is(err, strconv.ErrRange):
				why = "does not fit in 64 bits"
			}
			return nil, tensorErrorf(ErrInvalid, Safetensors, tensor, "%s entry %d (%s) %s", field, len(v), num, why)
		}
		v = append(v, x)
	}
	return v, d.delim(']', tensor, field)
}

// describe names a JSON token for an error message.
func describe(t json.Token) string {
	switch v := t.(type) {
	case nil:
		return "null"
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return fmt.Sprintf("%q", rune(v))
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", t)
}
