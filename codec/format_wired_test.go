package codec

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
)

// Tests of TBE-3 and the exponent-window formats as registered formats: the CPU backend's chunk-parallel codec
// against the per-tensor reference functions, the encoder's format choice, the directory rules and Inspect.

// wiredCase is one tensor of a coded format.
type wiredCase struct {
	f   uint8
	dt  layout.DType
	src []byte
}

func (c wiredCase) n() uint64 { return uint64(len(c.src) / c.dt.Size()) }

func (c wiredCase) name() string {
	return fmt.Sprintf("%s/%v/n%d", FormatName(c.f), c.dt, c.n())
}

// wiredCases draws tensors of every (format, dtype) pair of tbe3 and xw2/3/4 in sizes around chunk boundaries.
func wiredCases(r *rand.Rand, shift uint) []wiredCase {
	n := 1 << shift
	var out []wiredCase
	for _, m := range []int{1, 31, n - 1, n, 2*n + 77} {
		out = append(out, wiredCase{layout.FormatTBE3, layout.DTypeBF16, kvLike(r, m, 0.03)})
		for _, p := range xwPairs {
			out = append(out, wiredCase{p.f, p.dt, floatValues(r, p.dt, m, kvCenter(p.dt), 1.6)})
		}
	}
	return out
}

// refEncode is the per-tensor reference body (encodeTBE3, CPUBackend.EncodeXW).
func refEncode(t *testing.T, c wiredCase, shift uint, checksums bool) []byte {
	t.Helper()
	if c.f == layout.FormatTBE3 {
		return encTBE3(t, c.src, shift, checksums)
	}
	return xwEncode(t, c.f, c.dt, c.src, shift, checksums)
}

// refDecode is the per-tensor reference verdict (decodeTBE3, CPUBackend.DecodeXW).
func refDecode(t *testing.T, c wiredCase, body []byte, shift uint, checksums bool) ([]byte, error) {
	t.Helper()
	if c.f == layout.FormatTBE3 {
		return decTBE3(body, c.n(), shift, checksums)
	}
	return xwDecode(t, c.f, c.dt, body, c.n(), shift, checksums)
}

// TestChunkedCPUMatchesReference encodes all tensors of every pair in one Encode call (several formats, many
// chunks, three workers) and checks each body is the reference's, then decodes them all in one call.
func TestChunkedCPUMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	b := NewCPUBackend(3)
	ctx := context.Background()
	for _, shift := range []uint{10, 12} {
		for _, cs := range []bool{true, false} {
			cases := wiredCases(r, shift)
			jobs := make([]EncodeJob, len(cases))
			for i, c := range cases {
				f, _ := LookupFormat(c.f)
				jobs[i] = EncodeJob{Format: c.f, DType: c.dt, Src: c.src, N: c.n(), Shift: shift, Checksums: cs,
					Dst: make([]byte, 0, f.MaxBodyOf(c.n(), c.dt, shift))}
			}
			require.NoError(t, b.Encode(ctx, jobs))
			djobs := make([]DecodeJob, len(cases))
			for i, c := range cases {
				require.Equal(t, refEncode(t, c, shift, cs), jobs[i].Out, "%s shift %d checksums %v", c.name(), shift, cs)
				djobs[i] = DecodeJob{Name: c.name(), Format: c.f, DType: c.dt, Body: jobs[i].Out, N: c.n(), Shift: shift,
					Checksums: cs, Dst: make([]byte, len(c.src))}
			}
			require.NoError(t, b.Decode(ctx, djobs))
			for i, c := range cases {
				require.NoError(t, djobs[i].Err, c.name())
				require.Equal(t, c.src, djobs[i].Dst, c.name())
			}
		}
	}
}

