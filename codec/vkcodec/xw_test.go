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
	"github.com/vkzip/vkzip/codec/layout"
)

// The exponent-window kernels against the reference codec: the same bytes for every (format, dtype) pair, chunk
// size, length and checksum flag, and the same verdict (class and chunk) on damaged bodies. Run on lavapipe with
// LP_NATIVE_VECTOR_WIDTH=128 and 256 (subgroups of 4 and 8), VKZIP_REQUIRE_VULKAN=1.

type xwPair struct {
	f  uint8
	dt layout.DType
}

func xwTestPairs() (ps []xwPair) {
	for _, f := range []uint8{layout.FormatXW3, layout.FormatXW2, layout.FormatXW4} {
		for _, dt := range []layout.DType{layout.DTypeF8E5M2, layout.DTypeF8E4M3, layout.DTypeF16, layout.DTypeF32} {
			if _, ok := layout.NewXW(f, dt, 1, 16); ok {
				ps = append(ps, xwPair{f, dt})
			}
		}
	}
	return ps
}

func (p xwPair) String() string { return codec.FormatName(p.f) + "/" + p.dt.String() }

// xwValues draws n values of dt with exponents normal around the KV-like centre (bias - 1.5) and the given
// spread, random signs and mantissas.
func xwValues(r *rand.Rand, dt layout.DType, n int, spread float64) []byte {
	e, m, _ := layout.FloatFields(dt)
	size := dt.Size()
	b := make([]byte, n*size)
	for i := 0; i < n; i++ {
		x := int(float64(int(1)<<(e-1)-1) - 1.5 + spread*r.NormFloat64())
		x = min(max(x, 0), 1<<e-1)
		v := uint32(x)<<m | r.Uint32()&(1<<m-1) | r.Uint32()&1<<(8*size-1)
		for q := 0; q < size; q++ {
			b[i*size+q] = byte(v >> (8 * q))
		}
	}
	return b
}

func cpuEncodeXW(t *testing.T, p xwPair, src []byte, shift uint, cs bool) []byte {
	n := uint64(len(src) / p.dt.Size())
	max, ok := xwMaxBody(p.f, p.dt, n, shift)
	require.True(t, ok, "%v codes %v", p.f, p.dt)
	body, err := codec.NewCPUBackend(1).EncodeXW(context.Background(), p.f, p.dt, src, n, shift, cs, make([]byte, max))
	require.NoError(t, err)
	return body
}

func checkXWBoth(t *testing.T, k xwKernels, p xwPair, src []byte, shift uint, cs bool, what string) []byte {
	t.Helper()
	n := uint64(len(src) / p.dt.Size())
	cpu := cpuEncodeXW(t, p, src, shift, cs)
	gpu, err := k.Encode(context.Background(), p.f, p.dt, src, n, shift, cs)
	require.NoError(t, err, what)
	require.Equal(t, len(cpu), len(gpu), what)
	require.True(t, string(cpu) == string(gpu), "%s: bytes differ at %d", what, firstDiff(cpu, gpu))
	dst := make([]byte, len(src))
	bodyErr, err := k.Decode(context.Background(), p.f, p.dt, cpu, n, shift, cs, dst)
	require.NoError(t, err, what)
	require.NoError(t, bodyErr, what)
	require.True(t, string(src) == string(dst), "%s: decoded values differ at byte %d", what, firstDiff(src, dst))
	return cpu
}

func TestXWHostMatchReference(t *testing.T) {
	k := newXWKernels(openTest(t, Options{}))
	r := rand.New(rand.NewPCG(21, 22))
	for _, p := range xwTestPairs() {
		for _, shift := range []uint{10, 12} {
			nv := 1 << shift
			for _, n := range []int{1, 31, 32, 33, nv - 1, nv, nv + 1, 3*nv + 17} {
				for _, spread := range []float64{1.2, 4, 100} {
					for _, cs := range []bool{true, false} {
						checkXWBoth(t, k, p, xwValues(r, p.dt, n, spread), shift, cs,
							fmt.Sprintf("%v shift %d n %d spread %v crc %v", p, shift, n, spread, cs))
					}
				}
			}
		}
	}
}

