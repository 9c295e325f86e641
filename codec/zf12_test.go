package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/internal/spec"
)

func zf12Encode(t testing.TB, src []byte, shift uint, checksums bool) []byte {
	t.Helper()
	n := uint64(len(src) / 2)
	jobs := []EncodeJob{{Format: layout.FormatZF12, Src: src, N: n, Shift: shift, Checksums: checksums,
		Dst: make([]byte, layout.ZF12{N: n, Shift: shift}.MaxBodySize())}}
	require.NoError(t, NewCPUBackend(3).Encode(context.Background(), jobs))
	return jobs[0].Out
}

func zf12Decode(t testing.TB, body []byte, n uint64, shift uint, checksums bool) ([]byte, error) {
	t.Helper()
	jobs := []DecodeJob{{Name: "t", Format: layout.FormatZF12, Body: body, N: n, Shift: shift, Checksums: checksums,
		Dst: make([]byte, 2*n)}}
	require.NoError(t, NewCPUBackend(3).Decode(context.Background(), jobs))
	return jobs[0].Dst, jobs[0].Err
}

// zf12Mix is KV-like data with runs of blocks whose exponents spread wider than a coded block allows.
func zf12Mix(r *rand.Rand, n int, wide float64) []byte {
	b := kvLike(r, n, 0)
	for blk := 0; blk*512 < n; blk++ {
		if r.Float64() < wide {
			i := blk*512 + r.IntN(min(512, n-blk*512))
			v := binary.LittleEndian.Uint16(b[2*i:])
			binary.LittleEndian.PutUint16(b[2*i:], v&^(0xFF<<7)|uint16(20+r.IntN(40))<<7)
		}
	}
	return b
}

func TestZF12MatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 1))
	all := make([]byte, 2*65536)
	for v := 0; v < 65536; v++ {
		binary.LittleEndian.PutUint16(all[2*v:], uint16(v))
	}
	inputs := map[string][]byte{"allpatterns": all, "kv": kvLike(r, 70001, 0), "mix": zf12Mix(r, 40000, 0.3),
		"odd": zf12Mix(r, 1537, 0.5), "tiny": kvLike(r, 3, 0), "one": kvLike(r, 1, 0)}
	for name, src := range inputs {
		for _, shift := range []uint{10, 11, 13, 16} {
			for _, crc := range []bool{false, true} {
				n := uint64(len(src) / 2)
				got := zf12Encode(t, src, shift, crc)
				require.Equal(t, spec.ZF12Encode(src, shift, crc), got, "%s shift %d crc %v", name, shift, crc)
				out, err := zf12Decode(t, got, n, shift, crc)
				require.NoError(t, err, name)
				require.True(t, bytes.Equal(src, out), "%s shift %d: round trip", name, shift)
			}
		}
	}
}

// TestZF12BlockRule checks the coded/raw boundary: fields spanning 7 are coded, 8 raw, whatever the parity of
// the smallest exponent (the base is it rounded down to even: an odd minimum exponent still spans 15 above it).
func TestZF12BlockRule(t *testing.T) {
	for _, tc := range []struct {
		lo, hi uint16 // exponents
		coded  bool
	}{
		{120, 135, true}, {121, 135, true}, {120, 136, false}, {121, 136, false}, {0, 15, true}, {0, 16, false},
		{240, 255, true}, {239, 255, false}, {254, 255, true}, {7, 7, true},
	} {
		src := make([]byte, 2*600)
		for i := 0; i < 600; i++ {
			e := tc.lo
			if i%3 == 1 {
				e = tc.hi
			}
			binary.LittleEndian.PutUint16(src[2*i:], uint16(i%2)<<15|e<<7|uint16(i%128))
		}
		body := zf12Encode(t, src, 10, true)
		z := layout.ZF12{N: 600, Shift: 10}
		h := body[z.HeaderOffset()]
		require.Equal(t, tc.coded, h != layout.ZF12RawHeader, "exponents %d..%d", tc.lo, tc.hi)
		if tc.coded {
			require.Equal(t, uint8(tc.lo>>1), h)
		}
		out, err := zf12Decode(t, body, 600, 10, true)
		require.NoError(t, err)
		require.Equal(t, src, out)
	}
}

