// Package tensorfile reads tensor files strictly: safetensors, NumPy .npy and raw arrays.
//
// A parsed File keeps the bytes before its data section (Prefix) exactly as they are in the input and describes
// every tensor as a view into the input, in data order, with no gaps: Prefix followed by the data of every tensor
// is the input, byte for byte. That is what lets a compressor store the header verbatim and rebuild the file
// identically.
//
// Parsing never trusts a size it reads: every count and offset is checked against the real length of the input
// before anything is allocated from it, and bad input gives an error wrapping ErrInvalid, ErrUnsupported or
// ErrTooLarge, never a panic.
package tensorfile

import (
	"bytes"
	"encoding/binary"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vkzip/vkzip/codec/layout"
)

// Kind is the format of a tensor file.
type Kind uint8

// Kinds. Auto asks Open and Parse to detect the format.
const (
	Auto        Kind = iota
	Safetensors      // safetensors: 8-byte header length, JSON header, data
	NPY              // NumPy .npy, format 1.0, 2.0 or 3.0
	Raw              // headerless array of one forced dtype
)

var kindNames = [...]string{"auto", "safetensors", "npy", "raw"}

// String is the lower-case name of the kind, as ParseKind accepts it.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// ParseKind maps "auto", "safetensors", "npy" or "raw" (any case) to a Kind.
func ParseKind(s string) (Kind, bool) {
	for i, n := range kindNames {
		if strings.EqualFold(s, n) {
			return Kind(i), true
		}
	}
	return Auto, false
}

// OpenOptions control how a file is read. The zero value detects the format and takes dtypes from the file.
type OpenOptions struct {
	// Kind forces the format; Auto detects it from the content and the file name extension.
	Kind Kind
	// DType forces the element type of an NPY or Raw file (DTypeOpaque: not forced). It is how a BF16 array,
	// which NumPy has no descr for, is read from a '<u2', '<i2', '<V2' or '|V2' .npy file: the descr must be an
	// integer or void one with the forced dtype's element size (float and bool arrays keep their type or fail).
	// A Raw file needs it unless raw bytes (DTypeOpaque) are wanted and Kind is Raw explicitly. Safetensors files
	// declare their dtypes, so it is ignored for them.
	DType layout.DType
}

// File is a parsed tensor file. Its Prefix and tensor Data are views into the input: for a File from Open they
// are valid until Close, for one from Parse as long as the caller's buffer is.
type File struct {
	Kind     Kind
	Prefix   []byte            // bytes before the data section: safetensors length+JSON header, npy header
	Tensors  []Tensor          // in data order, contiguous, covering the data section
	Metadata map[string]string // safetensors "__metadata__"; nil when absent
	Size     int64             // total input size: len(Prefix) + the sizes of all tensors

	unmap func() error // releases the mapping of a File from Open
}

// Tensor is one tensor of a File.
type Tensor struct {
	Name      string
	DType     layout.DType // DTypeOpaque for a dtype this package does not know; then DTypeName says which
	DTypeName string       // dtype as spelled in the file: "BF16" for safetensors, "<f2" for npy, "" for raw
	Shape     []uint64
	Offset    int64  // absolute position of the data in the file
	Size      int64  // data size in bytes
	Data      []byte // the data: a view into the input, not a copy
}

// Lookup returns the tensor with the given name.
func (f *File) Lookup(name string) (*Tensor, bool) {
	for i := range f.Tensors {
		if f.Tensors[i].Name == name {
			return &f.Tensors[i], true
		}
	}
	return nil, false
}

// WriteTo writes the file as it was read: Prefix, then every tensor's data in order.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(f.Prefix)
	total := int64(n)
	if err != nil {
		return total, err
	}
	for i := range f.Tensors {
		n, err = w.Write(f.Tensors[i].Data)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Close releases the memory mapping of a File from Open; the File's byte slices must not be used afterwards.
// It does nothing for a File from Parse, and is safe to call more than once.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	unmap := f.unmap
	f.unmap = nil
	return unmap()
}

