package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
)

// fakeLister stands for a machine's Vulkan devices: each one it opens is the Go reference under a Vulkan
// device id, so the verdict logic is tested without a GPU and without depending on the machine's own devices.
type fakeLister struct {
	devs     []DeviceInfo
	err      error         // Devices' error: no loader, no ICD
	openErr  map[int]error // Open fails for these device indices
	resident func() codec.Backend
	calls    int
}

func (f *fakeLister) Devices() ([]DeviceInfo, error) {
	f.calls++
	return f.devs, f.err
}

// Select picks the usable device of that index, or the first usable one whose name contains spec.
func (f *fakeLister) Select(devs []DeviceInfo, spec string) (DeviceInfo, error) {
	for _, d := range devs {
		if d.Usable && (fmt.Sprint(d.Index) == spec || strings.Contains(d.Name, spec)) {
			return d, nil
		}
	}
	return DeviceInfo{}, fmt.Errorf("%w: no device %q", ErrNoDevice, spec)
}

func (f *fakeLister) Open(d DeviceInfo, resident bool) ([]Target, error) {
	if err := f.openErr[d.Index]; err != nil {
		return nil, err
	}
	id := fmt.Sprint(d.Index)
	ts := []Target{{Backend: codec.NewCPUBackend(0), Device: Device{ID: "vulkan:" + id, Backend: "vulkan", Name: d.Name}}}
	if resident {
		var b codec.Backend = codec.NewCPUBackend(0)
		if f.resident != nil {
			b = f.resident()
		}
		ts = append(ts, Target{Backend: b, Device: Device{ID: "vulkan-resident:" + id, Backend: "vulkan-resident", Name: d.Name}})
	}
	return ts, nil
}

// partial is a target with a path for some formats only (as vulkan-resident may be), and optionally refusing
// chunks of 2^16 values as unsupported.
type partial struct {
	codec.CPUBackend
	missing    uint8 // format id without a path (0: none)
	refuse16   bool
	hasPathAsk []uint8
}

func (p *partial) HasPath(format uint8) (bool, string) {
	p.hasPathAsk = append(p.hasPathAsk, format)
	if format == p.missing {
		return false, fmt.Sprintf("test: no path for format %d", format)
	}
	return true, ""
}

func (p *partial) Encode(ctx context.Context, jobs []codec.EncodeJob) error {
	for _, j := range jobs {
		if p.refuse16 && j.Shift == 16 {
			return &codec.Error{Class: codec.ErrUnsupported, Chunk: -1, Detail: "test: no chunks of 65,536"}
		}
	}
	return p.CPUBackend.Encode(ctx, jobs)
}

func (p *partial) Decode(ctx context.Context, jobs []codec.DecodeJob) error {
	for _, j := range jobs {
		if p.refuse16 && j.Shift == 16 {
			return &codec.Error{Class: codec.ErrUnsupported, Chunk: -1, Detail: "test: no chunks of 65,536"}
		}
	}
	return p.CPUBackend.Decode(ctx, jobs)
}

func gpu(i int, name string) DeviceInfo { return DeviceInfo{Index: i, Name: name, Usable: true} }

// runSel runs the SplitZip-4 "nan" cases (small, and they pass on the reference) on the selected targets.
func runSel(t *testing.T, sel Selection, formats, cats []string) *Report {
	t.Helper()
	if formats == nil {
		formats, cats = []string{sz4}, []string{"nan"}
	}
	r, err := Run(context.Background(), Options{Select: sel, Formats: formats, Categories: cats})
	require.NoError(t, err)
	return r
}

func table(t *testing.T, r *Report) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, r.WriteTable(&b))
	return b.String()
}

func notChecked(r *Report, device string) *NotChecked {
	for i := range r.NotChecked {
		if r.NotChecked[i].Device == device {
			return &r.NotChecked[i]
		}
	}
	return nil
}

// TestVerdictPassOnEveryDevice: with every listed device opened and every case passed, the verdict is pass,
// and every device's targets are in the totals.
func TestVerdictPassOnEveryDevice(t *testing.T) {
	l := &fakeLister{devs: []DeviceInfo{gpu(0, "fake gpu 0"), gpu(1, "fake gpu 1")}}
	r := runSel(t, Selection{Lister: l}, nil, nil)
	assert.Equal(t, VerdictPass, r.Verdict, "%v", r.Reasons)
	assert.True(t, r.Passed())
	assert.Empty(t, r.NotChecked)
	var devs []string
	for _, tot := range r.Totals {
		devs = append(devs, tot.Device)
		assert.Equal(t, tot.Cases, tot.Passed)
	}
	assert.ElementsMatch(t, []string{"cpu", "vulkan:0", "vulkan-resident:0", "vulkan:1", "vulkan-resident:1"}, devs)
	assert.Contains(t, table(t, r), "verdict: PASS")
}