// TestZF12InvalidClasses edits valid bodies by hand and checks the class and chunk the decoder reports, and the
// precedence: structure, then checksums, then canonical form.
func TestZF12InvalidClasses(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 2))
	// 3 chunks of 1024 values and a last one of 699: block 1 raw, the rest coded (chunk 3's second block of 187
	// values is raw too, to exercise a short raw block of odd length).
	src := kvLike(r, 3*1024+699, 0)
	put := func(i int, e uint16) {
		v := binary.LittleEndian.Uint16(src[2*i:])
		binary.LittleEndian.PutUint16(src[2*i:], v&^(0xFF<<7)|e<<7)
	}
	put(600, 30)
	put(3*1024+600, 31)
	for i := 1024; i < 1024+512; i++ {
		put(i, uint16(120+i%6)) // chunk 1's first block spans 3 fields: room to recode it with a lower base
	}
	const n, shift = 3*1024 + 699, 10
	z := layout.ZF12{N: n, Shift: shift}
	base := map[bool][]byte{false: zf12Encode(t, src, shift, false), true: zf12Encode(t, src, shift, true)}
	ch, err := zf12Chunks(base[true], layout.DTypeBF16, n, shift)
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 0, 0, 1}, []uint64{ch[0].RawBlocks, ch[1].RawBlocks, ch[2].RawBlocks, ch[3].RawBlocks})
	entry := func(c int, w int) int { return int(z.TableOffset()) + 12*c + 4*w }
	head := func(c, b int) int { return int(z.HeaderOffset()+uint64(c)*z.HeaderPiece()) + b }
	u32 := func(b []byte, at int, v uint32) { binary.LittleEndian.PutUint32(b[at:], v) }
	fixCRC := func(b []byte) {
		g := newZF12Geom(n, shift)
		for c := uint64(0); c < g.Chunks(); c++ {
			hl, hh := g.headPiece(c)
			u32(b, entry(int(c), 2), zf12CRCOf(b, &g, c, zf12SideSize(b[hl:hh], g.ChunkLen(c))))
		}
	}
	// lowerBase recodes chunk 1's first block (coded) with its base one lower and every offset one higher: the
	// same values, but a base that is not the block's smallest field.
	lowerBase := func(b []byte) []byte {
		b[head(1, 0)]--
		for i := 1024; i < 1024+512; i++ {
			at, sh := i/2, uint(4*(i&1))
			nb := b[at] >> sh & 15
			require.Less(t, nb&7, uint8(7), "the test needs a block whose fields span less than 7")
			b[at] = b[at]&^(15<<sh) | (nb&8|(nb&7+1))<<sh
		}
		return b
	}
	for _, tc := range []struct {
		name  string
		crc   bool
		edit  func(b []byte) []byte
		cls   error
		chunk int64
	}{
		{"kind bits", false, func(b []byte) []byte { b[entry(1, 0)+3] = 1; return b }, ErrCorrupt, 1},
		{"raw count high", true, func(b []byte) []byte { u32(b, entry(2, 0), 1); return b }, ErrCorrupt, 2},
		{"header 0x80", true, func(b []byte) []byte { b[head(2, 1)] = 0x80; return b }, ErrCorrupt, 2},
		{"header raw without count", true, func(b []byte) []byte { b[head(1, 0)] = 0xFF; return b }, ErrCorrupt, 1},
		{"side offset", true, func(b []byte) []byte { u32(b, entry(2, 1), 4); return b }, ErrCorrupt, 2},
		{"body long", false, func(b []byte) []byte { return append(b, 0, 0, 0, 0) }, ErrCorrupt, -1},
		{"body short", false, func(b []byte) []byte { return b[:len(b)-4] }, ErrCorrupt, 3},
		{"structure before checksum", true, func(b []byte) []byte {
			b[10] ^= 1 // chunk 0's codes
			b[entry(3, 0)+3] = 2
			return b
		}, ErrCorrupt, 3},
		{"low byte flip", true, func(b []byte) []byte { b[int(z.CodeBytes())+2000] ^= 4; return b }, ErrChecksum, 1},
		{"header flip within bases", true, func(b []byte) []byte { b[head(2, 0)] ^= 1; return b }, ErrChecksum, 2},
		{"side flip", true, func(b []byte) []byte { b[len(b)-1] ^= 0x10; return b }, ErrChecksum, 3},
		{"checksum before canonical", true, func(b []byte) []byte {
			b[head(0, 2)] = 1 // padding header: non-canonical in chunk 0 (its CRC fixed)
			fixCRC(b)
			b[int(z.CodeBytes())+2100] ^= 1
			return b
		}, ErrChecksum, 2},
		{"crc without checksums", false, func(b []byte) []byte { u32(b, entry(2, 2), 7); return b }, ErrNonCanonical, 2},
		{"field past 127", false, func(b []byte) []byte { b[head(2, 0)] = 125; return b }, ErrNonCanonical, 2},
		{"base not the minimum", false, lowerBase, ErrNonCanonical, 1},
		{"base not the minimum (crc fixed)", true, func(b []byte) []byte { b = lowerBase(b); fixCRC(b); return b },
			ErrNonCanonical, 1},
		{"raw block that fits", false, func(b []byte) []byte {
			// Recode chunk 1's first block raw: its headers, count, side and nibbles as a raw block would have them.
			out := zf12RecodeRaw(t, b, src, n, shift, 1024)
			return out
		}, ErrNonCanonical, 1},
		{"header padding", false, func(b []byte) []byte { b[head(3, 3)] = 9; return b }, ErrNonCanonical, 3},
		{"code padding nibble", false, func(b []byte) []byte { b[(n-1)/2] |= 0x10; return b }, ErrNonCanonical, 3},
		{"code padding byte", false, func(b []byte) []byte { b[z.CodeBytes()-1] = 1; return b }, ErrNonCanonical, 3},
		{"low padding", false, func(b []byte) []byte { b[int(z.CodeBytes()+n)] = 1; return b }, ErrNonCanonical, 3},
		{"side padding", false, func(b []byte) []byte { b[len(b)-1] |= 0x80; return b }, ErrNonCanonical, 3},
	} {
		b := tc.edit(append([]byte(nil), base[tc.crc]...))
		_, err := zf12Decode(t, b, n, shift, tc.crc)
		if tc.cls == nil {
			require.NoError(t, err, tc.name)
			continue
		}
		require.ErrorIs(t, err, tc.cls, tc.name)
		require.Equal(t, tc.chunk, err.(*Error).Chunk, "%s: %v", tc.name, err)
		require.Equal(t, "t", err.(*Error).Tensor, tc.name)
	}
}

