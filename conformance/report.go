package conformance

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vkzip/vkzip/shaders"
)

// ReportSchema is the version of the report layout. 2: the verdict "incomplete", the not_checked list, the
// corpus identity (corpus_sha256), Unavailable without "counted".
const ReportSchema = 2

// Verdicts.
const (
	// VerdictPass: every case of every format ran and passed on every target listed in Devices, and nothing
	// that exists went unchecked (NotChecked is empty).
	VerdictPass = "pass"
	// VerdictIncomplete: no case failed, but something was not checked (NotChecked says what): a device that
	// exists but could not be used, no Vulkan device found where Vulkan was to be checked, or a format with no
	// path on a target (not applicable). Not a pass.
	VerdictIncomplete = "incomplete"
	// VerdictFail: a case failed (or was skipped without AllowSkip), or nothing ran.
	VerdictFail = "fail"
)

// Report is the outcome of a conformance run: what ran where, per-category counts, and the verdict.
type Report struct {
	Schema  int      `json:"schema"`
	Verdict string   `json:"verdict"` // VerdictPass, VerdictIncomplete or VerdictFail
	Reasons []string `json:"verdict_reasons,omitempty"`
	Started string   `json:"started"`
	Seconds float64  `json:"seconds"`
	Vkzip   Build    `json:"vkzip"`
	// SPIRV is shaders.Hash(): the exact kernels that ran on the Vulkan devices.
	SPIRV  string       `json:"spirv_sha256"`
	Corpus []CorpusInfo `json:"corpus"`
	// CorpusSHA256 identifies the whole corpus the report was checked against: CorpusIdentity of Corpus. A full
	// run's equals CorpusIdentity of the embedded corpus of the build that ran it.
	CorpusSHA256 string        `json:"corpus_sha256"`
	Devices      []Device      `json:"devices"`
	Unavailable  []Unavailable `json:"unavailable,omitempty"`
	AllowSkip    bool          `json:"allow_skip"`
	// NoPath lists the formats a target has no path for at all (a format without device-resident operations on
	// vulkan-resident): not applicable there, so none of their cases ran there and none passed.
	NoPath []NoPath `json:"no_path,omitempty"`
	// NotChecked is everything that exists but was not checked (devices, formats on targets, cases), and why:
	// the verdict is incomplete unless it is empty.
	NotChecked []NotChecked `json:"not_checked,omitempty"`
	Rows       []Row        `json:"rows"`
	Totals     []Total      `json:"totals"`
	// Problems are the failed and skipped checks, the first MaxProblems of them.
	Problems        []Problem `json:"problems,omitempty"`
	ProblemsOmitted int       `json:"problems_omitted,omitempty"`
	// Warnings are differences that do not fail a case: an error naming another chunk than the reference's.
	Warnings        []Problem `json:"warnings,omitempty"`
	WarningsOmitted int       `json:"warnings_omitted,omitempty"`
}

// NoPath is a format a target does not implement at all, and why.
type NoPath struct {
	Format  string `json:"format"`
	Backend string `json:"backend"`
	Device  string `json:"device"`
	Reason  string `json:"reason"`
}

// NotChecked is one thing a run did not check: a device (every format on it), a format on a target, or the
// cases of a format on a target that need a format the target has no path for.
type NotChecked struct {
	Device string `json:"device"`           // device id ("vulkan:1", "vulkan-resident:0"), or "" for no device found
	Name   string `json:"name,omitempty"`   // the device's name, where known
	Target string `json:"target"`           // backend: "vulkan", "vulkan-resident", ...
	Format string `json:"format,omitempty"` // "": every format
	Cases  int    `json:"cases,omitempty"`  // the cases left out, where only some of a format's were
	// NotApplicable marks a format (or cases needing a format) the target has no path for: nothing to check
	// there, and nothing counted as passed.
	NotApplicable bool   `json:"not_applicable,omitempty"`
	Reason        string `json:"reason"`
}

// CorpusIdentity is the SHA-256 of the corpora's formats, versions and manifest hashes (in format order): one
// value naming exactly the expectations checked. Reports carry it as CorpusSHA256.
func CorpusIdentity(cs []CorpusInfo) string {
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(a, b CorpusInfo) int { return strings.Compare(a.Format, b.Format) })
	h := sha256.New()
	for _, c := range cs {
		fmt.Fprintf(h, "%s %d %s\n", c.Format, c.Version, c.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// EmbeddedCorpus describes the corpus built into this binary, as a report lists it, and its identity.
func EmbeddedCorpus() ([]CorpusInfo, string, error) {
	cs, err := Load()
	if err != nil {
		return nil, "", err
	}
	var out []CorpusInfo
	for _, c := range cs {
		out = append(out, corpusInfo(c))
	}
	return out, CorpusIdentity(out), nil
}

func corpusInfo(c *Corpus) CorpusInfo {
	return CorpusInfo{Format: c.Format, Version: c.Version, SHA256: c.SHA256, Cases: len(c.Cases), Invalid: len(c.Invalid)}
}

// Build identifies the vkzip that ran.
type Build struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	CPUs     int    `json:"cpus"`
}

// CorpusInfo names the corpus of a format a report was checked against.
type CorpusInfo struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	SHA256  string `json:"manifest_sha256"`
	Cases   int    `json:"valid_cases"`
	Invalid int    `json:"invalid_cases"`
}