// TestChunkedCPUVerdictsMatchReference flips bits of multi-chunk bodies and checks the chunk-parallel decoder gives
// the reference's class and chunk for each, with and without checksums.
func TestChunkedCPUVerdictsMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	b := NewCPUBackend(3)
	const shift = 10
	for _, cs := range []bool{true, false} {
		var cases []wiredCase
		cases = append(cases, wiredCase{layout.FormatTBE3, layout.DTypeBF16, kvLike(r, 3*1024+100, 0.05)})
		for _, p := range xwPairs {
			cases = append(cases, wiredCase{p.f, p.dt, floatValues(r, p.dt, 3*1024+100, kvCenter(p.dt), 1.6)})
		}
		for _, c := range cases {
			body := refEncode(t, c, shift, cs)
			var jobs []DecodeJob
			var want []error
			for k := 0; k < 150; k++ {
				bad := append([]byte{}, body...)
				for f := 0; f <= k%3; f++ { // one to three flips
					bit := r.IntN(8 * len(bad))
					bad[bit/8] ^= 1 << (bit % 8)
				}
				_, err := refDecode(t, c, bad, shift, cs)
				want = append(want, err)
				jobs = append(jobs, DecodeJob{Name: "t", Format: c.f, DType: c.dt, Body: bad, N: c.n(), Shift: shift,
					Checksums: cs, Dst: make([]byte, len(c.src))})
			}
			require.NoError(t, b.Decode(context.Background(), jobs))
			for k := range jobs {
				what := fmt.Sprintf("%s checksums %v flip set %d", c.name(), cs, k)
				if want[k] == nil {
					// Without checksums a flip can land in a value and decode to other values; the reference agrees.
					require.NoError(t, jobs[k].Err, what)
					continue
				}
				require.Error(t, jobs[k].Err, what)
				require.Equal(t, classOf(want[k]), classOf(jobs[k].Err), "%s: want %v, got %v", what, want[k], jobs[k].Err)
				var we, ge *Error
				require.True(t, errors.As(want[k], &we) && errors.As(jobs[k].Err, &ge), what)
				require.Equal(t, we.Chunk, ge.Chunk, "%s: want %v, got %v", what, want[k], jobs[k].Err)
				require.Equal(t, "t", ge.Tensor, what)
			}
		}
	}
}

// TestFormatLists checks which format each tensor gets for a format list: the first listed format that codes it,
// else stored; the default list is splitzip4 then xw3.
func TestFormatLists(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	recs := []Record{
		{Name: "bf", DType: layout.DTypeBF16, Data: kvLike(r, 3000, 0.01)},
		{Name: "f16", DType: layout.DTypeF16, Data: floatValues(r, layout.DTypeF16, 2000, kvCenter(layout.DTypeF16), 1.5)},
		{Name: "f32", DType: layout.DTypeF32, Data: floatValues(r, layout.DTypeF32, 700, kvCenter(layout.DTypeF32), 1.5)},
		{Name: "e4m3", DType: layout.DTypeF8E4M3, Data: floatValues(r, layout.DTypeF8E4M3, 5000, kvCenter(layout.DTypeF8E4M3), 1.5)},
		{Name: "e5m2", DType: layout.DTypeF8E5M2, Data: floatValues(r, layout.DTypeF8E5M2, 1500, kvCenter(layout.DTypeF8E5M2), 1.5)},
		{Name: "i32", DType: layout.DTypeI32, Data: make([]byte, 40)},
		{Name: "empty", DType: layout.DTypeF16, Data: nil},
	}
	var all []byte
	for _, rc := range recs {
		all = append(all, rc.Data...)
	}
	for _, tc := range []struct {
		spec string // "-" for no WithFormat
		want []string
	}{
		{"-", []string{"splitzip4", "xw3", "xw3", "xw3", "xw3", "stored", "stored"}},
		{"", []string{"splitzip4", "xw3", "xw3", "xw3", "xw3", "stored", "stored"}},
		{"splitzip4", []string{"splitzip4", "stored", "stored", "stored", "stored", "stored", "stored"}},
		{"tbe3", []string{"tbe3", "stored", "stored", "stored", "stored", "stored", "stored"}},
		{"tbe3,xw3", []string{"tbe3", "xw3", "xw3", "xw3", "xw3", "stored", "stored"}},
		{"xw4, tbe3", []string{"tbe3", "xw4", "xw4", "stored", "xw4", "stored", "stored"}},
		{"xw4,xw2,sz4", []string{"splitzip4", "xw4", "xw4", "xw2", "xw4", "stored", "stored"}},
		{"xw2,stored,tbe3", []string{"stored", "xw2", "xw2", "xw2", "xw2", "stored", "stored"}},
		{"stored", []string{"stored", "stored", "stored", "stored", "stored", "stored", "stored"}},
	} {
		opts := []Option{WithChunkSize(1024)}
		if tc.spec != "-" {
			opts = append(opts, WithFormat(tc.spec))
		}
		c := newCPU(t, opts...)
		p, err := c.Encode(context.Background(), nil, recs, true)
		require.NoError(t, err, tc.spec)
		info, err := Inspect(p)
		require.NoError(t, err)
		var got []string
		for _, ri := range info.Containers[0].Records {
			got = append(got, ri.Format)
		}
		require.Equal(t, tc.want, got, "format list %q", tc.spec)
		// Only a container with a splitzip4 tensor carries a codebook.
		require.Equal(t, tc.want[0] == "splitzip4", len(info.Containers[0].Codebooks) == 1, tc.spec)
		out, err := c.DecodeAll(p, nil)
		require.NoError(t, err, tc.spec)
		require.Equal(t, all, out, tc.spec)
	}
	for _, bad := range []string{"zf99", "tbe3,", ",xw3", "tbe3,nope"} {
		_, err := New(WithFormat(bad))
		require.ErrorIs(t, err, ErrUnsupported, bad)
	}
	ids, err := ParseFormats("xw3, tbe3 ,xw3,sz4")
	require.NoError(t, err)
	require.Equal(t, []uint8{layout.FormatXW3, layout.FormatTBE3, layout.FormatSplitZip4}, ids)
	require.Equal(t, []string{"splitzip4", "xw3"}, DefaultFormatNames())
}

