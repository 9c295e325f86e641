package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
)

// The tests run the real binary as a subprocess, so that a panic or a Go stack trace cannot pass for an error
// exit, and they use only the embedded samples and files they write themselves.

var binDir, bin string

func TestMain(m *testing.M) {
	var err error
	binDir, err = os.MkdirTemp("", "vkzip-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(binDir, "vkzip")
	// Where there is no Go toolchain (the GPU machine), VKZIP_TEST_BIN names a prebuilt binary of this package.
	if pre := os.Getenv("VKZIP_TEST_BIN"); pre != "" {
		bin = pre
	} else if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building vkzip: %v\n%s", err, out)
		os.RemoveAll(binDir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// vkz runs the binary in dir with stdin (nil for none) and checks what must hold for every run: no panic, no
// stack trace, no internal-error exit.
func vkz(t *testing.T, dir string, stdin []byte, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running vkzip %v: %v", args, err)
	}
	r := result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
	assert.NotEqual(t, exitInternal, r.code, "vkzip %v: internal error: %s", args, r.stderr)
	for _, bad := range []string{"goroutine ", "panic", "runtime error"} {
		assert.NotContains(t, r.stderr, bad, "vkzip %v", args)
	}
	return r
}

// requireFailure checks a failed run: exit 1 and exactly one line "vkzip: VERB: ..." on stderr.
func requireFailure(t *testing.T, r result, verb string) {
	t.Helper()
	require.Equal(t, exitFailure, r.code, "stderr: %s", r.stderr)
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	require.Len(t, lines, 1, "stderr: %q", r.stderr)
	require.True(t, strings.HasPrefix(lines[0], "vkzip: "+verb+": "), "stderr: %q", r.stderr)
}

func write(t *testing.T, path string, data []byte) string {
	t.Helper()
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// sampleData is the BF16 data section of the embedded sample, for raw and npy inputs.
func sampleData() []byte {
	n := binary.LittleEndian.Uint64(kvSample)
	return kvSample[8+n:]
}

// npyFile builds a version 1.0 .npy file of little-endian uint16 values (read as BF16 with --dtype bf16).
func npyFile(data []byte) []byte {
	dict := fmt.Sprintf("{'descr': '<u2', 'fortran_order': False, 'shape': (%d,), }", len(data)/2)
	hlen := len(dict) + 1
	hlen += (64 - (10+hlen)%64) % 64
	h := dict + strings.Repeat(" ", hlen-len(dict)-1) + "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), byte(len(h)>>8))
	return append(append(b, h...), data...)
}

func TestHelp(t *testing.T) {
	dir := t.TempDir()
	for _, v := range verbs {
		for _, h := range []string{"--help", "-h", "-help"} {
			r := vkz(t, dir, nil, v.name, h)
			require.Equal(t, exitOK, r.code, "%s %s: %s", v.name, h, r.stderr)
			assert.Contains(t, r.stdout, "Usage: vkzip "+v.name)
			assert.Contains(t, r.stdout, "Examples:")
		}
		r := vkz(t, dir, nil, "help", v.name)
		require.Equal(t, exitOK, r.code)
		assert.Contains(t, r.stdout, "Usage: vkzip "+v.name)
	}
	r := vkz(t, dir, nil, "help")
	require.Equal(t, exitOK, r.code)
	for _, v := range verbs {
		assert.Contains(t, r.stdout, v.name)
	}
	r = vkz(t, dir, nil)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "encode")
	assert.Empty(t, listDir(t, dir))
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	for _, args := range [][]string{
		{"frobnicate"},
		{"encode"},
		{"encode", "--bogus", in},
		{"encode", in, in},
		{"encode", "--chunk", "1000", in},
		{"encode", "--format", "zf99", in},
		{"encode", "--dtype", "nope", in},
		{"decode", in}, // no .vkz suffix and no -o
		{"calibrate"},
		{"calibrate", "--dtype", "f32", in},
		{"demo", "--iters", "0"},
		{"inspect"},
		{"bench", "--size", "3"},
		{"bench", "--size", "1MiB", "--chunk", "1000"},
		{"bench", "--blocks", "4", "--block-size", "1001"},
	} {
		r := vkz(t, dir, nil, args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "%v: %q", args, r.stderr)
	}
	assert.Equal(t, []string{"kv.safetensors"}, listDir(t, dir))
}

func TestRoundTripSafetensors(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	cal := write(t, filepath.Join(dir, "calib.safetensors"), kvCalibSample)

	r := vkz(t, dir, nil, "calibrate", "--json", "-o", "cb.json", cal)
	require.Equal(t, exitOK, r.code, r.stderr)
	var cr struct {
		Values     uint64  `json:"values"`
		Codebook   []int   `json:"codebook"`
		EscapeRate float64 `json:"escape_rate"`
		Output     string  `json:"output"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &cr), r.stdout)
	assert.Equal(t, uint64(8*16384), cr.Values)
	assert.Len(t, cr.Codebook, 16)
	assert.Less(t, cr.EscapeRate, 0.01)
	assert.FileExists(t, filepath.Join(dir, "cb.json"))

	r = vkz(t, dir, nil, "calibrate", cal)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "escape rate")
	assert.Contains(t, r.stdout, "not saved")

	// Default output name, flags after the argument.
	r = vkz(t, dir, nil, "encode", in, "--codebook", "cb.json")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "ratio")
	payload := read(t, in+".vkz")
	assert.Greater(t, float64(len(kvSample))/float64(len(payload)), 1.3)

	r = vkz(t, dir, nil, "decode", "-o", "out.safetensors", "kv.safetensors.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, kvSample, read(t, filepath.Join(dir, "out.safetensors")))

	// Default decode output: the input without .vkz.
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	write(t, filepath.Join(sub, "x.safetensors.vkz"), payload)
	r = vkz(t, sub, nil, "decode", "--quiet", "x.safetensors.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	assert.Equal(t, kvSample, read(t, filepath.Join(sub, "x.safetensors")))

	// Calibrated on the input itself, with --json.
	r = vkz(t, dir, nil, "encode", "--json", "-o", "self.vkz", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	var er encodeResult
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &er), r.stdout)
	assert.Equal(t, int64(len(kvSample)), er.RawBytes)
	assert.Equal(t, int64(len(read(t, filepath.Join(dir, "self.vkz")))), er.PayloadBytes)
	assert.Greater(t, er.Ratio, 1.3)
	// auto picks a GPU where one works and the CPU otherwise (never a CPU Vulkan implementation).
	assert.Contains(t, []string{"cpu", "vulkan"}, er.Backend)
	assert.NotEmpty(t, er.Device)
	require.NotNil(t, er.EscapeRate, "splitzip4 escapes: its rate applies")
	assert.Less(t, *er.EscapeRate, 0.01)
	r = vkz(t, dir, nil, "decode", "-o", "self.safetensors", "self.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, kvSample, read(t, filepath.Join(dir, "self.safetensors")))

	// No temporary files left behind.
	assert.Equal(t, []string{"calib.safetensors", "cb.json", "kv.safetensors", "kv.safetensors.vkz",
		"out.safetensors", "self.safetensors", "self.vkz", "sub"}, listDir(t, dir))
}

func TestRoundTripRaw(t *testing.T) {
	dir := t.TempDir()
	raw := sampleData()
	in := write(t, filepath.Join(dir, "cache.bin"), raw)

	r := vkz(t, dir, nil, "encode", in)
	requireFailure(t, r, "encode")
	assert.Contains(t, r.stderr, "dtype")

	r = vkz(t, dir, nil, "calibrate", "-o", "cb.json", in) // raw inputs are BF16 for calibrate
	require.Equal(t, exitOK, r.code, r.stderr)
	r = vkz(t, dir, nil, "encode", "--dtype", "bf16", "--codebook", "cb.json", "--chunk", "1024", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	payload := read(t, in+".vkz")
	assert.Greater(t, float64(len(raw))/float64(len(payload)), 1.3)
	r = vkz(t, dir, nil, "decode", "-o", "cache.out", in+".vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, raw, read(t, filepath.Join(dir, "cache.out")))

	r = vkz(t, dir, nil, "inspect", "--json", in+".vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	var info inspectOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &info))
	require.Len(t, info.Containers[0].Records, 1)
	assert.Equal(t, uint64(1024), info.Containers[0].Records[0].Chunk)
	assert.Equal(t, uint64(len(raw)/2/1024), info.Containers[0].Records[0].Chunks)
}

func TestRoundTripNPY(t *testing.T) {
	dir := t.TempDir()
	npy := npyFile(sampleData())
	in := write(t, filepath.Join(dir, "kv.npy"), npy)

	r := vkz(t, dir, nil, "encode", "--dtype", "bf16", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	r = vkz(t, dir, nil, "inspect", "--json", "kv.npy.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	var info inspectOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &info))
	recs := info.Containers[0].Records
	require.Len(t, recs, 2)
	assert.Equal(t, "blob", recs[0].Kind)
	assert.Equal(t, "BF16", recs[1].DType)
	assert.Equal(t, "splitzip4", recs[1].Format)
	assert.Greater(t, info.Ratio, 1.3)
	r = vkz(t, dir, nil, "decode", "-o", "out.npy", "kv.npy.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, npy, read(t, filepath.Join(dir, "out.npy")))

	// Without --dtype the array is uint16: stored, and still restored exactly.
	r = vkz(t, dir, nil, "encode", "-o", "u16.vkz", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	r = vkz(t, dir, nil, "decode", "-o", "u16.npy", "u16.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, npy, read(t, filepath.Join(dir, "u16.npy")))
}

func TestStdio(t *testing.T) {
	dir := t.TempDir()
	r := vkz(t, dir, kvSample, "encode", "-")
	require.Equal(t, exitOK, r.code, r.stderr)
	payload := []byte(r.stdout)
	assert.Greater(t, float64(len(kvSample))/float64(len(payload)), 1.3)

	r = vkz(t, dir, payload, "decode", "-")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, kvSample, []byte(r.stdout))

	// Explicit "-" outputs, --json with the payload on stdout: the report goes to stderr.
	r = vkz(t, dir, kvSample, "encode", "--json", "-o", "-", "-")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, payload, []byte(r.stdout))
	assert.Contains(t, r.stderr, `"payload_bytes"`)
	write(t, filepath.Join(dir, "p.vkz"), payload)
	r = vkz(t, dir, nil, "decode", "-o", "-", "p.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, kvSample, []byte(r.stdout))

	r = vkz(t, dir, kvCalibSample, "calibrate", "-o", "-", "-")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"vkzip-codebook"`)
	assert.Contains(t, r.stderr, "escape rate")
	assert.Equal(t, []string{"p.vkz"}, listDir(t, dir))
}

func TestNoChecksum(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	r := vkz(t, dir, nil, "encode", "--no-checksum", "-o", "nc.vkz", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "undetected")
	r = vkz(t, dir, nil, "inspect", "--json", "nc.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	var info inspectOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &info))
	assert.False(t, info.Containers[0].Checksums)
	r = vkz(t, dir, nil, "decode", "-q", "-o", "out.safetensors", "nc.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "no checksums")
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"))
	assert.Equal(t, kvSample, read(t, filepath.Join(dir, "out.safetensors")))
}

func TestInspect(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	r := vkz(t, dir, nil, "encode", "-q", in)
	require.Equal(t, exitOK, r.code, r.stderr)

	r = vkz(t, dir, nil, "inspect", "--json", "--chunks", "kv.safetensors.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	var info inspectOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &info), r.stdout)
	assert.Equal(t, uint64(len(kvSample)), info.RawBytes)
	require.Len(t, info.Containers, 1)
	c := info.Containers[0]
	assert.True(t, c.Checksums)
	assert.True(t, c.Final)
	require.Len(t, c.Codebooks, 1)
	require.Len(t, c.Records, 9)
	assert.Equal(t, "blob", c.Records[0].Kind)
	var names []string
	for _, rec := range c.Records[1:] {
		names = append(names, rec.Name)
		assert.Equal(t, "BF16", rec.DType)
		assert.Equal(t, []uint64{512, 4, 8}, rec.Shape)
		assert.Equal(t, "splitzip4", rec.Format)
		require.Len(t, rec.ChunkList, 1)
		assert.Equal(t, uint64(16384), rec.ChunkList[0].Values)
		assert.Equal(t, rec.Escapes, rec.ChunkList[0].Escapes)
	}
	assert.Equal(t, []string{"seq0.layer0.k", "seq0.layer0.v", "seq0.layer1.k", "seq0.layer1.v",
		"seq0.layer2.k", "seq0.layer2.v", "seq0.layer3.k", "seq0.layer3.v"}, names)

	r = vkz(t, dir, nil, "inspect", "kv.safetensors.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "seq0.layer3.v")
	assert.Contains(t, r.stdout, "codebook 0:")

	r = vkz(t, dir, nil, "inspect", "kv.safetensors")
	requireFailure(t, r, "inspect")
	assert.Contains(t, r.stderr, "not a vkzip payload")
}

// TestBadPayloads feeds decode damaged and foreign inputs: each must fail with exit 1, one line on stderr, and no
// output at all, to a file or to stdout.
func TestBadPayloads(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	r := vkz(t, dir, nil, "encode", "-q", "-o", "good.vkz", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	good := read(t, filepath.Join(dir, "good.vkz"))
	require.NoError(t, os.Remove(in))

	flip := func(off int) []byte {
		b := bytes.Clone(good)
		b[off] ^= 0x10
		return b
	}
	cases := map[string]struct {
		data []byte
		want string
	}{
		"truncated":       {good[:len(good)/2], "truncated"},
		"truncated-meta":  {good[:100], "truncated"},
		"truncated-tail":  {good[:len(good)-1], "truncated"},
		"bitflip-body":    {flip(len(good) - 5000), "checksum"},
		"bitflip-meta":    {flip(60), "checksum"},
		"bitflip-magic":   {flip(1), "not a vkzip payload"},
		"empty":           {nil, "truncated"},
		"not-vkzip":       {kvSample, "not a vkzip payload"},
		"text":            {[]byte("hello, world\n"), "not a vkzip payload"},
		"trailing-bytes":  {append(bytes.Clone(good), 0), "corrupt"},
		"two-containers":  {append(bytes.Clone(good), good...), "corrupt"},
		"truncated-12345": {good[:12345], "truncated"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := t.TempDir()
			write(t, filepath.Join(d, "bad.vkz"), tc.data)

			r := vkz(t, d, nil, "decode", "-o", "out", "bad.vkz")
			requireFailure(t, r, "decode")
			assert.Contains(t, r.stderr, tc.want)
			assert.Equal(t, []string{"bad.vkz"}, listDir(t, d), "output or temporary file left behind")

			r = vkz(t, d, nil, "decode", "bad.vkz") // default output name "bad"
			requireFailure(t, r, "decode")
			assert.Equal(t, []string{"bad.vkz"}, listDir(t, d))

			r = vkz(t, d, nil, "decode", "-o", "-", "bad.vkz")
			requireFailure(t, r, "decode")
			assert.Empty(t, r.stdout, "bytes reached stdout before verification")

			r = vkz(t, d, tc.data, "decode", "-")
			requireFailure(t, r, "decode")
			assert.Empty(t, r.stdout)
			assert.Equal(t, []string{"bad.vkz"}, listDir(t, d))
		})
	}
}

func TestDecodeRefusesToOverwriteInput(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	r := vkz(t, dir, nil, "encode", "-q", "-o", "kv.vkz", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	payload := read(t, filepath.Join(dir, "kv.vkz"))

	r = vkz(t, dir, nil, "decode", "-o", "kv.vkz", "kv.vkz")
	requireFailure(t, r, "decode")
	assert.Contains(t, r.stderr, "overwrite")
	r = vkz(t, dir, nil, "decode", "-o", "./kv.vkz", filepath.Join(dir, "kv.vkz"))
	requireFailure(t, r, "decode")
	require.NoError(t, os.Symlink("kv.vkz", filepath.Join(dir, "link")))
	r = vkz(t, dir, nil, "decode", "-o", "link", "kv.vkz")
	requireFailure(t, r, "decode")
	assert.Equal(t, payload, read(t, filepath.Join(dir, "kv.vkz")))

	r = vkz(t, dir, nil, "encode", "-o", "kv.safetensors", "kv.safetensors")
	requireFailure(t, r, "encode")
	assert.Equal(t, kvSample, read(t, in))
}

func TestEncodeInvalidInput(t *testing.T) {
	dir := t.TempDir()
	hdr := []byte(`{"t":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}}`)
	bad := map[string][]byte{
		"garbage.safetensors":   []byte("this is not a safetensors file"),
		"empty.safetensors":     nil,
		"short.safetensors":     append(binary.LittleEndian.AppendUint64(nil, uint64(len(hdr))), append(hdr, 1, 2, 3)...),
		"overlong.safetensors":  binary.LittleEndian.AppendUint64(nil, 1<<40),
		"badjson.safetensors":   append(binary.LittleEndian.AppendUint64(nil, 5), []byte("{\"a\":")...),
		"truncated.safetensors": kvSample[:len(kvSample)-3],
		"broken.npy":            []byte("\x93NUMPY\x01\x00\xff\xffgarbage"),
	}
	for name, data := range bad {
		t.Run(name, func(t *testing.T) {
			d := t.TempDir()
			write(t, filepath.Join(d, name), data)
			r := vkz(t, d, nil, "encode", name)
			requireFailure(t, r, "encode")
			assert.Contains(t, r.stderr, name)
			assert.Equal(t, []string{name}, listDir(t, d))

			r = vkz(t, d, nil, "calibrate", name)
			requireFailure(t, r, "calibrate")
		})
	}
	r := vkz(t, dir, nil, "encode", "missing.safetensors")
	requireFailure(t, r, "encode")
	r = vkz(t, dir, nil, "encode", "--codebook", "missing.json", "missing.safetensors")
	requireFailure(t, r, "encode")
	write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	write(t, filepath.Join(dir, "cb.json"), []byte(`{"format":"vkzip-codebook","version":1,"dtype":"BF16","exponents":[1,1]}`))
	r = vkz(t, dir, nil, "encode", "--codebook", "cb.json", "kv.safetensors")
	requireFailure(t, r, "encode")
	assert.Contains(t, r.stderr, "codebook")
	assert.Equal(t, []string{"cb.json", "kv.safetensors"}, listDir(t, dir))
}

func TestVersion(t *testing.T) {
	dir := t.TempDir()
	r := vkz(t, dir, nil, "version", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var vi versionInfo
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &vi), r.stdout)
	assert.NotEmpty(t, vi.Version)
	assert.True(t, strings.HasPrefix(vi.Go, "go"), vi.Go)
	assert.Contains(t, vi.Backends, "cpu")
	r = vkz(t, dir, nil, "version")
	require.Equal(t, exitOK, r.code)
	assert.True(t, strings.HasPrefix(r.stdout, "vkzip "), r.stdout)
	r = vkz(t, dir, nil, "--version")
	require.Equal(t, exitOK, r.code)

	// The link-time override needs a Go toolchain (absent on the GPU machine).
	if _, err := exec.LookPath("go"); testing.Short() || err != nil {
		return
	}
	b2 := filepath.Join(binDir, "vkzip-versioned")
	out, err := exec.Command("go", "build", "-ldflags", "-X main.version=v1.2.3", "-o", b2, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(b2, "version", "--json").Output()
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(out, &vi))
	assert.Equal(t, "v1.2.3", vi.Version)
}

func TestDemo(t *testing.T) {
	r := vkz(t, t.TempDir(), nil, "demo", "--json", "--backend", "cpu")
	require.Equal(t, exitOK, r.code, r.stderr)
	var res demoResult
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.stdout)
	require.Len(t, res.Backends, 1)
	b := res.Backends[0]
	assert.Equal(t, "cpu", b.Backend)
	assert.Empty(t, b.Skipped)
	assert.True(t, b.BitExact)
	assert.Greater(t, b.Ratio, 1.3)
	assert.Greater(t, b.EncodeGBps, 0.0)
	assert.Greater(t, b.DecodeGBps, 0.0)
	assert.Equal(t, len(kvSample), res.RawBytes)
	assert.Len(t, res.Codebook, 16)

	r = vkz(t, t.TempDir(), nil, "demo", "--iters", "2")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "cpu")
	assert.Contains(t, r.stdout, "yes")

	r = vkz(t, t.TempDir(), nil, "demo", "--backend", "no-such-backend")
	requireFailure(t, r, "demo")
}

func TestDevices(t *testing.T) {
	r := vkz(t, t.TempDir(), nil, "devices", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var out devicesOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	assert.Contains(t, out.Backends, "cpu")
	for _, d := range out.Vulkan {
		if strings.Contains(d.Name, "llvmpipe") {
			assert.True(t, d.ShaderInt64, "lavapipe has 64-bit integers in kernels")
			assert.True(t, d.ShaderInt16, "lavapipe has 16-bit integers in kernels")
		}
	}
	r = vkz(t, t.TempDir(), nil, "devices")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "cpu")
}

func TestParseArgs(t *testing.T) {
	v := &verb{name: "x"}
	for _, tc := range []struct {
		args []string
		o    string
		q    bool
		pos  []string
	}{
		{[]string{"a"}, "", false, []string{"a"}},
		{[]string{"-o", "f", "a"}, "f", false, []string{"a"}},
		{[]string{"a", "--o", "f", "-q"}, "f", true, []string{"a"}},
		{[]string{"-", "-o", "-"}, "-", false, []string{"-"}},
		{[]string{"a", "--", "-q", "b"}, "", false, []string{"a", "-q", "b"}},
	} {
		fs := newFlags(v)
		o := fs.String("o", "", "")
		q := fs.Bool("q", false, "")
		pos, err := parseArgs(v, fs, tc.args)
		require.NoError(t, err, "%v", tc.args)
		assert.Equal(t, tc.o, *o, "%v", tc.args)
		assert.Equal(t, tc.q, *q, "%v", tc.args)
		assert.Equal(t, tc.pos, pos, "%v", tc.args)
	}
}

func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, label: "encode", total: 200e6}
	p.add(50e6)
	assert.Contains(t, buf.String(), " 25%")
	p.finish()
	assert.Contains(t, buf.String(), "100%")
	assert.True(t, strings.HasSuffix(buf.String(), "\n"))
	var none *progress // no bar: every method is a no-op
	none.add(1)
	none.finish()
	none.abort()
}

func TestInBatches(t *testing.T) {
	sizes := []int{10 << 20, 50 << 20, 10 << 20, 100 << 20, 1 << 20}
	var got [][2]int
	var buf bytes.Buffer
	p := &progress{w: &buf, total: 171 << 20}
	err := inBatches(len(sizes), func(i int) int { return sizes[i] }, p, func(i, j int) error {
		got = append(got, [2]int{i, j})
		return nil
	})
	require.NoError(t, err)
	// At most progressBatch bytes per call, except a single job larger than that; every job exactly once.
	assert.Equal(t, [][2]int{{0, 2}, {2, 3}, {3, 4}, {4, 5}}, got)
	assert.Equal(t, p.total, p.done)
	assert.NoError(t, inBatches(0, nil, nil, nil))
}

// TestDecodeStream decodes a multi-frame stream written by codec.Writer.
func TestDecodeStream(t *testing.T) {
	dir := t.TempDir()
	c, err := codec.New()
	require.NoError(t, err)
	defer c.Close()
	raw := append(bytes.Clone(sampleData()), 7) // odd length: a trailing byte as a blob
	var buf bytes.Buffer
	w, err := c.NewWriter(context.Background(), &buf, 64<<10)
	require.NoError(t, err)
	_, err = w.Write(raw)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	write(t, filepath.Join(dir, "s.vkz"), buf.Bytes())

	r := vkz(t, dir, nil, "decode", "-q", "s.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, raw, read(t, filepath.Join(dir, "s")))
	r = vkz(t, dir, nil, "inspect", "--json", "s.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	var info inspectOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &info))
	assert.Len(t, info.Containers, 5)

	// Cut after a whole frame: the stream has no final container.
	first := info.Containers[1].Offset
	write(t, filepath.Join(dir, "cut.vkz"), buf.Bytes()[:first])
	r = vkz(t, dir, nil, "decode", "cut.vkz")
	requireFailure(t, r, "decode")
	assert.Contains(t, r.stderr, "truncated")
	assert.NoFileExists(t, filepath.Join(dir, "cut"))
}

// copyParallel copies every byte whatever the sizes and worker counts, fewer bytes than workers included.
func TestCopyParallel(t *testing.T) {
	for _, n := range []int{0, 1, 2, 63, 64, 65, 1000, 1 << 20} {
		for _, w := range []int{0, 1, 2, 3, 16, 128} {
			src := make([]byte, n)
			for i := range src {
				src[i] = byte(i*7 + 1)
			}
			dst := make([]byte, n)
			copyParallel(dst, src, w)
			require.Equal(t, src, dst, "n %d workers %d", n, w)
		}
	}
}

// TestSwappedBodies: a payload whose two equal-length tensor bodies are swapped (each body valid on its own) is
// refused by `vkzip decode` with exit 1, a checksum error and no output left behind: the version 2 seals bind each
// body to its record.
func TestSwappedBodies(t *testing.T) {
	a := bytes.Clone(sampleData()[:8192])
	b := bytes.Clone(a)
	for i := 0; i < len(b); i += 2 {
		b[i] ^= 0x55 // sign and mantissa bits only: the same exponents, so a body of the same length
	}
	c, err := codec.New()
	require.NoError(t, err)
	defer c.Close()
	p, err := c.Encode(context.Background(), nil, []codec.Record{{Name: "a", DType: 1, Data: a},
		{Name: "b", DType: 1, Data: b}}, true)
	require.NoError(t, err)
	ct, err := codec.ParseHeader(p)
	require.NoError(t, err)
	ra, rb := ct.Recs[0], ct.Recs[1]
	require.Equal(t, ra.BodyLen, rb.BodyLen)
	require.NotEqual(t, p[ra.BodyOff:ra.BodyOff+ra.BodyLen], p[rb.BodyOff:rb.BodyOff+rb.BodyLen])
	bad := bytes.Clone(p)
	copy(bad[ra.BodyOff:], p[rb.BodyOff:rb.BodyOff+rb.BodyLen])
	copy(bad[rb.BodyOff:], p[ra.BodyOff:ra.BodyOff+ra.BodyLen])

	d := t.TempDir()
	write(t, filepath.Join(d, "good.vkz"), p)
	r := vkz(t, d, nil, "decode", "-o", "good.raw", "good.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, append(bytes.Clone(a), b...), read(t, filepath.Join(d, "good.raw")))

	write(t, filepath.Join(d, "bad.vkz"), bad)
	r = vkz(t, d, nil, "decode", "-o", "out", "bad.vkz")
	requireFailure(t, r, "decode")
	assert.Contains(t, r.stderr, "checksum")
	assert.Equal(t, []string{"bad.vkz", "good.raw", "good.vkz"}, listDir(t, d), "output left behind")
}
