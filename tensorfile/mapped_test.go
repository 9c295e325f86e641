package tensorfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
)

// TestOpenMappedMatchesOpen: the header-only mapped layout of a file equals what Open parses from the whole file,
// and reading each tensor's range through the ReaderAt gives its bytes.
func TestOpenMappedMatchesOpen(t *testing.T) {
	dir := t.TempDir()
	fill := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + 1)
		}
		return b
	}
	st := buildST(t, map[string]string{"k": "v"},
		stTensor{"a", "BF16", []uint64{3, 5}, fill(30)},
		stTensor{"b", "F32", []uint64{2}, fill(8)},
		stTensor{"c", "BF16", []uint64{0}, nil})
	for _, c := range []struct {
		name string
		data []byte
		opts OpenOptions
	}{
		{"x.safetensors", st, OpenOptions{}},
		{"y.npy", buildNPY(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (4, 3), }", make([]byte, 24)), OpenOptions{DType: layout.DTypeBF16}},
		{"z.bin", make([]byte, 64), OpenOptions{DType: layout.DTypeBF16}},
	} {
		p := filepath.Join(dir, c.name)
		require.NoError(t, os.WriteFile(p, c.data, 0o644))
		full, err := Open(p, c.opts)
		require.NoError(t, err, c.name)
		m, err := OpenMapped(p, c.opts)
		require.NoError(t, err, c.name)
		require.Equal(t, full.Kind, m.Kind)
		require.Equal(t, full.Prefix, m.Prefix)
		require.Equal(t, full.Size, m.Size)
		require.Len(t, m.Tensors, len(full.Tensors))
		for i, ft := range full.Tensors {
			mt := m.Tensors[i]
			require.Nil(t, mt.Data)
			require.Equal(t, ft.Name, mt.Name)
			require.Equal(t, ft.Offset, mt.Offset)
			require.Equal(t, ft.Size, mt.Size)
			got := make([]byte, mt.Size)
			_, err := m.R.ReadAt(got, mt.Offset)
			if mt.Size > 0 {
				require.NoError(t, err)
			}
			require.Equal(t, string(ft.Data), string(got))
		}
		require.NoError(t, m.Close())
		require.NoError(t, full.Close())
	}
	// A truncated safetensors file is refused from the header alone.
	p := filepath.Join(dir, "bad.safetensors")
	require.NoError(t, os.WriteFile(p, st[:len(st)-3], 0o644))
	_, err := OpenMapped(p, OpenOptions{})
	require.ErrorIs(t, err, ErrInvalid)
}
