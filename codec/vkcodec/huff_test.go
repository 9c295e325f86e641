package vkcodec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/internal/vktune"
)

// huffPatterns reach every path of the kernels: KV-like chunks, raw chunks (noise), one exponent (1-bit codes),
// every exponent, and counts that make the deepest trees (the length limiter).
func huffPatterns(r *rand.Rand, n int) map[string][]byte {
	mk := func(f func(i int) uint16) []byte {
		b := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint16(b[2*i:], f(i))
		}
		return b
	}
	fib := make([]int, 0, n)
	for a, b, s := 1, 1, 0; len(fib) < n; s++ {
		for k := 0; k < a && len(fib) < n; k++ {
			fib = append(fib, 100+s%30)
		}
		if a, b = b, a+b; s%30 == 29 {
			a, b = 1, 1
		}
	}
	return map[string][]byte{
		"kv": mk(func(int) uint16 {
			return uint16(min(max(121+int(r.NormFloat64()*1.8), 0), 255))<<7 | uint16(r.Uint32()&0x807F)
		}),
		"noise": mk(func(int) uint16 { return uint16(r.Uint32()) }),
		"one":   mk(func(i int) uint16 { return 0x3C00 | uint16(i&0x807F) }),
		"all":   mk(func(i int) uint16 { return uint16(i%256)<<7 | uint16(r.Uint32()&0x807F) }),
		"fib":   mk(func(i int) uint16 { return uint16(fib[i])<<7 | uint16(r.Uint32()&0x807F) }),
		// Three common exponents and one value in 41 from 150 rare ones: 10- and 11-bit codes covering far more of
		// the decoder's second level than KV data's (at most 24 entries there).
		"tail": mk(func(i int) uint16 {
			e := 120 + r.IntN(3)
			if i%41 == 0 {
				e = 20 + (i/41)%150
			}
			return uint16(e)<<7 | uint16(r.Uint32()&0x807F)
		}),
		// 100 equally common exponents: codes of 6 and 7 bits, the 7-bit ones more than half of the 11-bit index
		// space, so the decoder's tables take a first level of 7 bits, not 6.
		"wide": mk(func(int) uint16 { return uint16(60+r.IntN(100))<<7 | uint16(r.Uint32()&0x807F) }),
		// Half the values one exponent, half spread over 254 others: a 1-bit code and ~9-bit ones whose ranges
		// fill half the 11-bit index space (the decoder's first level takes 9 bits).
		"half": mk(func(i int) uint16 {
			e := 127
			if i%2 == 1 {
				e = 1 + r.IntN(254)
				e += e / 127 // not 127
			}
			return uint16(e)<<7 | uint16(r.Uint32()&0x807F)
		}),
	}
}

func TestHuffVulkanMatchesReference(t *testing.T) {
	vb := openTest(t, Options{})
	k := newHuffTuning(vb)
	r := rand.New(rand.NewPCG(21, 14))
	ctx := context.Background()
	for _, shift := range []uint{12, 14, 16} {
		nv := 1 << shift
		// 289, 421, nv+163: lanes whose last block ends one position into a group of four (9, 13, 5 positions),
		// so the decoder's last staging word of four codes holds one.
		for _, n := range []int{1, 31, 33, 289, 421, 1000, nv - 1, nv + 1, nv + 163, 2*nv + 77} {
			for name, src := range huffPatterns(r, n) {
				cs := n%2 == 1
				want := huffRef(t, src, shift, cs)
				got, err := k.Encode(ctx, src, uint64(n), shift, cs)
				require.NoError(t, err)
				require.Equal(t, len(want), len(got), "%s n %d shift %d", name, n, shift)
				require.True(t, string(want) == string(got), "%s n %d shift %d: bytes differ at %d", name, n, shift,
					firstDiff(want, got))
				dst := make([]byte, 2*n)
				bodyErr, err := k.Decode(ctx, want, uint64(n), shift, cs, dst)
				require.NoError(t, err)
				require.NoError(t, bodyErr, "%s n %d shift %d", name, n, shift)
				require.True(t, string(src) == string(dst), "%s n %d shift %d: values differ at byte %d", name, n,
					shift, firstDiff(src, dst))
			}
		}
	}
}