// Default chunks (2^16 values, one workgroup of up to 256 invocations looping over 2,048 groups) and a tensor
// of several of them.
func TestXWHostLargeChunks(t *testing.T) {
	k := newXWKernels(openTest(t, Options{}))
	r := rand.New(rand.NewPCG(23, 24))
	for _, p := range xwTestPairs() {
		checkXWBoth(t, k, p, xwValues(r, p.dt, 2<<16+1000, 1.5), 16, true, p.String())
	}
}

func TestXWHostEveryBitPattern(t *testing.T) {
	k := newXWKernels(openTest(t, Options{}))
	r := rand.New(rand.NewPCG(25, 26))
	for _, p := range xwTestPairs() {
		var src []byte
		switch p.dt.Size() {
		case 1:
			for rep := 0; rep < 8; rep++ {
				for v := 0; v < 256; v++ {
					src = append(src, byte(v))
				}
			}
		case 2:
			for v := 0; v < 1<<16; v++ {
				src = binary.LittleEndian.AppendUint16(src, uint16(v))
			}
		case 4:
			for x := uint32(0); x < 256; x++ {
				for j := 0; j < 64; j++ {
					src = binary.LittleEndian.AppendUint32(src, r.Uint32()&^(0xFF<<23)|x<<23)
				}
			}
		}
		checkXWBoth(t, k, p, src, 10, true, p.String()+" in order")
		sz := p.dt.Size()
		r.Shuffle(len(src)/sz, func(i, j int) {
			for q := 0; q < sz; q++ {
				src[i*sz+q], src[j*sz+q] = src[j*sz+q], src[i*sz+q]
			}
		})
		checkXWBoth(t, k, p, src, 12, true, p.String()+" shuffled")
	}
}

// Damaged bodies: random bit flips (with checksums on they must fail the same chunk's CRC; with them off most
// decode to other values or break canonical form) and flips of table bits. The GPU's verdict must be the
// reference's: same class, same chunk, and the same values when both accept.
func TestXWHostSameVerdicts(t *testing.T) {
	k := newXWKernels(openTest(t, Options{}))
	r := rand.New(rand.NewPCG(27, 28))
	ctx := context.Background()
	cpu := codec.NewCPUBackend(1)
	for _, p := range xwTestPairs() {
		for _, cs := range []bool{true, false} {
			const n = 3*1024 + 40
			src := xwValues(r, p.dt, n, 1.5)
			body := cpuEncodeXW(t, p, src, 10, cs)
			x, _ := layout.NewXW(p.f, p.dt, n, 10)
			classes := map[string]int{}
			for trial := 0; trial < 60; trial++ {
				bad := append([]byte{}, body...)
				flips := 1 + r.IntN(3)
				for f := 0; f < flips; f++ {
					var bit uint64
					if trial%4 == 0 { // the table: info, offsets, CRCs
						bit = 8*x.TableOffset() + r.Uint64N(8*layout.ChunkEntrySize*x.Chunks())
					} else {
						bit = r.Uint64N(8 * uint64(len(bad)))
					}
					bad[bit/8] ^= 1 << (bit % 8)
				}
				want := make([]byte, len(src))
				wantErr, err := cpu.DecodeXW(ctx, p.f, p.dt, bad, n, 10, cs, want)
				require.NoError(t, err)
				got := make([]byte, len(src))
				gotErr, err := k.Decode(ctx, p.f, p.dt, bad, n, 10, cs, got)
				require.NoError(t, err)
				what := fmt.Sprintf("%v crc %v trial %d", p, cs, trial)
				if wantErr == nil {
					require.NoError(t, gotErr, what)
					require.True(t, string(want) == string(got), what)
					classes["ok"]++
					continue
				}
				require.Error(t, gotErr, "%s: reference says %v", what, wantErr)
				var we, ge *codec.Error
				require.True(t, errors.As(wantErr, &we) && errors.As(gotErr, &ge), what)
				require.Equal(t, we.Class, ge.Class, "%s: reference %v, GPU %v", what, wantErr, gotErr)
				require.Equal(t, we.Chunk, ge.Chunk, "%s: reference %v, GPU %v", what, wantErr, gotErr)
				classes[we.Class.Error()]++
			}
			t.Logf("%v crc %v: %v", p, cs, classes)
		}
	}
}

