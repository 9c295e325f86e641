package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/tensorfile"
)

// One dtype rule, one format rule, and --prefer modes that pick what they say.

// i2NPY is testdata/kv-layer0-k-i2.npy: a BF16 tensor saved as t.view(torch.int16).numpy() ('<i2').
func i2NPY(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "kv-layer0-k-i2.npy"))
	require.NoError(t, err)
	require.True(t, bytes.Contains(b[:128], []byte("'descr': '<i2'")))
	return b
}

// TestNPYInt16AsBF16: a BF16 array in an '<i2' or '|V2' npy is coded as BF16 with --dtype bf16 and restored byte
// for byte; calibrate reads it the same way (its codebook is encode's); without --dtype it is stored, with one
// warning line naming the file and the flag.
func TestNPYInt16AsBF16(t *testing.T) {
	dir := t.TempDir()
	i2 := i2NPY(t)
	v2 := bytes.Replace(i2, []byte("'descr': '<i2'"), []byte("'descr': '|V2'"), 1)
	for name, data := range map[string][]byte{"k-i2.npy": i2, "k-v2.npy": v2} {
		in := write(t, filepath.Join(dir, name), data)
		r := vkz(t, dir, nil, "encode", "--json", "--backend", "cpu", "--dtype", "bf16", in)
		require.Equal(t, exitOK, r.code, "%s: %s", name, r.stderr)
		assert.NotContains(t, r.stderr, "warning", name)
		var res encodeResult
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.stdout)
		assert.Equal(t, []formatCount{{"splitzip4", 1}}, res.Formats, name)
		assert.Greater(t, res.Ratio, 1.25, name)
		r = vkz(t, dir, nil, "inspect", "--json", name+".vkz")
		require.Equal(t, exitOK, r.code, r.stderr)
		var info inspectOut
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &info))
		assert.Equal(t, "BF16", info.Containers[0].Records[1].DType, name)
		r = vkz(t, dir, nil, "decode", "-q", "--backend", "cpu", "-o", name+".out", name+".vkz")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, data, read(t, filepath.Join(dir, name+".out")), name)

		// calibrate: the same values, so the same codebook as encode calibrated on itself.
		r = vkz(t, dir, nil, "calibrate", "--json", "--dtype", "bf16", in)
		require.Equal(t, exitOK, r.code, r.stderr)
		var cr calibrateResult
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &cr), r.stdout)
		assert.Equal(t, uint64(512*4*8), cr.Values, name)
		assert.Equal(t, res.Codebook, cr.Codebook, name)

		// Without --dtype: stored, exit 0, exactly one warning line naming the file and the flag.
		r = vkz(t, dir, nil, "encode", "-q", "--backend", "cpu", "-o", name+".plain.vkz", in)
		require.Equal(t, exitOK, r.code, r.stderr)
		lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
		require.Len(t, lines, 1, r.stderr)
		assert.True(t, strings.HasPrefix(lines[0], "vkzip: encode: warning: "+in+": "), lines[0])
		assert.Contains(t, lines[0], "--dtype bf16")
		assert.Contains(t, lines[0], "stored")
		assert.Equal(t, []string{"stored"}, inspectFormats(t, dir, name+".plain.vkz"))
	}
	// inputOptions is the one rule both verbs use: the same options for the same flags.
	o, err := inputOptions("auto", "BF16")
	require.NoError(t, err)
	f, err := tensorfile.Parse(i2, o)
	require.NoError(t, err)
	assert.Equal(t, "BF16", f.Tensors[0].DType.String())
}

// formatsOf encodes recs with the library and codec.WithFormat(spec) and returns each tensor's format.
func formatsOf(t *testing.T, recs []codec.Record, spec string) []string {
	t.Helper()
	c, err := codec.New(codec.WithBackend(codec.NewCPUBackend(2)), codec.WithFormat(spec), codec.WithChunkSize(1024))
	require.NoError(t, err)
	defer c.Close()
	p, err := c.Encode(context.Background(), nil, recs, true)
	require.NoError(t, err, spec)
	info, err := codec.Inspect(p)
	require.NoError(t, err)
	var out []string
	for _, r := range info.Containers[0].Records {
		if r.Kind == "tensor" {
			out = append(out, r.Format)
		}
	}
	return out
}

// TestFormatRuleCLIAndLibrary: --format and codec.WithFormat give every tensor of a mixed file the same format
// for the same list: the first listed format that codes it, else stored (so "tbe3" stores the F16 tensor in
// both). A list that leaves coded dtypes stored gets one warning line, unless it ends in stored.
func TestFormatRuleCLIAndLibrary(t *testing.T) {
	dir := t.TempDir()
	mixed := mixedSafetensors(t) // BF16, F16, F32, F8_E4M3, F8_E5M2, I32, empty F16
	in := write(t, filepath.Join(dir, "mixed.safetensors"), mixed)
	f, err := tensorfile.Parse(mixed, tensorfile.OpenOptions{})
	require.NoError(t, err)
	recs := fileRecords(f)
	for _, tc := range []struct {
		spec string
		want []string
		warn bool
	}{
		{"", []string{"splitzip4", "xw3", "xw3", "xw3", "xw3", "stored", "stored"}, false},
		{"tbe3", []string{"tbe3", "stored", "stored", "stored", "stored", "stored", "stored"}, true},
		{"xw4", []string{"stored", "xw4", "xw4", "stored", "xw4", "stored", "stored"}, true},
		{"tbe3,xw3", []string{"tbe3", "xw3", "xw3", "xw3", "xw3", "stored", "stored"}, false},
		{"xw2,stored", []string{"stored", "xw2", "xw2", "xw2", "xw2", "stored", "stored"}, false},
		{"zf12,xw4,xw2", []string{"zf12", "xw4", "xw4", "xw2", "xw4", "stored", "stored"}, false},
	} {
		args := []string{"encode", "-f", "-q", "--backend", "cpu", "--chunk", "1024", "-o", "m.vkz"}
		if tc.spec != "" {
			args = append(args, "--format", tc.spec)
		}
		r := vkz(t, dir, nil, append(args, in)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		cli := inspectFormats(t, dir, "m.vkz")
		assert.Equal(t, tc.want, cli, "--format %q", tc.spec)
		assert.Equal(t, tc.want, formatsOf(t, recs, tc.spec), "codec.WithFormat(%q)", tc.spec)
		if tc.warn {
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), "%q: %s", tc.spec, r.stderr)
			assert.Contains(t, r.stderr, "warning: "+in+": tensors stored uncoded")
		} else {
			assert.Empty(t, r.stderr, tc.spec)
		}
	}
}