// Row counts one category's cases on one target. Every case is exactly one of passed, failed, skipped, no path
// (a check needed a format the target has no path for: not a pass, listed, not a failure).
type Row struct {
	Format   string  `json:"format"`
	Category string  `json:"category"`
	Backend  string  `json:"backend"`
	Device   string  `json:"device"` // Device.ID
	Cases    int     `json:"cases"`
	Passed   int     `json:"passed"`
	Failed   int     `json:"failed"`
	Skipped  int     `json:"skipped"`
	NoPath   int     `json:"no_path,omitempty"`
	Seconds  float64 `json:"seconds"`
}

// Total sums a format's rows on one target.
type Total struct {
	Format  string  `json:"format"`
	Backend string  `json:"backend"`
	Device  string  `json:"device"`
	Cases   int     `json:"cases"`
	Passed  int     `json:"passed"`
	Failed  int     `json:"failed"`
	Skipped int     `json:"skipped"`
	NoPath  int     `json:"no_path,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Problem is a check that failed or was skipped.
type Problem struct {
	Format   string `json:"format"`
	Category string `json:"category"`
	Case     string `json:"case"`
	Backend  string `json:"backend"`
	Device   string `json:"device"`
	Check    string `json:"check"`
	Skipped  bool   `json:"skipped,omitempty"`
	NoPath   bool   `json:"no_path,omitempty"`
	Detail   string `json:"detail"`
}

// MaxProblems bounds the problems a report lists (the counts are always complete).
const MaxProblems = 500

func newReport(version string, allowSkip bool) *Report {
	return &Report{Schema: ReportSchema, Started: time.Now().UTC().Format(time.RFC3339), Vkzip: buildInfo(version),
		SPIRV: shaders.Hash(), AllowSkip: allowSkip}
}

// buildInfo reads the version from the build information; version, when set (main.version by -ldflags in
// releases), overrides the module version.
func buildInfo(version string) Build {
	b := Build{Version: version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Version == "" {
		b.Version = "(unknown)"
	}
	return b
}

func (r *Report) addProblem(p Problem) {
	if len(r.Problems) >= MaxProblems {
		r.ProblemsOmitted++
		return
	}
	r.Problems = append(r.Problems, p)
}

func (r *Report) addWarning(p Problem) {
	if len(r.Warnings) >= MaxProblems {
		r.WarningsOmitted++
		return
	}
	r.Warnings = append(r.Warnings, p)
}

func secs(d time.Duration) float64 { return round3(d.Seconds()) }

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// Merge adds another run's targets (a child process's, e.g. lavapipe at another vector width) to r and
// recomputes the totals and the verdict.
func (r *Report) Merge(o *Report) {
	for _, c := range o.Corpus {
		i := slices.IndexFunc(r.Corpus, func(x CorpusInfo) bool { return x.Format == c.Format })
		if i < 0 {
			r.Corpus = append(r.Corpus, c)
		} else if r.Corpus[i].SHA256 != c.SHA256 {
			r.Reasons = append(r.Reasons, fmt.Sprintf("merged runs used different %s corpora", c.Format))
		}
	}
	if o.SPIRV != r.SPIRV || o.Vkzip != r.Vkzip {
		r.Reasons = append(r.Reasons, "merged runs came from different builds")
	}
	r.Devices = append(r.Devices, o.Devices...)
	for _, u := range o.Unavailable {
		if !slices.Contains(r.Unavailable, u) { // every process sees the same unusable devices
			r.Unavailable = append(r.Unavailable, u)
		}
	}
	r.NoPath = append(r.NoPath, o.NoPath...)
	r.Rows = append(r.Rows, o.Rows...)
	for _, p := range o.Problems {
		r.addProblem(p)
	}
	r.ProblemsOmitted += o.ProblemsOmitted
	for _, p := range o.Warnings {
		r.addWarning(p)
	}
	r.WarningsOmitted += o.WarningsOmitted
	r.finish()
}

// finish orders the rows, sums the totals and decides the verdict.
func (r *Report) finish() {
	var reasons []string
	for _, x := range r.Reasons {
		if strings.HasPrefix(x, "merged runs") {
			reasons = append(reasons, x)
		}
	}
	devIdx := func(id string) int { return slices.IndexFunc(r.Devices, func(d Device) bool { return d.ID == id }) }
	var cats []string
	for _, row := range r.Rows {
		if k := row.Format + "\x00" + row.Category; !slices.Contains(cats, k) {
			cats = append(cats, k)
		}
	}
	slices.SortStableFunc(r.Rows, func(a, b Row) int {
		ka, kb := slices.Index(cats, a.Format+"\x00"+a.Category), slices.Index(cats, b.Format+"\x00"+b.Category)
		if ka != kb {
			return ka - kb
		}
		return devIdx(a.Device) - devIdx(b.Device)
	})
	r.Totals = nil
	for _, row := range r.Rows {
		i := slices.IndexFunc(r.Totals, func(t Total) bool { return t.Format == row.Format && t.Device == row.Device })
		if i < 0 {
			r.Totals = append(r.Totals, Total{Format: row.Format, Backend: row.Backend, Device: row.Device})
			i = len(r.Totals) - 1
		}
		t := &r.Totals[i]
		t.Cases += row.Cases
		t.Passed += row.Passed
		t.Failed += row.Failed
		t.Skipped += row.Skipped
		t.NoPath += row.NoPath
		t.Seconds = round3(t.Seconds + row.Seconds)
	}
	slices.SortStableFunc(r.Totals, func(a, b Total) int {
		if a.Format != b.Format {
			return strings.Compare(a.Format, b.Format)
		}
		return devIdx(a.Device) - devIdx(b.Device)
	})
	if len(r.Totals) == 0 {
		reasons = append(reasons, "nothing ran")
	}
	for _, t := range r.Totals {
		switch {
		case t.Failed > 0:
			reasons = append(reasons, fmt.Sprintf("%s on %s: %d of %d cases failed", t.Format, t.Device, t.Failed, t.Cases))
		case t.Passed == 0 && t.NoPath < t.Cases:
			reasons = append(reasons, fmt.Sprintf("%s on %s: no case passed", t.Format, t.Device))
		}
		if t.Skipped > 0 && !r.AllowSkip {
			reasons = append(reasons, fmt.Sprintf("%s on %s: %d cases skipped", t.Format, t.Device, t.Skipped))
		}
	}
	r.CorpusSHA256 = CorpusIdentity(r.Corpus)
	r.NotChecked = r.notChecked()
	r.Verdict = VerdictPass
	switch {
	case len(reasons) > 0:
		r.Verdict = VerdictFail
	case len(r.NotChecked) > 0:
		r.Verdict = VerdictIncomplete
	}
	for _, n := range r.NotChecked {
		reasons = append(reasons, "not checked: "+n.String())
	}
	r.Reasons = reasons
}

// notChecked lists what exists but did not run: unavailable devices and backends, formats not applicable on a
// target, and cases that needed a format their target has no path for.
func (r *Report) notChecked() []NotChecked {
	var out []NotChecked
	for _, u := range r.Unavailable {
		out = append(out, NotChecked{Device: u.ID, Name: u.Device, Target: u.Backend, Reason: u.Reason})
	}
	for _, p := range r.NoPath {
		out = append(out, NotChecked{Device: p.Device, Target: p.Backend, Format: p.Format, NotApplicable: true,
			Reason: p.Reason})
	}
	for _, t := range r.Totals {
		if t.NoPath > 0 {
			out = append(out, NotChecked{Device: t.Device, Target: t.Backend, Format: t.Format, Cases: t.NoPath,
				NotApplicable: true, Reason: "the cases need a format this target has no path for (the problems list " +
					"each)"})
		}
	}
	return out
}

// String is one line for people: what was not checked, where, and why.
func (n NotChecked) String() string {
	var b strings.Builder
	switch {
	case n.Device == "" && n.Name == "":
		b.WriteString(n.Target)
	case n.Name != "" && n.Device != "":
		fmt.Fprintf(&b, "%s (%s)", n.Device, n.Name)
	default:
		b.WriteString(n.Device + n.Name)
	}
	switch {
	case n.Cases > 0:
		fmt.Fprintf(&b, ", %d %s cases", n.Cases, n.Format)
	case n.Format != "":
		b.WriteString(", format " + n.Format)
	default:
		b.WriteString(", every format")
	}
	if n.NotApplicable {
		b.WriteString(": not applicable")
	}
	b.WriteString(": " + n.Reason)
	return b.String()
}

// Passed reports whether the verdict is pass: everything listed was checked and passed.
func (r *Report) Passed() bool { return r.Verdict == VerdictPass }

// Incomplete reports whether the verdict is incomplete: nothing failed, but something was not checked.
func (r *Report) Incomplete() bool { return r.Verdict == VerdictIncomplete }

// WriteJSON writes the report as indented JSON: the file `vkzip conformance --out` writes and
// conformance/reports/ holds.
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadReport parses a report written by WriteJSON.
func ReadReport(b []byte) (*Report, error) {
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	if r.Schema != ReportSchema {
		return nil, fmt.Errorf("report schema %d, this build reads %d", r.Schema, ReportSchema)
	}
	return &r, nil
}

// WriteTable prints the report for people: the build and devices, a row per (category, target), the totals and
// the verdict, and the first problems.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	rev := ""
	if r.Vkzip.Revision != "" {
		rev = fmt.Sprintf(" (%.12s%s)", r.Vkzip.Revision, map[bool]string{true: ", modified"}[r.Vkzip.Modified])
	}
	fmt.Fprintf(&b, "vkzip %s%s, %s %s/%s; SPIR-V %.16s…; corpus %.16s…\n", r.Vkzip.Version, rev, r.Vkzip.Go,
		r.Vkzip.OS, r.Vkzip.Arch, r.SPIRV, r.CorpusSHA256)
	for _, c := range r.Corpus {
		fmt.Fprintf(&b, "corpus %s v%d (manifest %.16s…): %d valid and %d invalid cases\n", c.Format, c.Version, c.SHA256, c.Cases, c.Invalid)
	}
	b.WriteString("devices:\n")
	for _, d := range r.Devices {
		fmt.Fprintf(&b, "  %-16s %s\n", d.ID, deviceLine(d))
	}
	if len(r.NotChecked) > 0 {
		b.WriteString("NOT CHECKED (none of it counted as passed):\n")
		for _, n := range r.NotChecked {
			fmt.Fprintf(&b, "  %s\n", n)
		}
	}
	b.WriteString("\n")
	// Text columns left, numbers right (each padded to its header's width).
	tw := tabwriter.NewWriter(&b, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "format\tcategory\t cases\tbackend\tdevice\tpassed\tfailed\tskipped\t    n/a\t    time")
	line := func(format, cat string, cases int, backend, dev string, passed, failed, skipped, nopath int, s float64) {
		fmt.Fprintf(tw, "%s\t%s\t%6d\t%s\t%s\t%6d\t%6d\t%7d\t%7d\t%7.2fs\n", format, cat, cases, backend, dev, passed,
			failed, skipped, nopath, s)
	}
	for _, row := range r.Rows {
		line(row.Format, row.Category, row.Cases, row.Backend, row.Device, row.Passed, row.Failed, row.Skipped,
			row.NoPath, row.Seconds)
	}
	fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t")
	for _, t := range r.Totals {
		line(t.Format, "TOTAL", t.Cases, t.Backend, t.Device, t.Passed, t.Failed, t.Skipped, t.NoPath, t.Seconds)
	}
	tw.Flush()
	b.WriteString("\n")
	listProblems(&b, "problems", r.Problems, r.ProblemsOmitted)
	listProblems(&b, "warnings (not failures)", r.Warnings, r.WarningsOmitted)
	switch r.Verdict {
	case VerdictPass:
		fmt.Fprintf(&b, "verdict: PASS (every format passed on every device listed, in %.1fs)\n", r.Seconds)
	case VerdictIncomplete:
		fmt.Fprintf(&b, "verdict: INCOMPLETE (no case failed, but not everything was checked: not a pass)\n")
	default:
		fmt.Fprintf(&b, "verdict: FAIL\n")
	}
	for _, x := range r.Reasons {
		fmt.Fprintf(&b, "  %s\n", x)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func deviceLine(d Device) string {
	if d.Backend == "cpu" {
		return fmt.Sprintf("%s: %s", d.Name, d.Description)
	}
	s := fmt.Sprintf("%s: %s, vendor %s, driver %s (%s), Vulkan %s, subgroup %d", d.Name, d.Type, d.Vendor, d.Driver,
		d.DriverInfo, d.APIVersion, d.SubgroupSize)
	if d.LPVectorWidth > 0 {
		s += fmt.Sprintf(", LP_NATIVE_VECTOR_WIDTH %d", d.LPVectorWidth)
	}
	return s
}

// listProblems prints the first problems of a list.
func listProblems(b *strings.Builder, title string, ps []Problem, omitted int) {
	const show = 20
	n := len(ps)
	if n == 0 {
		return
	}
	fmt.Fprintf(b, "%s (%d", title, n+omitted)
	if n+omitted > show {
		fmt.Fprintf(b, ", the first %d; all in the JSON report", min(show, n))
	}
	b.WriteString("):\n")
	for _, p := range ps[:min(n, show)] {
		kind := "FAIL"
		switch {
		case p.Skipped:
			kind = "SKIP"
		case p.NoPath:
			kind = "N/A"
		case title != "problems":
			kind = "WARN"
		}
		fmt.Fprintf(b, "  %s %s %s on %s, %s: %s\n", kind, p.Format, p.Case, p.Device, p.Check, p.Detail)
	}
	b.WriteString("\n")
}
