package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/synth"
	"github.com/vkzip/vkzip/tensorfile"
	"github.com/vkzip/vkzip/vk/vktest"
)

// Files of the other float dtypes through the CLI: derived from the embedded BF16 sample by cmd/fpderive, encoded
// and decoded on both backends, byte for byte, with the Vulkan payload identical to the CPU one.

// needVulkan skips (or, with VKZIP_REQUIRE_VULKAN=1, fails) when this machine has no Vulkan device.
func needVulkan(t *testing.T) {
	t.Helper()
	b, err := vkcodec.Open(vkcodec.Options{})
	if err != nil {
		vktest.Unavailable(t, "vulkan backend: %v", err)
	}
	b.Close()
}

// fpderive builds cmd/fpderive once per test binary.
func fpderive(t *testing.T) string {
	t.Helper()
	p := filepath.Join(binDir, "fpderive")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no Go toolchain to build cmd/fpderive")
	}
	out, err := exec.Command("go", "build", "-o", p, "../fpderive").CombinedOutput()
	require.NoError(t, err, "building fpderive: %s", out)
	return p
}

// inspectFormats is the format of every tensor record of a payload, in order.
func inspectFormats(t *testing.T, dir, payload string) []string {
	t.Helper()
	r := vkz(t, dir, nil, "inspect", "--json", payload)
	require.Equal(t, exitOK, r.code, r.stderr)
	var info inspectOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &info), r.stdout)
	var out []string
	for _, c := range info.Containers {
		for _, rec := range c.Records {
			if rec.Kind == "tensor" {
				out = append(out, rec.Format)
			}
		}
	}
	return out
}

// roundTripBoth encodes in on the CPU and Vulkan backends with args, checks the payloads are identical, decodes
// each on the other backend and checks the result is the input; it returns the payload and encode's JSON result.
func roundTripBoth(t *testing.T, dir, in string, args ...string) (string, encodeResult) {
	t.Helper()
	base := filepath.Base(in)
	var res encodeResult
	for _, be := range []string{"cpu", "vulkan"} {
		out := fmt.Sprintf("%s.%s.vkz", base, be)
		r := vkz(t, dir, nil, append(append([]string{"encode", "-f", "--json", "--backend", be, "-o", out}, args...), in)...)
		require.Equal(t, exitOK, r.code, "%s %v: %s", be, args, r.stderr)
		if be == "cpu" {
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.stdout)
		}
	}
	cpuP, gpuP := filepath.Join(dir, base+".cpu.vkz"), filepath.Join(dir, base+".vulkan.vkz")
	require.True(t, string(read(t, cpuP)) == string(read(t, gpuP)), "%s %v: Vulkan payload differs from the CPU's", base, args)
	for _, x := range []struct{ be, payload string }{{"vulkan", cpuP}, {"cpu", gpuP}} {
		out := filepath.Join(dir, base+".dec."+x.be)
		r := vkz(t, dir, nil, "decode", "-f", "-q", "--backend", x.be, "-o", out, x.payload)
		require.Equal(t, exitOK, r.code, r.stderr)
		require.True(t, string(read(t, in)) == string(read(t, out)), "%s %v: decode on %s differs", base, args, x.be)
	}
	return cpuP, res
}

func TestDerivedDTypesRoundTrip(t *testing.T) {
	needVulkan(t)
	dir := t.TempDir()
	fpd := fpderive(t)
	src := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	for _, dt := range []string{"F8_E5M2", "F8_E4M3", "F16", "F32"} {
		in := filepath.Join(dir, "kv-"+dt+".safetensors")
		out, err := exec.Command(fpd, "-to", dt, "-o", in, src).CombinedOutput()
		require.NoError(t, err, "fpderive: %s", out)
		f, err := tensorfile.Open(in, tensorfile.OpenOptions{})
		require.NoError(t, err)
		require.Len(t, f.Tensors, 8)
		require.Equal(t, dt, f.Tensors[0].DType.String())
		f.Close()

		payload, res := roundTripBoth(t, dir, in)
		assert.Equal(t, []string{"xw3", "xw3", "xw3", "xw3", "xw3", "xw3", "xw3", "xw3"}, inspectFormats(t, dir, payload), dt)
		assert.Equal(t, []formatCount{{"xw3", 8}}, res.Formats, dt)
		// Exponent coding gains on KV data in every dtype (FORMAT.md §13.6: 1.13x to 1.30x on the full file).
		assert.Greater(t, res.Ratio, 1.1, dt)
		t.Logf("%s: xw3 ratio %.4f", dt, res.Ratio)

		if dt != "F8_E4M3" {
			payload, _ = roundTripBoth(t, dir, in, "--format", "xw4", "--chunk", "4096")
			assert.Equal(t, "xw4", inspectFormats(t, dir, payload)[0], dt)
		}
		payload, _ = roundTripBoth(t, dir, in, "--format", "xw2", "--no-checksum")
		assert.Equal(t, "xw2", inspectFormats(t, dir, payload)[0], dt)
	}
}

