package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Files as zstd treats them: existing outputs kept unless -f, the input's mode and mtime on the output, several
// inputs, -c, --rm, `vkzip test`, and no partial or temporary file after a failure or a kill.

// TestOverwriteNeedsForce: an existing output is refused (exit 1, one line, the file untouched) and replaced
// with -f, for encode and decode, the decode of kv.safetensors.vkz over an existing kv.safetensors included.
func TestOverwriteNeedsForce(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	r := vkz(t, dir, nil, "encode", "-q", "--backend", "cpu", "-o", "fresh.vkz", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	payload := read(t, filepath.Join(dir, "fresh.vkz"))

	old := []byte("an older file that must survive")
	write(t, in+".vkz", old)
	r = vkz(t, dir, nil, "encode", "-q", "--backend", "cpu", in)
	requireFailure(t, r, "encode")
	assert.Contains(t, r.stderr, "already exists")
	assert.Contains(t, r.stderr, "-f")
	assert.Equal(t, old, read(t, in+".vkz"))
	r = vkz(t, dir, nil, "encode", "-q", "-f", "--backend", "cpu", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, payload, read(t, in+".vkz"))

	// decode kv.safetensors.vkz next to an existing kv.safetensors.
	write(t, in, old)
	r = vkz(t, dir, nil, "decode", "-q", "--backend", "cpu", "kv.safetensors.vkz")
	requireFailure(t, r, "decode")
	assert.Contains(t, r.stderr, "kv.safetensors already exists")
	assert.Equal(t, old, read(t, in))
	r = vkz(t, dir, nil, "decode", "-q", "-f", "--backend", "cpu", "kv.safetensors.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, kvSample, read(t, in))

	// -f never replaces the input with its own output.
	r = vkz(t, dir, nil, "decode", "-f", "-o", "kv.safetensors.vkz", "kv.safetensors.vkz")
	requireFailure(t, r, "decode")
	assert.Equal(t, payload, read(t, in+".vkz"))
	// A device is written in place, no -f needed.
	r = vkz(t, dir, nil, "decode", "-q", "-o", os.DevNull, "kv.safetensors.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, []string{"fresh.vkz", "kv.safetensors", "kv.safetensors.vkz"}, listDir(t, dir))
}

// TestModeAndMtimeKept: the output of encode gets the input's permission bits and modification time, and decode
// carries them on to the restored file, also when -f replaces a file of another mode.
func TestModeAndMtimeKept(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	require.NoError(t, os.Chmod(in, 0o600))
	mtime := time.Date(2021, 3, 4, 5, 6, 7, 123456789, time.UTC)
	require.NoError(t, os.Chtimes(in, mtime, mtime))

	check := func(path string) {
		t.Helper()
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), path)
		assert.True(t, fi.ModTime().Equal(mtime), "%s: mtime %v, want %v", path, fi.ModTime(), mtime)
	}
	r := vkz(t, dir, nil, "encode", "-q", "--backend", "cpu", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	check(in + ".vkz")
	r = vkz(t, dir, nil, "decode", "-q", "--backend", "cpu", "-o", "out.safetensors", "kv.safetensors.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	check(filepath.Join(dir, "out.safetensors"))
	assert.Equal(t, kvSample, read(t, filepath.Join(dir, "out.safetensors")))

	// -f over a 0644 file of today: the new file has the input's mode and time, not the old file's.
	other := write(t, filepath.Join(dir, "other.vkz"), []byte("old"))
	require.NoError(t, os.Chmod(other, 0o644))
	r = vkz(t, dir, nil, "encode", "-q", "-f", "--backend", "cpu", "-o", "other.vkz", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	check(other)

	// A mode the umask would not give (0640 under the usual 022) is kept too.
	require.NoError(t, os.Chmod(in, 0o640))
	r = vkz(t, dir, nil, "encode", "-q", "-f", "--backend", "cpu", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	fi, err := os.Stat(in + ".vkz")
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
}

// TestSeveralInputs: each input gets its own output; a bad input among good ones is named on one line, leaves no
// output, and makes the exit status 1 while the others are still done; -o and -c take one input.
func TestSeveralInputs(t *testing.T) {
	dir := t.TempDir()
	names := []string{"a.safetensors", "b.safetensors", "c.safetensors"}
	for _, n := range names {
		write(t, filepath.Join(dir, n), kvSample)
	}
	r := vkz(t, dir, nil, append([]string{"encode", "-q", "--backend", "cpu"}, names...)...)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	for _, n := range names {
		require.NoError(t, os.Rename(filepath.Join(dir, n), filepath.Join(dir, n+".orig")))
	}
	r = vkz(t, dir, nil, "decode", "-q", "--backend", "cpu", "a.safetensors.vkz", "b.safetensors.vkz", "c.safetensors.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	for _, n := range names {
		assert.Equal(t, kvSample, read(t, filepath.Join(dir, n)), n)
	}

	// One broken input in the middle.
	write(t, filepath.Join(dir, "bad.safetensors"), []byte("not a tensor file"))
	r = vkz(t, dir, nil, "encode", "-q", "--backend", "cpu", "-f", "a.safetensors", "bad.safetensors", "c.safetensors")
	requireFailure(t, r, "encode")
	assert.Contains(t, r.stderr, "bad.safetensors")
	assert.NoFileExists(t, filepath.Join(dir, "bad.safetensors.vkz"))
	write(t, filepath.Join(dir, "bad.vkz"), kvSample[:1000])
	for _, p := range []string{"a.safetensors.vkz", "c.safetensors.vkz"} {
		require.NoError(t, os.Remove(filepath.Join(dir, strings.TrimSuffix(p, ".vkz"))))
	}
	r = vkz(t, dir, nil, "decode", "-q", "--backend", "cpu", "a.safetensors.vkz", "bad.vkz", "c.safetensors.vkz")
	requireFailure(t, r, "decode")
	assert.Contains(t, r.stderr, "bad.vkz")
	assert.NoFileExists(t, filepath.Join(dir, "bad"))
	assert.Equal(t, kvSample, read(t, filepath.Join(dir, "a.safetensors")))
	assert.Equal(t, kvSample, read(t, filepath.Join(dir, "c.safetensors")))
	for _, e := range listDir(t, dir) {
		assert.False(t, strings.HasPrefix(e, "."), "temporary file %s left behind", e)
	}

	for _, args := range [][]string{
		{"encode", "-o", "x.vkz", "a.safetensors", "b.safetensors"},
		{"encode", "-c", "a.safetensors", "b.safetensors"},
		{"encode", "a.safetensors", "./a.safetensors"},
		{"encode", "a.safetensors", "-"},
		{"decode", "-o", "x", "a.safetensors.vkz", "c.safetensors.vkz"},
		{"encode", "--rm", "-c", "a.safetensors"},
	} {
		r := vkz(t, dir, nil, args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "%v: %q", args, r.stderr)
	}
	assert.NoFileExists(t, filepath.Join(dir, "x.vkz"))
}

// TestStdoutFlag: -c writes the payload (or the restored file) to stdout and creates no file.
func TestStdoutFlag(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	r := vkz(t, dir, nil, "encode", "-q", "--backend", "cpu", "-o", "ref.vkz", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	ref := read(t, filepath.Join(dir, "ref.vkz"))

	r = vkz(t, dir, nil, "encode", "-c", "--backend", "cpu", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, ref, []byte(r.stdout))
	assert.Contains(t, r.stderr, "stdout")
	r = vkz(t, dir, nil, "decode", "-c", "--backend", "cpu", "ref.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, kvSample, []byte(r.stdout))
	assert.Equal(t, []string{"kv.safetensors", "ref.vkz"}, listDir(t, dir))
}

// TestRemoveInput: --rm removes each input once its output is complete, and only then.
func TestRemoveInput(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	r := vkz(t, dir, nil, "encode", "-q", "--rm", "--backend", "cpu", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, []string{"kv.safetensors.vkz"}, listDir(t, dir))
	r = vkz(t, dir, nil, "decode", "-q", "--rm", "--backend", "cpu", "kv.safetensors.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, []string{"kv.safetensors"}, listDir(t, dir))
	assert.Equal(t, kvSample, read(t, in))

	// A failed input is kept: its output exists already (no -f), or its payload is damaged.
	write(t, in+".vkz", []byte("older"))
	r = vkz(t, dir, nil, "encode", "-q", "--rm", "--backend", "cpu", in)
	requireFailure(t, r, "encode")
	assert.Equal(t, kvSample, read(t, in))
	write(t, filepath.Join(dir, "bad.vkz"), []byte("older"))
	r = vkz(t, dir, nil, "decode", "-q", "--rm", "--backend", "cpu", "bad.vkz")
	requireFailure(t, r, "decode")
	assert.FileExists(t, filepath.Join(dir, "bad.vkz"))
	// Without --rm, inputs stay.
	require.NoError(t, os.Remove(in+".vkz"))
	r = vkz(t, dir, nil, "encode", "-q", "--backend", "cpu", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.FileExists(t, in)
}

// damage returns n damaged copies of payload, made as scripts/corrupt-check.sh makes its 1,000: bit flips,
// overwritten bytes, truncations and splices of one place over another.
func damage(payload []byte, n int) [][]byte {
	rng := rand.New(rand.NewPCG(20261201, 31))
	var out [][]byte
	for i := range n {
		b := bytes.Clone(payload)
		switch i % 4 {
		case 0:
			for range 1 + rng.IntN(4) {
				b[rng.IntN(len(b))] ^= 1 << rng.IntN(8)
			}
		case 1:
			for range 1 + rng.IntN(8) {
				b[rng.IntN(len(b))] = byte(rng.IntN(256))
			}
		case 2:
			b = b[:rng.IntN(len(b))]
		default:
			a, l, d := rng.IntN(len(b)), 1+rng.IntN(256), rng.IntN(len(b))
			piece := bytes.Clone(b[a:min(a+l, len(b))])
			copy(b[d:], piece)
		}
		if bytes.Equal(b, payload) {
			b[rng.IntN(len(b))] ^= 0xFF
		}
		out = append(out, b)
	}
	return out
}

// TestTestVerb: `vkzip test` passes good payloads, fails every damaged one with one line naming it, and writes
// nothing either way; a mix of good and bad files reports each and exits 1.
func TestTestVerb(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	r := vkz(t, dir, nil, "encode", "-q", "--backend", "cpu", "--chunk", "1024", "-o", "good.vkz", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	good := read(t, filepath.Join(dir, "good.vkz"))
	require.NoError(t, os.Remove(in))

	r = vkz(t, dir, nil, "test", "--backend", "cpu", "good.vkz")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, fmt.Sprintf("good.vkz: OK (%d -> %d bytes)\n", len(good), len(kvSample)), r.stdout)
	r = vkz(t, dir, good, "test", "-q", "--backend", "cpu", "-")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, r.stdout+r.stderr)

	bad := damage(good, 60)
	for i, b := range bad {
		name := fmt.Sprintf("bad%02d.vkz", i)
		write(t, filepath.Join(dir, name), b)
		r := vkz(t, dir, nil, "test", "--backend", "cpu", name)
		requireFailure(t, r, "test")
		assert.Contains(t, r.stderr, name)
		assert.Empty(t, r.stdout, name)
	}
	r = vkz(t, dir, nil, "test", "--backend", "cpu", "good.vkz", "bad00.vkz", "bad02.vkz")
	require.Equal(t, exitFailure, r.code)
	assert.Equal(t, "good.vkz: OK", strings.SplitN(r.stdout, " (", 2)[0])
	assert.Equal(t, 2, strings.Count(r.stderr, "\n"), r.stderr)
	assert.Contains(t, r.stderr, "bad00.vkz")
	assert.Contains(t, r.stderr, "bad02.vkz")
	// Nothing was written: the directory holds the payloads alone.
	assert.Len(t, listDir(t, dir), 1+len(bad))
}

// TestNoTemporaryFileLeft: a decode that fails mid-way leaves no file under any name, and a process killed while
// writing an output (SIGKILL: no clean-up runs) leaves none either.
func TestNoTemporaryFileLeft(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	r := vkz(t, dir, nil, "encode", "-q", "--backend", "cpu", "-o", "kv.vkz", in)
	require.Equal(t, exitOK, r.code, r.stderr)
	p := read(t, filepath.Join(dir, "kv.vkz"))
	// Damage near the end: decode has had the earlier records to write before it finds it.
	p[len(p)-100] ^= 0x40
	write(t, filepath.Join(dir, "late.vkz"), p)
	r = vkz(t, dir, nil, "decode", "--backend", "cpu", "late.vkz")
	requireFailure(t, r, "decode")
	assert.Equal(t, []string{"kv.safetensors", "kv.vkz", "late.vkz"}, listDir(t, dir))

	// A helper process opens an output, writes to it and waits to be killed.
	kdir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriterHelper$")
	cmd.Env = append(os.Environ(), "VKZIP_KILLED_WRITER_DIR="+kdir)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	buf := make([]byte, 6)
	_, err = stdout.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "ready\n", string(buf), "helper did not get to write its output")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	assert.Empty(t, listDir(t, kdir), "a killed writer left a file behind")
}

// TestKilledWriterHelper is the process TestNoTemporaryFileLeft kills: it writes 8 MiB to an output it never
// commits, says so, and sleeps.
func TestKilledWriterHelper(t *testing.T) {
	dir := os.Getenv("VKZIP_KILLED_WRITER_DIR")
	if dir == "" {
		t.Skip("run by TestNoTemporaryFileLeft")
	}
	a, err := createOutput(filepath.Join(dir, "big.out"), outputOptions{})
	require.NoError(t, err)
	_, err = a.Write(make([]byte, 8<<20))
	require.NoError(t, err)
	require.NoError(t, a.w.Flush())
	os.Stdout.WriteString("ready\n")
	time.Sleep(time.Minute)
}

// TestStaleTemporaryFiles: where a named temporary file is used, a later run removes those of dead processes and
// keeps those of live ones.
func TestStaleTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "kv.vkz")
	// A pid that is not running: a child that has exited and been reaped.
	c := exec.Command("true")
	require.NoError(t, c.Run())
	dead := c.Process.Pid
	stale := write(t, filepath.Join(dir, fmt.Sprintf(".kv.vkz.vkzip-%d-123.tmp", dead)), []byte("x"))
	live := write(t, filepath.Join(dir, fmt.Sprintf(".kv.vkz.vkzip-%d-456.tmp", os.Getpid())), []byte("y"))
	other := write(t, filepath.Join(dir, fmt.Sprintf(".other.vkzip-%d-1.tmp", dead)), []byte("z"))
	a, err := createOutput(out, outputOptions{})
	require.NoError(t, err)
	_, err = a.Write([]byte("payload"))
	require.NoError(t, err)
	require.NoError(t, a.commit())
	assert.NoFileExists(t, stale)
	assert.FileExists(t, live)
	assert.FileExists(t, other)
	assert.Equal(t, []byte("payload"), read(t, out))

	// Without -f the output is not replaced, even when it appears after the check at creation.
	a, err = createOutput(filepath.Join(dir, "late"), outputOptions{})
	require.NoError(t, err)
	_, err = a.Write([]byte("new"))
	require.NoError(t, err)
	write(t, filepath.Join(dir, "late"), []byte("first"))
	err = a.commit()
	require.ErrorIs(t, err, os.ErrExist)
	assert.Equal(t, []byte("first"), read(t, filepath.Join(dir, "late")))
	_, err = createOutput(out, outputOptions{})
	require.ErrorIs(t, err, os.ErrExist)
}

// TestEncodeJSONSeveral: --json gives one object per input.
func TestEncodeJSONSeveral(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.safetensors"), kvSample)
	write(t, filepath.Join(dir, "b.safetensors"), kvSample)
	r := vkz(t, dir, nil, "encode", "--json", "--backend", "cpu", "a.safetensors", "b.safetensors")
	require.Equal(t, exitOK, r.code, r.stderr)
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	var outs []string
	for dec.More() {
		var res encodeResult
		require.NoError(t, dec.Decode(&res))
		outs = append(outs, res.Output)
	}
	assert.Equal(t, []string{"a.safetensors.vkz", "b.safetensors.vkz"}, outs)
}
