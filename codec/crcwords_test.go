package codec

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
)

// TestCRCWords: each format's checksum words (docs/FORMAT.md §4.4) are its chunk table's crc words in chunk order
// (auto: each entry's crc, then its piece's), checked against the table read by hand; and CRCWords never panics on
// a truncated or garbage body.
func TestCRCWords(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, f := range Formats() {
		if f.ID == layout.FormatStored {
			continue
		}
		require.NotNil(t, f.CRCWords, "%s has no CRCWords", f.Name)
		d := f.DTypeList()[0]
		n := uint64(5000)
		src := kvLike(r, int(n), 0.02)
		if d != layout.DTypeBF16 {
			src = src[:n*uint64(d.Size())]
			if uint64(len(src)) < n*uint64(d.Size()) {
				src = append(src, kvLike(r, int(n), 0.02)...)[:n*uint64(d.Size())]
			}
		}
		shift := uint(max(10, f.MinShift))
		cb := goldenCodebook
		jobs := []EncodeJob{{Format: f.ID, DType: d, Src: src, N: n, Shift: shift, Codebook: &cb, Checksums: true,
			Dst: make([]byte, f.MaxBodyOf(n, d, shift))}}
		require.NoError(t, NewCPUBackend(1).Encode(context.Background(), jobs), f.Name)
		body := jobs[0].Out
		words, err := f.CRCWords(body, d, n, shift, nil)
		require.NoError(t, err, f.Name)
		var want []uint32
		if f.ID == layout.FormatAuto {
			ps, err := autoCheck(body, n, shift, d)
			require.NoError(t, err)
			for _, p := range ps {
				want = append(want, p.crc)
				in, err := p.f.Chunks(p.body, d, autoGeom{N: n, Shift: shift}.ChunkLen(uint64(len(want)/2)), shift)
				require.NoError(t, err)
				require.Len(t, in, 1)
				want = append(want, in[0].CRC)
			}
		} else {
			chunks, err := f.Chunks(body, d, n, shift)
			require.NoError(t, err)
			for _, c := range chunks {
				want = append(want, c.CRC)
			}
		}
		require.Equal(t, want, words, f.Name)
		for _, w := range words {
			require.NotZero(t, w, "%s: a checksum word of 0 with checksums on", f.Name)
		}
		for k := 0; k < 200; k++ {
			bad := append([]byte(nil), body[:r.IntN(len(body)+1)]...)
			if k%2 == 1 {
				for i := range bad {
					bad[i] = byte(r.Uint32())
				}
				if len(bad) >= 16 {
					binary.LittleEndian.PutUint32(bad[4:], r.Uint32()%64)
				}
			}
			_, _ = f.CRCWords(bad, d, n, shift, nil) // must not panic
		}
	}
}
