package vkdevices

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/conformance"
	"github.com/vkzip/vkzip/vk/vktest"
)

// minCasesPerBackend is what the issue asks of every backend, across all categories (as in package
// conformance's tests).
const minCasesPerBackend = 200

// requirePass requires a passing report with at least minCases cases on every target, each passed.
func requirePass(t *testing.T, r *conformance.Report, minCases int) {
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

// minShortCases is what every format must run of conformance.QuickCategories on each backend (huff has the
// fewest: 3 + 6).
const minShortCases = 8

// envTestWidth tells a re-run test process which lavapipe vector width it must be running at.
const envTestWidth = "VKZIP_CONFORMANCE_TEST_WIDTH"

func TestVulkan(t *testing.T) {
	// The re-run at the other lavapipe width leaves out the resident path: same kernels, half the time.
	ts, un, err := conformance.OpenTargets(conformance.Selection{Lister: &Lister{}, Backend: "vulkan", NoResident: os.Getenv(envTestWidth) != ""})
	if err != nil {
		vktest.Unavailable(t, "%v", err)
	}
	t.Cleanup(func() { conformance.CloseTargets(ts) })
	if len(ts) == 0 {
		vktest.Unavailable(t, "no usable Vulkan device: %v", un)
	}
	if w := os.Getenv(envTestWidth); w != "" {
		for _, x := range ts {
			if x.Device.LPVectorWidth > 0 {
				require.Equal(t, w, strconv.Itoa(x.Device.LPVectorWidth), "%s runs at another vector width", x.Device.Name)
			}
		}
	}
	o, minCases := conformance.Options{Targets: ts, Unavailable: un}, minCasesPerBackend
	if testing.Short() {
		o.Categories, minCases = conformance.QuickCategories, minShortCases
	}
	r, err := conformance.Run(context.Background(), o)
	require.NoError(t, err)
	requirePass(t, r, minCases)
	for _, w := range r.Warnings {
		t.Logf("warning: %s on %s: %s", w.Case, w.Device, w.Detail)
	}
}

// TestLavapipeOtherWidth runs TestVulkan again in a child process at lavapipe's other vector width: lavapipe reads
// LP_NATIVE_VECTOR_WIDTH once per process.
func TestLavapipeOtherWidth(t *testing.T) {
	if testing.Short() || os.Getenv(envTestWidth) != "" {
		t.Skip("short, or already the re-run")
	}
	ts, _, err := conformance.OpenTargets(conformance.Selection{Lister: &Lister{}, Backend: "vulkan", NoResident: true})
	if err != nil {
		vktest.Unavailable(t, "%v", err)
	}
	width := 0
	for _, x := range ts {
		if x.Device.LPVectorWidth > 0 {
			width = x.Device.LPVectorWidth
		}
	}
	conformance.CloseTargets(ts)
	if width == 0 {
		t.Skip("no lavapipe device")
	}
	other := 128
	if width == 128 {
		other = 256
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestVulkan$", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), "LP_NATIVE_VECTOR_WIDTH="+strconv.Itoa(other), envTestWidth+"="+strconv.Itoa(other))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "TestVulkan at %d bits:\n%s", other, out)
	require.Contains(t, string(out), "--- PASS: TestVulkan", "at %d bits:\n%s", other, out)
}
