package codec

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
)

// autoMix is data whose chunks prefer different formats: 's' chunks of the codebook's exponents spread wider than
// a zf12 block allows (SplitZip-4), 'z' chunks of 16 exponents the codebook lacks within one zf12 block range (zf12;
// a 7-exponent window leaves most of them out), 't' chunks of 6 such exponents (TBE-3: one window holds them all).
func autoMix(r *rand.Rand, n, chunk int, pattern string, cb *Codebook) []byte {
	b := kvLike(r, n, 0.0005)
	for i := 0; i < n; i++ {
		v := binary.LittleEndian.Uint16(b[2*i:])
		e := uint16(cb[r.IntN(16)])
		switch pattern[(i/chunk)%len(pattern)] {
		case 'z':
			e = uint16(60 + r.IntN(16))
		case 't':
			e = uint16(60 + r.IntN(6))
		}
		if (v>>7)&0xFF >= 100 {
			binary.LittleEndian.PutUint16(b[2*i:], v&^(0xFF<<7)|e<<7)
		}
	}
	return b
}

func autoEncode(t testing.TB, src []byte, shift uint, checksums bool, cb *Codebook) []byte {
	t.Helper()
	n := uint64(len(src) / 2)
	f, _ := LookupFormat(layout.FormatAuto)
	jobs := []EncodeJob{{Format: layout.FormatAuto, Src: src, N: n, Shift: shift, Codebook: cb, Checksums: checksums,
		Dst: make([]byte, f.MaxBodyOf(n, layout.DTypeBF16, shift))}}
	require.NoError(t, NewCPUBackend(3).Encode(context.Background(), jobs))
	return jobs[0].Out
}

func autoDecode(t testing.TB, body []byte, n uint64, shift uint, checksums bool, cb *Codebook) ([]byte, error) {
	t.Helper()
	jobs := []DecodeJob{{Name: "a", Format: layout.FormatAuto, Body: body, N: n, Shift: shift, Codebook: cb,
		Checksums: checksums, Dst: make([]byte, 2*n)}}
	require.NoError(t, NewCPUBackend(3).Decode(context.Background(), jobs))
	return jobs[0].Dst, jobs[0].Err
}

// TestChunkBodySizes: what a format's size function says is what its encoder writes, for one-chunk bodies of any
// length: auto's choice rests on it.
func TestChunkBodySizes(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 3))
	cb := goldenCodebook
	var names []string
	for _, f := range candidates(layout.DTypeBF16) {
		names = append(names, f.Name)
	}
	require.Equal(t, []string{"splitzip4", "zf12", "tbe3"}, names)
	for _, f := range candidates(layout.DTypeBF16) {
		for _, m := range []int{1, 2, 7, 24, 25, 63, 65, 511, 512, 513, 1024, 3000, 65536} {
			for _, esc := range []float64{0, 0.002, 0.3} {
				shift := uint(16)
				for 1<<(shift-1) >= m && shift > layout.MinChunkShift {
					shift--
				}
				src := kvLike(r, m, esc)
				jobs := []EncodeJob{{Format: f.ID, Src: src, N: uint64(m), Shift: shift, Codebook: &cb, Checksums: true,
					Dst: make([]byte, f.MaxBodyOf(uint64(m), layout.DTypeBF16, shift))}}
				require.NoError(t, NewCPUBackend(1).Encode(context.Background(), jobs))
				require.Equal(t, uint64(len(jobs[0].Out)), f.ChunkBodySize(src, layout.DTypeBF16, m, shift, &cb), "%s m=%d esc=%v", f.Name, m, esc)
			}
		}
	}
}

