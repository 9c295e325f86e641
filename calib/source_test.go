package calib

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/tensorfile"
)

type tensor struct {
	name, dtype string
	data        []byte
}

// writeSafetensors writes 1-D tensors to a new safetensors file in a temporary directory.
func writeSafetensors(t *testing.T, tensors ...tensor) string {
	t.Helper()
	var hdr strings.Builder
	hdr.WriteString(`{"__metadata__":{"k":"v"}`)
	off := 0
	var data []byte
	for _, x := range tensors {
		size := map[string]int{"BF16": 2, "F32": 4, "U8": 1}[x.dtype]
		fmt.Fprintf(&hdr, `,%q:{"dtype":%q,"shape":[%d],"data_offsets":[%d,%d]}`, x.name, x.dtype, len(x.data)/size, off, off+len(x.data))
		off += len(x.data)
		data = append(data, x.data...)
	}
	hdr.WriteString("}")
	for hdr.Len()%8 != 0 {
		hdr.WriteByte(' ')
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(hdr.Len()))
	b = append(append(b, hdr.String()...), data...)
	return writeFile(t, "t.safetensors", b)
}

func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

func npy(descr string, data []byte) []byte {
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }", descr, len(data)/2)
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	b := binary.LittleEndian.AppendUint16([]byte("\x93NUMPY\x01\x00"), uint16(len(h)))
	return append(append(b, h...), data...)
}

func TestFromFileSafetensors(t *testing.T) {
	k := values(127, 127, 126, 3)
	v := values(127, 200)
	p := writeSafetensors(t,
		tensor{"k", "BF16", k},
		tensor{"skip", "F32", values(1, 2, 3, 4)}, // not BF16: its bytes must not be counted
		tensor{"v", "BF16", v},
		tensor{"u", "U8", []byte{1, 2, 3}},
	)
	h, err := FromFile(p, tensorfile.OpenOptions{})
	require.NoError(t, err)
	assert.Equal(t, Histogram{127: 3, 126: 1, 3: 1, 200: 1}, h)

	cb, st := Calibrate(h)
	assert.Equal(t, uint8(127), cb[0])
	assert.Equal(t, 1.0, st.Coverage)
}

func TestFromFileArrays(t *testing.T) {
	data := values(10, 10, 11, 12)
	want := Histogram{10: 2, 11: 1, 12: 1}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"k.npy", npy("<u2", data)},
		{"k2.npy", npy("|V2", data)},
		{"k.bin", data},
	} {
		h, err := FromFile(writeFile(t, tc.name, tc.b), tensorfile.OpenOptions{})
		require.NoError(t, err, tc.name)
		assert.Equal(t, want, h, tc.name)
	}
}

func TestFromFileErrors(t *testing.T) {
	p := writeSafetensors(t, tensor{"x", "F32", values(1, 2)})
	_, err := FromFile(p, tensorfile.OpenOptions{})
	assert.ErrorIs(t, err, ErrNoBF16)
	assert.ErrorContains(t, err, "none of the 1 tensors")

	// An F16 array is not read as BF16 implicitly.
	_, err = FromFile(writeFile(t, "h.npy", npy("<f2", values(1, 2))), tensorfile.OpenOptions{})
	assert.ErrorIs(t, err, tensorfile.ErrUnsupported)

	_, err = FromFile(writeFile(t, "odd.bin", []byte{1, 2, 3}), tensorfile.OpenOptions{})
	assert.ErrorIs(t, err, tensorfile.ErrInvalid)

	f, err := tensorfile.Parse(npy("<u2", values(1)), tensorfile.OpenOptions{})
	require.NoError(t, err)
	_, err = FromTensors(f)
	assert.ErrorIs(t, err, ErrNoBF16)
	assert.ErrorContains(t, err, "force BF16")
}
