package vkcodec

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/vk"
)

// Device-resident TBE-3 and exponent-window operations (tbe3.go, xw.go through ops.go) against the reference codec: the
// same bytes from the encode, the values back from the decode, the reference's class for damaged bodies the kernel
// alone judges, nothing written outside the given ranges, one submission a run, no Vulkan objects left behind.
// Run on lavapipe with LP_NATIVE_VECTOR_WIDTH=128 and 256, VKZIP_REQUIRE_VULKAN=1.

const residentPoison = 0xA5

// poisonBuf fills a whole device buffer with the poison byte.
func poisonBuf(t *testing.T, dev *vk.Device, buf *vk.Buffer) {
	t.Helper()
	require.NoError(t, dev.Upload(context.Background(), buf, 0, bytes.Repeat([]byte{residentPoison}, int(buf.Size()))))
}

// requirePoison checks that a buffer still holds poison outside [lo, hi).
func requirePoison(t *testing.T, dev *vk.Device, buf *vk.Buffer, lo, hi uint64, what string) {
	t.Helper()
	b := make([]byte, buf.Size())
	require.NoError(t, dev.Download(context.Background(), b, buf, 0))
	for i, x := range b {
		if (uint64(i) < lo || uint64(i) >= hi) && x != residentPoison {
			require.Failf(t, "written outside its range", "%s: byte %d of %d (range [%d, %d))", what, i, len(b), lo, hi)
		}
	}
}

// refEncode is the reference body of src (n values of dt).
func refEncode(t *testing.T, f uint8, dt layout.DType, src []byte, n uint64, shift uint, cs bool) []byte {
	t.Helper()
	fd, ok := codec.LookupFormat(f)
	require.True(t, ok)
	jobs := []codec.EncodeJob{{Format: f, DType: dt, Src: src, N: n, Shift: shift, Checksums: cs,
		Dst: make([]byte, fd.MaxBodyOf(n, dt, shift))}}
	require.NoError(t, codec.NewCPUBackend(1).Encode(context.Background(), jobs))
	return jobs[0].Out
}

// refDecode is the reference's verdict on a body, and its values when it accepts.
func refDecode(t *testing.T, f uint8, dt layout.DType, body []byte, n uint64, shift uint, cs bool) ([]byte, error) {
	t.Helper()
	jobs := []codec.DecodeJob{{Format: f, DType: dt, Body: body, N: n, Shift: shift, Checksums: cs,
		Dst: make([]byte, n*uint64(dt.Size()))}}
	require.NoError(t, codec.NewCPUBackend(1).Decode(context.Background(), jobs))
	return jobs[0].Dst, jobs[0].Err
}

