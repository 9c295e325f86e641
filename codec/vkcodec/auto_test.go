package vkcodec

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/internal/vktune"
	"github.com/vkzip/vkzip/vk"
)

func crc32cOf(b []byte) uint32 { return crc32c.Checksum(b) }

// autoMix is data whose chunks prefer different formats: 's' chunks of the codebook's exponents spread wider than a
// zf12 block allows (SplitZip-4 codes them without escapes, zf12 leaves its blocks raw, TBE-3's window misses most),
// 'z' chunks of 16 exponents the codebook lacks but within one zf12 block range (zf12 codes them, SplitZip-4 would
// store them raw, a 7-exponent window misses half) and 't' chunks of 6 such exponents (TBE-3: one window holds
// them all). A few values everywhere take exponents nobody codes well. The rarer cases of each piece encoder: 'r'
// chunks of random values (raw SplitZip-4 pieces), 'w' chunks of 'z' values with every fourth zf12 block spread
// wide (zf12 pieces with raw blocks) and 'f' chunks of 't' values with 15 % far exponents (TBE-3 pieces with more
// fallbacks than the encoder stages in shared memory, at 2^16-value chunks).
func autoMix(r *rand.Rand, n int, chunk int, pattern string) []byte {
	b := kvLike(r, n, 0.0005)
	for i := 0; i < n; i++ {
		v := binary.LittleEndian.Uint16(b[2*i:])
		e := uint16(testCB[r.IntN(16)])
		switch pattern[(i/chunk)%len(pattern)] {
		case 'z':
			e = uint16(60 + r.IntN(16))
		case 't':
			e = uint16(60 + r.IntN(6))
		case 'r':
			binary.LittleEndian.PutUint16(b[2*i:], uint16(r.Uint32()))
			continue
		case 'w':
			e = uint16(60 + r.IntN(16))
			if (i/layout.ZF12Block)%4 == 0 {
				e = uint16(20 + r.IntN(180))
			}
		case 'f':
			e = uint16(60 + r.IntN(6))
			if r.IntN(100) < 15 {
				e = uint16(100 + r.IntN(40))
			}
		}
		if (v>>7)&0xFF < 100 { // kvLike's rare escapes stay
			continue
		}
		binary.LittleEndian.PutUint16(b[2*i:], v&^(0xFF<<7)|e<<7)
	}
	return b
}

func autoEncodeBoth(t *testing.T, vb *Backend, src []byte, shift uint, checksums bool) (cpu, gpu []byte) {
	t.Helper()
	n := uint64(len(src) / 2)
	f, _ := codec.LookupFormat(layout.FormatAuto)
	mk := func() []codec.EncodeJob {
		return []codec.EncodeJob{{Format: layout.FormatAuto, Src: src, N: n, Shift: shift, Codebook: &testCB,
			Checksums: checksums, Dst: make([]byte, f.MaxBodyOf(n, layout.DTypeBF16, shift))}}
	}
	cj, gj := mk(), mk()
	require.NoError(t, codec.NewCPUBackend(1).Encode(context.Background(), cj))
	require.NoError(t, vb.Encode(context.Background(), gj))
	return cj[0].Out, gj[0].Out
}

func autoDecodeJob(body []byte, n int, shift uint, checksums bool) []codec.DecodeJob {
	return []codec.DecodeJob{{Name: "a", Format: layout.FormatAuto, Body: body, N: uint64(n), Shift: shift,
		Codebook: &testCB, Checksums: checksums, Dst: make([]byte, 2*n)}}
}

