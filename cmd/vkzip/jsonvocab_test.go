package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/examples/cudavk"
	"github.com/vkzip/vkzip/transfer/gpulink"
)

// oneBench is the single result of a bench --json report (the object {"results": [...]}).
func oneBench(t *testing.T, stdout string) benchOut {
	t.Helper()
	var rep benchReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	require.Len(t, rep.Results, 1, stdout)
	return rep.Results[0]
}

// docKey is one row of docs/JSON.md's key tables: the verbs that print the key, and whether its value is a map
// (whose keys are data, not vocabulary).
type docKey struct {
	verbs map[string]bool // "all": every verb
	isMap bool
}

// jsonDoc parses the key tables of docs/JSON.md: rows "| `key` | type | unit | verbs | meaning |".
func jsonDoc(t *testing.T) map[string]docKey {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "JSON.md"))
	require.NoError(t, err)
	keys := map[string]docKey{}
	row := regexp.MustCompile("^\\|\\s*`([a-z0-9_]+)`\\s*\\|([^|]*)\\|([^|]*)\\|([^|]*)\\|")
	for _, line := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		_, dup := keys[m[1]]
		require.False(t, dup, "docs/JSON.md lists %q twice: one key, one row", m[1])
		k := docKey{verbs: map[string]bool{}, isMap: strings.Contains(m[2], "map")}
		for _, v := range strings.FieldsFunc(m[4], func(r rune) bool { return r == ',' || r == ' ' }) {
			k.verbs[strings.Trim(v, "`")] = true
		}
		require.NotEmpty(t, k.verbs, "docs/JSON.md: %q names no verb", m[1])
		keys[m[1]] = k
	}
	require.Greater(t, len(keys), 50, "the key tables of docs/JSON.md did not parse")
	return keys
}

// jsonKeys decodes every JSON value in out (one or more, concatenated) and returns the object keys at every depth
// with a path for messages, skipping the contents of keys the document marks as maps.
func jsonKeys(t *testing.T, doc map[string]docKey, out string) map[string]string {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(out))
	d.UseNumber()
	keys := map[string]string{}
	var walk func(path string, x any)
	walk = func(path string, x any) {
		switch v := x.(type) {
		case map[string]any:
			for k, e := range v {
				p := path + "." + k
				if _, ok := keys[k]; !ok {
					keys[k] = p
				}
				if doc[k].isMap {
					continue
				}
				walk(p, e)
			}
		case []any:
			for _, e := range v {
				walk(path+"[]", e)
			}
		}
	}
	n := 0
	for {
		var x any
		err := d.Decode(&x)
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "not JSON: %q", out)
		walk("", x)
		n++
	}
	require.Positive(t, n, "no JSON printed")
	return keys
}

// checkDocumented fails for every key of out that docs/JSON.md does not list for verb.
func checkDocumented(t *testing.T, doc map[string]docKey, verb, out string) {
	t.Helper()
	keys := jsonKeys(t, doc, out)
	var names []string
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		d, ok := doc[k]
		if !assert.True(t, ok, "%s --json prints key %q (%s), which docs/JSON.md does not list", verb, k, keys[k]) {
			continue
		}
		assert.True(t, d.verbs[verb] || d.verbs["all"], "%s --json prints %q (%s), but docs/JSON.md does not name %s among its verbs",
			verb, k, keys[k], verb)
	}
}

