package codec_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/synth"
)

// Real KV data converted to each dtype: round trips, and body ratios that do not fall below what the format gave
// on this sample when it was designed (docs/FORMAT.md §13.6 has the whole-file figures); a regression in
// window choice or escape handling shows up here first.
func TestXWRealKV(t *testing.T) {
	bf, err := os.ReadFile("testdata/xw/kv-seq3-layer2-kv.bf16")
	require.NoError(t, err)
	floor := map[layout.DType]map[uint8]float64{
		layout.DTypeF8E5M2: {layout.FormatXW2: 1.24, layout.FormatXW3: 1.28, layout.FormatXW4: 1.13},
		layout.DTypeF8E4M3: {layout.FormatXW2: 1.10, layout.FormatXW3: 1.10},
		layout.DTypeF16:    {layout.FormatXW2: 1.10, layout.FormatXW3: 1.12, layout.FormatXW4: 1.06},
		layout.DTypeF32:    {layout.FormatXW2: 1.12, layout.FormatXW3: 1.16, layout.FormatXW4: 1.13},
	}
	be := codec.NewCPUBackend(2)
	ctx := context.Background()
	for dt, fs := range floor {
		src, err := synth.ConvertBF16(nil, bf, dt)
		require.NoError(t, err)
		n := uint64(len(bf) / 2)
		for f, min := range fs {
			for _, shift := range []uint{10, 14, 16} {
				x, ok := layout.NewXW(f, dt, n, shift)
				require.True(t, ok)
				max := x.MaxBodySize()
				body, err := be.EncodeXW(ctx, f, dt, src, n, shift, true, make([]byte, max))
				require.NoError(t, err)
				dst := make([]byte, len(src))
				bodyErr, err := be.DecodeXW(ctx, f, dt, body, n, shift, true, dst)
				require.NoError(t, err)
				require.NoError(t, bodyErr)
				require.Equal(t, src, dst)
				ratio := float64(len(src)) / float64(len(body))
				if shift == 14 {
					require.GreaterOrEqual(t, ratio, min, "%v %s", dt, codec.FormatName(f))
				}
				t.Logf("%v %s shift %d: %.4fx", dt, codec.FormatName(f), shift, ratio)
			}
		}
	}
}