// refixCRCs recomputes every chunk CRC of a structurally valid body, so that damage reaches the stream checks.
func refixCRCs(body []byte, n uint64, shift uint) {
	g := layout.Huff{N: n, Shift: shift}
	for c := uint64(0); c < g.Chunks(); c++ {
		e := body[g.TableOffset()+12*c:]
		info, po := binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint32(e[4:])
		m := g.ChunkLen(c)
		size := 4 * uint64(info&layout.HuffPieceMask)
		if info>>layout.KindShift == layout.ChunkRaw {
			size = layout.HuffRawPiece(m)
		}
		lo, hi := c<<shift, min((c+1)<<shift, g.LowBytes())
		if c == g.Chunks()-1 {
			hi = g.LowBytes()
		}
		crc := crc32c.Update(crc32c.Checksum(e[:8]), body[g.PieceOffset()+4*uint64(po):][:size])
		binary.LittleEndian.PutUint32(e[8:], crc32c.Update(crc, body[lo:hi]))
	}
}

// flipHuffBit returns a copy of body with one random bit flipped. With checksums, every second damaged body (odd it)
// gets its CRCs recomputed when its table still passes, so that the damage reaches the stream checks.
func flipHuffBit(r *rand.Rand, body []byte, n uint64, shift uint, cs bool, it int) (mod []byte, bit int) {
	mod = append([]byte{}, body...)
	bit = r.IntN(8 * len(mod))
	mod[bit/8] ^= 1 << (bit % 8)
	if cs && it%2 == 1 && huffTableOK(mod, n, shift) {
		refixCRCs(mod, n, shift)
	}
	return mod, bit
}

// classAt names a decode verdict by class and chunk ("ok" for none); an error of no codec class fails the test.
func classAt(t *testing.T, e error) string {
	var ce *codec.Error
	if e == nil {
		return "ok"
	}
	require.True(t, errors.As(e, &ce), "untyped %v", e)
	return fmt.Sprintf("%v@%d", ce.Class, ce.Chunk)
}

// A single-symbol chunk decoded in the table row a coded chunk used before it (one team, one workgroup): a bit of
// its lanes' first words flipped starts no code (x ≥ 1024), and the decoder must report the lane stream corrupt,
// as the reference does, whatever the coded chunk left in the row.
func TestHuffVulkanSingleAfterCoded(t *testing.T) {
	vb := openTest(t, Options{Tune: &vktune.Params{Groups: 1}})
	k := newHuffTuning(vb)
	k.DecodeWG, k.DecodeGroups = huffDecodeTeam, 1
	p := huffPatterns(rand.New(rand.NewPCG(25, 14)), 4096)
	src := append(append([]byte{}, p["kv"]...), p["one"]...)
	const shift = 12
	n := uint64(len(src) / 2)
	body := huffRef(t, src, shift, false)
	g := layout.Huff{N: n, Shift: shift}
	e := body[g.TableOffset()+12:]
	require.Zero(t, binary.LittleEndian.Uint32(e)>>layout.KindShift, "the single-symbol chunk is coded")
	piece := g.PieceOffset() + 4*uint64(binary.LittleEndian.Uint32(e[4:]))
	lanes := piece + layout.HuffTableBytes(uint(body[piece]), uint(body[piece+1])) + 4*layout.HuffCountsWords
	for bit := 0; bit < 32*32; bit += 7 { // bits of the first words of lanes 0, 1, …
		mod := append([]byte{}, body...)
		mod[lanes+uint64(bit/8)] ^= 1 << (bit % 8)
		want := decodeHuffRef(make([]byte, 2*n), mod, n, shift, false)
		require.Error(t, want, "bit %d", bit)
		got, err := k.Decode(context.Background(), mod, n, shift, false, make([]byte, 2*n))
		require.NoError(t, err)
		require.Equal(t, classAt(t, want), classAt(t, got), "bit %d", bit)
	}
}

// Damaged bodies get the reference's verdict, class and chunk: single bit flips anywhere, with checksums (mostly
// checksum errors) and with CRCs recomputed after the flip (lane streams, tables, padding, choices).
func TestHuffVulkanHostile(t *testing.T) {
	vb := openTest(t, Options{})
	k := newHuffTuning(vb)
	r := rand.New(rand.NewPCG(22, 14))
	ctx := context.Background()
	const shift = 12
	p := huffPatterns(r, 4096)
	src := append(append(append([]byte{}, p["kv"]...), p["noise"][:2*1000]...), p["fib"][:2*3000]...)
	n := uint64(len(src) / 2)
	for _, cs := range []bool{true, false} {
		body := huffRef(t, src, shift, cs)
		classes := map[string]int{}
		for it := 0; it < 400; it++ {
			mod, bit := flipHuffBit(r, body, n, shift, cs, it)
			want := decodeHuffRef(make([]byte, 2*n), mod, n, shift, cs)
			// The reference's parallel driver is what the CPU backend runs; it must agree with DecodeHuff too.
			dj := []codec.DecodeJob{{Format: layout.FormatHuff, DType: layout.DTypeBF16, Body: mod, N: n, Shift: shift,
				Checksums: cs, Dst: make([]byte, 2*n)}}
			require.NoError(t, codec.NewCPUBackend(2).Decode(ctx, dj))
			got, err := k.Decode(ctx, mod, n, shift, cs, make([]byte, 2*n))
			require.NoError(t, err)
			require.Equal(t, classAt(t, want), classAt(t, dj[0].Err), "bit %d checksums %v: %v / %v", bit, cs, want, dj[0].Err)
			require.Equal(t, classAt(t, want), classAt(t, got), "bit %d checksums %v: %v / %v", bit, cs, want, got)
			classes[classAt(t, want)]++
		}
		t.Logf("checksums %v: %v", cs, classes)
	}
}

