package conformance

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/shaders"
)

// minCasesPerBackend is what the issue asks of every backend, across all categories.
const minCasesPerBackend = 200

// minQuickCases is what every format must run of QuickCategories on each backend (huff has the fewest: 3 + 6).
const minQuickCases = 8

// sz4 is the SplitZip-4 corpus's format name.
const sz4 = "splitzip4"

func corpora(t *testing.T) []*Corpus {
	t.Helper()
	cs, err := Load()
	require.NoError(t, err)
	return cs
}

func TestCorpusIsSmall(t *testing.T) {
	var total int64
	require.NoError(t, fs.WalkDir(embedded, "corpus", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return err
	}))
	t.Logf("embedded corpus: %d bytes", total)
	// Eight formats' corpora (3.0 MiB today): the budget keeps the binary and the repository small.
	assert.Less(t, total, int64(4<<20))
}

// requirePass checks a report: verdict pass, every target with at least minCases cases, all passed.
func requirePass(t *testing.T, r *Report, minCases int) {
	t.Helper()
	var b strings.Builder
	require.NoError(t, r.WriteTable(&b))
	t.Log("\n" + b.String())
	require.True(t, r.Passed(), "verdict %s: %v", r.Verdict, r.Reasons)
	require.NotEmpty(t, r.Totals)
	for _, tot := range r.Totals {
		assert.GreaterOrEqual(t, tot.Cases, minCases, tot.Device)
		// Every format runs on every target, the device-resident one included: a case without a path would be
		// counted apart (NoPath), never as passed.
		assert.Equal(t, tot.Cases, tot.Passed+tot.NoPath, tot.Device)
		assert.Zero(t, tot.NoPath, tot.Device)
		assert.Zero(t, tot.Failed, tot.Device)
		assert.Zero(t, tot.Skipped, tot.Device)
	}
}

// TestCPU runs the corpus on the reference backend: all of it, or under -short (make test's race step)
// QuickCategories; make test also runs all of it from the installed binary.
func TestCPU(t *testing.T) {
	o, minCases := Options{Targets: []Target{CPUTarget()}}, minCasesPerBackend
	if testing.Short() {
		o.Categories, minCases = QuickCategories, minQuickCases
	}
	r, err := Run(context.Background(), o)
	require.NoError(t, err)
	requirePass(t, r, minCases)
}

// skipper is a backend that cannot run some jobs: the reference, refusing chunks of 65,536 values.
type skipper struct{ codec.CPUBackend }

func (s *skipper) refuse(shift uint) error {
	if shift == 16 {
		return &codec.Error{Class: codec.ErrUnsupported, Chunk: -1, Detail: "test: no chunks of 65,536"}
	}
	return nil
}

func (s *skipper) Encode(ctx context.Context, jobs []codec.EncodeJob) error {
	for _, j := range jobs {
		if err := s.refuse(j.Shift); err != nil {
			return err
		}
	}
	return s.CPUBackend.Encode(ctx, jobs)
}

func (s *skipper) Decode(ctx context.Context, jobs []codec.DecodeJob) error {
	for _, j := range jobs {
		if err := s.refuse(j.Shift); err != nil {
			return err
		}
	}
	return s.CPUBackend.Decode(ctx, jobs)
}

func fakeTarget(id string, b codec.Backend) Target {
	return Target{Backend: b, Device: Device{ID: id, Backend: id, Name: id}}
}

func TestSkipIsNeverAPass(t *testing.T) {
	cats := []string{"lengths", "invalid-stream"}
	run := func(allow bool) *Report {
		r, err := Run(context.Background(), Options{Targets: []Target{fakeTarget("skipper", &skipper{})},
			Formats: []string{sz4}, Categories: cats, AllowSkip: allow})
		require.NoError(t, err)
		return r
	}
	r := run(false)
	require.Len(t, r.Totals, 1)
	tot := r.Totals[0]
	assert.Positive(t, tot.Skipped)
	assert.Positive(t, tot.Passed)
	assert.Equal(t, tot.Cases, tot.Passed+tot.Failed+tot.Skipped)
	assert.Zero(t, tot.Failed)
	assert.False(t, r.Passed(), "skips fail the verdict")
	assert.NotEmpty(t, r.Problems)

	r = run(true)
	assert.True(t, r.Passed(), "allowed skips: %v", r.Reasons)
	assert.Positive(t, r.Totals[0].Skipped, "still counted as skips")
}