func TestAutoRoundTripAndChoice(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	cb := goldenCodebook
	for _, shift := range []uint{10, 12, 16} {
		nv := 1 << shift
		for _, n := range []int{1, 700, 3*nv + 5} {
			for _, pat := range []string{"sz", "zzs", "s", "z", "t", "stz", "tts"} {
				src := autoMix(r, n, nv, pat, &cb)
				for _, crc := range []bool{true, false} {
					body := autoEncode(t, src, shift, crc, &cb)
					a := autoGeom{N: uint64(n), Shift: shift}
					for c := uint64(0); c < a.Chunks(); c++ {
						m := a.ChunkLen(c)
						want, _ := chooseChunk(candidates(layout.DTypeBF16), src[2*(c<<shift):2*((c<<shift)+m)], layout.DTypeBF16, int(m), shift, &cb)
						require.Equal(t, uint32(want.ID), binary.LittleEndian.Uint32(body[12*c:])>>layout.KindShift)
					}
					out, err := autoDecode(t, body, uint64(n), shift, crc, &cb)
					require.NoError(t, err, "shift %d n %d %s", shift, n, pat)
					require.Equal(t, src, out)
				}
			}
		}
	}
}

// replacePiece rebuilds an auto body with chunk c's piece coded in format id instead.
func replacePiece(t *testing.T, body, src []byte, n uint64, shift uint, c uint64, id uint8, crc bool, cb *Codebook) []byte {
	a := autoGeom{N: n, Shift: shift}
	ps, err := autoCheck(body, n, shift, layout.DTypeBF16)
	require.NoError(t, err)
	f, _ := LookupFormat(id)
	m := a.ChunkLen(c)
	v0 := c << shift
	jobs := []EncodeJob{{Format: id, Src: src[2*v0 : 2*(v0+m)], N: m, Shift: shift, Codebook: cb, Checksums: crc,
		Dst: make([]byte, f.MaxBodyOf(m, layout.DTypeBF16, shift))}}
	require.NoError(t, NewCPUBackend(1).Encode(context.Background(), jobs))
	return withPiece(a, ps, c, jobs[0].Out, id, crc)
}

// withPiece reassembles an auto body from its pieces ps, chunk c's piece replaced by piece in format id.
func withPiece(a autoGeom, ps []autoPiece, c uint64, piece []byte, id uint8, crc bool) []byte {
	out := make([]byte, a.PieceOffset())
	var off uint64
	for k := range ps {
		p, fid := ps[k].body, ps[k].f.ID
		if uint64(k) == c {
			p, fid = piece, id
		}
		info := uint32(fid) << layout.KindShift
		binary.LittleEndian.PutUint32(out[12*k:], info)
		binary.LittleEndian.PutUint32(out[12*k+4:], uint32(off/4))
		if crc {
			binary.LittleEndian.PutUint32(out[12*k+8:], autoEntryCRC(info, uint32(off/4)))
		}
		out = append(out, p...)
		off += uint64(len(p))
	}
	return out
}