// residentRoundTrip encodes src on the device from offs[0] of a buffer into a body at offs[1], checks it against
// the reference, decodes it to offs[2], and checks every buffer outside its range is untouched. The encode runs
// twice, over a re-poisoned body, so that nothing depends on what the destination held.
func residentRoundTrip(t *testing.T, vb *Backend, f uint8, dt layout.DType, src []byte, shift uint, cs bool,
	offs [3]uint64, what string) {
	t.Helper()
	ctx := context.Background()
	dev := vb.VK()
	size := uint64(dt.Size())
	n := uint64(len(src)) / size
	fd, _ := codec.LookupFormat(f)
	maxBody := fd.MaxBodyOf(n, dt, shift)
	want := refEncode(t, f, dt, src, n, shift, cs)
	vals := layout.Align4(n * size)
	in, err := dev.NewBuffer(offs[0]+vals+64, vk.DeviceLocal)
	require.NoError(t, err)
	defer in.Close()
	body, err := dev.NewBuffer(offs[1]+maxBody+64, vk.DeviceLocal)
	require.NoError(t, err)
	defer body.Close()
	out, err := dev.NewBuffer(offs[2]+vals+64, vk.DeviceLocal)
	require.NoError(t, err)
	defer out.Close()
	poisonBuf(t, dev, in)
	require.NoError(t, dev.Upload(ctx, in, offs[0], src))
	poisonBuf(t, dev, out)

	enc, err := vb.PrepareEncode(ctx, EncodeSpec{
		Format: f, DType: dt, Src: vk.BufferRange{Buf: in, Offset: offs[0]}, N: n, Shift: shift, Codebook: nil,
		Checksums: cs, Dst: vk.BufferRange{Buf: body, Offset: offs[1]},
	})
	require.NoError(t, err, what)
	defer enc.Close()
	for run := 0; run < 2; run++ {
		poisonBuf(t, dev, body)
		before := dev.Stats()
		got, err := enc.Run(ctx)
		require.NoError(t, err, what)
		after := dev.Stats()
		require.Equal(t, uint64(1), after.Submissions-before.Submissions, "%s: encode is one submission", what)
		require.Equal(t, uint64(1), after.Readbacks-before.Readbacks, "%s: encode reads back only the size", what)
		require.Equal(t, uint64(len(want)), got, what)
		b := make([]byte, got)
		require.NoError(t, dev.Download(ctx, b, body, offs[1]))
		require.True(t, bytes.Equal(want, b), "%s run %d: device body differs from the reference at %d", what, run,
			firstDiff(want, b))
		requirePoison(t, dev, body, offs[1], offs[1]+maxBody, what+": body")
	}
	require.Positive(t, int64(enc.GPUTime()), what)
	if f != layout.FormatAuto { // auto's passes are timed as one span
		require.GreaterOrEqual(t, len(enc.PassTimes()), 2, what)
	}
	for _, d := range enc.PassTimes() {
		require.Positive(t, int64(d), "%s: a timestamp after each pass", what)
	}

	dec, err := vb.PrepareDecode(ctx, DecodeSpec{
		Format: f, DType: dt, Body: vk.BufferRange{Buf: body, Offset: offs[1]}, BodyLen: uint64(len(want)), N: n,
		Shift: shift, Codebook: nil, Checksums: cs, Dst: vk.BufferRange{Buf: out, Offset: offs[2]},
	})
	require.NoError(t, err, what)
	defer dec.Close()
	before := dev.Stats()
	require.NoError(t, dec.Run(ctx), what)
	require.Equal(t, uint64(1), dev.Stats().Submissions-before.Submissions, "%s: decode is one submission", what)
	back := make([]byte, len(src))
	require.NoError(t, dev.Download(ctx, back, out, offs[2]))
	require.True(t, bytes.Equal(src, back), "%s: decoded values differ at byte %d", what, firstDiff(src, back))
	requirePoison(t, dev, out, offs[2], offs[2]+vals, what+": output")
	requirePoison(t, dev, in, offs[0], offs[0]+uint64(len(src)), what+": source")
}

func TestTBE3DeviceOps(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(31, 32))
	pats := tbe3Patterns(r)
	pats["kv"] = kvLike(r, 70001, 0.002)
	pats["kv-raw"] = append(kvLike(r, 2048, 0.001), kvLike(r, 3001, 0.9)...)
	// Body offsets put the SM stream at every word offset mod 16 (its start is offset + 24·tiles).
	offsets := [][3]uint64{{48, 20, 32}, {0, 8, 16}, {16, 4, 0}, {0, 0, 0}}
	i := 0
	for name, src := range pats {
		for _, shift := range []uint{10, 14} {
			for _, cs := range []bool{true, false} {
				o := offsets[i%len(offsets)]
				i++
				residentRoundTrip(t, vb, layout.FormatTBE3, layout.DTypeBF16, src, shift, cs, o,
					fmt.Sprintf("%s shift %d crc %v offsets %v", name, shift, cs, o))
			}
		}
	}
}

func TestXWDeviceOps(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(33, 34))
	offsets := [][3]uint64{{48, 20, 32}, {16, 4, 0}, {0, 0, 16}}
	i := 0
	for _, p := range xwTestPairs() {
		for _, n := range []int{33, 1<<12 + 5, 3 << 12} {
			for _, spread := range []float64{1.2, 100} { // coded chunks with escapes, raw chunks
				cs := i%2 == 0
				o := offsets[i%len(offsets)]
				i++
				residentRoundTrip(t, vb, p.f, p.dt, xwValues(r, p.dt, n, spread), 12, cs, o,
					fmt.Sprintf("%v n %d spread %v crc %v offsets %v", p, n, spread, cs, o))
			}
		}
	}
}

