package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/synth"
	"github.com/vkzip/vkzip/tensorfile"
)

// A small BF16 file with metadata and a non-BF16 tensor goes through every conversion: names, shapes, order and
// the other tensor survive, BF16 data becomes exactly synth.ConvertBF16's output, the metadata gains its note.
func TestDerive(t *testing.T) {
	dir := t.TempDir()
	a := synth.KVLike(24, 1)
	b := []byte{1, 2, 3, 4}
	hdr := fmt.Sprintf(`{"__metadata__":{"model":"x"},"a":{"dtype":"BF16","shape":[2,3,4],"data_offsets":[0,%d]},`+
		`"b":{"dtype":"I8","shape":[4],"data_offsets":[%d,%d]}}`, len(a), len(a), len(a)+len(b))
	for len(hdr)%8 != 0 {
		hdr += " "
	}
	in := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	in = append(append(append(in, hdr...), a...), b...)
	inPath := filepath.Join(dir, "in.safetensors")
	require.NoError(t, os.WriteFile(inPath, in, 0o644))
	for _, to := range []layout.DType{layout.DTypeF8E5M2, layout.DTypeF8E4M3, layout.DTypeF16, layout.DTypeF32} {
		out := filepath.Join(dir, to.String()+".safetensors")
		require.NoError(t, derive(inPath, out, to.String()))
		f, err := tensorfile.Open(out, tensorfile.OpenOptions{})
		require.NoError(t, err)
		require.Len(t, f.Tensors, 2)
		require.Equal(t, "a", f.Tensors[0].Name)
		require.Equal(t, to, f.Tensors[0].DType)
		require.Equal(t, []uint64{2, 3, 4}, f.Tensors[0].Shape)
		want, err := synth.ConvertBF16(nil, a, to)
		require.NoError(t, err)
		require.Equal(t, want, f.Tensors[0].Data)
		require.Equal(t, "b", f.Tensors[1].Name)
		require.Equal(t, b, f.Tensors[1].Data)
		require.Equal(t, "x", f.Metadata["model"])
		require.True(t, strings.Contains(f.Metadata["vkzip_derivation"], to.String()))
		require.NoError(t, f.Close())
	}
	require.Error(t, derive(inPath, filepath.Join(dir, "x"), "BF16"))
	require.Error(t, derive(inPath, filepath.Join(dir, "x"), "F9"))
}
