package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vkzip/vkzip/codec"
)

// QuickCategories is a small part of the corpus that still reaches every format: its real KV cases, its
// single-chunk cases and its damaged-checksum payloads (Options.Categories). A quick check, not a conformance
// verdict: that takes every category.
var QuickCategories = []string{"kv", "single", "invalid-checksum"}

// Options configures Run.
type Options struct {
	// Targets are the backends to check (the caller opens and closes them). Nil: Run opens Select's with
	// OpenTargets and closes them.
	Targets []Target
	Select  Selection
	// Unavailable adds backends the caller could not open to the report (with Targets).
	Unavailable []Unavailable
	Formats     []string // nil: every format in the corpus
	Categories  []string // nil: every category
	AllowSkip   bool     // skipped cases do not fail the verdict (they are still never passes)
	Version     string   // vkzip version for the report; "" = the main module's from the build information
	// Log receives a progress line per phase and target (nil: quiet).
	Log func(format string, args ...any)
}

// check outcomes
type status int

const (
	pass   status = iota
	noPath        // the target has no path for a format the check needs (PathChecker): listed, never a pass
	skip
	fail
)

// result is one case on one target: the worst outcome of its checks, and the time they took.
type result struct {
	st  status
	dur time.Duration
}

type runner struct {
	ctx     context.Context
	o       *Options
	rep     *Report
	ref     *codec.CPUBackend
	targets []Target
	results map[[2]string]*result // (case id, device id)
}

// Run checks every target against the embedded corpus.
func Run(ctx context.Context, o Options) (*Report, error) {
	corpora, err := Load()
	if err != nil {
		return nil, err
	}
	return RunCorpora(ctx, corpora, o)
}

// RunCorpora checks every target against the given corpora.
func RunCorpora(ctx context.Context, corpora []*Corpus, o Options) (*Report, error) {
	start := time.Now()
	if err := checkNames(corpora, o.Formats, o.Categories); err != nil {
		return nil, err
	}
	targets, un := o.Targets, o.Unavailable
	if targets == nil {
		var err error
		targets, un, err = OpenTargets(o.Select)
		if err != nil {
			return nil, err
		}
		defer closeTargets(targets)
	}
	seen := map[string]bool{}
	for _, t := range targets {
		if seen[t.Device.ID] {
			return nil, fmt.Errorf("conformance: two targets with device id %s", t.Device.ID)
		}
		seen[t.Device.ID] = true
	}
	rep := newReport(o.Version, o.AllowSkip)
	rep.Unavailable = append(rep.Unavailable, un...)
	for _, t := range targets {
		rep.Devices = append(rep.Devices, t.Device)
	}
	r := &runner{ctx: ctx, o: &o, rep: rep, ref: codec.NewCPUBackend(0), targets: targets}
	for _, c := range corpora {
		if o.Formats != nil && !slices.Contains(o.Formats, c.Format) {
			continue
		}
		if err := r.runCorpus(c); err != nil {
			return nil, err
		}
	}
	rep.Seconds = secs(time.Since(start))
	rep.finish()
	return rep, nil
}

// CorpusNames lists the formats and categories of the embedded corpus, in corpus order.
func CorpusNames() (formats, categories []string, err error) {
	cs, err := Load()
	if err != nil {
		return nil, nil, err
	}
	formats, categories = names(cs)
	return formats, categories, nil
}

func names(corpora []*Corpus) (formats, categories []string) {
	add := func(c string) {
		if !slices.Contains(categories, c) {
			categories = append(categories, c)
		}
	}
	for _, c := range corpora {
		formats = append(formats, c.Format)
		for _, k := range c.Cases {
			add(k.Category)
		}
		for _, iv := range c.Invalid {
			add(iv.Category)
		}
	}
	return formats, categories
}

// checkNames refuses format and category names the corpora do not have: a typo must not pass as an empty run.
func checkNames(corpora []*Corpus, formats, categories []string) error {
	fs, cs := names(corpora)
	for _, f := range formats {
		if !slices.Contains(fs, f) {
			return fmt.Errorf("no format %q in the corpus (have %s)", f, strings.Join(fs, ", "))
		}
	}
	for _, c := range categories {
		if !slices.Contains(cs, c) {
			return fmt.Errorf("no category %q in the corpus (have %s)", c, strings.Join(cs, ", "))
		}
	}
	return nil
}