// zf12RecodeRaw rewrites the block starting at value v0 (a coded one, in a chunk whose other blocks are coded) as
// a raw block: a body that decodes to the same values but is not canonical.
func zf12RecodeRaw(t *testing.T, b, src []byte, n uint64, shift uint, v0 int) []byte {
	g := newZF12Geom(n, shift)
	c := uint64(v0) >> shift
	hl, _ := g.headPiece(c)
	blk := (uint64(v0) - c<<shift) / layout.ZF12Block
	require.NotEqual(t, uint8(layout.ZF12RawHeader), b[hl+blk])
	require.Equal(t, uint32(0), binary.LittleEndian.Uint32(b[g.table+c*12:]))
	b[hl+blk] = layout.ZF12RawHeader
	binary.LittleEndian.PutUint32(b[g.table+c*12:], 1)
	side := make([]byte, 256)
	for i := 0; i < 512; i++ {
		h := src[2*(v0+i)+1]
		at, sh := (v0+i)/2, uint(4*((v0+i)&1))
		b[at] = b[at]&^(15<<sh) | (h&15)<<sh
		side[i/2] |= (h >> 4) << (4 * (i & 1))
	}
	so := binary.LittleEndian.Uint32(b[g.table+c*12+4:])
	at := int(g.side) + int(so)
	out := append(append(append([]byte(nil), b[:at]...), side...), b[at:]...)
	for d := c + 1; d < g.Chunks(); d++ {
		e := out[g.table+d*12+4:]
		binary.LittleEndian.PutUint32(e, binary.LittleEndian.Uint32(e)+256)
	}
	return out
}