// TestIncompleteUnusableDevice: a device the lister reports that cannot be opened, or that it marks not usable,
// makes the verdict incomplete (not a pass, not a failure), and the report names it with the reason.
func TestIncompleteUnusableDevice(t *testing.T) {
	unusable := DeviceInfo{Index: 2, Name: "old gpu", Reason: "no shaderInt16"}
	l := &fakeLister{devs: []DeviceInfo{gpu(0, "good gpu"), gpu(1, "broken gpu"), unusable},
		openErr: map[int]error{1: errors.New("vkCreateDevice: VK_ERROR_INITIALIZATION_FAILED")}}
	r := runSel(t, Selection{Lister: l}, nil, nil)
	assert.Equal(t, VerdictIncomplete, r.Verdict, "%v", r.Reasons)
	assert.False(t, r.Passed())
	assert.True(t, r.Incomplete())
	for _, tot := range r.Totals {
		assert.Equal(t, tot.Cases, tot.Passed, "what ran passed: %s", tot.Device)
		assert.NotEqual(t, "vulkan:1", tot.Device)
	}
	require.Len(t, r.NotChecked, 2)
	n := notChecked(r, "vulkan:1")
	require.NotNil(t, n, "%+v", r.NotChecked)
	assert.Equal(t, "broken gpu", n.Name)
	assert.Equal(t, "vulkan", n.Target)
	assert.Empty(t, n.Format, "every format")
	assert.Contains(t, n.Reason, "VK_ERROR_INITIALIZATION_FAILED")
	n = notChecked(r, "vulkan:2")
	require.NotNil(t, n, "%+v", r.NotChecked)
	assert.Contains(t, n.Reason, "no shaderInt16")
	out := table(t, r)
	assert.Contains(t, out, "verdict: INCOMPLETE")
	assert.Contains(t, out, "vulkan:1 (broken gpu), every format: could not be opened")
	assert.NotContains(t, out, "verdict: PASS")

	// AllowSkip is about cases a backend refuses, not about devices left out.
	r, err := Run(context.Background(), Options{Select: Selection{Lister: l}, Formats: []string{sz4},
		Categories: []string{"nan"}, AllowSkip: true})
	require.NoError(t, err)
	assert.Equal(t, VerdictIncomplete, r.Verdict)
}

// TestIncompleteNoVulkan: no Vulkan device found (no loader or ICD: the lister errs, or lists none) with
// backend all is incomplete; with backend cpu nothing is listed and the CPU alone can pass; with backend vulkan
// it is an error.
func TestIncompleteNoVulkan(t *testing.T) {
	for _, l := range []*fakeLister{
		{err: errors.New("vk: vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER")},
		{},
	} {
		for _, backend := range []string{"", "all"} {
			r := runSel(t, Selection{Backend: backend, Lister: l}, nil, nil)
			assert.Equal(t, VerdictIncomplete, r.Verdict, "%v", r.Reasons)
			require.Len(t, r.NotChecked, 1)
			assert.Equal(t, "vulkan", r.NotChecked[0].Target)
			assert.Contains(t, r.NotChecked[0].Reason, "no Vulkan device found")
			if l.err != nil {
				assert.Contains(t, r.NotChecked[0].Reason, "VK_ERROR_INCOMPATIBLE_DRIVER")
			}
			require.Len(t, r.Totals, 1)
			assert.Equal(t, "cpu", r.Totals[0].Device)
			assert.Contains(t, table(t, r), "verdict: INCOMPLETE")
		}

		calls := l.calls
		r := runSel(t, Selection{Backend: "cpu", Lister: l}, nil, nil)
		assert.Equal(t, VerdictPass, r.Verdict, "%v", r.Reasons)
		assert.Equal(t, calls, l.calls, "--backend cpu lists no Vulkan device")

		_, err := Run(context.Background(), Options{Select: Selection{Backend: "vulkan", Lister: l},
			Formats: []string{sz4}, Categories: []string{"nan"}})
		assert.Error(t, err, "Vulkan asked for, none found")
	}
}