// residentMutations decodes damaged copies of body through one prepared decode per body length (no host check)
// and requires the reference's class, and its values when it accepts; it returns the classes seen. table is the
// chunk table's offset and length in the body.
func residentMutations(t *testing.T, vb *Backend, f uint8, dt layout.DType, body []byte, n uint64, shift uint,
	cs bool, count int, r *rand.Rand, table [2]uint64) map[string]int {
	t.Helper()
	ctx := context.Background()
	dev := vb.VK()
	size := uint64(dt.Size())
	fd, _ := codec.LookupFormat(f)
	lo, hi := fd.BodyBounds(n, dt, shift)
	in, err := dev.NewBuffer(20+hi+64, vk.DeviceLocal)
	require.NoError(t, err)
	defer in.Close()
	out, err := dev.NewBuffer(layout.Align4(n*size)+16, vk.DeviceLocal)
	require.NoError(t, err)
	defer out.Close()
	ops := map[int]*DecodeOp{}
	defer func() {
		for _, op := range ops {
			op.Close()
		}
	}()
	classes := map[string]int{}
	for i := 0; i < count; i++ {
		bad := append([]byte{}, body...)
		switch i % 5 {
		case 0: // a table word: info, offset, CRC
			w := table[0] + 4*r.Uint64N(table[1]/4)
			binary.LittleEndian.PutUint32(bad[w:], binary.LittleEndian.Uint32(bad[w:])^1<<r.IntN(32))
		case 1: // whole body length changes
			if d := 4 * (1 + r.IntN(3)); r.IntN(2) == 0 && len(bad) > d {
				bad = bad[:len(bad)-d]
			} else {
				bad = append(bad, make([]byte, d)...)
			}
		default:
			for k := 0; k < 1+i%3; k++ {
				bad[r.IntN(len(bad))] ^= 1 << r.IntN(8)
			}
		}
		want, werr := refDecode(t, f, dt, bad, n, shift, cs)
		var gerr error
		if uint64(len(bad)) < lo || uint64(len(bad)) > hi {
			_, gerr = vb.PrepareDecode(ctx, DecodeSpec{
				Format: f, DType: dt, Body: vk.BufferRange{Buf: in, Offset: 20}, BodyLen: uint64(len(bad)), N: n,
				Shift: shift, Codebook: nil, Checksums: cs, Dst: vk.BufferRange{Buf: out},
			})
		} else {
			op := ops[len(bad)]
			if op == nil {
				op, err = vb.PrepareDecode(ctx, DecodeSpec{
					Format: f, DType: dt, Body: vk.BufferRange{Buf: in, Offset: 20}, BodyLen: uint64(len(bad)),
					N: n, Shift: shift, Codebook: nil, Checksums: cs, Dst: vk.BufferRange{Buf: out},
				})
				require.NoError(t, err)
				ops[len(bad)] = op
			}
			require.NoError(t, dev.Upload(ctx, in, 20, bad))
			gerr = op.Run(ctx)
		}
		require.Equal(t, classOf(werr), classOf(gerr), "mutation %d: reference %v, kernel %v", i, werr, gerr)
		if werr == nil {
			got := make([]byte, n*size)
			require.NoError(t, dev.Download(ctx, got, out, 0))
			require.True(t, bytes.Equal(want, got), "mutation %d decodes differently", i)
		}
		classes[classOf(werr)]++
	}
	require.False(t, dev.Lost())
	return classes
}

// mutatedCase is a body to damage: values of a format and dtype, some chunks coded and one raw.
type mutatedCase struct {
	f     uint8
	dt    layout.DType
	src   []byte
	shift uint
	table func(n uint64) [2]uint64 // the chunk table's offset and length
}