func TestAutoMatchesReference(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(4, 1))
	for _, shift := range []uint{10, 13, 16} {
		nv := 1 << shift
		for _, length := range []int{1, 513, nv - 1, nv + 1, 3*nv + 17, 5 * nv, 130*nv + 3} {
			for _, pat := range []string{"s", "z", "t", "szt", "tzs", "r", "w", "f", "rwf", "tszwrtf"} {
				if length > 5*nv && (shift != 10 || len(pat) < 7) {
					continue // over 2 blocks of 64 chunks: piece offsets sum whole blocks' sizes
				}
				for _, cs := range []bool{true, false} {
					src := autoMix(r, length, nv, pat)
					cpu, gpu := autoEncodeBoth(t, vb, src, shift, cs)
					require.True(t, string(cpu) == string(gpu), "shift %d len %d %s crc %v: %d/%d bytes, differ at %d",
						shift, length, pat, cs, len(cpu), len(gpu), firstDiff(cpu, gpu))
					if length >= 3*nv && (pat == "szt" || pat == "rwf") {
						// The mix the data was made for: chunk 0 SplitZip-4, chunk 1 zf12, chunk 2 TBE-3.
						require.Equal(t, uint32(layout.FormatSplitZip4), binary.LittleEndian.Uint32(cpu)>>layout.KindShift)
						require.Equal(t, uint32(layout.FormatZF12), binary.LittleEndian.Uint32(cpu[12:])>>layout.KindShift)
						require.Equal(t, uint32(layout.FormatTBE3), binary.LittleEndian.Uint32(cpu[24:])>>layout.KindShift)
					}
					if length >= 3*nv && pat == "rwf" && shift == 16 {
						// Each piece's own info word: a raw SplitZip-4 chunk, zf12 with raw blocks, TBE-3 with more
						// than 8,192 fallbacks.
						C := (length + nv - 1) / nv
						info := func(c, entry int) uint32 {
							off := 12*C + 4*int(binary.LittleEndian.Uint32(cpu[12*c+4:]))
							return binary.LittleEndian.Uint32(cpu[off+entry:])
						}
						require.Equal(t, uint32(layout.ChunkRaw<<layout.KindShift), info(0, nv/2+nv))
						require.NotZero(t, info(1, nv/2+nv+nv/512))
						require.Greater(t, info(2, 3*nv/8+nv)&0xFFFF, uint32(8192))
					}
					jobs := autoDecodeJob(cpu, length, shift, cs)
					require.NoError(t, vb.Decode(context.Background(), jobs))
					require.NoError(t, jobs[0].Err, "shift %d len %d %s crc %v", shift, length, pat, cs)
					require.True(t, string(src) == string(jobs[0].Dst), "shift %d len %d %s: differs at %d", shift,
						length, pat, firstDiff(src, jobs[0].Dst))
				}
			}
		}
	}
}

// TestAutoCorruptionClasses flips bits of valid auto bodies: the Vulkan decoder must give the reference's verdict.
func TestAutoCorruptionClasses(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(4, 2))
	const n = 5*1024 + 77
	src := autoMix(r, n, 1024, "szts")
	for _, cs := range []bool{true, false} {
		body, _ := autoEncodeBoth(t, vb, src, 10, cs)
		for i := 0; i < 300; i++ {
			bad := append([]byte{}, body...)
			for k := 0; k <= i%3; k++ {
				bad[r.IntN(len(bad))] ^= 1 << r.IntN(8)
			}
			cj, gj := autoDecodeJob(bad, n, 10, cs), autoDecodeJob(bad, n, 10, cs)
			requireSameDecode(t, vb, cj, gj)
		}
	}
}

// swapPiece rebuilds a BF16 auto body (checksums as given) with chunk c coded in format id: same values, a choice
// that is not vkzip's.
func swapPiece(t *testing.T, body, src []byte, n uint64, shift uint, c uint64, id uint8, crc bool) []byte {
	return swapPieceWith(t, body, src, layout.DTypeBF16, &testCB, n, shift, c, id, crc)
}

// swapPieceD is swapPiece for any dtype (no codebook).
func swapPieceD(t *testing.T, body, src []byte, d layout.DType, n uint64, shift uint, c uint64, id uint8, crc bool) []byte {
	return swapPieceWith(t, body, src, d, nil, n, shift, c, id, crc)
}

func swapPieceWith(t *testing.T, body, src []byte, d layout.DType, cb *codec.Codebook, n uint64, shift uint, c uint64,
	id uint8, crc bool) []byte {
	g := layout.SZ4{N: n, Shift: shift}
	C := g.Chunks()
	off := func(k uint64) uint64 { return 4 * uint64(binary.LittleEndian.Uint32(body[12*k+4:])) }
	piece := func(k uint64) []byte {
		end := uint64(len(body)) - 12*C
		if k+1 < C {
			end = off(k + 1)
		}
		return body[12*C+off(k) : 12*C+end]
	}
	f, _ := codec.LookupFormat(id)
	m, v0, sz := g.ChunkLen(c), c<<shift, uint64(d.Size())
	jobs := []codec.EncodeJob{{Format: id, DType: d, Src: src[sz*v0 : sz*(v0+m)], N: m, Shift: shift, Codebook: cb,
		Checksums: crc, Dst: make([]byte, f.MaxBodyOf(m, d, shift))}}
	require.NoError(t, codec.NewCPUBackend(1).Encode(context.Background(), jobs))
	out := make([]byte, 12*C)
	var pos uint64
	for k := uint64(0); k < C; k++ {
		p, info := piece(k), binary.LittleEndian.Uint32(body[12*k:])
		if k == c {
			p, info = jobs[0].Out, uint32(id)<<layout.KindShift
		}
		binary.LittleEndian.PutUint32(out[12*k:], info)
		binary.LittleEndian.PutUint32(out[12*k+4:], uint32(pos/4))
		if crc {
			var e [8]byte
			binary.LittleEndian.PutUint32(e[:], info)
			binary.LittleEndian.PutUint32(e[4:], uint32(pos/4))
			binary.LittleEndian.PutUint32(out[12*k+8:], crc32cOf(e[:]))
		}
		out = append(out, p...)
		pos += uint64(len(p))
	}
	return out
}