// liar wraps the reference and breaks one thing.
type liar struct {
	codec.CPUBackend
	encode func(j *codec.EncodeJob)
	decode func(j *codec.DecodeJob)
}

func (l *liar) Encode(ctx context.Context, jobs []codec.EncodeJob) error {
	err := l.CPUBackend.Encode(ctx, jobs)
	for i := range jobs {
		if err == nil && l.encode != nil {
			l.encode(&jobs[i])
		}
	}
	return err
}

func (l *liar) Decode(ctx context.Context, jobs []codec.DecodeJob) error {
	err := l.CPUBackend.Decode(ctx, jobs)
	for i := range jobs {
		if err == nil && l.decode != nil {
			l.decode(&jobs[i])
		}
	}
	return err
}

func TestBrokenBackendsFail(t *testing.T) {
	cats := []string{"nan", "exponents", "invalid-stream", "invalid-table"}
	for _, tc := range []struct {
		name string
		b    *liar
		want []string // categories that must have failures
	}{
		{"flipped body bit", &liar{encode: func(j *codec.EncodeJob) {
			if j.N == 1536 {
				j.Out[len(j.Out)/2] ^= 1
			}
		}}, []string{"exponents"}},
		{"wrong value", &liar{decode: func(j *codec.DecodeJob) {
			if j.Err == nil && len(j.Dst) > 0 {
				j.Dst[0] ^= 0x80
			}
		}}, []string{"nan", "exponents"}},
		{"accepts everything", &liar{decode: func(j *codec.DecodeJob) { j.Err = nil }},
			[]string{"invalid-stream", "invalid-table"}},
		{"wrong class", &liar{decode: func(j *codec.DecodeJob) {
			if errors.Is(j.Err, codec.ErrNonCanonical) {
				j.Err = &codec.Error{Class: codec.ErrCorrupt, Chunk: -1}
			}
		}}, []string{"invalid-stream"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(context.Background(), Options{Targets: []Target{CPUTarget(), fakeTarget("liar", tc.b)},
				Categories: cats})
			require.NoError(t, err)
			assert.False(t, r.Passed())
			failed := map[string]bool{}
			for _, row := range r.Rows {
				if row.Failed > 0 {
					assert.Equal(t, "liar", row.Device, "only the broken backend fails: %+v", row)
					failed[row.Category] = true
				}
				assert.Equal(t, row.Cases, row.Passed+row.Failed+row.Skipped+row.NoPath)
			}
			for _, c := range tc.want {
				assert.True(t, failed[c], "no failure in %s", c)
			}
		})
	}
}

// TestCrossDecoding: a backend whose encoder differs from the corpus fails, and the other backends that decode its
// payloads compare with the reference's verdict on them instead of failing too.
func TestCrossDecoding(t *testing.T) {
	b := &liar{encode: func(j *codec.EncodeJob) {
		if j.N == 1536 {
			j.Out[0] ^= 0x10 // a code nibble: decodable, to another value
		}
	}}
	r, err := Run(context.Background(), Options{Targets: []Target{CPUTarget(), fakeTarget("liar", b)},
		Categories: []string{"exponents"}})
	require.NoError(t, err)
	require.Len(t, r.Rows, 2)
	for _, row := range r.Rows {
		if row.Device == "cpu" {
			assert.Equal(t, row.Cases, row.Passed, "cross-decoding a wrong payload is not the decoder's failure")
		} else {
			assert.Equal(t, 256, row.Failed, "the 256 cases of 1,536 values")
		}
	}
}

func TestApply(t *testing.T) {
	p := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	got, err := apply(p, []Op{Op{Op: "xor", At: 0, Hex: "ff"}, {Op: "splice", At: 2, N: 2, Hex: "aabbcc"}, {Op: "trunc", N: 7},
		{Op: "crc", At: 3, Ranges: [][2]int64{{0, 2}}}}, nil)
	require.NoError(t, err)
	assert.Equal(t, []byte{0xFE, 2, 0xAA}, got[:3])
	assert.Len(t, got, 7)
	assert.Equal(t, byte(1), p[0], "the input is not changed")
	for _, bad := range []Op{{Op: "xor", At: 8, Hex: "01"}, {Op: "splice", At: 7, N: 2}, {Op: "trunc", N: 9}, {Op: "crc", At: 6}, {Op: "nope"},
		{Op: "xor", Data: &[2]int64{0, 1}}} {
		_, err := apply(p, []Op{bad}, nil)
		assert.Error(t, err, "%+v", bad)
	}
}

