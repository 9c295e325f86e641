package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noVulkanEnv is the environment with the Vulkan loader pointed at an ICD manifest that does not exist: the
// loader finds no driver, as on a machine whose GPU driver is missing.
func noVulkanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES", "LP_NATIVE_VECTOR_WIDTH":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "VK_ICD_FILENAMES=/nonexistent.json", "VK_DRIVER_FILES=/nonexistent.json")
}

func vkzEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running vkzip %v: %v", args, err)
	}
	r := result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
	for _, bad := range []string{"goroutine ", "panic", "runtime error"} {
		assert.NotContains(t, r.stderr, bad, "vkzip %v", args)
	}
	return r
}

// TestConformanceWithoutVulkanIsIncomplete: with no Vulkan driver to be found, a default run checks the CPU
// only, so its verdict is incomplete and it exits 1; --allow-incomplete exits 0 with the same verdict;
// --backend cpu asks for the CPU only and passes.
func TestConformanceWithoutVulkanIsIncomplete(t *testing.T) {
	env := noVulkanEnv()
	narrow := []string{"conformance", "--format", "splitzip4", "--quiet"}

	r := vkzEnv(t, env, narrow...)
	requireFailure(t, r, "conformance")
	assert.Contains(t, r.stderr, "INCOMPLETE")
	assert.Contains(t, r.stdout, "verdict: INCOMPLETE")
	assert.Contains(t, r.stdout, "no Vulkan device found")
	assert.NotContains(t, r.stdout, "verdict: PASS")

	r = vkzEnv(t, env, append(narrow, "--allow-incomplete", "--json")...)
	require.Equal(t, exitOK, r.code, "stderr: %s", r.stderr)
	var rep struct {
		Verdict    string `json:"verdict"`
		NotChecked []struct {
			Target, Reason string
		} `json:"not_checked"`
		Totals []struct{ Device string } `json:"totals"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.Equal(t, "incomplete", rep.Verdict)
	require.Len(t, rep.NotChecked, 1)
	assert.Equal(t, "vulkan", rep.NotChecked[0].Target)
	assert.Contains(t, rep.NotChecked[0].Reason, "no Vulkan device found")
	require.Len(t, rep.Totals, 1)
	assert.Equal(t, "cpu", rep.Totals[0].Device)

	r = vkzEnv(t, env, "conformance", "--backend", "cpu", "--format", "splitzip4", "--quiet")
	require.Equal(t, exitOK, r.code, "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "verdict: PASS")

	r = vkzEnv(t, env, "conformance", "--backend", "vulkan", "--format", "splitzip4", "--category", "nan", "--quiet",
		"--allow-incomplete")
	requireFailure(t, r, "conformance")
}