// TestAutoOnDevice decodes auto bodies straight from device buffers (no host-side table check): valid ones, bodies
// whose chunks are in other candidates than the smallest (valid too), and mutations; every verdict must be the
// reference's. Encodes go through the device-resident operation too.
func TestAutoOnDevice(t *testing.T) {
	vb := openTest(t, Options{})
	dev := vb.VK()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(4, 8))
	const n, shift = 4*1024 + 333, 10
	classes := map[string]int{}
	f, _ := codec.LookupFormat(layout.FormatAuto)
	maxBody := f.MaxBodyOf(n, layout.DTypeBF16, shift)
	in, err := dev.NewBuffer(maxBody+64, vk.DeviceLocal)
	require.NoError(t, err)
	defer in.Close()
	out, err := dev.NewBuffer(2*n+64, vk.DeviceLocal)
	require.NoError(t, err)
	defer out.Close()
	ops := map[[2]int]*DecodeOp{}
	run := func(bad []byte, crc bool) {
		if uint64(len(bad)) > maxBody || len(bad) < 12*5 {
			return
		}
		op := ops[[2]int{len(bad), int(b2u(crc))}]
		if op == nil {
			var err error
			op, err = vb.PrepareDecode(ctx, DecodeSpec{
				Format: layout.FormatAuto, Body: vk.BufferRange{Buf: in, Offset: 20}, BodyLen: uint64(len(bad)),
				N: n, Shift: shift, Codebook: &testCB, Checksums: crc, Dst: vk.BufferRange{Buf: out, Offset: 32},
			})
			if errors.Is(err, codec.ErrCorrupt) { // outside the body bounds: refused before any kernel
				classes["refused"]++
				return
			}
			require.NoError(t, err)
			t.Cleanup(op.Close)
			ops[[2]int{len(bad), int(b2u(crc))}] = op
		}
		require.NoError(t, dev.Upload(ctx, in, 20, bad))
		gerr := op.Run(ctx)
		cj := autoDecodeJob(bad, n, shift, crc)
		require.NoError(t, codec.NewCPUBackend(1).Decode(ctx, cj))
		require.Equal(t, classOf(cj[0].Err), classOf(gerr), "reference %v, kernel %v", cj[0].Err, gerr)
		if gerr == nil {
			got := make([]byte, 2*n)
			require.NoError(t, dev.Download(ctx, got, out, 32))
			require.Equal(t, cj[0].Dst, got)
		}
		classes[classOf(gerr)]++
	}
	for _, crc := range []bool{true, false} {
		src := autoMix(r, n, 1024, "sztsz")
		// Encode through the device-resident operation.
		sb, err := dev.NewBuffer(2*n+64, vk.DeviceLocal)
		require.NoError(t, err)
		defer sb.Close()
		require.NoError(t, dev.Upload(ctx, sb, 48, src))
		enc, err := vb.PrepareEncode(ctx, EncodeSpec{
			Format: layout.FormatAuto, Src: vk.BufferRange{Buf: sb, Offset: 48}, N: n, Shift: shift,
			Codebook: &testCB, Checksums: crc, Dst: vk.BufferRange{Buf: in, Offset: 20},
		})
		require.NoError(t, err)
		size, err := enc.Run(ctx)
		enc.Close()
		require.NoError(t, err)
		body := make([]byte, size)
		require.NoError(t, dev.Download(ctx, body, in, 20))
		cpu, _ := autoEncodeBoth(t, vb, src, shift, crc)
		require.True(t, string(cpu) == string(body), "resident encode differs at %d", firstDiff(cpu, body))
		run(body, crc)
		// Every chunk in each candidate that is not its smallest: valid (the choice is the encoder's, §11.2), and
		// every piece decoder takes the chunk in every format.
		for c, want := range []uint8{layout.FormatSplitZip4, layout.FormatZF12, layout.FormatTBE3} {
			require.Equal(t, uint32(want), binary.LittleEndian.Uint32(body[12*c:])>>layout.KindShift, "chunk %d", c)
			for _, id := range []uint8{layout.FormatSplitZip4, layout.FormatZF12, layout.FormatTBE3} {
				if id != want {
					before := classes[""]
					run(swapPiece(t, body, src, n, shift, uint64(c), id, crc), crc)
					require.Equal(t, before+1, classes[""], "chunk %d as format %d decodes", c, id)
				}
			}
		}
		for i := 0; i < 300; i++ {
			bad := append([]byte{}, body...)
			switch i % 3 {
			case 0:
				bad[r.IntN(len(bad))] ^= 1 << r.IntN(8)
			case 1:
				binary.LittleEndian.PutUint32(bad[4*r.IntN(15):], r.Uint32()>>r.IntN(32)) // the auto table
			default:
				bad[r.IntN(len(bad))] = byte(r.Uint32())
			}
			run(bad, crc)
		}
	}
	require.False(t, dev.Lost())
	t.Logf("auto bodies through the kernels: %v", classes)
	require.Greater(t, classes[codec.ErrNonCanonical.Error()], 0)
	require.Greater(t, classes[codec.ErrCorrupt.Error()], 0)
}