func (r *runner) log(format string, args ...any) {
	if r.o.Log != nil {
		r.o.Log(format, args...)
	}
}

func (r *runner) wanted(cat string) bool {
	return r.o.Categories == nil || slices.Contains(r.o.Categories, cat)
}

// note records a check's outcome for (case, target) and, unless it passed, why.
func (r *runner) note(f Format, cat, id string, t *Target, check string, st status, dur time.Duration, detail string) {
	k := [2]string{id, t.Device.ID}
	res := r.results[k]
	if res == nil {
		res = &result{}
		r.results[k] = res
	}
	res.st = max(res.st, st)
	res.dur += dur
	if st != pass {
		r.rep.addProblem(Problem{Format: f.Name, Category: cat, Case: id, Backend: t.Device.Backend,
			Device: t.Device.ID, Check: check, Skipped: st == skip, NoPath: st == noPath, Detail: oneLine(detail)})
	}
}

// encodedCase is one target's (or the reference's) payloads of a valid case, and whether each matched.
type encodedCase struct {
	enc                      encoded
	bodyOK, contOK, contV2OK bool
	label                    string // for the checks of those who decode it: "own", "from vulkan:0", ...
}

// unableStatus is the outcome of a check the target could not run: no path when the target says it lacks a
// format (an auto container holding a TBE-3 tensor, on vulkan-resident), else skip.
func unableStatus(t *Target, err error) status {
	if _, ok := t.Backend.(PathChecker); ok && errors.Is(err, codec.ErrUnsupported) {
		return noPath
	}
	return skip
}

// PathChecker is a target that implements only some formats at all (vulkan-resident: the formats with
// device-resident operations); Run lists the others in the report's NoPath instead of running them.
type PathChecker interface {
	HasPath(format uint8) (ok bool, why string)
}

func (r *runner) runCorpus(c *Corpus) error {
	f := Format{Name: c.Format, ID: c.FormatID, Version: c.Version}
	all := r.targets
	defer func() { r.targets = all }()
	r.targets = nil
	for _, t := range all {
		if pc, ok := t.Backend.(PathChecker); ok {
			if has, why := pc.HasPath(f.ID); !has {
				r.rep.NoPath = append(r.rep.NoPath, NoPath{Format: f.Name, Backend: t.Device.Backend, Device: t.Device.ID,
					Reason: why})
				continue
			}
		}
		r.targets = append(r.targets, t)
	}
	r.rep.Corpus = append(r.rep.Corpus, CorpusInfo{Format: c.Format, Version: c.Version, SHA256: c.SHA256,
		Cases: len(c.Cases), Invalid: len(c.Invalid)})
	r.results = map[[2]string]*result{}
	var cases []*Case
	for i := range c.Cases {
		if r.wanted(c.Cases[i].Category) {
			cases = append(cases, &c.Cases[i])
		}
	}
	var invalid []*Invalid
	for i := range c.Invalid {
		if r.wanted(c.Invalid[i].Category) {
			invalid = append(invalid, &c.Invalid[i])
		}
	}
	cbs := map[string]*codec.Codebook{}
	for _, k := range cases {
		cbs[k.ID], _ = caseCodebook(k.Codebook) // validated when loading
	}

	// The reference's payloads: the bases of the invalid payloads, and the payloads every target decodes when
	// the CPU backend is not itself a target. They are checked against the corpus like a target's.
	need := slices.Clone(cases)
	for _, iv := range invalid {
		if k := c.cases[iv.Base]; !slices.Contains(need, k) {
			need = append(need, k)
		}
	}
	r.log("%s: reference encodings of %d cases", f.Name, len(need))
	ref := map[string]*encodedCase{}
	for _, k := range need {
		cb, _ := caseCodebook(k.Codebook)
		e, err := encodeCase(r.ctx, r.ref, f, k, cb, c.input(k.Input))
		if err != nil {
			return err
		}
		ref[k.ID] = &encodedCase{enc: e, bodyOK: matches(k.Body, e.body, e.bodyErr), contOK: matches(&k.Container,
			e.container, e.contErr), contV2OK: matches(k.ContainerV2, e.containerV2, e.contV2Err)}
	}
	if err := r.ctx.Err(); err != nil {
		return err
	}

	// Encode on every target.
	payloads := make([]map[string]*encodedCase, len(r.targets))
	for ti := range r.targets {
		t := &r.targets[ti]
		r.log("%s: encoding %d cases on %s", f.Name, len(cases), t.Device.ID)
		payloads[ti] = map[string]*encodedCase{}
		for _, k := range cases {
			if err := r.ctx.Err(); err != nil {
				return err
			}
			payloads[ti][k.ID] = r.encode(f, t, k, cbs[k.ID], c.input(k.Input), ref[k.ID])
		}
	}

	// Decode on every target: its own payloads and every other producer's.
	hasCPU := slices.ContainsFunc(r.targets, func(t Target) bool { return t.Device.Backend == "cpu" })
	for ti := range r.targets {
		t := &r.targets[ti]
		r.log("%s: decoding on %s", f.Name, t.Device.ID)
		for _, k := range cases {
			if err := r.ctx.Err(); err != nil {
				return err
			}
			var producers []*encodedCase
			for pi := range r.targets {
				p := payloads[pi][k.ID]
				p.label = "own"
				if pi != ti {
					p.label = "from " + r.targets[pi].Device.ID
				}
				producers = append(producers, p)
			}
			if !hasCPU {
				p := ref[k.ID]
				p.label = "from the reference"
				producers = append(producers, p)
			}
			for _, p := range producers {
				r.decode(f, t, k, cbs[k.ID], c.input(k.Input), p)
			}
		}
	}

	// Invalid payloads on every target.
	for ti := range r.targets {
		t := &r.targets[ti]
		r.log("%s: %d invalid payloads on %s", f.Name, len(invalid), t.Device.ID)
		for _, iv := range invalid {
			if err := r.ctx.Err(); err != nil {
				return err
			}
			r.reject(f, c, t, iv, ref[iv.Base])
		}
	}

	r.rows(f, cases, invalid)
	return nil
}

