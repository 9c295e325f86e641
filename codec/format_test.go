package codec

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
)

func TestFormatRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Formats() {
		id, ok := FormatByName(f.Name)
		require.True(t, ok, f.Name)
		require.Equal(t, f.ID, id)
		for _, a := range append([]string{f.Name}, f.Aliases...) {
			require.False(t, seen[a], "name %q twice", a)
			seen[a] = true
		}
		require.NotEmpty(t, f.About, f.Name)
		require.NotNil(t, f.BodyBounds, f.Name)
		if f.ID != layout.FormatStored {
			require.NotNil(t, f.CPU, "%s has no reference codec", f.Name)
			require.NotNil(t, f.Chunks, "%s cannot be inspected", f.Name)
			require.True(t, f.MinShift >= layout.MinChunkShift && f.MaxShift <= layout.MaxChunkShift, f.Name)
		}
	}
	id, ok := FormatByName("sz4")
	require.True(t, ok)
	require.Equal(t, uint8(layout.FormatSplitZip4), id)
	_, ok = FormatByName("zf99")
	require.False(t, ok)
	require.Equal(t, "format200", FormatName(200))
	require.Panics(t, func() { RegisterFormat(Format{ID: layout.FormatSplitZip4, Name: "again"}) })
	require.Panics(t, func() { RegisterFormat(Format{ID: 254, Name: "sz4"}) })
}

// TestFormatChoice checks which records a format codes: the ones it accepts, everything else stored.
func TestFormatChoice(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	bf := kvLike(r, 3000, 0.01)
	f32 := kvLike(r, 64, 0)
	recs := []Record{{Name: "bf", DType: layout.DTypeBF16, Data: bf}, {Name: "f32", DType: layout.DTypeF32, Data: f32},
		{Name: "empty", DType: layout.DTypeBF16, Data: nil}}
	for _, tc := range []struct {
		format string
		want   []string // per record
	}{
		{"splitzip4", []string{"splitzip4", "stored", "stored"}},
		{"sz4", []string{"splitzip4", "stored", "stored"}},
		{"stored", []string{"stored", "stored", "stored"}},
	} {
		c := newCPU(t, WithFormat(tc.format), WithChunkSize(1024))
		p, err := c.Encode(context.Background(), nil, recs, true)
		require.NoError(t, err)
		info, err := Inspect(p)
		require.NoError(t, err)
		var got []string
		for _, ri := range info.Containers[0].Records {
			got = append(got, ri.Format)
		}
		require.Equal(t, tc.want, got, tc.format)
		if tc.format == "stored" {
			require.Empty(t, info.Containers[0].Codebooks, "a stored-only container needs no codebook")
		}
		out, err := c.DecodeAll(p, nil)
		require.NoError(t, err)
		require.Equal(t, append(append([]byte{}, bf...), f32...), out)
	}
	_, err := New(WithFormat("zf99"))
	require.ErrorIs(t, err, ErrUnsupported)
}

// TestByFormatGrouping checks that a mixed call reaches each format once, in first-appearance order, with its own
// jobs in order, and that results land in the right jobs.
func TestByFormatGrouping(t *testing.T) {
	jobs := []EncodeJob{{Format: 7, N: 0}, {Format: 9, N: 1}, {Format: 7, N: 2}, {Format: 9, N: 3}, {Format: 8, N: 4}}
	var calls [][]uint64
	err := EncodeByFormat(jobs, func(id uint8, js []EncodeJob) error {
		var ns []uint64
		for i := range js {
			require.Equal(t, id, js[i].Format)
			ns = append(ns, js[i].N)
			js[i].Out = []byte{id, byte(js[i].N)}
		}
		calls = append(calls, ns)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, [][]uint64{{0, 2}, {1, 3}, {4}}, calls)
	for i := range jobs {
		require.Equal(t, []byte{jobs[i].Format, byte(i)}, jobs[i].Out)
	}
	boom := errors.New("boom")
	djobs := []DecodeJob{{Format: 1}, {Format: 2}}
	err = DecodeByFormat(djobs, func(id uint8, js []DecodeJob) error {
		js[0].Err = ErrCorrupt
		if id == 1 {
			return boom
		}
		return nil
	})
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, djobs[0].Err, ErrCorrupt)
	require.NoError(t, djobs[1].Err, "a format after a failed one does not run")

	// The CPU backend refuses formats it has no codec for, as unsupported.
	b := NewCPUBackend(1)
	require.False(t, b.SupportsFormat(77))
	require.True(t, b.SupportsFormat(layout.FormatStored))
	err = b.Encode(context.Background(), []EncodeJob{{Format: 77, N: 1, Src: make([]byte, 2), Dst: make([]byte, 64)}})
	require.ErrorIs(t, err, ErrUnsupported)
	err = b.Decode(context.Background(), []DecodeJob{{Format: 77, N: 1, Body: make([]byte, 64), Dst: make([]byte, 2)}})
	require.ErrorIs(t, err, ErrUnsupported)
}

// TestDirectoryRulesByFormat checks the directory rules every coded format shares, through the registry.
func TestDirectoryRulesByFormat(t *testing.T) {
	cb := goldenCodebook
	sz := layout.SZ4{N: 4, Shift: 10}
	rec := func(mod func(r *ParsedRecord)) []ParsedRecord {
		r := ParsedRecord{Name: "x", DType: layout.DTypeBF16, Format: layout.FormatSplitZip4, Shift: 10, Codebook: 0,
			Shape: []uint64{4}, Elements: 4, BodyLen: sz.MinBodySize()}
		mod(&r)
		return []ParsedRecord{r}
	}
	body := make([]byte, sz.MaxBodySize())
	for _, tc := range []struct {
		name string
		cbs  []Codebook
		mod  func(r *ParsedRecord)
		cls  error
	}{
		{"wrong dtype", []Codebook{cb}, func(r *ParsedRecord) { r.DType = layout.DTypeF16 }, ErrCorrupt},
		{"shift below range", []Codebook{cb}, func(r *ParsedRecord) { r.Shift = 9 }, ErrCorrupt},
		{"shift above range", []Codebook{cb}, func(r *ParsedRecord) { r.Shift = 17 }, ErrCorrupt},
		{"missing codebook", nil, func(r *ParsedRecord) {}, ErrCorrupt},
		{"no codebook reference", nil, func(r *ParsedRecord) { r.Codebook = layout.NoCodebook }, ErrCorrupt},
		{"body too short", []Codebook{cb}, func(r *ParsedRecord) { r.BodyLen -= 4 }, ErrCorrupt},
		{"body too long", []Codebook{cb}, func(r *ParsedRecord) { r.BodyLen = sz.MaxBodySize() + 4 }, ErrCorrupt},
		{"stored with a shift", nil, func(r *ParsedRecord) {
			r.Format, r.Codebook, r.BodyLen = layout.FormatStored, layout.NoCodebook, layout.StoredBody(8)
		}, nil},
	} {
		p := craft(tc.cbs, rec(tc.mod), body)
		_, err := ParseHeader(p)
		if tc.cls == nil {
			require.ErrorIs(t, err, ErrNonCanonical, tc.name)
			continue
		}
		require.ErrorIs(t, err, tc.cls, tc.name)
	}
}