// xwAutoMix is n values of dtype d whose chunks prefer different exponent-window widths: pattern byte '2' spreads
// exponents over 3 values (xw2), '3' over 7 (xw3), '4' over 15 (xw4; xw3 on F8_E4M3), with a few escapes.
func xwAutoMix(r *rand.Rand, d layout.DType, n, chunk int, pattern string) []byte {
	E, M, _ := layout.FloatFields(d)
	size := d.Size()
	out := make([]byte, size*n)
	for i := 0; i < n; i++ {
		span := map[byte]int{'2': 3, '3': 7, '4': 15}[pattern[(i/chunk)%len(pattern)]]
		x := uint64(min(1<<E-1, 1+r.IntN(span)))
		if r.IntN(50) == 0 {
			x = uint64(r.IntN(1 << E))
		}
		v := r.Uint64()&(1<<M-1) | x<<M | uint64(r.IntN(2))<<(E+M)
		for b := 0; b < size; b++ {
			out[size*i+b] = byte(v >> (8 * b))
		}
	}
	return out
}

// TestAutoXWMatchesReference: auto on F8_E5M2, F8_E4M3, F16 and F32 (pieces of xw3, xw2, xw4) encodes to the
// reference's bytes and decodes back on the device; a chunk in a candidate that is not its smallest, and random
// mutations, get the reference's verdict.
func TestAutoXWMatchesReference(t *testing.T) {
	vb := openTest(t, Options{})
	ctx := context.Background()
	r := rand.New(rand.NewPCG(4, 11))
	f, _ := codec.LookupFormat(layout.FormatAuto)
	for _, d := range []layout.DType{layout.DTypeF8E5M2, layout.DTypeF8E4M3, layout.DTypeF16, layout.DTypeF32} {
		for _, tc := range []struct {
			n     int
			shift uint
			pat   string
		}{{3*1024 + 77, 10, "234"}, {1, 10, "3"}, {33, 10, "2"}, {2*4096 + 5, 12, "42"}, {65536 + 100, 16, "32"}} {
			for _, crc := range []bool{true, false} {
				src := xwAutoMix(r, d, tc.n, 1<<tc.shift, tc.pat)
				mk := func() []codec.EncodeJob {
					return []codec.EncodeJob{{Format: layout.FormatAuto, DType: d, Src: src, N: uint64(tc.n), Shift: tc.shift,
						Checksums: crc, Dst: make([]byte, f.MaxBodyOf(uint64(tc.n), d, tc.shift))}}
				}
				cj, gj := mk(), mk()
				require.NoError(t, codec.NewCPUBackend(1).Encode(ctx, cj))
				require.NoError(t, vb.Encode(ctx, gj))
				require.True(t, string(cj[0].Out) == string(gj[0].Out), "%v n=%d %s crc %v: %d/%d bytes, differ at %d", d,
					tc.n, tc.pat, crc, len(cj[0].Out), len(gj[0].Out), firstDiff(cj[0].Out, gj[0].Out))
				dec := func(body []byte) (cpu, gpu codec.DecodeJob) {
					mk := func() []codec.DecodeJob {
						return []codec.DecodeJob{{Name: "x", Format: layout.FormatAuto, DType: d, Body: body, N: uint64(tc.n),
							Shift: tc.shift, Checksums: crc, Dst: make([]byte, d.Size()*tc.n)}}
					}
					c, g := mk(), mk()
					require.NoError(t, codec.NewCPUBackend(1).Decode(ctx, c))
					require.NoError(t, vb.Decode(ctx, g))
					return c[0], g[0]
				}
				c, g := dec(cj[0].Out)
				require.NoError(t, g.Err, "%v n=%d", d, tc.n)
				require.True(t, string(src) == string(g.Dst), "%v n=%d: decoded differs at %d", d, tc.n, firstDiff(src, g.Dst))
				require.NoError(t, c.Err)
				if tc.n < 2048 {
					continue
				}
				// Chunk 0 in every other candidate: valid (the choice is the encoder's), the same values.
				body := cj[0].Out
				own := uint8(binary.LittleEndian.Uint32(body) >> layout.KindShift)
				for _, cand := range codec.AutoCandidates(d) {
					if cand.ID == own {
						continue
					}
					other := swapPieceD(t, body, src, d, uint64(tc.n), tc.shift, 0, cand.ID, crc)
					c, g := dec(other)
					require.NoError(t, c.Err, "%v chunk 0 as %s", d, cand.Name)
					require.NoError(t, g.Err, "%v chunk 0 as %s: kernel", d, cand.Name)
					require.True(t, string(src) == string(g.Dst), "%v chunk 0 as %s: values", d, cand.Name)
				}
				for i := 0; i < 40 && tc.shift < 16; i++ {
					bad := append([]byte{}, body...)
					bad[r.IntN(len(bad))] ^= 1 << r.IntN(8)
					c, g := dec(bad)
					require.Equal(t, classOf(c.Err), classOf(g.Err), "%v: reference %v, kernel %v", d, c.Err, g.Err)
					if c.Err == nil {
						require.Equal(t, c.Dst, g.Dst)
					}
				}
			}
		}
	}
}