func TestAutoInvalidClasses(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	cb := goldenCodebook
	const n, shift = 4*1024 + 100, 10
	src := autoMix(r, n, 1024, "sztz", &cb) // s z t z s
	base := map[bool][]byte{true: autoEncode(t, src, shift, true, &cb), false: autoEncode(t, src, shift, false, &cb)}
	u32 := func(b []byte, at int, v uint32) { binary.LittleEndian.PutUint32(b[at:], v) }
	for _, tc := range []struct {
		name  string
		crc   bool
		edit  func(b []byte) []byte
		cls   error
		chunk int64
	}{
		{"unknown format", false, func(b []byte) []byte { b[12*2+3] = 9; return b }, ErrCorrupt, 2},
		{"stored is no candidate", false, func(b []byte) []byte { b[12*2+3] = 0; return b }, ErrCorrupt, 2},
		{"low info bits", true, func(b []byte) []byte { b[12*1] = 1; return b }, ErrCorrupt, 1},
		{"first offset", false, func(b []byte) []byte { u32(b, 4, 1); return b }, ErrCorrupt, 0},
		{"offset past the end", false, func(b []byte) []byte { u32(b, 12*3+4, 1<<20); return b }, ErrCorrupt, 2},
		{"format swapped", true, func(b []byte) []byte { b[12*1+3] ^= 3; return b }, ErrCorrupt, 1},
		{"short body", false, func(b []byte) []byte { return b[:len(b)-4] }, ErrCorrupt, 4},
		{"long body", false, func(b []byte) []byte { return append(b, 0, 0, 0, 0) }, ErrCorrupt, 4},
		{"table only", false, func(b []byte) []byte { return b[:12*5] }, ErrCorrupt, 0},
		{"piece structure", false, func(b []byte) []byte { b[12*5+512+1024+3] = 2; return b }, ErrCorrupt, 0},
		{"entry crc", true, func(b []byte) []byte { b[12*3+8] ^= 1; return b }, ErrChecksum, 3},
		{"piece crc", true, func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, ErrChecksum, 4},
		{"entry crc without checksums", false, func(b []byte) []byte { b[12*2+8] = 1; return b }, ErrNonCanonical, 2},
		{"tbe3 piece structure", false, func(b []byte) []byte {
			a := autoGeom{N: n, Shift: shift}
			off := a.PieceOffset() + 4*uint64(binary.LittleEndian.Uint32(b[12*2+4:]))
			b[off+3*1024/8+1024+3] = 2 // the piece's own chunk kind
			return b
		}, ErrCorrupt, 2},
	} {
		b := tc.edit(append([]byte(nil), base[tc.crc]...))
		_, err := autoDecode(t, b, n, shift, tc.crc, &cb)
		if tc.cls == nil {
			require.Error(t, err, tc.name)
			continue
		}
		require.ErrorIs(t, err, tc.cls, tc.name)
		require.Equal(t, tc.chunk, err.(*Error).Chunk, "%s: %v", tc.name, err)
	}
}

// TestAutoOtherChoices: the choice of a chunk's candidate is the encoder's (docs/FORMAT.md §11.2): a body with a
// chunk in a candidate that is not the smallest is valid and decodes to the same values.
func TestAutoOtherChoices(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	cb := goldenCodebook
	const n, shift = 4*1024 + 100, 10
	src := autoMix(r, n, 1024, "sztz", &cb) // s z t z s
	for _, tc := range []struct {
		crc bool
		c   uint64
		id  uint8
	}{
		{true, 1, layout.FormatSplitZip4}, {false, 4, layout.FormatZF12}, {true, 0, layout.FormatTBE3},
		{false, 3, layout.FormatTBE3}, {false, 2, layout.FormatSplitZip4}, {true, 2, layout.FormatZF12},
	} {
		base := autoEncode(t, src, shift, tc.crc, &cb)
		b := replacePiece(t, base, src, n, shift, tc.c, tc.id, tc.crc, &cb)
		require.NotEqual(t, base, b, "chunk %d as format %d changes the body", tc.c, tc.id)
		got, err := autoDecode(t, b, n, shift, tc.crc, &cb)
		require.NoError(t, err, "chunk %d as format %d", tc.c, tc.id)
		require.Equal(t, src, got, "chunk %d as format %d", tc.c, tc.id)
	}
}