func TestMergeAndVerdict(t *testing.T) {
	run := func(id string) *Report {
		tg := CPUTarget()
		tg.Device.ID = id
		r, err := Run(context.Background(), Options{Targets: []Target{tg}, Categories: []string{"nan"}})
		require.NoError(t, err)
		return r
	}
	a, b := run("a"), run("b")
	a.Merge(b)
	require.True(t, a.Passed(), "%v", a.Reasons)
	require.Len(t, a.Totals, 2)
	require.Len(t, a.Devices, 2)
	var buf bytes.Buffer
	require.NoError(t, a.WriteJSON(&buf))
	back, err := ReadReport(buf.Bytes())
	require.NoError(t, err)
	assert.Equal(t, a.Totals, back.Totals)

	c := run("c")
	c.Corpus[0].SHA256 = "other"
	a.Merge(c)
	assert.False(t, a.Passed(), "different corpora cannot be merged into a pass")

	empty, err := Run(context.Background(), Options{Targets: []Target{}})
	require.NoError(t, err)
	assert.False(t, empty.Passed(), "nothing ran")

	un, err := Run(context.Background(), Options{Targets: []Target{CPUTarget()}, Categories: []string{"nan"},
		Unavailable: []Unavailable{{Backend: "vulkan", ID: "vulkan:0", Reason: "test"}}})
	require.NoError(t, err)
	assert.False(t, un.Passed(), "a device that could not run is not a pass")
	assert.Equal(t, VerdictIncomplete, un.Verdict)
}

func TestClassNames(t *testing.T) {
	for _, c := range classes {
		assert.Equal(t, c.name, ClassName(&codec.Error{Class: c.err, Chunk: -1}))
		assert.Equal(t, c.err, ClassError(c.name))
	}
	assert.Equal(t, "", ClassName(nil))
	assert.Equal(t, "other", ClassName(errors.New("x")))
}

// TestCommittedReports checks the reports under reports/: valid, passing, complete, and made by this tree: its
// kernels (SPIR-V hash) and its corpus (every format's version and manifest hash, computed from the embedded
// manifests now). A report made before a change of either is stale evidence and fails here; regenerate it with
// the command in reports/README.md.
func TestCommittedReports(t *testing.T) {
	files, err := filepath.Glob("reports/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	const regen = "regenerate it (conformance/reports/README.md)"
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			r, err := ReadReport(b)
			require.NoError(t, err, "%s: %s", f, regen)
			assert.Equal(t, VerdictPass, r.Verdict, "%s: %v", f, r.Reasons)
			assert.Empty(t, r.NotChecked, f)
			assert.NotEmpty(t, r.Devices, f)
			assert.Empty(t, staleness(t, r), "%s: %s", f, regen)
			for _, tot := range r.Totals {
				assert.GreaterOrEqual(t, tot.Cases, minCasesPerBackend, "%s: %s", f, tot.Device)
				assert.Equal(t, tot.Cases, tot.Passed, "%s: %s", f, tot.Device)
			}
			// lavapipe reads its vector width once per process; a report of it covers both widths a default
			// run checks.
			widths := map[string][]int{}
			for _, d := range r.Devices {
				if d.LPVectorWidth > 0 {
					base, _, _ := strings.Cut(d.ID, "@")
					widths[base] = append(widths[base], d.LPVectorWidth)
				}
			}
			for base, w := range widths {
				slices.Sort(w)
				assert.Equal(t, []int{128, 256}, w, "%s: %s at lavapipe vector widths %v: %s", f, base, w, regen)
			}
			corpus, _, err := EmbeddedCorpus()
			require.NoError(t, err)
			for _, d := range r.Devices {
				for _, c := range corpus {
					assert.True(t, slices.ContainsFunc(r.Totals, func(x Total) bool { return x.Device == d.ID && x.Format == c.Format }),
						"%s: %s was not checked on %s", f, c.Format, d.ID)
				}
			}
		})
	}
}