// The kernels' variants (workgroup sizes, so every chunk position within a decode workgroup; load batches; grids
// smaller than the chunks, so grid-stride loops in every kernel; the decoder with and without 64-bit integers) give
// the reference's bytes and values, and its verdict on damaged bodies, on a tensor mixing coded and raw chunks.
func TestHuffVulkanVariants(t *testing.T) {
	vb := openTest(t, Options{Tune: &vktune.Params{Groups: 3}})
	r := rand.New(rand.NewPCG(23, 14))
	ctx := context.Background()
	const shift = 12
	p := huffPatterns(r, 1<<shift)
	var src []byte
	for _, name := range []string{"kv", "noise", "kv", "fib", "one", "noise", "wide", "noise", "all", "kv", "tail", "half",
		"kv", "noise", "kv"} {
		src = append(src, p[name]...)
	}
	src = append(src, p["kv"][:2*777]...)
	n := uint64(len(src) / 2)
	lim := uint32(vb.t.WorkGroup)
	flips := 60 // damaged bodies per variant; -short (the validation and race steps) keeps every variant, fewer flips
	if testing.Short() {
		flips = 12
	}
	for _, cs := range []bool{true, false} {
		body := huffRef(t, src, shift, cs)
		for _, v := range []struct {
			ewg, dwg, groups, batch uint32
			i64                     bool
			cache                   uint32 // the encoder's CacheShift (0: the default)
			noTeam                  bool   // the decoder's workgroup barriers where teams may be subgroups
			l1                      uint32 // the decoder's L1Bits (0: the default)
			twoReads                bool   // the decoder's TwoReads
			table                   uint32 // the decoder's TableEntries (0: the default)
			rfill, lowAhead         uint32 // the decoder's RingFill and LowAhead (0: the defaults)
		}{
			{ewg: 32, dwg: 32, groups: 1, batch: 1}, {ewg: 64, dwg: 64, groups: 2, batch: 3, i64: true},
			{ewg: 128, dwg: 128, batch: 8}, {ewg: 128, dwg: 128, batch: 8, i64: true},
			{ewg: 128, dwg: 128, batch: 8, i64: true, noTeam: true},
			{ewg: 256, dwg: 256, groups: 1, batch: 16, i64: true},
			{ewg: 128, dwg: 256, groups: 3, batch: 8, noTeam: true}, {ewg: 128, dwg: 32, groups: 3, batch: 8},
			// three segments per lane: segments of a multiple of eight positions
			{ewg: 96, dwg: 96, groups: 2, batch: 5},
			// exponents read again from the source
			{ewg: 256, dwg: 128, groups: 2, batch: 8, cache: 11}, {ewg: 64, dwg: 64, batch: 4, cache: 11},
			// first levels of the decode tables wider than KV chunks need
			{ewg: 128, dwg: 128, batch: 8, i64: true, l1: 9}, {ewg: 128, dwg: 64, groups: 2, batch: 8, l1: 8},
			{ewg: 64, dwg: 128, batch: 8, i64: true, l1: 5},
			// both levels of the decode tables read for every code
			{ewg: 128, dwg: 128, batch: 8, i64: true, twoReads: true},
			{ewg: 64, dwg: 64, groups: 2, batch: 8, twoReads: true},
			// tables of 256 and 512 entries: the half, tail and noise chunks WIDE (shaders/huff_decode.glsl: dtab)
			{ewg: 128, dwg: 128, batch: 8, i64: true, table: 256}, {ewg: 64, dwg: 64, groups: 2, batch: 8, table: 256},
			{ewg: 128, dwg: 256, groups: 3, batch: 8, i64: true, noTeam: true, table: 256, l1: 5},
			{ewg: 128, dwg: 128, batch: 8, i64: true, table: 256, l1: 8, twoReads: true},
			{ewg: 128, dwg: 128, batch: 8, i64: true, table: 512}, {ewg: 64, dwg: 64, groups: 2, batch: 8, table: 512},
			// ring fills of one word per block (most lanes fall short: the catch-up loads) and four; low words
			// loaded one and two blocks ahead
			{ewg: 128, dwg: 128, batch: 8, i64: true, rfill: 1, lowAhead: 1},
			{ewg: 64, dwg: 64, groups: 2, batch: 8, rfill: 1, table: 256, lowAhead: 2},
			{ewg: 128, dwg: 256, groups: 1, batch: 8, i64: true, rfill: 4, lowAhead: 2},
		} {
			name := fmt.Sprintf("checksums %v variant %+v", cs, v)
			k := newHuffTuning(vb)
			// The device's limits bound the variant (lavapipe: 32 KiB of shared memory, too little for 128).
			k.Int64 = v.i64 && vb.huffWide()
			k.TableEntries = huffTableEntries(v.table)
			k.EncodeWG, k.PlaceWG, k.DecodeWG, k.DecodeGroups, k.Batch = min(v.ewg, lim), min(v.ewg, lim),
				vb.fitHuffDecodeWG(min(v.dwg, lim), huffDecodeKernel(k.Int64), k.TableEntries),
				v.groups, v.batch
			if v.rfill != 0 {
				k.RingFill = v.rfill
			}
			if v.lowAhead != 0 {
				k.LowAhead = v.lowAhead
			}
			if v.cache != 0 {
				k.CacheShift = v.cache
			}
			k.TeamSync = k.TeamSync && !v.noTeam
			k.TwoReads = v.twoReads
			if v.l1 != 0 {
				k.L1Bits = v.l1
			}
			got, err := k.Encode(ctx, src, n, shift, cs)
			require.NoError(t, err, name)
			require.True(t, string(body) == string(got), "%s: bytes differ at %d", name, firstDiff(body, got))
			dst := make([]byte, 2*n)
			bodyErr, err := k.Decode(ctx, body, n, shift, cs, dst)
			require.NoError(t, err, name)
			require.NoError(t, bodyErr, name)
			require.True(t, string(src) == string(dst), "%s: values differ at byte %d", name, firstDiff(src, dst))
			for it := 0; it < flips; it++ {
				mod, bit := flipHuffBit(r, body, n, shift, cs, it)
				want := decodeHuffRef(make([]byte, 2*n), mod, n, shift, cs)
				got, err := k.Decode(ctx, mod, n, shift, cs, make([]byte, 2*n))
				require.NoError(t, err)
				require.Equal(t, classAt(t, want), classAt(t, got), "%s bit %d: %v / %v", name, bit, want, got)
			}
		}
	}
}