// TestAutoTensorChoice: with WithFormat("auto") every tensor takes its smallest coding; one format alone when the
// auto table would not pay for itself.
func TestAutoTensorChoice(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 6))
	cb := goldenCodebook
	kv := kvLike(r, 16384, 0.0003)
	mixed := autoMix(r, 4*4096, 4096, "szts", &cb)
	narrow := autoMix(r, 3000, 4096, "z", &cb)
	recs := []Record{{Name: "kv", DType: layout.DTypeBF16, Data: kv}, {Name: "mixed", DType: layout.DTypeBF16, Data: mixed},
		{Name: "narrow", DType: layout.DTypeBF16, Data: narrow}, {Name: "f32", DType: layout.DTypeF32, Data: kv[:400]}}
	c := newCPU(t, WithFormat("auto"), WithChunkSize(4096), WithCodebook(cb))
	p, err := c.Encode(context.Background(), nil, recs, true)
	require.NoError(t, err)
	info, err := Inspect(p)
	require.NoError(t, err)
	var got []string
	for _, ri := range info.Containers[0].Records {
		got = append(got, ri.Format)
	}
	// KV-like values: TBE-3 whole; the mix: an auto body of all three candidates; the zf12-friendly tensor: zf12
	// whole (an auto table would cost 12 bytes more); F32 bytes: the smallest exponent-window format.
	require.Equal(t, []string{"tbe3", "auto", "zf12", "xw2"}, got)
	require.Equal(t, []MixCount{{"splitzip4", "coded", 2}, {"zf12", "coded", 1}, {"tbe3", "coded", 1}},
		info.Containers[0].Records[1].Mix)
	out, err := c.DecodeAll(p, nil)
	require.NoError(t, err)
	require.Equal(t, append(append(append(append([]byte{}, kv...), mixed...), narrow...), kv[:400]...), out)
	// Every tensor no larger than its best single format.
	for i, rec := range recs[:3] {
		best := ^uint64(0)
		for _, f := range []string{"splitzip4", "zf12", "tbe3"} {
			cc := newCPU(t, WithFormat(f), WithChunkSize(4096), WithCodebook(cb))
			q, err := cc.Encode(context.Background(), nil, []Record{rec}, true)
			require.NoError(t, err)
			qi, _ := Inspect(q)
			best = min(best, qi.Containers[0].Records[0].Bytes)
		}
		require.LessOrEqual(t, info.Containers[0].Records[i].Bytes, best, rec.Name)
	}
	// Only tensors in formats without codebooks (here zf12): the codebook is left out, even one the caller gave.
	p, err = newCPU(t, WithFormat("auto"), WithCodebook(cb)).Encode(context.Background(), nil, recs[2:3], true)
	require.NoError(t, err)
	info, err = Inspect(p)
	require.NoError(t, err)
	require.Empty(t, info.Containers[0].Codebooks)
	require.Equal(t, "zf12", info.Containers[0].Records[0].Format)
}

func TestAutoEveryBitFlipDetected(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 7))
	cb := goldenCodebook
	src := autoMix(r, 2*1024+300, 1024, "sz", &cb)
	c := newCPU(t, WithFormat("auto"), WithChunkSize(1024), WithCodebook(cb))
	enc, err := c.EncodeAll(src, nil)
	require.NoError(t, err)
	info, _ := Inspect(enc)
	require.Equal(t, "auto", info.Containers[0].Records[0].Format)
	bad := make([]byte, len(enc))
	for bit := 0; bit < 8*len(enc); bit += flipStride {
		copy(bad, enc)
		bad[bit/8] ^= 1 << (bit % 8)
		_, err := c.DecodeAll(bad, nil)
		require.Error(t, err, "flip of bit %d undetected", bit)
		var e *Error
		require.True(t, errors.As(err, &e), "bit %d: untyped error %v", bit, err)
	}
}