// Open reads the tensor file at path. Regular files are memory-mapped read-only where the platform allows it
// (Linux, macOS and the BSDs), so tensor Data are zero-copy views and a many-GiB file costs address space, not
// memory; elsewhere, and for pipes and devices, the file is read into memory. The mapping is shared with the file: if another process
// truncates the file while it is open, touching the lost pages faults. Close releases the mapping.
//
// With opts.Kind Auto the format is detected: the .npy magic, then the name extension (.safetensors, .npy), then
// a sane safetensors header; anything else is Raw when opts.DType is set and unsupported otherwise. A .npy file
// gives one tensor named after the file's base name without its extension, as does a raw file.
func Open(path string, opts OpenOptions) (*File, error) {
	data, unmap, err := mapFile(path)
	if err != nil {
		return nil, withPath(err, path)
	}
	f, err := parse(data, opts, path)
	if err != nil {
		if unmap != nil {
			unmap()
		}
		return nil, withPath(err, path)
	}
	f.unmap = unmap
	return f, nil
}

// Parse parses a tensor file held in memory; the File refers to data, which must not change while it is used.
// Format detection works as for Open, without a name extension; npy and raw tensors are named "".
func Parse(data []byte, opts OpenOptions) (*File, error) {
	return parse(data, opts, "")
}

func parse(data []byte, opts OpenOptions, path string) (*File, error) {
	return parseSized(data, uint64(len(data)), opts, path)
}

// parseSized parses a file of size bytes from its first len(data) bytes (the whole file, or enough for the header).
func parseSized(data []byte, size uint64, opts OpenOptions, path string) (*File, error) {
	if opts.DType != layout.DTypeOpaque && !opts.DType.Valid() {
		return nil, errorf(ErrUnsupported, Auto, "forced dtype id %d is not defined", opts.DType)
	}
	kind, name, err := kindAndName(data, size, path, opts)
	if err != nil {
		return nil, err
	}
	switch kind {
	case Safetensors:
		return parseSafetensors(data, size)
	case NPY:
		return parseNPY(data, size, opts.DType, name)
	case Raw:
		return parseRaw(data, size, opts.DType, name)
	}
	return nil, errorf(ErrUnsupported, Auto, "unknown file kind %d", kind)
}

// kindAndName resolves opts.Kind (Auto: detected from the file's first bytes, its size and path's extension) and
// the name an npy or raw tensor takes from path (its base name without the extension; "" without a path).
func kindAndName(head []byte, size uint64, path string, opts OpenOptions) (Kind, string, error) {
	kind := opts.Kind
	if kind == Auto {
		var err error
		if kind, err = detect(head, size, filepath.Ext(path), opts.DType); err != nil {
			return 0, "", err
		}
	}
	name := ""
	if path != "" {
		base := filepath.Base(path)
		name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	return kind, name, nil
}

func detect(data []byte, size uint64, ext string, forced layout.DType) (Kind, error) {
	switch {
	case bytes.HasPrefix(data, npyMagic):
		return NPY, nil
	case strings.EqualFold(ext, ".safetensors"):
		return Safetensors, nil
	case strings.EqualFold(ext, ".npy"):
		return NPY, nil
	case looksLikeSafetensors(data, size):
		return Safetensors, nil
	case forced != layout.DTypeOpaque:
		return Raw, nil
	}
	return Auto, errorf(ErrUnsupported, Auto, "not a safetensors or npy file (a raw array needs a forced dtype)")
}

// looksLikeSafetensors reports whether data starts with a plausible header length followed by '{'.
func looksLikeSafetensors(data []byte, size uint64) bool {
	if len(data) < 9 || size < 8+minHeader {
		return false
	}
	n := binary.LittleEndian.Uint64(data)
	return n >= minHeader && n <= maxHeader && n <= size-8 && data[8] == '{'
}

func parseRaw(data []byte, size uint64, dt layout.DType, name string) (*File, error) {
	elem := uint64(dt.Size())
	if size%elem != 0 {
		return nil, errorf(ErrInvalid, Raw, "size %d is not a multiple of the %s element size %d", size, dt, elem)
	}
	t := Tensor{
		Name:  name,
		DType: dt,
		Shape: []uint64{size / elem},
		Size:  int64(size),
	}
	if uint64(len(data)) == size {
		t.Data = data
	}
	return &File{Kind: Raw, Prefix: data[:0], Tensors: []Tensor{t}, Size: int64(size)}, nil
}