// TestJSONKeysDocumented runs every verb that has --json on small data (CPU backend, no GPU) and fails when one
// prints a key docs/JSON.md does not list for it.
func TestJSONKeysDocumented(t *testing.T) {
	doc := jsonDoc(t)
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	cal := write(t, filepath.Join(dir, "calib.safetensors"), kvCalibSample)
	ok := func(verb string, args ...string) string {
		t.Helper()
		r := vkz(t, dir, nil, append([]string{verb}, args...)...)
		require.Equal(t, exitOK, r.code, "%s %v: %s", verb, args, r.stderr)
		checkDocumented(t, doc, verb, r.stdout)
		return r.stdout
	}
	ok("encode", "--json", "--backend", "cpu", "-o", "sz4.vkz", in)
	ok("encode", "--json", "--backend", "cpu", "--format", "tbe3", "--verify", "-o", "t.vkz", in)
	ok("encode", "--json", "--backend", "cpu", "--format", "huff", "-o", "h.vkz", in)
	ok("decode", "--json", "--backend", "cpu", "-o", "back.safetensors", "t.vkz")
	ok("test", "--json", "--backend", "cpu", "t.vkz", "h.vkz")
	ok("inspect", "--json", "--chunks", "t.vkz")
	ok("inspect", "--json", "--chunks", "sz4.vkz")
	ok("calibrate", "--json", "-o", "cb.json", cal)
	ok("formats", "--json")
	ok("devices", "--json")
	ok("version", "--json")
	ok("demo", "--json", "--backend", "cpu", "--iters", "1")
	ok("bench", "--json", "--backend", "cpu", "--size", "256KiB", "--iters", "1", "--warmup", "0", "--format",
		"splitzip4,tbe3,huff,xw3")
	ok("transfer-bench", "--json", "--backend", "cpu", "--size", "1MiB", "--frame-size", "256KiB")
	ok("conformance", "--json", "--quiet", "--backend", "cpu", "--format", "zf12", "--lp-widths", "")

	// send and recv, one stream over loopback.
	recv := exec.Command(bin, "recv", "--json", "--listen", "127.0.0.1:0", "-o", "/dev/null", "--timeout", "60s")
	recv.Dir = dir
	var recvOut bytes.Buffer
	recv.Stdout = &recvOut
	stderr, err := recv.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, recv.Start())
	defer recv.Process.Kill()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if a, found := strings.CutPrefix(sc.Text(), "vkzip: recv: listening on "); found {
				addr <- a
			}
		}
		close(addr)
	}()
	var a string
	select {
	case a = <-addr:
	case <-time.After(60 * time.Second):
		t.Fatal("recv did not say where it listens")
	}
	ok("send", "--json", "--connect", a, "--synth", "kvlike", "--size", "1MiB", "--frame-size", "256KiB")
	require.NoError(t, recv.Wait())
	checkDocumented(t, doc, "recv", recvOut.String())

	// A failure under --json: the error object.
	r := vkz(t, dir, nil, "decode", "--json", "missing.vkz")
	require.Equal(t, exitFailure, r.code, r.stderr)
	checkDocumented(t, doc, "decode", r.stdout)
}

// TestJSONVocabulary checks what the keys say: one quantity, one key and one value across verbs.
func TestJSONVocabulary(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	obj := func(args ...string) map[string]any {
		t.Helper()
		r := vkz(t, dir, nil, args...)
		require.Equal(t, exitOK, r.code, "%v: %s", args, r.stderr)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &m), r.stdout)
		return m
	}
	// The escape rate of one tbe3 file: the same number in encode and inspect, and in the table.
	enc := obj("encode", "--json", "--backend", "cpu", "--format", "tbe3", "-o", "t.vkz", in)
	require.Contains(t, enc, "escape_rate")
	rate := enc["escape_rate"].(float64)
	assert.Positive(t, rate, "tbe3 falls back on the KV sample")
	ins := obj("inspect", "--json", "t.vkz")
	assert.Equal(t, rate, ins["escape_rate"], "encode and inspect give the file's escape rate alike")
	assert.Equal(t, enc["escapes"], ins["escapes"])
	assert.Equal(t, enc["raw_bytes"], ins["raw_bytes"])
	assert.Equal(t, enc["payload_bytes"], ins["payload_bytes"])
	rec := ins["containers"].([]any)[0].(map[string]any)["records"].([]any)[1].(map[string]any)
	assert.Contains(t, rec, "escape_rate", "a tbe3 tensor has an escape rate")
	assert.Contains(t, rec, "chunk")
	r := vkz(t, dir, nil, "inspect", "t.vkz")
	require.Equal(t, exitOK, r.code)
	assert.Contains(t, r.stdout, fmt.Sprintf("escape rate %.4f%%", 100*rate), "the table's header gives the same rate")

	dec := obj("decode", "--json", "--backend", "cpu", "-o", "back.safetensors", "t.vkz")
	assert.Equal(t, enc["raw_bytes"], dec["raw_bytes"])
	assert.Equal(t, enc["payload_bytes"], dec["payload_bytes"])
	assert.Contains(t, dec, "decode_gbps")
	tst := obj("test", "--json", "--backend", "cpu", "t.vkz")
	assert.Equal(t, enc["raw_bytes"], tst["raw_bytes"])
	assert.Equal(t, enc["payload_bytes"], tst["payload_bytes"])

	// A format without escapes: no escape rate, never a 0 standing for "does not apply".
	huff := obj("encode", "--json", "--backend", "cpu", "--format", "huff", "-o", "h.vkz", in)
	assert.NotContains(t, huff, "escape_rate")
	assert.NotContains(t, obj("inspect", "--json", "h.vkz"), "escape_rate")

	// bench: one shape, escape rates where they apply.
	b := obj("bench", "--json", "--backend", "cpu", "--size", "256KiB", "--iters", "1", "--warmup", "0",
		"--format", "tbe3,huff")
	res := b["results"].([]any)
	require.Len(t, res, 2)
	assert.Positive(t, res[0].(map[string]any)["escape_rate"], "tbe3's escape rate is measured, not 0")
	assert.NotContains(t, res[1].(map[string]any), "escape_rate", "huff has no escapes")
	one := obj("bench", "--json", "--backend", "cpu", "--size", "256KiB", "--iters", "1", "--warmup", "0")
	require.Len(t, one["results"], 1, "one format: the same object with one result")
	for _, k := range []string{"encode_gbps", "decode_gbps", "copy_gbps", "ceiling_gbps", "encode_of_ceiling",
		"decode_of_ceiling", "ratio", "bit_exact", "raw_bytes", "chunk"} {
		assert.Contains(t, one["results"].([]any)[0], k)
	}
}