// TestTBE3DirectoryRules checks TBE-3's record rules through container parsing (docs/FORMAT.md §4 and the TBE-3
// section): dtype and chunk shift corrupt, too many values too large, no values or a codebook non-canonical, body
// length outside the bounds or not a multiple of 4 corrupt.
func TestTBE3DirectoryRules(t *testing.T) {
	const n = 5000
	g := layout.TBE3{N: n, Shift: 10}
	rec := func(mod func(r *ParsedRecord)) []ParsedRecord {
		r := ParsedRecord{Name: "x", DType: layout.DTypeBF16, Format: layout.FormatTBE3, Shift: 10, Codebook: layout.NoCodebook,
			Shape: []uint64{n}, Elements: n, BodyLen: g.MinBodySize()}
		mod(&r)
		return []ParsedRecord{r}
	}
	body := make([]byte, g.MaxBodySize()+8)
	cb := goldenCodebook
	for _, tc := range []struct {
		name string
		cbs  []Codebook
		mod  func(r *ParsedRecord)
		cls  error // nil: valid
	}{
		{"smallest body", nil, func(r *ParsedRecord) {}, nil},
		{"largest body", nil, func(r *ParsedRecord) { r.BodyLen = g.MaxBodySize() }, nil},
		{"F16", nil, func(r *ParsedRecord) { r.DType = layout.DTypeF16 }, ErrCorrupt},
		{"shift 9", nil, func(r *ParsedRecord) { r.Shift = 9 }, ErrCorrupt},
		{"shift 17", nil, func(r *ParsedRecord) { r.Shift = 17 }, ErrCorrupt},
		{"2^32 values", nil, func(r *ParsedRecord) { r.Shape, r.Elements = []uint64{1 << 32}, 1<<32 }, ErrTooLarge},
		{"no values", nil, func(r *ParsedRecord) { r.Shape, r.Elements, r.BodyLen = []uint64{0}, 0, 0 }, ErrNonCanonical},
		{"a codebook", []Codebook{cb}, func(r *ParsedRecord) { r.Codebook = 0 }, ErrNonCanonical},
		{"body short", nil, func(r *ParsedRecord) { r.BodyLen -= 4 }, ErrCorrupt},
		{"body long", nil, func(r *ParsedRecord) { r.BodyLen = g.MaxBodySize() + 4 }, ErrCorrupt},
		{"body not a multiple of 4", nil, func(r *ParsedRecord) { r.BodyLen += 2 }, ErrCorrupt},
	} {
		_, err := ParseHeader(craft(tc.cbs, rec(tc.mod), body))
		if tc.cls == nil {
			require.NoError(t, err, tc.name)
			continue
		}
		require.ErrorIs(t, err, tc.cls, "%s: %v", tc.name, err)
	}
}

