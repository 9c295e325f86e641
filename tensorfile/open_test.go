package tensorfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
)

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}

func TestOpen(t *testing.T) {
	st := buildST(t, map[string]string{"k": "v"},
		stTensor{"x", "BF16", []uint64{4, 2}, seq(16)},
		stTensor{"y", "U8", []uint64{3}, seq(3)},
	)
	npy := buildNPY(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (4,), }", seq(8))
	tests := []struct {
		file  string
		data  []byte
		opts  OpenOptions
		kind  Kind
		names []string
	}{
		{"m.safetensors", st, OpenOptions{}, Safetensors, []string{"x", "y"}},
		{"m.dat", st, OpenOptions{}, Safetensors, []string{"x", "y"}},
		{"m.dat", st, OpenOptions{DType: layout.DTypeBF16}, Safetensors, []string{"x", "y"}},
		{"kcache.npy", npy, OpenOptions{}, NPY, []string{"kcache"}},
		{"kcache.bin", npy, OpenOptions{DType: layout.DTypeBF16}, NPY, []string{"kcache"}},
		{"v.bin", seq(10), OpenOptions{DType: layout.DTypeBF16}, Raw, []string{"v"}},
		{"v.safetensors", st, OpenOptions{Kind: Raw, DType: layout.DTypeU8}, Raw, []string{"v"}},
		{"empty.bin", nil, OpenOptions{DType: layout.DTypeBF16}, Raw, []string{"empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			f, err := Open(writeTemp(t, tc.file, tc.data), tc.opts)
			require.NoError(t, err)
			assert.Equal(t, tc.kind, f.Kind)
			var names []string
			for _, x := range f.Tensors {
				names = append(names, x.Name)
			}
			assert.Equal(t, tc.names, names)
			checkRebuild(t, f, tc.data, false)
			require.NoError(t, f.Close())
			require.NoError(t, f.Close())
		})
	}
}

func TestOpenViews(t *testing.T) {
	in := buildST(t, nil, stTensor{"x", "BF16", []uint64{1 << 12}, seq(1 << 13)})
	f, err := Open(writeTemp(t, "a.safetensors", in), OpenOptions{})
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, in[len(in)-(1<<13):], f.Tensors[0].Data)
	assert.Equal(t, in[:len(f.Prefix)], f.Prefix)
	assert.Equal(t, int64(len(in)), f.Size)
}

func TestOpenErrors(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "missing.safetensors"), OpenOptions{})
	assert.ErrorIs(t, err, fs.ErrNotExist)

	p := writeTemp(t, "bad.safetensors", []byte("not a safetensors file"))
	_, err = Open(p, OpenOptions{})
	assert.ErrorIs(t, err, ErrInvalid)
	var e *Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, p, e.Path)
	assert.Contains(t, err.Error(), p+": invalid tensor file (safetensors)")

	_, err = Open(writeTemp(t, "bad.npy", []byte("{}")), OpenOptions{})
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, "magic")

	_, err = Open(writeTemp(t, "data.bin", seq(16)), OpenOptions{})
	assert.ErrorIs(t, err, ErrUnsupported)

	_, err = Open(writeTemp(t, "empty.bin", nil), OpenOptions{})
	assert.ErrorIs(t, err, ErrUnsupported)
}

func TestKind(t *testing.T) {
	for _, k := range []Kind{Auto, Safetensors, NPY, Raw} {
		got, ok := ParseKind(k.String())
		assert.True(t, ok)
		assert.Equal(t, k, got)
	}
	got, ok := ParseKind("SafeTensors")
	assert.True(t, ok)
	assert.Equal(t, Safetensors, got)
	_, ok = ParseKind("gguf")
	assert.False(t, ok)
	assert.Equal(t, "Kind(9)", Kind(9).String())

	_, err := Parse(nil, OpenOptions{Kind: 9})
	assert.ErrorIs(t, err, ErrUnsupported)
}

func TestErrorString(t *testing.T) {
	e := &Error{Class: ErrTooLarge, Path: "f", Detail: "d"}
	assert.Equal(t, "tensorfile: f: tensor file too large: d", e.Error())
	e = &Error{Class: ErrInvalid, Tensor: "t"}
	assert.Equal(t, `tensorfile: invalid tensor file (tensor "t")`, e.Error())
}
