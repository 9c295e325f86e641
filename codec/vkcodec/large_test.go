package vkcodec

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/synth"
)

// TestLargeTensor encodes and decodes one tensor larger than a storage-buffer binding (lavapipe binds at most
// 128 MiB, the H200 4 GiB - 1 and allocates at most 4094 MiB), so it is split into segments and dispatches.
// VKZIP_LARGE_MIB sets the size (default 256; the H200 run uses 4608).
func TestLargeTensor(t *testing.T) {
	mib := 256
	s := os.Getenv("VKZIP_LARGE_MIB")
	if s != "" {
		var err error
		mib, err = strconv.Atoi(s)
		require.NoError(t, err)
	}
	if testing.Short() {
		t.Skip("large tensor test skipped in -short mode")
	}
	vb := openTest(t, Options{})
	n := uint64(mib) << 19
	shift := uint(layout.DefaultChunkShift)
	g := layout.SZ4{N: n, Shift: shift}
	if limit := uint64(vb.Info().Limits.MaxStorageBufferRange); 2*n <= limit/2 {
		if s == "" {
			// The default suits lavapipe's 128 MiB bindings; a GPU needs the size said (the H200: 4608).
			t.Skipf("the default %d MiB does not exceed this device's binding of %d MiB: set VKZIP_LARGE_MIB", mib, limit>>20)
		}
		require.Fail(t, "not larger than a binding", "VKZIP_LARGE_MIB=%d, binding %d MiB", mib, limit>>20)
	}
	cb := synth.KVCodebook()
	src := synth.Mixed(int(n), 11, 0.0005, &cb)
	mk := func() []codec.EncodeJob {
		return []codec.EncodeJob{{Format: layout.FormatSplitZip4, Src: src, N: n, Shift: shift, Codebook: &cb,
			Checksums: true, Dst: make([]byte, g.MaxBodySize())}}
	}
	ctx := context.Background()
	want, got := mk(), mk()
	require.NoError(t, codec.NewCPUBackend(0).Encode(ctx, want))
	require.NoError(t, vb.Encode(ctx, got))
	require.Equal(t, len(want[0].Out), len(got[0].Out))
	require.True(t, string(want[0].Out) == string(got[0].Out), "bodies differ at %d", firstDiff(want[0].Out, got[0].Out))
	want[0].Dst, got[0].Dst = nil, nil
	dec := []codec.DecodeJob{{Format: layout.FormatSplitZip4, Body: got[0].Out, N: n, Shift: shift, Codebook: &cb,
		Checksums: true, Dst: make([]byte, 2*n)}}
	require.NoError(t, vb.Decode(ctx, dec))
	require.NoError(t, dec[0].Err)
	require.True(t, string(dec[0].Dst) == string(src), "decoded values differ at %d", firstDiff(dec[0].Dst, src))
	t.Logf("%d MiB tensor: %d segments of at most %d chunks", mib, (g.Chunks()+vb.segChunks(shift)-1)/vb.segChunks(shift), vb.segChunks(shift))
}