// Bodies the reference rejects as non-canonical for each rule the kernel checks on its own: the GPU must agree.
func TestXWHostNonCanonical(t *testing.T) {
	k := newXWKernels(openTest(t, Options{}))
	r := rand.New(rand.NewPCG(29, 30))
	ctx := context.Background()
	for _, p := range xwTestPairs() {
		const n = 2*1024 + 7
		src := xwValues(r, p.dt, n, 1.5)
		body := cpuEncodeXW(t, p, src, 10, false)
		x, _ := layout.NewXW(p.f, p.dt, n, 10)
		le := binary.LittleEndian
		cases := map[string][]byte{}
		mut := func(name string, f func(b []byte)) {
			b := append([]byte{}, body...)
			f(b)
			cases[name] = b
		}
		mut("plane bit past the end", func(b []byte) { b[x.PlaneBytes()-1] |= 0x80 })
		mut("crc without checksums", func(b []byte) { b[x.TableOffset()+8] = 1 })
		mut("a zero code too many", func(b []byte) {
			// Clear the code of the first value of chunk 0 that has one.
			P := uint64(x.Planes())
			for i := uint64(0); i < 1024; i++ {
				g, bit := i/32, i%32
				var any uint32
				for q := uint64(0); q < uint64(x.W); q++ {
					any |= le.Uint32(b[4*(g*P+q):])
				}
				if any>>bit&1 == 0 {
					continue
				}
				for q := uint64(0); q < uint64(x.W); q++ {
					w := b[4*(g*P+q):]
					le.PutUint32(w, le.Uint32(w)&^(1<<bit))
				}
				return
			}
		})
		if info := le.Uint32(body[x.TableOffset():]); info>>24 == 0 && info&0xFFFF%32 != 0 {
			mut("escape bits past the last escape", func(b []byte) {
				end := x.SideOffset() + x.CodedSide(uint64(info&0xFFFF))
				b[end-1] |= 0x80
			})
		}
		if x.KB() > 0 && x.LowBytes() > uint64(x.KB())*n {
			mut("byte padding", func(b []byte) { b[x.TableOffset()-1] = 1 })
		}
		for name, b := range cases {
			want := make([]byte, len(src))
			wantErr, err := codec.NewCPUBackend(1).DecodeXW(ctx, p.f, p.dt, b, n, 10, false, want)
			require.NoError(t, err)
			require.ErrorIs(t, wantErr, codec.ErrNonCanonical, "%v %s", p, name)
			gotErr, err := k.Decode(ctx, p.f, p.dt, b, n, 10, false, make([]byte, len(src)))
			require.NoError(t, err)
			require.ErrorIs(t, gotErr, codec.ErrNonCanonical, "%v %s: reference %v", p, name, wantErr)
			var we, ge *codec.Error
			errors.As(wantErr, &we)
			errors.As(gotErr, &ge)
			require.Equal(t, we.Chunk, ge.Chunk, "%v %s", p, name)
		}
	}
}