// matches checks a payload against its expectation (nil: the case has no payload at that level).
func matches(want *Expect, got []byte, err error) bool {
	if want == nil {
		return got == nil && err == nil
	}
	return err == nil && len(got) == want.Len && sha(got) == want.SHA256
}

func (r *runner) encode(f Format, t *Target, k *Case, cb *codec.Codebook, in []byte, ref *encodedCase) *encodedCase {
	t0 := time.Now()
	e, err := encodeCase(r.ctx, t.Backend, f, k, cb, in)
	d := time.Since(t0)
	if err != nil {
		r.note(f, k.Category, k.ID, t, "encode", fail, d, err.Error())
		return &encodedCase{}
	}
	ec := &encodedCase{enc: e}
	check := func(level string, want *Expect, got []byte, gerr error, refOK bool, refGot []byte) bool {
		switch {
		case want == nil && got == nil && gerr == nil:
			return true
		case gerr != nil && unable(gerr):
			r.note(f, k.Category, k.ID, t, "encode "+level, unableStatus(t, gerr), 0, gerr.Error())
		case gerr != nil:
			r.note(f, k.Category, k.ID, t, "encode "+level, fail, 0, gerr.Error())
		case want == nil:
			r.note(f, k.Category, k.ID, t, "encode "+level, fail, 0, "a payload where the reference has none")
		case len(got) != want.Len || sha(got) != want.SHA256:
			r.note(f, k.Category, k.ID, t, "encode "+level, fail, 0,
				fmt.Sprintf("%d bytes, SHA-256 %.16s…; expected %d bytes, %.16s…%s", len(got), sha(got), want.Len,
					want.SHA256, firstDiff(got, refGot, refOK)))
		default:
			return true
		}
		return false
	}
	ec.bodyOK = check(LevelBody, k.Body, e.body, e.bodyErr, ref.bodyOK, ref.enc.body)
	ec.contOK = check(LevelContainer, &k.Container, e.container, e.contErr, ref.contOK, ref.enc.container)
	ec.contV2OK = check(LevelContainer+" v2", k.ContainerV2, e.containerV2, e.contV2Err, ref.contV2OK, ref.enc.containerV2)
	r.note(f, k.Category, k.ID, t, "encode", pass, d, "")
	return ec
}