// TestNotApplicable: a format a target has no path for is listed as not applicable there and never counted
// as passed; the verdict is incomplete. The formats it has a path for run and pass.
func TestNotApplicable(t *testing.T) {
	zf := "zf12"
	var sz4ID uint8
	for _, c := range corpora(t) {
		if c.Format == sz4 {
			sz4ID = c.FormatID
		}
	}
	require.NotZero(t, sz4ID)
	var res []*partial
	l := &fakeLister{devs: []DeviceInfo{gpu(0, "fake gpu")}, resident: func() codec.Backend {
		p := &partial{missing: sz4ID}
		res = append(res, p)
		return p
	}}
	r := runSel(t, Selection{Lister: l}, []string{sz4, zf}, []string{"nan", "special"})
	require.Len(t, res, 1)
	assert.Contains(t, res[0].hasPathAsk, sz4ID, "the runner asked the target")
	assert.Equal(t, VerdictIncomplete, r.Verdict, "%v", r.Reasons)
	require.Len(t, r.NotChecked, 1, "%+v", r.NotChecked)
	n := r.NotChecked[0]
	assert.Equal(t, NotChecked{Device: "vulkan-resident:0", Target: "vulkan-resident", Format: sz4, NotApplicable: true,
		Reason: n.Reason}, n)
	assert.Contains(t, n.Reason, "no path")
	for _, tot := range r.Totals {
		assert.False(t, tot.Device == "vulkan-resident:0" && tot.Format == sz4, "a format with no path has no passes: %+v", tot)
		assert.Equal(t, tot.Cases, tot.Passed, "%+v", tot)
	}
	assert.True(t, slices.ContainsFunc(r.Totals, func(x Total) bool { return x.Device == "vulkan-resident:0" && x.Format == zf }),
		"the format it has a path for ran")
	out := table(t, r)
	assert.Contains(t, out, "vulkan-resident:0, format splitzip4: not applicable:")
	assert.Contains(t, out, "verdict: INCOMPLETE")

	// Only the format it has a path for: everything listed passed.
	r = runSel(t, Selection{Lister: l}, []string{zf}, []string{"special"})
	assert.Equal(t, VerdictPass, r.Verdict, "%v", r.Reasons)
}

// TestNotApplicableCases: cases a target with partial paths refuses as unsupported are counted not applicable
// (not passed, not skipped), listed with their count, and make the verdict incomplete.
func TestNotApplicableCases(t *testing.T) {
	l := &fakeLister{devs: []DeviceInfo{gpu(0, "fake gpu")}, resident: func() codec.Backend {
		return &partial{refuse16: true}
	}}
	r := runSel(t, Selection{Lister: l}, []string{sz4}, []string{"lengths"})
	assert.Equal(t, VerdictIncomplete, r.Verdict, "%v", r.Reasons)
	i := slices.IndexFunc(r.Totals, func(x Total) bool { return x.Device == "vulkan-resident:0" })
	require.GreaterOrEqual(t, i, 0)
	tot := r.Totals[i]
	assert.Positive(t, tot.NoPath)
	assert.Positive(t, tot.Passed)
	assert.Zero(t, tot.Skipped)
	assert.Equal(t, tot.Cases, tot.Passed+tot.NoPath)
	n := notChecked(r, "vulkan-resident:0")
	require.NotNil(t, n, "%+v", r.NotChecked)
	assert.Equal(t, tot.NoPath, n.Cases)
	assert.True(t, n.NotApplicable)
	assert.Equal(t, sz4, n.Format)
}

// TestVerdictFailBeatsIncomplete: a failed case fails the verdict even when something else was not checked.
func TestVerdictFailBeatsIncomplete(t *testing.T) {
	b := &liar{decode: func(j *codec.DecodeJob) {
		if j.Err == nil && len(j.Dst) > 0 {
			j.Dst[0] ^= 0x80
		}
	}}
	r, err := Run(context.Background(), Options{Targets: []Target{CPUTarget(), fakeTarget("liar", b)},
		Formats: []string{sz4}, Categories: []string{"nan"}, Unavailable: []Unavailable{{Backend: "vulkan", Reason: "test"}}})
	require.NoError(t, err)
	assert.Equal(t, VerdictFail, r.Verdict)
	assert.NotEmpty(t, r.NotChecked, "still listed")
	assert.Contains(t, table(t, r), "verdict: FAIL")
}

// TestIncompleteSurvivesMergeAndJSON: a child run's unusable device makes the merged report incomplete, and
// the verdict and the list survive the JSON.
func TestIncompleteSurvivesMergeAndJSON(t *testing.T) {
	a := runSel(t, Selection{Backend: "cpu"}, nil, nil)
	require.True(t, a.Passed())
	l := &fakeLister{devs: []DeviceInfo{gpu(0, "ok"), gpu(1, "broken")}, openErr: map[int]error{1: errors.New("lost")}}
	b := runSel(t, Selection{Backend: "vulkan", Lister: l}, nil, nil)
	a.Merge(b)
	assert.Equal(t, VerdictIncomplete, a.Verdict, "%v", a.Reasons)
	var buf bytes.Buffer
	require.NoError(t, a.WriteJSON(&buf))
	assert.Contains(t, buf.String(), `"verdict": "incomplete"`)
	back, err := ReadReport(buf.Bytes())
	require.NoError(t, err)
	assert.Equal(t, a.NotChecked, back.NotChecked)
	assert.True(t, back.Incomplete())
}
