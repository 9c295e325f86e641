package conformance

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCommandLine runs `vkzip conformance` as a user would: an installed binary, in a folder that holds nothing
// of the repository (the corpus is embedded).
func TestCommandLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the vkzip binary")
	}
	bin := os.Getenv("VKZIP_TEST_BIN") // a prebuilt binary, where there is no Go toolchain
	if bin == "" {
		if _, err := exec.LookPath("go"); err != nil {
			t.Skip("no go toolchain to build vkzip")
		}
		bin = filepath.Join(t.TempDir(), "vkzip")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/vkzip/vkzip/cmd/vkzip").CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	dir := t.TempDir()
	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatalf("running vkzip %v: %v", args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errb.String()
	}

	code, stdout, stderr := run("conformance", "--backend", "cpu", "--json", "--out", "r.json", "--quiet")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	file, err := os.ReadFile(filepath.Join(dir, "r.json"))
	require.NoError(t, err)
	assert.Equal(t, stdout, string(file), "--json prints exactly the file --out writes")
	r, err := ReadReport(file)
	require.NoError(t, err)
	requirePass(t, r, minCasesPerBackend)
	require.Len(t, r.Devices, 1)
	assert.NotEmpty(t, r.Vkzip.Version)
	assert.Len(t, r.SPIRV, 64)

	code, stdout, _ = run("conformance", "--backend", "cpu", "--category", "nan,invalid-table", "--quiet")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "verdict: PASS")
	assert.Contains(t, stdout, "invalid-table")
	assert.NotContains(t, stdout, "exponents")

	for _, args := range [][]string{{"--backend", "gpu"}, {"--category", "nope"}, {"--format", "zf99"},
		{"--lp-widths", "wide"}, {"extra"}} {
		code, _, stderr = run(append([]string{"conformance"}, args...)...)
		assert.Equal(t, 2, code, "%v is a usage error: %s", args, stderr)
	}
	code, _, stderr = run("conformance", "--backend", "vulkan", "--device", "no-such-device-anywhere", "--quiet")
	assert.Equal(t, 1, code, "an unknown device is a failure: %s", stderr)
}
