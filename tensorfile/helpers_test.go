package tensorfile

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stTensor is a tensor for buildST.
type stTensor struct {
	name  string
	dtype string
	shape []uint64
	data  []byte
}

// buildST writes a safetensors file the way the reference writer does: tensors in the given order, header JSON
// padded with spaces to a multiple of 8.
func buildST(t testing.TB, meta map[string]string, tensors ...stTensor) []byte {
	t.Helper()
	var hdr bytes.Buffer
	hdr.WriteByte('{')
	first := true
	sep := func() {
		if !first {
			hdr.WriteByte(',')
		}
		first = false
	}
	if meta != nil {
		sep()
		m, err := json.Marshal(meta)
		require.NoError(t, err)
		fmt.Fprintf(&hdr, "%q:%s", metadataKey, m)
	}
	var off int
	var data []byte
	for _, x := range tensors {
		sep()
		name, err := json.Marshal(x.name)
		require.NoError(t, err)
		shape, err := json.Marshal(x.shape)
		require.NoError(t, err)
		if x.shape == nil {
			shape = []byte("[]")
		}
		fmt.Fprintf(&hdr, `%s:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, name, x.dtype, shape, off, off+len(x.data))
		off += len(x.data)
		data = append(data, x.data...)
	}
	hdr.WriteByte('}')
	for hdr.Len()%8 != 0 {
		hdr.WriteByte(' ')
	}
	return rawST(hdr.String(), data)
}

// rawST assembles a safetensors file from a literal header and data.
func rawST(header string, data []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	return append(out, data...)
}

// buildNPY writes an npy file of the given version with a literal header dict, padded as NumPy pads it.
func buildNPY(major byte, dict string, data []byte) []byte {
	pre := 10
	if major > 1 {
		pre = 12
	}
	h := dict
	for (pre+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	out := append([]byte("\x93NUMPY"), major, 0)
	if major == 1 {
		out = binary.LittleEndian.AppendUint16(out, uint16(len(h)))
	} else {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(h)))
	}
	out = append(out, h...)
	return append(out, data...)
}

// seq returns n bytes 0, 1, 2, ...
func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// checkRebuild asserts the invariants of a parsed file: tensors contiguous in order from the end of Prefix, and
// Prefix + data == input; with views, also that Data are views into input rather than copies.
func checkRebuild(t testing.TB, f *File, input []byte, views bool) {
	t.Helper()
	var buf bytes.Buffer
	n, err := f.WriteTo(&buf)
	if err != nil || n != int64(len(input)) || !bytes.Equal(buf.Bytes(), input) {
		t.Fatalf("rebuilt file differs from the input (n=%d, err=%v)", n, err)
	}
	if f.Size != int64(len(input)) {
		t.Fatalf("Size %d, input %d", f.Size, len(input))
	}
	pos := int64(len(f.Prefix))
	for i, x := range f.Tensors {
		if x.Offset != pos || x.Size != int64(len(x.Data)) {
			t.Fatalf("tensor %d %q: offset %d size %d len %d, want offset %d", i, x.Name, x.Offset, x.Size, len(x.Data), pos)
		}
		if views && x.Size > 0 && &x.Data[0] != &input[x.Offset] {
			t.Fatalf("tensor %d %q: Data is not a view into the input", i, x.Name)
		}
		pos += x.Size
	}
}

// checkClass asserts that err wraps exactly one of the package's classes and is an *Error.
func checkClass(t testing.TB, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *tensorfile.Error", err, err)
	}
	n := 0
	for _, c := range []error{ErrInvalid, ErrUnsupported, ErrTooLarge} {
		if errors.Is(err, c) {
			n++
		}
	}
	if n != 1 || strings.TrimSpace(e.Detail) == "" {
		t.Fatalf("error %v wraps %d classes or has no detail", err, n)
	}
}