// staleness lists how a report differs from what this tree would produce: other kernels, or another corpus
// (formats, versions, manifest hashes: computed from the embedded manifests, never hard-coded).
func staleness(t *testing.T, r *Report) []string {
	t.Helper()
	corpus, identity, err := EmbeddedCorpus()
	require.NoError(t, err)
	var out []string
	if r.SPIRV != shaders.Hash() {
		out = append(out, fmt.Sprintf("SPIR-V %.16s…, the tree's is %.16s…", r.SPIRV, shaders.Hash()))
	}
	if r.CorpusSHA256 != identity || CorpusIdentity(r.Corpus) != identity {
		out = append(out, fmt.Sprintf("corpus %.16s…, the tree's is %.16s…", r.CorpusSHA256, identity))
	}
	for _, c := range corpus {
		i := slices.IndexFunc(r.Corpus, func(x CorpusInfo) bool { return x.Format == c.Format })
		switch {
		case i < 0:
			out = append(out, fmt.Sprintf("no %s corpus (the tree has v%d)", c.Format, c.Version))
		case r.Corpus[i] != c:
			out = append(out, fmt.Sprintf("%s corpus v%d (%.16s…), the tree's is v%d (%.16s…)", c.Format,
				r.Corpus[i].Version, r.Corpus[i].SHA256, c.Version, c.SHA256))
		}
	}
	if len(r.Corpus) != len(corpus) {
		out = append(out, fmt.Sprintf("%d corpora, the tree has %d", len(r.Corpus), len(corpus)))
	}
	return out
}

// TestReportStaleness: the check TestCommittedReports applies finds nothing in a fresh report and catches
// other kernels, another version or manifest of any format's corpus, and a missing format.
func TestReportStaleness(t *testing.T) {
	run, err := Run(context.Background(), Options{Targets: []Target{CPUTarget()}, Categories: []string{"nan"}})
	require.NoError(t, err)
	require.Empty(t, staleness(t, run))
	var buf bytes.Buffer
	require.NoError(t, run.WriteJSON(&buf))
	fresh := func() *Report { // a copy, through the JSON
		r, err := ReadReport(buf.Bytes())
		require.NoError(t, err)
		return r
	}
	r := fresh()
	require.Empty(t, staleness(t, r), "the identity survives the JSON")

	r = fresh()
	r.SPIRV = strings.Repeat("0", 64)
	assert.Len(t, staleness(t, r), 1, "other kernels")
	for i := range r.Corpus {
		for _, change := range []func(c *CorpusInfo){
			func(c *CorpusInfo) { c.Version++ },
			func(c *CorpusInfo) { c.SHA256 = strings.Repeat("f", 64) },
		} {
			r = fresh()
			change(&r.Corpus[i])
			r.finish()
			assert.NotEmpty(t, staleness(t, r), "%s corpus changed", r.Corpus[i].Format)
		}
	}
	r = fresh()
	r.Corpus = r.Corpus[1:]
	r.finish()
	assert.NotEmpty(t, staleness(t, r), "a format missing")
}

// TestGeneratedInputsAreFrozen pins a few generator outputs independently of the manifest.
func TestGeneratedInputsAreFrozen(t *testing.T) {
	for _, tc := range []struct {
		gen  string
		n    int
		seed uint64
		args []int64
		want string // first 8 bytes
	}{
		{"kvlike/1", 4, 1, nil, "82be0e40b2bec2bf"},
		{"gauss/1", 4, 1, []int64{0}, "983fbe3ee3beafbe"},
		{"allbits/1", 65536, 0, []int64{0}, "0000010002000300"},
	} {
		f, ok := lookupInput(tc.gen)
		require.True(t, ok)
		b, err := f(tc.n, tc.seed, tc.args)
		require.NoError(t, err)
		require.Len(t, b, 2*tc.n)
		assert.Equal(t, tc.want, hex.EncodeToString(b[:8]), tc.gen)
	}
	// Every value of allbits/1 mode 1 is a permutation of all patterns.
	f, _ := lookupInput("allbits/1")
	b, err := f(65536, 7, []int64{1})
	require.NoError(t, err)
	seen := make([]bool, 65536)
	for i := 0; i < 65536; i++ {
		seen[int(b[2*i])|int(b[2*i+1])<<8] = true
	}
	for v, ok := range seen {
		require.True(t, ok, "pattern %#04x missing", v)
	}
}

// TestEveryFormatHasACorpus: every coded format of the build is checked by conformance (a format without a corpus
// would pass every run unexamined).
func TestEveryFormatHasACorpus(t *testing.T) {
	have := map[uint8]bool{}
	for _, c := range corpora(t) {
		have[c.FormatID] = true
	}
	for _, f := range codec.Formats() {
		if f.CPU != nil {
			assert.True(t, have[f.ID], "format %s has no conformance corpus", f.Name)
		}
	}
}
