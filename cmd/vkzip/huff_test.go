package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
)

// TestPreferRatio: --prefer ratio writes huff (CPU and Vulkan payloads identical, both decode to the input) and is
// smaller than --prefer speed (splitzip4) on the KV sample; --prefer with --format, or an unknown preference, is a usage
// error.
func TestPreferRatio(t *testing.T) {
	needVulkan(t)
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	payload, res := roundTripBoth(t, dir, in, "--prefer", "ratio")
	assert.Equal(t, []formatCount{{"huff", 8}}, res.Formats)
	assert.Equal(t, "huff", inspectFormats(t, dir, payload)[0])
	_, speed := roundTripBoth(t, dir, in, "--prefer", "speed")
	assert.Greater(t, res.Ratio, speed.Ratio)
	assert.Greater(t, res.Ratio, 1.45)
	t.Logf("huff %.4f, speed %.4f (%v)", res.Ratio, speed.Ratio, speed.Formats)
	for _, args := range [][]string{{"--prefer", "ratio", "--format", "tbe3"}, {"--prefer", "small"}} {
		r := vkz(t, dir, nil, append(append([]string{"encode"}, args...), in)...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "--prefer")
	}
}

// TestBenchFormatList: --format auto,huff measures both, --json gives a list of the usual objects.
func TestBenchFormatList(t *testing.T) {
	dir := t.TempDir()
	r := vkz(t, dir, nil, "bench", "--backend", "cpu", "--format", "auto,huff", "--size", "1MiB", "--iters", "1",
		"--warmup", "0", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var rep benchReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	outs := rep.Results
	require.Len(t, outs, 2)
	assert.Equal(t, "auto", outs[0].Format)
	assert.Equal(t, "huff", outs[1].Format)
	assert.Equal(t, 1<<layout.HuffShiftFor(1<<19), outs[1].Chunk, "huff's own chunk size for 1 MiB")
	for _, o := range outs {
		assert.True(t, o.BitExact && o.MatchesCPU, o.Format)
	}
	assert.Greater(t, outs[1].Ratio, outs[0].Ratio)
}