// TestJSONErrors checks failures under --json: one JSON object with error and class, on stdout (stderr when the
// data goes to stdout), the exit code as without --json.
func TestJSONErrors(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	r := vkz(t, dir, nil, "encode", "-q", "--backend", "cpu", "--chunk", "1024", "-o", "good.vkz", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	good := read(t, filepath.Join(dir, "good.vkz"))
	bad := append([]byte(nil), good...)
	bad[len(bad)/2] ^= 0x10 // tensor data in the middle of the payload: its chunk checksum catches it
	write(t, filepath.Join(dir, "bad.vkz"), bad)

	errObj := func(out string) errorJSON {
		t.Helper()
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		require.Len(t, lines, 1, "one object on one line: %q", out)
		var e errorJSON
		d := json.NewDecoder(strings.NewReader(lines[0]))
		d.DisallowUnknownFields()
		require.NoError(t, d.Decode(&e), out)
		assert.NotEmpty(t, e.Error)
		return e
	}
	for _, c := range []struct {
		args  []string
		code  int
		class string
	}{
		{[]string{"decode", "-o", "x", "missing.vkz"}, exitFailure, "not_found"},
		{[]string{"test", "bad.vkz"}, exitFailure, "checksum"},
		{[]string{"decode", "-o", "x", "bad.vkz"}, exitFailure, "checksum"},
		{[]string{"encode", "--chunk", "1000", in}, exitUsage, "usage"},
		{[]string{"encode", "--format", "huff", "--chunk", "1024", "-o", "h.vkz", in}, exitUsage, "usage"},
		{[]string{"bench", "--nosuchflag"}, exitUsage, "usage"},
		{[]string{"decode", "-o", "kv.safetensors", "good.vkz"}, exitFailure, "exists"},
		{[]string{"inspect", "kv.safetensors"}, exitFailure, "format"},
	} {
		plain := vkz(t, dir, nil, c.args...)
		r := vkz(t, dir, nil, append(c.args, "--json")...)
		require.Equal(t, plain.code, r.code, "%v: the same exit code with --json", c.args)
		require.Equal(t, c.code, r.code, "%v: %s", c.args, r.stdout+r.stderr)
		assert.Empty(t, plain.stdout, "%v: without --json the failure is a stderr line", c.args)
		assert.Empty(t, r.stderr, "%v", c.args)
		e := errObj(r.stdout)
		assert.Equal(t, c.class, e.Class, "%v: %s", c.args, e.Error)
		assert.Equal(t, c.args[0], e.Verb)
		assert.Equal(t, strings.TrimPrefix(strings.TrimRight(plain.stderr, "\n"), "vkzip: "+c.args[0]+": "), e.Error,
			"%v: the message is the line's", c.args)
	}

	// Several inputs: the good one's report and the bad one's error object, naming it; exit 1.
	r = vkz(t, dir, nil, "test", "--json", "--backend", "cpu", "good.vkz", "bad.vkz")
	require.Equal(t, exitFailure, r.code, r.stderr)
	d := json.NewDecoder(strings.NewReader(r.stdout))
	var first map[string]any
	require.NoError(t, d.Decode(&first), r.stdout)
	assert.Equal(t, "good.vkz", first["input"])
	var e errorJSON
	require.NoError(t, d.Decode(&e), r.stdout)
	assert.Equal(t, "bad.vkz", e.Input)
	assert.Equal(t, "checksum", e.Class)

	// The payload on stdout: the error goes to stderr, stdout stays the data's.
	r = vkz(t, dir, nil, "decode", "--json", "-c", "bad.vkz")
	require.Equal(t, exitFailure, r.code)
	assert.Empty(t, r.stdout)
	assert.Equal(t, "checksum", errObj(r.stderr).Class)
}

// TestBackendNoteOnce: the note on how --backend auto chose is one line per process, with one prefix, and none
// with -q.
func TestBackendNoteOnce(t *testing.T) {
	dir := t.TempDir()
	a := write(t, filepath.Join(dir, "a.safetensors"), kvSample)
	b := write(t, filepath.Join(dir, "b.safetensors"), kvSample)
	r := vkz(t, dir, nil, "encode", a, b)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, 1, strings.Count(r.stderr, "backend auto:"), r.stderr)
	assert.NotContains(t, r.stderr, "vkzip: vkzip:")
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		assert.Equal(t, 1, strings.Count(line, "vkzip: "), "one prefix per line: %q", line)
	}
	r = vkz(t, dir, nil, "decode", "-q", "-f", "a.safetensors.vkz", "b.safetensors.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	r = vkz(t, dir, nil, "test", "a.safetensors.vkz", "b.safetensors.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.LessOrEqual(t, strings.Count(r.stderr, "backend auto:"), 1, r.stderr)
}