// Empty tensors have empty bodies, as in the reference; bad arguments are refused, not dispatched.
func TestXWHostEdges(t *testing.T) {
	k := newXWKernels(openTest(t, Options{}))
	ctx := context.Background()
	body, err := k.Encode(ctx, layout.FormatXW3, layout.DTypeF16, nil, 0, 10, true)
	require.NoError(t, err)
	require.Empty(t, body)
	require.Equal(t, cpuEncodeXW(t, xwPair{layout.FormatXW3, layout.DTypeF16}, nil, 10, true), body)
	bodyErr, err := k.Decode(ctx, layout.FormatXW3, layout.DTypeF16, nil, 0, 10, true, nil)
	require.NoError(t, err)
	require.NoError(t, bodyErr)
	bodyErr, err = k.Decode(ctx, layout.FormatXW3, layout.DTypeF16, []byte{0, 0, 0, 0}, 0, 10, true, nil)
	require.NoError(t, err)
	require.ErrorIs(t, bodyErr, codec.ErrCorrupt)
	_, err = k.Encode(ctx, layout.FormatXW4, layout.DTypeF8E4M3, make([]byte, 8), 8, 10, true)
	require.ErrorIs(t, err, codec.ErrInvalidInput)
	_, err = k.Encode(ctx, layout.FormatXW3, layout.DTypeF16, make([]byte, 8), 8, 9, true)
	require.ErrorIs(t, err, codec.ErrInvalidInput)
	_, err = k.Encode(ctx, layout.FormatXW3, layout.DTypeF16, make([]byte, 8), 5, 10, true)
	require.ErrorIs(t, err, codec.ErrInvalidInput)
	_, err = k.Decode(ctx, layout.FormatXW3, layout.DTypeF16, make([]byte, 8), 4, 10, true, make([]byte, 3))
	require.ErrorIs(t, err, codec.ErrInvalidInput)
}

// xwKernels runs the exponent-window formats through the backend's host-memory jobs, one tensor a call, returning
// the body (Encode) or the body's verdict apart from the call's error (Decode).
type xwKernels struct{ b *Backend }

func newXWKernels(b *Backend) xwKernels { return xwKernels{b} }

func (k xwKernels) Encode(ctx context.Context, f uint8, dt layout.DType, src []byte, n uint64, shift uint,
	cs bool) ([]byte, error) {
	j := []codec.EncodeJob{{Format: f, DType: dt, Src: src, N: n, Shift: shift, Checksums: cs}}
	if max, ok := xwMaxBody(f, dt, n, shift); ok {
		j[0].Dst = make([]byte, max)
	}
	if err := k.b.Encode(ctx, j); err != nil {
		return nil, err
	}
	return j[0].Out, nil
}

func (k xwKernels) Decode(ctx context.Context, f uint8, dt layout.DType, body []byte, n uint64, shift uint, cs bool,
	dst []byte) (bodyErr, err error) {
	j := []codec.DecodeJob{{Format: f, DType: dt, Body: body, N: n, Shift: shift, Checksums: cs, Dst: dst}}
	if err := k.b.Decode(ctx, j); err != nil {
		return nil, err
	}
	return j[0].Err, nil
}

// TestXWDecodeShared checks the decoders' shared-memory model against the NVIDIA driver's pipeline statistics (xw3
// F16 at 2^16-value chunks, workgroups of 256, 8-bit tables: 29,832 bytes on an H100) and that the table width
// narrows only where a device's limit needs it: F32's 256-bin histogram at 2^16-value chunks exceeds 32 KiB with
// 8-bit tables and fits with narrower ones, while 48 KiB keeps them.
func TestXWDecodeShared(t *testing.T) {
	f16, ok := layout.NewXW(layout.FormatXW3, layout.DTypeF16, 1<<20, 16)
	require.True(t, ok)
	require.Equal(t, uint32(29832), xwDecodeShared(f16, 256, 8))
	f32, ok := layout.NewXW(layout.FormatXW3, layout.DTypeF32, 1<<20, 16)
	require.True(t, ok)
	require.Greater(t, xwDecodeShared(f32, 256, 8), uint32(32<<10))
	b := &Backend{}
	b.info.Limits.MaxComputeSharedMemorySize = 32 << 10
	bits := b.xwDecodeBits(f32, 256, 8)
	require.Less(t, bits, 8)
	require.LessOrEqual(t, xwDecodeShared(f32, 256, bits), uint32(32<<10))
	require.Equal(t, 8, b.xwDecodeBits(f16, 256, 8))
	b.info.Limits.MaxComputeSharedMemorySize = 48 << 10
	require.Equal(t, 8, b.xwDecodeBits(f32, 256, 8))
}
