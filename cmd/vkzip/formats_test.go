package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
)

func TestFormatsVerb(t *testing.T) {
	dir := t.TempDir()
	r := vkz(t, dir, nil, "formats", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var list []formatOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list), r.stdout)
	require.Len(t, list, len(codec.Formats()))
	byName := map[string]formatOut{}
	for _, f := range list {
		byName[f.Name] = f
		assert.NotEmpty(t, f.About, f.Name)
		// No format is CPU-only: every one runs on both backends.
		assert.Equal(t, []string{"cpu", "vulkan"}, f.Backends, f.Name)
	}
	assert.Equal(t, []string{"any"}, byName["stored"].DTypes)
	assert.Equal(t, []string{"BF16"}, byName["splitzip4"].DTypes)
	assert.True(t, byName["splitzip4"].Codebook)
	assert.Equal(t, uint64(65536), byName["splitzip4"].MaxChunk)

	r = vkz(t, dir, nil, "formats")
	require.Equal(t, exitOK, r.code, r.stderr)
	for _, f := range list {
		assert.Contains(t, r.stdout, f.Name)
	}
	r = vkz(t, dir, nil, "formats", "extra")
	assert.Equal(t, exitUsage, r.code)
}

// TestInspectChunkMix checks that inspect reports how the chunks of each tensor are coded.
func TestInspectChunkMix(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	r := vkz(t, dir, nil, "encode", "-q", "--chunk", "4096", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	r = vkz(t, dir, nil, "inspect", "--json", "--chunks", "kv.safetensors.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	var info inspectOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &info), r.stdout)
	for _, rec := range info.Containers[0].Records[1:] {
		require.Equal(t, []codec.MixCount{{Format: "splitzip4", Kind: "coded", Chunks: 4}}, rec.Mix, rec.Name)
		require.Len(t, rec.ChunkList, 4)
		for i, ch := range rec.ChunkList {
			assert.Equal(t, uint64(i), ch.Index)
			assert.Equal(t, "splitzip4", ch.Format)
		}
	}
	r = vkz(t, dir, nil, "inspect", "kv.safetensors.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "chunk mix")
	assert.Contains(t, r.stdout, "splitzip4 4")
}

// TestBenchFormats runs a tiny bench of every coded format on the CPU and on Vulkan: it checks bit-exactness itself
// and fails otherwise.
func TestBenchFormats(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"splitzip4", "zf12", "auto"} {
		for _, b := range []string{"cpu", "vulkan"} {
			r := vkz(t, dir, nil, "bench", "--backend", b, "--format", f, "--size", "1MiB", "--iters", "1",
				"--warmup", "0", "--latency=false", "--json")
			if b == "vulkan" && r.code != exitOK && strings.Contains(r.stderr, "no usable device") &&
				os.Getenv("VKZIP_REQUIRE_VULKAN") == "" {
				continue
			}
			require.Equal(t, exitOK, r.code, "%s %s: %s", f, b, r.stderr)
			out := oneBench(t, r.stdout)
			assert.Equal(t, f, out.Format)
			assert.True(t, out.BitExact && out.MatchesCPU, "%s %s", f, b)
			assert.Greater(t, out.Ratio, 1.25, "%s %s", f, b)
			if b == "cpu" || out.Path != "host" {
				// Every resident run, and the CPU, measures its copy roofline in the same invocation.
				assert.Positive(t, out.CopyGBps, "%s %s", f, b)
				assert.InDelta(t, out.CopyGBps*2/(2+2/out.Ratio), out.CeilingGBps, 1e-9, "%s %s", f, b)
			}
			if b == "cpu" {
				assert.Equal(t, out.EncodeWallGBps, out.EncodeGBps, "the CPU's codec time is its wall time")
				assert.Equal(t, out.DecodeWallGBps, out.DecodeGBps)
			}
		}
	}
	r := vkz(t, dir, nil, "bench", "--format", "stored", "--size", "1MiB")
	assert.Equal(t, exitUsage, r.code)
}