// TestAutoManyChunks: a tensor of 4,100 chunks, so that piece offsets sum 4,096-chunk blocks as well.
func TestAutoManyChunks(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(4, 3))
	const shift, chunks = 10, 4100
	src := autoMix(r, chunks<<shift-5, 1<<shift, "tszwrtf")
	cpu, gpu := autoEncodeBoth(t, vb, src, shift, true)
	require.True(t, string(cpu) == string(gpu), "%d/%d bytes, differ at %d", len(cpu), len(gpu), firstDiff(cpu, gpu))
}

// TestAutoCodebookRepeats: a codebook that lists an exponent twice codes its values once (the escape count, and so
// the choice, must not count them twice).
func TestAutoCodebookRepeats(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(4, 4))
	cb := testCB
	cb[15], cb[14] = cb[0], cb[1]
	src := autoMix(r, 3<<12+7, 1<<12, "szt")
	n := uint64(len(src) / 2)
	f, _ := codec.LookupFormat(layout.FormatAuto)
	mk := func() []codec.EncodeJob {
		return []codec.EncodeJob{{Format: layout.FormatAuto, Src: src, N: n, Shift: 12, Codebook: &cb, Checksums: true,
			Dst: make([]byte, f.MaxBodyOf(n, layout.DTypeBF16, 12))}}
	}
	cj, gj := mk(), mk()
	require.NoError(t, codec.NewCPUBackend(1).Encode(context.Background(), cj))
	require.NoError(t, vb.Encode(context.Background(), gj))
	require.True(t, string(cj[0].Out) == string(gj[0].Out), "differ at %d", firstDiff(cj[0].Out, gj[0].Out))
}

// TestAutoTunedEncode: the BF16 auto encode under other workgroup sizes, CRC table widths, table replication, slots
// loaded together and grids small enough that each workgroup loops over several chunks still writes the
// reference's bytes.
func TestAutoTunedEncode(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	for _, p := range []vktune.Params{{WorkGroup: 32, CRCBits: 4, Groups: 3, Unroll: 4}, {WorkGroup: 1024, CRCBits: 8, Repl: 2},
		{WorkGroup: 64, CRCBits: 6, Groups: 2, Unroll: 1}} {
		vb := openTest(t, Options{Tune: &p})
		for _, shift := range []uint{10, 16} {
			nv := 1 << shift
			for _, pat := range []string{"szt", "rwf"} {
				for _, cs := range []bool{true, false} {
					src := autoMix(r, 3*nv+5, nv, pat)
					cpu, gpu := autoEncodeBoth(t, vb, src, shift, cs)
					require.True(t, string(cpu) == string(gpu), "%+v shift %d %s crc %v: %d/%d bytes, differ at %d",
						p, shift, pat, cs, len(cpu), len(gpu), firstDiff(cpu, gpu))
				}
			}
		}
	}
}