// firstDiff says where a payload first differs from the reference's (when that one matches the corpus).
func firstDiff(got, want []byte, wantOK bool) string {
	if !wantOK {
		return ""
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf(" (first difference at byte %d)", i)
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf(" (the first %d bytes agree)", min(len(got), len(want)))
	}
	return ""
}

// decode decodes producer p's payloads of case k on t. A payload that matched the corpus must decode to the
// input; one that did not (the producer already failed for it) must get the reference's verdict.
func (r *runner) decode(f Format, t *Target, k *Case, cb *codec.Codebook, in []byte, p *encodedCase) {
	dt, _ := k.dtype()
	if p.enc.body != nil {
		t0 := time.Now()
		out, verdict, err := decodeBodyCall(r.ctx, t.Backend, f, k, cb, k.Checksums, p.enc.body, len(in))
		d := time.Since(t0)
		check := "decode body " + p.label
		switch {
		case err != nil && unable(err):
			r.note(f, k.Category, k.ID, t, check, unableStatus(t, err), d, err.Error())
		case err != nil:
			r.note(f, k.Category, k.ID, t, check, fail, d, err.Error())
		case p.bodyOK && verdict != nil:
			r.note(f, k.Category, k.ID, t, check, fail, d, "rejected a valid body: "+verdict.Error())
		case p.bodyOK && !bytes.Equal(out, in):
			r.note(f, k.Category, k.ID, t, check, fail, d, "decoded values differ from the input"+valueDiff(out, in, dt.Size()))
		case !p.bodyOK:
			wantOut, wantErr := decodeBody(r.ctx, r.ref, f, k, cb, k.Checksums, p.enc.body, len(in))
			if ClassName(verdict) != ClassName(wantErr) || (wantErr == nil && !bytes.Equal(out, wantOut)) {
				r.note(f, k.Category, k.ID, t, check, fail, d, fmt.Sprintf("on a body that differs from the corpus: %v, the reference says %v", verdict, wantErr))
			} else {
				r.note(f, k.Category, k.ID, t, check, pass, d, "")
			}
		default:
			r.note(f, k.Category, k.ID, t, check, pass, d, "")
		}
	}
	for _, c := range []struct {
		payload []byte
		ok      bool
		what    string
	}{{p.enc.container, p.contOK, "container"}, {p.enc.containerV2, p.contV2OK, "container v2"}} {
		if c.payload == nil {
			continue
		}
		t0 := time.Now()
		out, err := decodeContainer(t.Backend, c.payload)
		d := time.Since(t0)
		check := "decode " + c.what + " " + p.label
		switch {
		case c.ok && err != nil && unable(err):
			r.note(f, k.Category, k.ID, t, check, unableStatus(t, err), d, err.Error())
		case c.ok && err != nil:
			r.note(f, k.Category, k.ID, t, check, fail, d, "rejected a valid payload: "+err.Error())
		case c.ok && !bytes.Equal(out, in):
			r.note(f, k.Category, k.ID, t, check, fail, d, "decoded bytes differ from the input"+valueDiff(out, in, dt.Size()))
		case !c.ok:
			wantOut, wantErr := decodeContainer(r.ref, c.payload)
			if ClassName(err) != ClassName(wantErr) || (wantErr == nil && !bytes.Equal(out, wantOut)) {
				r.note(f, k.Category, k.ID, t, check, fail, d, fmt.Sprintf("on a payload that differs from the corpus: %v, the reference says %v", err, wantErr))
			} else {
				r.note(f, k.Category, k.ID, t, check, pass, d, "")
			}
		default:
			r.note(f, k.Category, k.ID, t, check, pass, d, "")
		}
	}
}