// TestSameDefaults: --backend is auto in every verb that codes (demo and conformance default to all of them), and
// --chunk counts values in every verb.
func TestSameDefaults(t *testing.T) {
	dir := t.TempDir()
	for _, v := range verbs {
		r := vkz(t, dir, nil, v.name, "--help")
		require.Equal(t, exitOK, r.code)
		if i := strings.Index(r.stdout, "\n  -backend"); i >= 0 && v.name != "demo" && v.name != "conformance" {
			line := r.stdout[i:]
			line = line[:strings.Index(line[1:], "\n  -")+1]
			assert.Contains(t, line, `(default "auto")`, "%s: --backend", v.name)
		}
		if i := strings.Index(r.stdout, "\n  -chunk "); i >= 0 {
			assert.Contains(t, r.stdout[i:i+80], "values", "%s: --chunk counts values", v.name)
		}
	}
	// A chunk size no format of the list takes as given is refused, naming the sizes it takes.
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	for _, args := range [][]string{
		{"encode", "--format", "huff", "--chunk", "1024", "-o", "h.vkz", in},
		{"encode", "--prefer", "ratio", "--chunk", "2048", "-o", "h.vkz", in},
		{"bench", "--backend", "cpu", "--format", "huff", "--chunk", "1024", "--size", "256KiB"},
	} {
		r := vkz(t, dir, nil, args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "4096 to 65536", "%v", args)
	}
	assert.NoFileExists(t, filepath.Join(dir, "h.vkz"))
}

// filled returns a *T with every field set to a non-zero value, recursively (one element per slice and map), so
// that no omitempty field is left out of its JSON.
func filled[T any]() *T {
	v := new(T)
	fillValue(reflect.ValueOf(v).Elem(), 0)
	return v
}

func fillValue(v reflect.Value, depth int) {
	if depth > 8 || !v.CanSet() {
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fillValue(v.Field(i), depth+1)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillValue(v.Elem(), depth+1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillValue(v.Index(0), depth+1)
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			fillValue(v.Index(i), depth+1)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillValue(k, depth+1)
		fillValue(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	}
}

// TestGPUOnlyJSONKeysDocumented covers what only GPU runs print, with every field set: bench's Vulkan results
// (latency, block API, kernel statistics), bench --source (examples/cudavk's result) and transfer-bench
// --transport nccl (transfer/gpulink's result and check), in the keys the CLI renames them to.
func TestGPUOnlyJSONKeysDocumented(t *testing.T) {
	doc := jsonDoc(t)
	asJSON := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return string(b)
	}
	checkDocumented(t, doc, "bench", asJSON(benchReport{Results: []benchOut{*filled[benchOut]()}}))
	src, err := renamedJSON(filled[cudavk.BenchResult](), benchSourceKeys)
	require.NoError(t, err)
	checkDocumented(t, doc, "bench", asJSON(map[string]any{"results": []any{src}}))
	res, err := renamedJSON(struct {
		Date string `json:"date"`
		Data string `json:"data"`
		*gpulink.Result
	}{"x", "x", filled[gpulink.Result]()}, ncclKeys)
	require.NoError(t, err)
	checkDocumented(t, doc, "transfer-bench", asJSON(res))
	chk, err := renamedJSON(filled[gpulink.CheckResult](), ncclCheckKeys)
	require.NoError(t, err)
	checkDocumented(t, doc, "transfer-bench", asJSON(chk))
	assert.NotContains(t, asJSON(res), `"size_bytes"`, "renamed")
}