// runMutated damages the cases' bodies (checksums on and off, count mutations in all) and requires every class.
func runMutated(t *testing.T, cases []mutatedCase, r *rand.Rand) {
	vb := openTest(t, Options{})
	count := envInt("VKZIP_MUTATIONS", 400)
	all := map[string]int{}
	for i, c := range cases {
		n := uint64(len(c.src) / c.dt.Size())
		for _, cs := range []bool{i%2 == 0, i%2 != 0} {
			body := refEncode(t, c.f, c.dt, c.src, n, c.shift, cs)
			for cl, k := range residentMutations(t, vb, c.f, c.dt, body, n, c.shift, cs,
				max(count/(2*len(cases)), 10), r, c.table(n)) {
				all[cl] += k
			}
		}
	}
	t.Logf("classes: %v", all)
	for _, cls := range []error{codec.ErrCorrupt, codec.ErrChecksum, codec.ErrNonCanonical} {
		require.NotZero(t, all[cls.Error()], "no %v case", cls)
	}
}

func TestTBE3MutatedOnDevice(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	src := kvLike(r, 5000, 0.02)
	copy(src[2*2048:], kvLike(r, 1024, 0.9)) // chunk 2 raw
	runMutated(t, []mutatedCase{{f: layout.FormatTBE3, dt: layout.DTypeBF16, src: src, shift: 10,
		table: func(n uint64) [2]uint64 {
			g := layout.TBE3{N: n, Shift: 10}
			return [2]uint64{g.TableOffset(), g.SideOffset() - g.TableOffset()}
		}}}, r)
}

func TestXWMutatedOnDevice(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 38))
	var cases []mutatedCase
	for _, p := range xwTestPairs() {
		src := xwValues(r, p.dt, 3*1024+40, 1.5)
		copy(src[1024*p.dt.Size():], xwValues(r, p.dt, 1024, 100)) // chunk 1 raw
		cases = append(cases, mutatedCase{f: p.f, dt: p.dt, src: src, shift: 10, table: func(n uint64) [2]uint64 {
			x, _ := layout.NewXW(p.f, p.dt, n, 10)
			return [2]uint64{x.TableOffset(), x.SideOffset() - x.TableOffset()}
		}})
	}
	runMutated(t, cases, r)
}