// TestXWDirectoryRulesMatchCheckXWRecord checks that container parsing, through the format registry, gives every
// exponent-window record the verdict of checkXWRecord (FORMAT.md §13.3) over a grid of directory fields.
func TestXWDirectoryRulesMatchCheckXWRecord(t *testing.T) {
	body := make([]byte, 64<<10)
	cb := goldenCodebook
	checked := 0
	for _, f := range []uint8{layout.FormatXW2, layout.FormatXW3, layout.FormatXW4} {
		for dt := layout.DType(0); dt.Valid(); dt++ {
			for _, shift := range []uint8{0, 9, 10, 13, 16, 17} {
				for _, n := range []uint64{1, 5000, 1 << 32} {
					lo, hi := uint64(16), uint64(1000)
					if x, ok := layout.NewXW(f, dt, n, uint(max(shift, 10))); ok && n < 1<<32 {
						lo, hi = x.MinBodySize(), x.MaxBodySize()
					}
					for _, bl := range []uint64{lo - 4, lo, lo + 2, hi, hi + 4} {
						for _, cbi := range []uint32{layout.NoCodebook, 0} {
							var cbs []Codebook
							if cbi == 0 {
								cbs = []Codebook{cb}
							}
							rec := ParsedRecord{Name: "x", DType: dt, Format: f, Shift: shift, Codebook: cbi,
								Shape: []uint64{n}, Elements: n, BodyLen: bl}
							if dt == layout.DTypeOpaque {
								continue // opaque records count bytes; no format codes them
							}
							want := checkXWRecord(f, dt, shift, cbi, n, bl)
							_, got := ParseHeader(craft(cbs, []ParsedRecord{rec}, body))
							what := fmt.Sprintf("%s %v shift %d n %d body %d codebook %d: want %v, got %v",
								formatNameXW(f), dt, shift, n, bl, cbi, want, got)
							if want == nil {
								require.NoError(t, got, what)
							} else {
								require.Equal(t, classOf(want), classOf(got), what)
								require.NotNil(t, classOf(got), what)
							}
							checked++
						}
					}
				}
			}
		}
	}
	require.Greater(t, checked, 2000)
}

// TestInspectNewFormats checks the chunk lists Inspect reads from TBE-3 and xw bodies.
func TestInspectNewFormats(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 38))
	bf := kvLike(r, 3*1024+5, 0.02)
	f16 := floatValues(r, layout.DTypeF16, 2*1024, kvCenter(layout.DTypeF16), 1.6)
	recs := []Record{{Name: "bf", DType: layout.DTypeBF16, Data: bf}, {Name: "f16", DType: layout.DTypeF16, Data: f16}}
	c := newCPU(t, WithFormat("tbe3,xw2"), WithChunkSize(1024))
	p, err := c.Encode(context.Background(), nil, recs, true)
	require.NoError(t, err)
	info, err := Inspect(p)
	require.NoError(t, err)
	rs := info.Containers[0].Records
	// The 5-value last chunk of bf has no room for a side piece (rawSide 0): always raw.
	require.Equal(t, []MixCount{{Format: "tbe3", Kind: "coded", Chunks: 3}, {Format: "tbe3", Kind: "raw", Chunks: 1}},
		rs[0].Mix)
	require.Equal(t, []MixCount{{Format: "xw2", Kind: "coded", Chunks: 2}}, rs[1].Mix)
	for i, ri := range rs {
		var esc uint64
		for _, ch := range ri.ChunkList {
			require.Equal(t, ch.Kind == "coded", ch.Window != nil, ri.Name)
			esc += ch.Escapes
		}
		require.Equal(t, ri.Escapes, esc)
		require.Greater(t, esc, uint64(0), "kv-like data has values outside every window")
		require.Equal(t, uint64(len(recs[i].Data)), ri.RawBytes)
	}
	// The TBE-3 windows are the ones the spec's choice gives: the exponents' best 7-window per chunk.
	for k, ch := range rs[0].ChunkList[:3] {
		v0, v1 := k*1024, min(k*1024+1024, len(bf)/2)
		w, _ := tbe3Window(expHistogram(bf[2*v0:2*v1], v1-v0))
		require.Equal(t, uint8(w), *ch.Window, "chunk %d", k)
	}
}