// TestPreferModes: speed codes every tensor in its dtype's fastest format (never stored), ratio BF16 in huff, and
// balanced (auto) is at least as small as every fixed-width format of each dtype; --format and --prefer exclude
// each other.
func TestPreferModes(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "mixed.safetensors"), mixedSafetensors(t))
	size := func(args ...string) int {
		t.Helper()
		r := vkz(t, dir, nil, append(append([]string{"encode", "-f", "-q", "--backend", "cpu", "-o", "p.vkz"}, args...), in)...)
		require.Equal(t, exitOK, r.code, "%v: %s", args, r.stderr)
		assert.Empty(t, r.stderr, args)
		return len(read(t, filepath.Join(dir, "p.vkz")))
	}
	// Tensors in data order: BF16, F16, F32, F8_E4M3, F8_E5M2, I32, empty F16.
	size("--prefer", "speed")
	assert.Equal(t, []string{"splitzip4", "xw4", "xw4", "xw3", "xw4", "stored", "stored"}, inspectFormats(t, dir, "p.vkz"))
	size("--prefer", "ratio")
	got := inspectFormats(t, dir, "p.vkz")
	assert.Equal(t, "huff", got[0])
	assert.Equal(t, []string{"stored", "stored"}, got[5:])
	balanced := size("--prefer", "balanced")
	got = inspectFormats(t, dir, "p.vkz")
	assert.Contains(t, []string{"splitzip4", "zf12", "tbe3", "auto"}, got[0])
	for _, g := range got[1:5] {
		assert.Contains(t, []string{"xw2", "xw3", "xw4", "auto"}, g)
	}
	for _, bf := range []string{"splitzip4", "zf12", "tbe3"} {
		for _, fp := range []string{"xw2,xw3", "xw3", "xw4,xw3"} {
			spec := bf + "," + fp
			s := size("--format", spec)
			assert.LessOrEqual(t, balanced, s, "balanced against --format %s", spec)
		}
	}
	// ratio is the smallest of all on BF16: the BF16 sample alone.
	kv := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	sizes := map[string]int{}
	for _, m := range []string{"speed", "balanced", "ratio"} {
		r := vkz(t, dir, nil, "encode", "-f", "-q", "--backend", "cpu", "--prefer", m, "-o", m+".vkz", kv)
		require.Equal(t, exitOK, r.code, r.stderr)
		sizes[m] = len(read(t, filepath.Join(dir, m+".vkz")))
	}
	assert.Less(t, sizes["ratio"], sizes["balanced"])
	assert.LessOrEqual(t, sizes["balanced"], sizes["speed"])
	assert.Equal(t, []string{"splitzip4", "splitzip4"}, inspectFormats(t, dir, "speed.vkz")[:2])

	r := vkz(t, dir, nil, "encode", "--prefer", "balanced", "--format", "tbe3", in)
	assert.Equal(t, exitUsage, r.code)
	r = vkz(t, dir, nil, "encode", "--prefer", "fast", in)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "speed, balanced or ratio")
}

// TestPreferDocumented: encode --help and vkzip formats describe each mode, FP8/FP16/FP32 included, from the one
// table the encoder uses.
func TestPreferDocumented(t *testing.T) {
	dir := t.TempDir()
	help := vkz(t, dir, nil, "encode", "--help").stdout
	list := vkz(t, dir, nil, "formats").stdout
	for _, m := range preferModes {
		for _, out := range []string{help, list} {
			assert.Contains(t, out, m.name)
			assert.Contains(t, out, "--format "+m.formats)
		}
		assert.Contains(t, m.about, "F8", m.name)
	}
	assert.Contains(t, help, "codec.WithFormat follows the")
	r := vkz(t, dir, nil, "formats", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var fl []formatOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &fl))
	by := map[string]formatOut{}
	for _, f := range fl {
		by[f.Name] = f
	}
	assert.Equal(t, map[string][]string{"speed": {"BF16"}}, by["splitzip4"].Prefer)
	assert.Equal(t, map[string][]string{"ratio": {"BF16"}}, by["huff"].Prefer)
	assert.Equal(t, []string{"F8_E5M2", "F16", "F32"}, by["xw4"].Prefer["speed"])
	assert.Equal(t, []string{"F8_E4M3"}, by["xw3"].Prefer["speed"])
	assert.True(t, slices.Contains(by["auto"].Prefer["balanced"], "BF16"))
	assert.NotContains(t, by["auto"].Prefer["ratio"], "BF16")
	assert.Contains(t, by["auto"].H100, "every candidate")
}
