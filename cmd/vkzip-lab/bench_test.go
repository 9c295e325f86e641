package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/internal/vktune"
	"github.com/vkzip/vkzip/vk/vktest"
)

// labBench runs vkzip-lab bench with args and --json, skipping where no Vulkan device opens (failing under
// VKZIP_REQUIRE_VULKAN=1).
func labBench(t *testing.T, args ...string) (benchOut, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append(append([]string{"bench"}, args...), "--json"), &stdout, &stderr)
	if errors.Is(err, codec.ErrNoDevice) {
		vktest.Unavailable(t, "vulkan: %v", err)
	}
	var out benchOut
	if err == nil || stdout.Len() > 0 {
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), "%s / %s", stdout.String(), stderr.String())
	}
	return out, err
}

// TestLabBenchTuned times formats with knobs set from flags: the knobs reach vktune.Params, every round trip is
// checked (bit_exact, from poisoned buffers), and the figures are positive.
func TestLabBenchTuned(t *testing.T) {
	for _, c := range []struct {
		args []string
		want vktune.Params
	}{
		{[]string{"--format", "splitzip4", "--wg", "64", "--unroll", "1", "--crc-bits", "6", "--sz4-place-wg", "64"},
			vktune.Params{WorkGroup: 64, Unroll: 1, CRCBits: 6, SZ4PlaceWG: 64}},
		{[]string{"--format", "huff", "--huff-batch", "4", "--huff-decode-wg", "64", "--huff-table", "512",
			"--huff-check-first", "--huff-two-reads"},
			vktune.Params{Huff: vktune.Huff{Batch: 4, DecodeWG: 64, TableEntries: 512, CheckFirst: true, TwoReads: true}}},
		{[]string{"--format", "zf12", "--copy-shape", "2:1:u2"}, vktune.Params{}},
	} {
		args := append([]string{"--size", "256KiB", "--iters", "2", "--warmup", "1"}, c.args...)
		out, err := labBench(t, args...)
		require.NoError(t, err, "%v", c.args)
		assert.Equal(t, c.want, out.Tune, "%v", c.args)
		assert.True(t, out.BitExact, "%v: %s", c.args, out.CheckFailure)
		assert.Positive(t, out.EncodeGBps, "%v", c.args)
		assert.Positive(t, out.DecodeGBps, "%v", c.args)
		assert.Positive(t, out.CopyGBps, "%v", c.args)
		assert.Greater(t, out.Ratio, 1.0, "%v", c.args)
	}
}

// TestLabBenchUsage: bad flags and values are usage errors, reported before anything runs.
func TestLabBenchUsage(t *testing.T) {
	for _, args := range [][]string{{"--profile", "64"}, {"--copy-shape", "9:1"}, {"--format", "stored"},
		{"--size", "3B"}, {"--huff-batch", "x"}, {"--chunk", "1000"}, {"extra"}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"bench"}, args...), &stdout, &stderr)
		assert.ErrorIs(t, err, errUsage, "%v", args)
		assert.Empty(t, stdout.String(), "%v", args)
	}
	assert.ErrorIs(t, run(context.Background(), []string{"nope"}, &bytes.Buffer{}, &bytes.Buffer{}), errUsage)
}

// TestParseCopyShape checks --copy-shape's syntax: R:W with optional contiguous and uN parts, each in range.
func TestParseCopyShape(t *testing.T) {
	for s, want := range map[string]vkcodec.CopyShape{
		"":                  {},
		"3:4":               {Reads: 3, Writes: 4},
		"4:3:contiguous":    {Reads: 4, Writes: 3, Contiguous: true},
		"2:2:u4":            {Reads: 2, Writes: 2, Unroll: 4},
		"1:8:u2:contiguous": {Reads: 1, Writes: 8, Unroll: 2, Contiguous: true},
	} {
		got, err := parseCopyShape(s)
		require.NoError(t, err, s)
		require.Equal(t, want, got, s)
	}
	for _, s := range []string{"3", "0:1", "1:9", "a:b", "3:4:x", "3:4:u0", "3:4:u9", "1:1:u2:contiguous:u2:x"} {
		_, err := parseCopyShape(s)
		require.Error(t, err, s)
	}
}

// TestFirstDiff: the lab's check finds the first differing byte, a length difference, and nothing in equal slices.
func TestFirstDiff(t *testing.T) {
	assert.Equal(t, -1, firstDiff([]byte{1, 2, 3}, []byte{1, 2, 3}))
	assert.Equal(t, 1, firstDiff([]byte{1, 2, 3}, []byte{1, 9, 3}))
	assert.Equal(t, 2, firstDiff([]byte{1, 2}, []byte{1, 2, 3}))
}
