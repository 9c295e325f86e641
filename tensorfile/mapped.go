package tensorfile

import (
	"encoding/binary"
	"io"
	"path/filepath"

	"golang.org/x/exp/mmap"
)

// Mapped is a tensor file read through golang.org/x/exp/mmap: its layout (Tensors with offsets, no Data views) and
// a ReaderAt over the mapping, for code that streams through tensors of any size in bounded memory (calibration)
// instead of holding them as slices.
type Mapped struct {
	*File
	R *mmap.ReaderAt
}

// OpenMapped maps path and parses its header only.
func OpenMapped(path string, opts OpenOptions) (*Mapped, error) {
	r, err := mmap.Open(path)
	if err != nil {
		return nil, withPath(errorf(ErrInvalid, Auto, "%v", err), path)
	}
	size := uint64(r.Len())
	head := make([]byte, min(size, 16))
	if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
		r.Close()
		return nil, withPath(errorf(ErrInvalid, Auto, "%v", err), path)
	}
	// Read exactly as much as the header needs (bounded by the format's own limits, checked by the parser).
	need := uint64(0)
	kind, derr := detect(head, size, filepath.Ext(path), opts.DType)
	if opts.Kind != Auto {
		kind, derr = opts.Kind, nil
	}
	switch {
	case derr != nil:
	case kind == Safetensors && len(head) >= 8:
		need = 8 + min(binary.LittleEndian.Uint64(head), maxHeader+1)
	case kind == NPY && len(head) >= 12:
		need = 10 + uint64(binary.LittleEndian.Uint16(head[8:]))
		if head[6] >= 2 {
			need = 12 + uint64(binary.LittleEndian.Uint32(head[8:]))
		}
	}
	need = min(need, size)
	if need > uint64(len(head)) {
		head = make([]byte, need)
		if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
			r.Close()
			return nil, withPath(errorf(ErrInvalid, Auto, "%v", err), path)
		}
	}
	f, err := parseSized(head, size, opts, path)
	if err != nil {
		r.Close()
		return nil, withPath(err, path)
	}
	return &Mapped{File: f, R: r}, nil
}

// Close unmaps the file.
func (m *Mapped) Close() error { return m.R.Close() }