// TestTypedOpsRefuse checks the typed operations' argument checks and that preparing and closing them leaves no
// Vulkan object behind.
func TestTypedOpsRefuse(t *testing.T) {
	vb := openTest(t, Options{})
	ctx := context.Background()
	dev := vb.VK()
	buf, err := dev.NewBuffer(1<<20, vk.DeviceLocal)
	require.NoError(t, err)
	defer buf.Close()
	whole := vk.BufferRange{Buf: buf}
	at := func(off uint64) vk.BufferRange { return vk.BufferRange{Buf: buf, Offset: off} }
	for _, c := range []struct {
		what string
		err  error
		run  func() error
	}{
		{"xw over BF16", codec.ErrInvalidInput, func() error {
			_, err := vb.PrepareEncode(ctx, EncodeSpec{
				Format: layout.FormatXW3, Src: whole, N: 4096, Shift: 12, Codebook: nil, Checksums: true,
				Dst: whole,
			})
			return err
		}},
		{"tbe3 over F16", codec.ErrUnsupported, func() error {
			_, err := vb.PrepareEncode(ctx, EncodeSpec{
				Format: layout.FormatTBE3, DType: layout.DTypeF16, Src: whole, N: 4096, Shift: 12, Codebook: nil,
				Checksums: true, Dst: whole,
			})
			return err
		}},
		{"xw source offset", codec.ErrInvalidInput, func() error {
			_, err := vb.PrepareEncode(ctx, EncodeSpec{
				Format: layout.FormatXW3, DType: layout.DTypeF8E5M2, Src: at(4), N: 4096, Shift: 12, Codebook: nil,
				Checksums: true, Dst: whole,
			})
			return err
		}},
		{"tbe3 body offset", codec.ErrInvalidInput, func() error {
			lo := layout.TBE3{N: 4096, Shift: 12}.MinBodySize()
			_, err := vb.PrepareDecode(ctx, DecodeSpec{
				Format: layout.FormatTBE3, DType: layout.DTypeBF16, Body: at(2), BodyLen: lo, N: 4096, Shift: 12,
				Codebook: nil, Checksums: true, Dst: whole,
			})
			return err
		}},
		{"xw destination too small", codec.ErrInvalidInput, func() error {
			_, err := vb.PrepareEncode(ctx, EncodeSpec{
				Format: layout.FormatXW2, DType: layout.DTypeF32, Src: whole, N: 1 << 18, Shift: 12, Codebook: nil,
				Checksums: true, Dst: at(1 << 19),
			})
			return err
		}},
		{"xw body past the buffer", codec.ErrInvalidInput, func() error {
			x, _ := layout.NewXW(layout.FormatXW4, layout.DTypeF16, 1<<18, 12)
			_, err := vb.PrepareDecode(ctx, DecodeSpec{
				Format: layout.FormatXW4, DType: layout.DTypeF16, Body: at(1<<20 - 4096), BodyLen: x.MinBodySize(),
				N: 1 << 18, Shift: 12, Codebook: nil, Checksums: true, Dst: whole,
			})
			return err
		}},
		{"xw body length", codec.ErrCorrupt, func() error {
			_, err := vb.PrepareDecode(ctx, DecodeSpec{
				Format: layout.FormatXW3, DType: layout.DTypeF8E4M3, Body: whole, BodyLen: 6, N: 4096, Shift: 12,
				Codebook: nil, Checksums: true, Dst: whole,
			})
			return err
		}},
		{"auto over F16 destination too small", codec.ErrInvalidInput, func() error {
			_, err := vb.PrepareEncode(ctx, EncodeSpec{
				Format: layout.FormatAuto, DType: layout.DTypeF16, Src: whole, N: 1 << 18, Shift: 12, Codebook: nil,
				Checksums: true, Dst: at(1 << 19),
			})
			return err
		}},
		{"auto over F8_E4M3 destination offset", codec.ErrInvalidInput, func() error {
			f, _ := codec.LookupFormat(layout.FormatAuto)
			lo, _ := f.BodyBounds(4096, layout.DTypeF8E4M3, 12)
			_, err := vb.PrepareDecode(ctx, DecodeSpec{
				Format: layout.FormatAuto, DType: layout.DTypeF8E4M3, Body: whole, BodyLen: lo, N: 4096, Shift: 12,
				Codebook: nil, Checksums: true, Dst: at(8),
			})
			return err
		}},
		{"empty tensor", codec.ErrInvalidInput, func() error {
			_, err := vb.PrepareEncode(ctx, EncodeSpec{
				Format: layout.FormatXW3, DType: layout.DTypeF16, Src: whole, N: 0, Shift: 12, Codebook: nil,
				Checksums: true, Dst: whole,
			})
			return err
		}},
	} {
		require.ErrorIs(t, c.run(), c.err, c.what)
	}

	// Warm the pipelines, then prepare, run and close ops of every kind: the live object count must come back.
	src := kvLike(rand.New(rand.NewPCG(39, 40)), 4096, 0.01)
	require.NoError(t, dev.Upload(ctx, buf, 0, src))
	cycle := func() {
		for _, f := range []struct {
			id uint8
			dt layout.DType
		}{{layout.FormatTBE3, layout.DTypeBF16}, {layout.FormatXW3, layout.DTypeF8E5M2}, {layout.FormatXW2, layout.DTypeF16},
			{layout.FormatAuto, layout.DTypeF16}, {layout.FormatAuto, layout.DTypeF8E4M3}} {
			n := uint64(len(src) / f.dt.Size())
			enc, err := vb.PrepareEncode(ctx, EncodeSpec{
				Format: f.id, DType: f.dt, Src: whole, N: n, Shift: 10, Codebook: nil, Checksums: true,
				Dst: at(1 << 18),
			})
			require.NoError(t, err)
			size, err := enc.Run(ctx)
			require.NoError(t, err)
			enc.Close()
			dec, err := vb.PrepareDecode(ctx, DecodeSpec{
				Format: f.id, DType: f.dt, Body: at(1 << 18), BodyLen: size, N: n, Shift: 10, Codebook: nil,
				Checksums: true, Dst: at(1 << 19),
			})
			require.NoError(t, err)
			require.NoError(t, dec.Run(ctx))
			dec.Close()
		}
	}
	cycle()
	live := dev.LiveObjects()
	for i := 0; i < 5; i++ {
		cycle()
	}
	require.Equal(t, live, dev.LiveObjects(), "Vulkan objects leaked by prepared operations")
}