// FuzzAutoBody drives the auto body decoder directly: nil or a typed error, never a panic; a body that decodes is
// the one the encoder produces for the decoded values. dt picks the dtype: BF16 (pieces of splitzip4, zf12, tbe3),
// F8_E5M2 or F16 (pieces of xw3, xw2, xw4).
func FuzzAutoBody(f *testing.F) {
	cb := goldenCodebook
	dts := []layout.DType{layout.DTypeBF16, layout.DTypeF8E5M2, layout.DTypeF16}
	enc := func(t testing.TB, d layout.DType, src []byte, n uint64, crc bool) []byte {
		if d == layout.DTypeBF16 {
			return autoEncode(t, src, 10, crc, &cb)
		}
		a, _ := LookupFormat(layout.FormatAuto)
		jobs := []EncodeJob{{Format: layout.FormatAuto, DType: d, Src: src, N: n, Shift: 10, Checksums: crc,
			Dst: make([]byte, a.MaxBodyOf(n, d, 10))}}
		require.NoError(t, NewCPUBackend(2).Encode(context.Background(), jobs))
		return jobs[0].Out
	}
	for _, n := range []int{1, 700, 2100, 3000} {
		src := autoMix(rand.New(rand.NewPCG(uint64(n), 4)), n, 1024, "szt", &cb)
		f.Add(autoEncode(f, src, 10, n%2 == 0, &cb), uint32(n), n%2 == 0, uint8(0))
		for k, d := range dts[1:] {
			xs := xwMix(rand.New(rand.NewPCG(uint64(n), 5)), d, n, 1024, "243")
			f.Add(enc(f, d, xs, uint64(n), n%2 == 1), uint32(n), n%2 == 1, uint8(k+1))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, n32 uint32, checksums bool, dt uint8) {
		n := uint64(n32 % 20000)
		d := dts[int(dt)%len(dts)]
		lo, hi := autoBounds(n, d, 10)
		if n == 0 || uint64(len(body)) < lo || uint64(len(body)) > hi || len(body)%4 != 0 {
			return
		}
		var c *Codebook
		if d == layout.DTypeBF16 {
			c = &cb
		}
		jobs := []DecodeJob{{Name: "a", Format: layout.FormatAuto, DType: d, Body: body, N: n, Shift: 10, Codebook: c,
			Checksums: checksums, Dst: make([]byte, uint64(d.Size())*n)}}
		require.NoError(t, NewCPUBackend(2).Decode(context.Background(), jobs))
		if err := jobs[0].Err; err != nil {
			var e *Error
			require.True(t, errors.As(err, &e), "untyped error %v", err)
			return
		}
		if again := enc(t, d, jobs[0].Dst, n, checksums); string(again) == string(body) {
			return
		}
		// Not vkzip's choice of candidates (the encoder's freedom, §11.2): each piece must still be exactly what
		// its own format's encoder writes for the chunk's values.
		ps, err := autoCheck(body, n, 10, d)
		require.NoError(t, err)
		a := autoGeom{N: n, Shift: 10}
		for k := range ps {
			m, v0, sz := a.ChunkLen(uint64(k)), uint64(k)<<10, uint64(d.Size())
			pj := []EncodeJob{{Format: ps[k].f.ID, DType: d, Src: jobs[0].Dst[sz*v0 : sz*(v0+m)], N: m, Shift: 10,
				Codebook: c, Checksums: checksums, Dst: make([]byte, ps[k].f.MaxBodyOf(m, d, 10))}}
			require.NoError(t, NewCPUBackend(1).Encode(context.Background(), pj))
			if string(pj[0].Out) != string(ps[k].body) {
				t.Fatalf("a %v body that decodes has a non-canonical %s piece at chunk %d", d, ps[k].f.Name, k)
			}
		}
	})
}

// xwMix is n values of dtype d whose chunks prefer different exponent-window widths: pattern byte '2' spreads
// exponents over 3 values (xw2), '3' over 7 (xw3), '4' over 15 (xw4; xw3 for F8_E4M3, which has no xw4).
func xwMix(r *rand.Rand, d layout.DType, n, chunk int, pattern string) []byte {
	E, M, _ := layout.FloatFields(d)
	size := d.Size()
	out := make([]byte, size*n)
	for i := 0; i < n; i++ {
		span := map[byte]int{'2': 3, '3': 7, '4': 15}[pattern[(i/chunk)%len(pattern)]]
		x := uint32(min(1<<E-1, 1+r.IntN(span)))
		if r.IntN(50) == 0 {
			x = uint32(r.IntN(1 << E)) // a few escapes
		}
		v := uint32(r.Uint64())&(1<<M-1) | x<<M | uint32(r.IntN(2))<<(E+M)
		storeValue(out, i, size, v)
	}
	return out
}

