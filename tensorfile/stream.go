package tensorfile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"math"
)

// ReadHeader reads the header of a tensor file from r, positioned at the file's first byte, and leaves r at the
// first byte of the data section: the tensors' data follows in r in the order of the returned File's Tensors,
// contiguous, so that Prefix followed by the next Size bytes of r is the file. Only the header is read (at most
// the format's own header limit: 100 MB of safetensors JSON), so a file of any size is described in memory
// proportional to its header; the Tensors have no Data.
//
// size is the file's length when known (a regular file) or -1 (a pipe). Unknown, a safetensors or npy file takes
// its length from its header, and a raw file's one tensor has Size -1 and no Shape: its data is whatever r holds
// up to its end, and File.Size is -1. The caller reads the data and checks that r ends where the header says.
// path (may be "") serves format detection by extension and names npy and raw tensors, as for Open.
func ReadHeader(r *bufio.Reader, size int64, path string, opts OpenOptions) (*File, error) {
	f, err := readHeader(r, size, path, opts)
	if err != nil && path != "" {
		return nil, withPath(err, path)
	}
	return f, err
}

func readHeader(r *bufio.Reader, size int64, path string, opts OpenOptions) (*File, error) {
	if opts.DType != 0 && !opts.DType.Valid() {
		return nil, errorf(ErrUnsupported, Auto, "forced dtype id %d is not defined", opts.DType)
	}
	// Detection looks at the first bytes only; an unknown size passes every size check.
	dsize := uint64(math.MaxUint64)
	if size >= 0 {
		dsize = uint64(size)
	}
	head, err := r.Peek(16)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	kind, name, err := kindAndName(head, min(dsize, math.MaxInt64), path, opts)
	if err != nil {
		return nil, err
	}
	switch kind {
	case Safetensors:
		return readSafetensorsHeader(r, head, size)
	case NPY:
		return readNPYHeader(r, head, size, opts, name)
	case Raw:
		if size >= 0 {
			return parseRaw(nil, uint64(size), opts.DType, name)
		}
		if opts.DType == 0 && opts.Kind != Raw {
			return nil, errorf(ErrUnsupported, Raw, "a raw array needs a forced dtype")
		}
		return &File{Kind: Raw, Tensors: []Tensor{{Name: name, DType: opts.DType, Size: -1}}, Size: -1}, nil
	}
	return nil, errorf(ErrUnsupported, Auto, "unknown file kind %d", kind)
}

// readPrefix reads the first n bytes of the file (the header) from r.
func readPrefix(r io.Reader, n uint64, kind Kind) ([]byte, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errorf(ErrInvalid, kind, "the input ends inside the %d-byte header", n)
		}
		return nil, err
	}
	return b, nil
}

func readSafetensorsHeader(r *bufio.Reader, head []byte, size int64) (*File, error) {
	if len(head) < 8 {
		return nil, errorf(ErrInvalid, Safetensors, "%d bytes is too short for the 8-byte header length", len(head))
	}
	n := binary.LittleEndian.Uint64(head)
	switch {
	case n > maxHeader:
		return nil, errorf(ErrTooLarge, Safetensors, "header length %d exceeds the limit of %d", n, maxHeader)
	case size >= 0 && n > uint64(size)-8:
		return nil, errorf(ErrInvalid, Safetensors, "header length %d exceeds the %d bytes after it", n, size-8)
	}
	prefix, err := readPrefix(r, 8+n, Safetensors)
	if err != nil {
		return nil, err
	}
	if size >= 0 {
		return parseSafetensors(prefix, uint64(size))
	}
	// The data section ends where the last tensor ends; parseSafetensors then checks the layout against it.
	total := uint64(len(prefix))
	if n >= minHeader && prefix[8] == '{' {
		if entries, _, err := decodeHeader(prefix[8:]); err == nil {
			for _, e := range entries {
				if e.end <= math.MaxInt64-total {
					total = max(total, 8+n+e.end)
				}
			}
		}
	}
	return parseSafetensors(prefix, total)
}

func readNPYHeader(r *bufio.Reader, head []byte, size int64, opts OpenOptions, name string) (*File, error) {
	if len(head) < 10 {
		return nil, errorf(ErrInvalid, NPY, "the input ends inside the npy preamble")
	}
	need := 10 + uint64(binary.LittleEndian.Uint16(head[8:]))
	if head[6] >= 2 {
		if len(head) < 12 {
			return nil, errorf(ErrInvalid, NPY, "the input ends inside the npy preamble")
		}
		need = 12 + uint64(binary.LittleEndian.Uint32(head[8:]))
	}
	if need > maxHeader {
		return nil, errorf(ErrTooLarge, NPY, "header of %d bytes", need)
	}
	if size >= 0 && need > uint64(size) {
		return nil, errorf(ErrInvalid, NPY, "header of %d bytes in a file of %d", need, size)
	}
	prefix, err := readPrefix(r, need, NPY)
	if err != nil {
		return nil, err
	}
	if size >= 0 {
		return parseNPY(prefix, uint64(size), opts.DType, name)
	}
	// The data size follows from the header's shape and descr; parseNPY checks the header in full against it.
	total := uint64(len(prefix))
	start := 10
	if prefix[6] >= 2 {
		start = 12
	}
	if hdr := prefix[start:]; len(hdr) > 0 && hdr[len(hdr)-1] == '\n' {
		if h, err := parseNPYHeader(hdr[:len(hdr)-1]); err == nil {
			if _, elem, err := npyDType(h.descr, opts.DType); err == nil {
				if nbytes, ok := byteSize(h.shape, uint64(elem)); ok && nbytes <= math.MaxInt64-total {
					total += nbytes
				}
			}
		}
	}
	return parseNPY(prefix, total, opts.DType, name)
}
