package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Without the CUDA driver and NCCL (bogus paths, so that this holds on the GPU machine too), the NCCL transfer
// fails at once with one line naming both.
func TestTransferBenchNCCLWithoutLibraries(t *testing.T) {
	t.Setenv("VKZIP_CUDA_LIB", "/nonexistent/libcuda.so.1")
	t.Setenv("VKZIP_NCCL_LIB", "/nonexistent/libnccl.so.2")
	for _, args := range [][]string{
		{"transfer-bench", "--transport", "nccl", "--size", "2GiB"},
		{"transfer-bench", "--transport", "nccl", "--check"},
	} {
		r := vkz(t, t.TempDir(), nil, args...)
		requireFailure(t, r, "transfer-bench")
		assert.Contains(t, r.stderr, "CUDA driver not available", "%v", args)
		assert.Contains(t, r.stderr, "NCCL library not available", "%v", args)
		assert.Contains(t, r.stderr, "VKZIP_NCCL_LIB", "%v", args)
		assert.Empty(t, r.stdout)
		// Under --json the same failure is a JSON object on stdout, with the same exit status.
		r = vkz(t, t.TempDir(), nil, append(args, "--json")...)
		require.Equal(t, exitFailure, r.code, r.stderr)
		assert.Empty(t, r.stderr)
		var e errorJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &e), r.stdout)
		assert.Contains(t, e.Error, "CUDA driver not available", "%v", args)
		assert.Contains(t, e.Error, "NCCL library not available", "%v", args)
	}
	// --nccl-lib names the library; the driver still goes first in the message.
	r := vkz(t, t.TempDir(), nil, "transfer-bench", "--transport", "nccl", "--nccl-lib", "/elsewhere/libnccl.so.2")
	requireFailure(t, r, "transfer-bench")
	assert.Contains(t, r.stderr, "/elsewhere/libnccl.so.2")
}

func TestTransferBenchNCCLUsage(t *testing.T) {
	for _, args := range [][]string{
		{"transfer-bench", "--transport", "infiniband"},
		{"transfer-bench", "--gpus", "0,1"}, // nccl flag without nccl
		{"transfer-bench", "--check"},       // likewise
		{"transfer-bench", "--transport", "nccl", "--rate", "2gbit"},
		{"transfer-bench", "--transport", "nccl", "--connect", "h:1"},
		{"transfer-bench", "--transport", "nccl", "--backend", "cpu"},
		{"transfer-bench", "--transport", "nccl", "--gpus", "0"},
		{"transfer-bench", "--transport", "nccl", "--gpus", "1,1"},
		{"transfer-bench", "--transport", "nccl", "--frame-size", "1000"},
		{"transfer-bench", "--transport", "nccl", "--frame-size", "2GiB"},
		{"transfer-bench", "--transport", "nccl", "--size", "1001"},
		{"transfer-bench", "--transport", "nccl", "--raw-from", "host"},
		{"transfer-bench", "--transport", "nccl", "--modes", "zstd"},
		{"transfer-bench", "--transport", "nccl", "--chunk", "1000"},
		{"transfer-bench", "--transport", "nccl", "--chunk", "4MiB"}, // --chunk counts values, as in every verb
	} {
		r := vkz(t, t.TempDir(), nil, args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "%v: %q", args, r.stderr)
	}
	r := vkz(t, t.TempDir(), nil, "transfer-bench", "--help")
	require.Equal(t, exitOK, r.code)
	for _, s := range []string{"--transport", "--gpus", "--nccl-lib", "NCCL_NVLS_ENABLE=0", "--inflight"} {
		assert.Contains(t, r.stdout, s)
	}
}