func TestZF12Containers(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 3))
	src := zf12Mix(r, 50001, 0.1)
	for _, crc := range []bool{true, false} {
		c := newCPU(t, WithFormat("zf12"), WithChunkSize(4096), WithChecksums(crc))
		p, err := c.EncodeAll(src, nil)
		require.NoError(t, err)
		info, err := Inspect(p)
		require.NoError(t, err)
		rec := info.Containers[0].Records[0]
		require.Equal(t, "zf12", rec.Format)
		require.Nil(t, rec.Codebook)
		require.Empty(t, info.Containers[0].Codebooks, "zf12 needs no codebook")
		require.Equal(t, uint64(13), rec.Chunks)
		require.Equal(t, []MixCount{{Format: "zf12", Kind: "coded", Chunks: 13}}, rec.Mix)
		require.NotZero(t, rec.RawBlocks)
		out, err := c.DecodeAll(p, nil)
		require.NoError(t, err)
		require.Equal(t, src, out)
		// The stream writer frames zf12 too.
		var w sliceWriter
		sw, err := c.NewWriter(context.Background(), &w, 30000)
		require.NoError(t, err)
		_, err = sw.Write(src)
		require.NoError(t, err)
		require.NoError(t, sw.Close())
		back, err := c.DecodeAll(w.b, nil)
		require.NoError(t, err)
		require.Equal(t, src, back)
	}
	// A zf12 record that references a codebook is not canonical.
	z := layout.ZF12{N: 4, Shift: 10}
	p := craft([]Codebook{goldenCodebook}, []ParsedRecord{{Name: "x", DType: layout.DTypeBF16, Format: layout.FormatZF12,
		Shift: 10, Codebook: 0, Shape: []uint64{4}, Elements: 4, BodyLen: z.MinBodySize()}}, make([]byte, 64))
	_, err := ParseHeader(p)
	require.ErrorIs(t, err, ErrNonCanonical)
}

func TestZF12EveryBitFlipDetected(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 4))
	src := zf12Mix(r, 2500, 0.4)
	c := newCPU(t, WithFormat("zf12"), WithChunkSize(1024))
	enc, err := c.EncodeAll(src, nil)
	require.NoError(t, err)
	bad := make([]byte, len(enc))
	for bit := 0; bit < 8*len(enc); bit += flipStride {
		copy(bad, enc)
		bad[bit/8] ^= 1 << (bit % 8)
		_, err := c.DecodeAll(bad, nil)
		require.Error(t, err, "flip of bit %d undetected", bit)
		var e *Error
		require.True(t, errors.As(err, &e), "bit %d: untyped error %v", bit, err)
	}
	for n := 0; n < len(enc); n++ {
		_, err := c.DecodeAll(enc[:n], nil)
		require.Error(t, err, "truncation to %d accepted", n)
	}
}

// FuzzZF12Body drives the zf12 body decoder directly: arbitrary bodies must give nil or a typed error, never a
// panic, and a body that decodes must be the one the encoder produces for the decoded values.
func FuzzZF12Body(f *testing.F) {
	for _, n := range []int{1, 7, 1024, 3000} {
		src := zf12Mix(rand.New(rand.NewPCG(uint64(n), 12)), n, 0.5)
		f.Add(zf12Encode(f, src, 10, n%2 == 0), uint32(n), n%2 == 0)
	}
	f.Fuzz(func(t *testing.T, body []byte, n32 uint32, checksums bool) {
		n := uint64(n32 % 100000)
		z := layout.ZF12{N: n, Shift: 10}
		if n == 0 || uint64(len(body)) < z.MinBodySize() || uint64(len(body)) > z.MaxBodySize() || len(body)%4 != 0 {
			return // the container parser rejects these before a backend sees them
		}
		out, err := zf12Decode(t, body, n, 10, checksums)
		if err != nil {
			var e *Error
			require.True(t, errors.As(err, &e), "untyped error %v", err)
			return
		}
		// bytes.Equal, not require.Equal: testify's diff of two large bodies takes minutes.
		if again := zf12Encode(t, out, 10, checksums); !bytes.Equal(body, again) {
			i := 0
			for i < min(len(body), len(again)) && body[i] == again[i] {
				i++
			}
			t.Fatalf("a body that decodes is not the canonical one: %d bytes, canonical %d, first difference at %d",
				len(body), len(again), i)
		}
	})
}