// TestAutoXW: auto on the dtypes of the exponent-window formats picks per chunk the smallest of xw3, xw2, xw4, and
// its bodies decode; a chunk in a larger candidate is non-canonical.
func TestAutoXW(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 9))
	for _, d := range []layout.DType{layout.DTypeF8E5M2, layout.DTypeF8E4M3, layout.DTypeF16, layout.DTypeF32} {
		var ids []uint8
		for _, f := range candidates(d) {
			ids = append(ids, f.ID)
		}
		if d == layout.DTypeF8E4M3 {
			require.Equal(t, []uint8{layout.FormatXW3, layout.FormatXW2}, ids)
		} else {
			require.Equal(t, []uint8{layout.FormatXW3, layout.FormatXW2, layout.FormatXW4}, ids)
		}
		for _, f := range candidates(d) {
			for _, m := range []int{1, 31, 33, 1000, 4096} {
				src := xwMix(r, d, m, 4096, "3")
				jobs := []EncodeJob{{Format: f.ID, DType: d, Src: src, N: uint64(m), Shift: 12, Checksums: true,
					Dst: make([]byte, f.MaxBodyOf(uint64(m), d, 12))}}
				require.NoError(t, NewCPUBackend(1).Encode(context.Background(), jobs))
				require.Equal(t, uint64(len(jobs[0].Out)), f.ChunkBodySize(src, d, m, 12, nil), "%s %v m=%d", f.Name, d, m)
			}
		}
		const shift, n = 10, 4*1024 + 77
		src := xwMix(r, d, n, 1024, "2344")
		f, _ := LookupFormat(layout.FormatAuto)
		for _, crc := range []bool{true, false} {
			jobs := []EncodeJob{{Format: layout.FormatAuto, DType: d, Src: src, N: n, Shift: shift, Checksums: crc,
				Dst: make([]byte, f.MaxBodyOf(n, d, shift))}}
			require.NoError(t, NewCPUBackend(2).Encode(context.Background(), jobs))
			body := jobs[0].Out
			seen := map[uint8]bool{}
			a := autoGeom{N: n, Shift: shift}
			for c := uint64(0); c < a.Chunks(); c++ {
				m, v0 := a.ChunkLen(c), c<<shift
				want, _ := chooseChunk(candidates(d), src[uint64(d.Size())*v0:uint64(d.Size())*(v0+m)], d, int(m), shift, nil)
				got := uint8(binary.LittleEndian.Uint32(body[12*c:]) >> layout.KindShift)
				require.Equal(t, want.ID, got, "%v chunk %d", d, c)
				seen[got] = true
			}
			require.GreaterOrEqual(t, len(seen), 2, "%v: chunks in at least two candidates", d)
			dec := []DecodeJob{{Name: "x", Format: layout.FormatAuto, DType: d, Body: body, N: n, Shift: shift,
				Checksums: crc, Dst: make([]byte, d.Size()*n)}}
			require.NoError(t, NewCPUBackend(2).Decode(context.Background(), dec))
			require.NoError(t, dec[0].Err)
			require.Equal(t, src, dec[0].Dst)
			// Chunk 0 (narrow: xw2 wins) rebuilt as xw3: a valid body, the choice being the encoder's.
			ps, err := autoCheck(body, n, shift, d)
			require.NoError(t, err)
			require.Equal(t, uint8(layout.FormatXW2), ps[0].f.ID, "%v", d)
			x3, _ := LookupFormat(layout.FormatXW3)
			pj := []EncodeJob{{Format: layout.FormatXW3, DType: d, Src: src[:d.Size()*1024], N: 1024, Shift: shift,
				Checksums: crc, Dst: make([]byte, x3.MaxBodyOf(1024, d, shift))}}
			require.NoError(t, NewCPUBackend(1).Encode(context.Background(), pj))
			bad := withPiece(a, ps, 0, pj[0].Out, layout.FormatXW3, crc)
			dec[0].Body = bad
			dec[0].Dst = make([]byte, d.Size()*n)
			require.NoError(t, NewCPUBackend(2).Decode(context.Background(), dec))
			require.NoError(t, dec[0].Err, "%v: another candidate's piece is valid", d)
			require.Equal(t, src, dec[0].Dst)
		}
	}
}