// The default decode workgroups (8 or 4 chunks in flight) fit devices with 48 KiB of shared memory per workgroup
// (NVIDIA's Vulkan limit); a larger request is halved until it fits the device.
func TestHuffDecodeSharedBudget(t *testing.T) {
	for _, kernel := range []string{"huff_decode", "huff_decode_i64"} {
		require.LessOrEqual(t, huffDecodeShared(defaultHuffDecodeWG, kernel, defaultHuffTableEntries),
			uint32(48<<10), kernel)
	}
	vb := openTest(t, Options{Tune: &vktune.Params{Huff: vktune.Huff{DecodeWG: 4096}}})
	k := newHuffTuning(vb)
	require.Equal(t, vb.huffWide(), k.Int64, "the 64-bit decoder wherever the device has 64- and 16-bit integers")
	require.GreaterOrEqual(t, k.DecodeWG, uint32(layout.HuffLanes))
	require.Zero(t, k.DecodeWG%huffDecodeTeam)
	require.LessOrEqual(t, huffDecodeShared(k.DecodeWG, k.decodeKernel(), k.TableEntries),
		vb.info.Limits.MaxComputeSharedMemorySize)
	src := huffPatterns(rand.New(rand.NewPCG(24, 14)), 3<<12+5)["kv"]
	n := uint64(len(src) / 2)
	dst := make([]byte, len(src))
	bodyErr, err := k.Decode(context.Background(), huffRef(t, src, 12, true), n, 12, true, dst)
	require.NoError(t, err)
	require.NoError(t, bodyErr)
	require.True(t, string(src) == string(dst), "workgroup %d: values differ at byte %d", k.DecodeWG, firstDiff(src, dst))
}