func TestTBE3RoundTrip(t *testing.T) {
	needVulkan(t)
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	payload, res := roundTripBoth(t, dir, in, "--format", "tbe3")
	assert.Equal(t, []formatCount{{"tbe3", 8}}, res.Formats)
	assert.Equal(t, "tbe3", inspectFormats(t, dir, payload)[0])
	// TBE-3 beats SplitZip-4 on this KV data (tbe3.md: 1.4266x against 1.334x for the bodies of the full file).
	r := vkz(t, dir, nil, "encode", "--json", "--backend", "cpu", "-o", "sz4.vkz", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	var sz4 encodeResult
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sz4), r.stdout)
	assert.Greater(t, res.Ratio, sz4.Ratio)
	assert.Greater(t, res.Ratio, 1.4)
	t.Logf("tbe3 %.4f, splitzip4 %.4f", res.Ratio, sz4.Ratio)
}

// mixedSafetensors builds a safetensors file with tensors of several dtypes made from the sample's BF16 tensors.
func mixedSafetensors(t *testing.T) []byte {
	t.Helper()
	f, err := tensorfile.Parse(kvSample, tensorfile.OpenOptions{})
	require.NoError(t, err)
	type tensor struct {
		name, dtype string
		shape       []uint64
		data        []byte
	}
	var ts []tensor
	for i, to := range []layout.DType{layout.DTypeBF16, layout.DTypeF16, layout.DTypeF32, layout.DTypeF8E4M3,
		layout.DTypeF8E5M2} {
		st := f.Tensors[i]
		data := st.Data
		if to != layout.DTypeBF16 {
			data, err = synth.ConvertBF16(nil, st.Data, to)
			require.NoError(t, err)
		}
		ts = append(ts, tensor{fmt.Sprintf("t%d", i), to.String(), st.Shape, data})
	}
	ts = append(ts, tensor{"ints", "I32", []uint64{3}, []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}},
		tensor{"empty", "F16", []uint64{0, 8}, nil})
	hdr := map[string]any{}
	var data []byte
	for _, x := range ts {
		hdr[x.name] = map[string]any{"dtype": x.dtype, "shape": x.shape, "data_offsets": []int{len(data), len(data) + len(x.data)}}
		data = append(data, x.data...)
	}
	h, err := json.Marshal(hdr)
	require.NoError(t, err)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), data...)
}

// TestFormatFlag checks the format each tensor of a mixed file gets for --format lists: the first named format
// that codes it, else stored (the rule codec.WithFormat follows too).
func TestFormatFlag(t *testing.T) {
	needVulkan(t)
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "mixed.safetensors"), mixedSafetensors(t))
	// Tensors in data order: BF16, F16, F32, F8_E4M3, F8_E5M2, I32, empty F16.
	for _, tc := range []struct {
		flag string
		want []string
	}{
		{"", []string{"splitzip4", "xw3", "xw3", "xw3", "xw3", "stored", "stored"}},
		{"tbe3", []string{"tbe3", "stored", "stored", "stored", "stored", "stored", "stored"}},
		{"xw4", []string{"stored", "xw4", "xw4", "stored", "xw4", "stored", "stored"}},
		{"tbe3,xw4,xw3", []string{"tbe3", "xw4", "xw4", "xw3", "xw4", "stored", "stored"}},
		{"tbe3,xw2", []string{"tbe3", "xw2", "xw2", "xw2", "xw2", "stored", "stored"}},
		{"xw2,stored", []string{"stored", "xw2", "xw2", "xw2", "xw2", "stored", "stored"}},
		{"stored", []string{"stored", "stored", "stored", "stored", "stored", "stored", "stored"}},
	} {
		var args []string
		if tc.flag != "" {
			args = []string{"--format", tc.flag}
		}
		payload, res := roundTripBoth(t, dir, in, append(args, "--chunk", "1024")...)
		got := inspectFormats(t, dir, payload)
		require.Equal(t, tc.want, got, "--format %q", tc.flag)
		var n int
		for _, fc := range res.Formats {
			n += fc.Tensors
		}
		require.Equal(t, 7, n, tc.flag)
	}
	r := vkz(t, dir, nil, "encode", "--format", "tbe3,zf99", in)
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "zf99")
}

// TestFormatsVerbNewFormats checks the rows of tbe3 and the xw formats in `vkzip formats`.
func TestFormatsVerbNewFormats(t *testing.T) {
	dir := t.TempDir()
	r := vkz(t, dir, nil, "formats", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var list []formatOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list), r.stdout)
	by := map[string]formatOut{}
	for _, f := range list {
		by[f.Name] = f
	}
	assert.Equal(t, uint8(3), by["tbe3"].ID)
	assert.Equal(t, []string{"BF16"}, by["tbe3"].DTypes)
	assert.False(t, by["tbe3"].Codebook)
	assert.Empty(t, by["tbe3"].Default)
	assert.Equal(t, []string{"BF16"}, by["splitzip4"].Default)
	all := []string{"F8_E5M2", "F8_E4M3", "F16", "F32"}
	assert.Equal(t, all, by["xw3"].DTypes)
	assert.Equal(t, all, by["xw3"].Default)
	assert.Equal(t, all, by["xw2"].DTypes)
	assert.Equal(t, []string{"F8_E5M2", "F16", "F32"}, by["xw4"].DTypes)
	for _, n := range []string{"tbe3", "xw2", "xw3", "xw4"} {
		assert.Equal(t, []string{"cpu", "vulkan"}, by[n].Backends, n)
		assert.True(t, strings.Contains(by[n].About, "exponent"), n)
	}
}