// valueDiff says where two decodings first differ.
func valueDiff(got, want []byte, size int) string {
	if len(got) != len(want) {
		return fmt.Sprintf(" (%d bytes, want %d)", len(got), len(want))
	}
	n := 0
	first := -1
	for i := range got {
		if got[i] != want[i] {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	if first < 0 {
		return ""
	}
	return fmt.Sprintf(" (%d bytes differ, first at value %d)", n, first/size)
}

// reject checks that t rejects an invalid payload with the corpus's class (and chunk).
func (r *runner) reject(f Format, c *Corpus, t *Target, iv *Invalid, base *encodedCase) {
	k := c.cases[iv.Base]
	var orig []byte
	ok := false
	if iv.Level == LevelBody {
		orig, ok = base.enc.body, base.bodyOK
	} else {
		orig, ok = base.enc.container, base.contOK
	}
	if !ok {
		r.note(f, iv.Category, iv.ID, t, "reject", fail, 0, "the reference no longer produces the base payload "+iv.Base)
		return
	}
	bad, err := apply(orig, iv.Ops, c.data)
	if err == nil && sha(bad) != iv.SHA256 {
		err = fmt.Errorf("payload SHA-256 %.16s…, corpus says %.16s…", sha(bad), iv.SHA256)
	}
	if err != nil {
		r.note(f, iv.Category, iv.ID, t, "reject", fail, 0, "cannot build the payload: "+err.Error())
		return
	}
	t0 := time.Now()
	verdict, callErr := decodeInvalid(r.ctx, t.Backend, f, k, iv, bad)
	d := time.Since(t0)
	got := ClassName(verdict)
	switch {
	case callErr != nil && unable(callErr):
		r.note(f, iv.Category, iv.ID, t, "reject", unableStatus(t, callErr), d, callErr.Error())
	case callErr != nil:
		r.note(f, iv.Category, iv.ID, t, "reject", fail, d, callErr.Error())
	case verdict == nil:
		r.note(f, iv.Category, iv.ID, t, "reject", fail, d, fmt.Sprintf("accepted (%s); want %s", iv.Note, iv.Class))
	case got != iv.Class:
		r.note(f, iv.Category, iv.ID, t, "reject", fail, d, fmt.Sprintf("%s (%v); want %s (%s)", got, verdict, iv.Class, iv.Note))
	case iv.Chunk >= 0 && errChunk(verdict) != iv.Chunk:
		// The class is the contract; which chunk an error names is diagnostic. A different one is reported as a
		// warning, not a failure.
		r.note(f, iv.Category, iv.ID, t, "reject", pass, d, "")
		r.rep.addWarning(Problem{Format: f.Name, Category: iv.Category, Case: iv.ID, Backend: t.Device.Backend,
			Device: t.Device.ID, Check: "reject", Detail: fmt.Sprintf("%s at chunk %d; the reference names chunk %d (%s)",
				got, errChunk(verdict), iv.Chunk, iv.Note)})
	default:
		r.note(f, iv.Category, iv.ID, t, "reject", pass, d, "")
	}
}

// rows turns the per-case results of a format into the report's rows.
func (r *runner) rows(f Format, cases []*Case, invalid []*Invalid) {
	type key struct{ cat, dev string }
	rows := map[key]*Row{}
	var order []string
	addCase := func(cat, id string) {
		if !slices.Contains(order, cat) {
			order = append(order, cat)
		}
		for _, t := range r.targets {
			k := key{cat, t.Device.ID}
			row := rows[k]
			if row == nil {
				row = &Row{Format: f.Name, Category: cat, Backend: t.Device.Backend, Device: t.Device.ID}
				rows[k] = row
			}
			row.Cases++
			res := r.results[[2]string{id, t.Device.ID}]
			if res == nil {
				row.Failed++ // a case no check reached is a failure, never a pass
				continue
			}
			switch res.st {
			case pass:
				row.Passed++
			case noPath:
				row.NoPath++
			case skip:
				row.Skipped++
			default:
				row.Failed++
			}
			row.Seconds += res.dur.Seconds()
		}
	}
	for _, k := range cases {
		addCase(k.Category, k.ID)
	}
	for _, iv := range invalid {
		addCase(iv.Category, iv.ID)
	}
	for _, cat := range order {
		for _, t := range r.targets {
			row := rows[key{cat, t.Device.ID}]
			row.Seconds = round3(row.Seconds)
			r.rep.Rows = append(r.rep.Rows, *row)
		}
	}
}