// TestAutoXWDeviceOps: the device-resident auto over F8_E5M2, F8_E4M3, F16 and F32 (pieces of the exponent-window
// formats) gives the reference's bytes and values at caller offsets that are not binding-aligned.
func TestAutoXWDeviceOps(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(41, 42))
	offsets := [][3]uint64{{48, 20, 32}, {16, 4, 0}, {0, 0, 16}, {256, 260, 272}}
	i := 0
	for _, dt := range []layout.DType{layout.DTypeF8E5M2, layout.DTypeF8E4M3, layout.DTypeF16, layout.DTypeF32} {
		for _, tc := range []struct {
			n     int
			shift uint
			pat   string
		}{{1, 10, "3"}, {33, 10, "2"}, {3*1024 + 77, 10, "234"}, {2*4096 + 5, 12, "42"}} {
			cs := i%2 == 0
			o := offsets[i%len(offsets)]
			i++
			residentRoundTrip(t, vb, layout.FormatAuto, dt, xwAutoMix(r, dt, tc.n, 1<<tc.shift, tc.pat), tc.shift, cs, o,
				fmt.Sprintf("auto/%v n %d %s crc %v offsets %v", dt, tc.n, tc.pat, cs, o))
		}
	}
}

// TestAutoXWMutatedOnDevice: damaged auto bodies over the exponent-window dtypes, judged by the kernels alone (no
// host table check), get the reference's class; each chunk recoded in a candidate that is not its smallest is valid
// (the choice is the encoder's) and decodes to the same values.
func TestAutoXWMutatedOnDevice(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	var cases []mutatedCase
	for _, dt := range []layout.DType{layout.DTypeF8E5M2, layout.DTypeF8E4M3, layout.DTypeF16, layout.DTypeF32} {
		src := xwAutoMix(r, dt, 4*1024+40, 1024, "2344")
		copy(src[3*1024*dt.Size():], xwValues(r, dt, 1024, 100)) // chunk 3 raw
		cases = append(cases, mutatedCase{f: layout.FormatAuto, dt: dt, src: src, shift: 10, table: func(n uint64) [2]uint64 {
			return [2]uint64{0, layout.ChunkEntrySize * layout.SZ4{N: n, Shift: 10}.Chunks()}
		}})
	}
	runMutated(t, cases, r)

	vb := openTest(t, Options{})
	ctx := context.Background()
	dev := vb.VK()
	for _, c := range cases {
		n := uint64(len(c.src) / c.dt.Size())
		body := refEncode(t, c.f, c.dt, c.src, n, c.shift, true)
		own := uint8(binary.LittleEndian.Uint32(body) >> layout.KindShift)
		for _, cand := range codec.AutoCandidates(c.dt) {
			if cand.ID == own {
				continue
			}
			bad := swapPieceD(t, body, c.src, c.dt, n, c.shift, 0, cand.ID, true)
			_, werr := refDecode(t, c.f, c.dt, bad, n, c.shift, true)
			require.NoError(t, werr)
			in, err := dev.NewBuffer(uint64(len(bad))+64, vk.DeviceLocal)
			require.NoError(t, err)
			out, err := dev.NewBuffer(layout.Align4(n*uint64(c.dt.Size()))+64, vk.DeviceLocal)
			require.NoError(t, err)
			require.NoError(t, dev.Upload(ctx, in, 20, bad))
			op, err := vb.PrepareDecode(ctx, DecodeSpec{
				Format: c.f, DType: c.dt, Body: vk.BufferRange{Buf: in, Offset: 20}, BodyLen: uint64(len(bad)),
				N: n, Shift: c.shift, Codebook: nil, Checksums: true, Dst: vk.BufferRange{Buf: out, Offset: 48},
			})
			require.NoError(t, err)
			require.NoError(t, op.Run(ctx), "%v chunk 0 as %s", c.dt, cand.Name)
			got := make([]byte, len(c.src))
			require.NoError(t, dev.Download(ctx, got, out, 48))
			require.True(t, string(got) == string(c.src), "%v chunk 0 as %s: values", c.dt, cand.Name)
			op.Close()
			in.Close()
			out.Close()
		}
	}
}
