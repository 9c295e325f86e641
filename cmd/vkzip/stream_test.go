//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/synth"
	"github.com/vkzip/vkzip/tensorfile"
)

// Bounded memory: encode and decode stream, so a process's peak RSS must not grow with its input. The acceptance
// runs are 256 MiB against 2 GiB with the default 32 MiB frames (docs/FORMAT.md §8.1); this is the same check
// scaled down to 8 MiB against 64 MiB with 1 MiB frames, for files and for stdin → stdout pipes, with TMPDIR
// unwritable so that nothing can spill to a temporary file.

// peakRun runs the vkzip binary with stdin and stdout as given (an io.Reader or io.Writer that is not a file
// makes a pipe) and returns its peak RSS in bytes: getrusage's ru_maxrss of the child. Go starts children with
// vfork semantics, so that figure also counts this test process's own peak before the exec; the test therefore
// streams everything it handles in small pieces, keeping its own peak small and the same for every run.
func peakRun(t *testing.T, dir string, stdin io.Reader, stdout io.Writer, args ...string) int64 {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+filepath.Join(dir, "no-such-dir"))
	cmd.Stdin, cmd.Stdout = stdin, stdout
	var errb bytes.Buffer
	cmd.Stderr = &errb
	require.NoError(t, cmd.Run(), "vkzip %v: %s", args, errb.String())
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	require.True(t, ok)
	return ru.Maxrss << 10 // KiB on Linux
}

// onlyReader and hashWriter hide the file behind them, so that exec gives the child a pipe.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

type hashWriter struct {
	h interface{ Write([]byte) (int, error) }
}

func (w hashWriter) Write(p []byte) (int, error) { return w.h.Write(p) }

func streamBackends(t *testing.T) []string {
	backends := []string{"cpu"}
	if os.Getenv("VKZIP_REQUIRE_VULKAN") == "1" {
		needVulkan(t)
		backends = append(backends, "vulkan")
	}
	return backends
}

func TestStreamMemoryBounded(t *testing.T) {
	dir := t.TempDir()
	const small, large = 8 << 20, 64 << 20
	sums := map[int][32]byte{}
	for _, n := range []int{small, large} {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("in%d.bin", n)))
		require.NoError(t, err)
		h := sha256.New()
		for k := 0; k < n>>20; k++ {
			piece := synth.KVLike(1<<19, uint64(n+k))
			h.Write(piece)
			_, err := f.Write(piece)
			require.NoError(t, err)
		}
		require.NoError(t, f.Close())
		sums[n] = [32]byte(h.Sum(nil))
	}
	fileSum := func(path string) [32]byte {
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		h := sha256.New()
		_, err = io.Copy(h, f)
		require.NoError(t, err)
		return [32]byte(h.Sum(nil))
	}
	for _, b := range streamBackends(t) {
		peaks := map[string]map[int]int64{}
		note := func(mode string, n int, peak int64) {
			if peaks[mode] == nil {
				peaks[mode] = map[int]int64{}
			}
			peaks[mode][n] = peak
		}
		for _, n := range []int{small, large} {
			in := fmt.Sprintf("in%d.bin", n)
			vkzf := in + ".vkz"
			note("encode file", n, peakRun(t, dir, nil, nil, "encode", "-q", "-f", "--backend", b, "--dtype", "bf16",
				"--frame", "1MiB", in))
			out := fmt.Sprintf("out%d.bin", n)
			os.Remove(filepath.Join(dir, out))
			note("decode file", n, peakRun(t, dir, nil, nil, "decode", "-q", "--backend", b, "-o", out, vkzf))
			assert.Equal(t, sums[n], fileSum(filepath.Join(dir, out)), "%s: decode of %s", b, vkzf)
			os.Remove(filepath.Join(dir, out))

			f, err := os.Open(filepath.Join(dir, in))
			require.NoError(t, err)
			pf, err := os.Create(filepath.Join(dir, "pipe.vkz"))
			require.NoError(t, err)
			note("encode pipe", n, peakRun(t, dir, onlyReader{bufio.NewReader(f)}, hashWriter{pf}, "encode", "-q",
				"--backend", b, "--dtype", "bf16", "--frame", "1MiB", "-"))
			f.Close()
			require.NoError(t, pf.Close())
			pf, err = os.Open(filepath.Join(dir, "pipe.vkz"))
			require.NoError(t, err)
			h := sha256.New()
			note("decode pipe", n, peakRun(t, dir, onlyReader{bufio.NewReader(pf)}, hashWriter{h}, "decode", "-q",
				"--backend", b, "-"))
			pf.Close()
			assert.Equal(t, sums[n], [32]byte(h.Sum(nil)), "%s: stdin → stdout decode of %d bytes", b, n)
		}
		for mode, p := range peaks {
			growth := p[large] - p[small]
			t.Logf("%s %s: peak RSS %.1f MiB at 8 MiB, %.1f MiB at 64 MiB", b, mode, float64(p[small])/(1<<20),
				float64(p[large])/(1<<20))
			// Holding the input, the payload or the output whole would add 56 MiB or more.
			assert.LessOrEqual(t, growth, int64(16<<20), "%s %s: peak RSS grows by %d MiB from 8 to 64 MiB of input",
				b, mode, growth>>20)
		}
	}
}

// TestStreamDecodeWritesEarly: decode to stdout writes the first frame's bytes while the rest of the payload has
// not arrived, and a damaged later frame leaves the consumer the verified bytes before it and exit status 1.
func TestStreamDecodeWritesEarly(t *testing.T) {
	dir := t.TempDir()
	data := synth.KVLike(4<<20, 7) // 8 MiB
	in := write(t, filepath.Join(dir, "in.bin"), data)
	for _, b := range streamBackends(t) {
		r := vkz(t, dir, nil, "encode", "-q", "-f", "--backend", b, "--dtype", "bf16", "--frame", "1MiB", in)
		require.Equal(t, exitOK, r.code, r.stderr)
		payload := read(t, in+".vkz")

		// Only the first 2 MiB of the payload arrive, and the pipe stays open.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, bin, "decode", "-q", "--backend", b, "-c", "-")
		pw, err := cmd.StdinPipe()
		require.NoError(t, err)
		pr, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		go func() { pw.Write(payload[:2<<20]) }()
		first := make([]byte, 1<<20)
		_, err = io.ReadFull(pr, first)
		assert.NoError(t, err, "%s: the first frame's bytes did not arrive while the input stayed open", b)
		assert.Equal(t, data[:1<<20], first)
		cancel()
		cmd.Wait()
		pw.Close()

		// A damaged fifth frame: the four before it come out, then exit 1.
		off := uint64(0)
		for range 4 {
			ct, err := codec.ParseHeader(payload[off:])
			require.NoError(t, err)
			off += ct.Size
		}
		bad := bytes.Clone(payload)
		bad[off+200] ^= 1
		r = vkz(t, dir, bad, "decode", "--backend", b, "-c", "-")
		requireFailure(t, r, "decode")
		assert.Equal(t, string(data[:4<<20]), r.stdout, "%s: output before the damaged frame", b)
		r = vkz(t, dir, bad, "decode", "--backend", b, "-o", "out.bin", "-")
		requireFailure(t, r, "decode")
		_, err = os.Stat(filepath.Join(dir, "out.bin"))
		assert.True(t, os.IsNotExist(err), "%s: a file output of a damaged payload was left behind", b)
	}
}

// TestStreamRatio: a file that fits one frame gives the same payload as the whole-file encoder (Codec.Encode of
// its records), and framing it finely costs under 0.5 % of the ratio, for the default formats, huff and auto.
func TestStreamRatio(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	f, err := tensorfile.Parse(kvSample, tensorfile.OpenOptions{})
	require.NoError(t, err)
	for _, prefer := range []string{"speed", "ratio", "balanced"} {
		c, err := codec.New(codec.WithBackend(codec.NewCPUBackend(0)), codec.WithFormat(preferList(prefer)))
		require.NoError(t, err)
		whole, err := c.Encode(context.Background(), nil, fileRecords(f), true)
		require.NoError(t, err)
		c.Close()
		r := vkz(t, dir, nil, "encode", "-q", "-f", "--backend", "cpu", "--prefer", prefer, "-o", "one.vkz", in)
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, whole, read(t, filepath.Join(dir, "one.vkz")), "--prefer %s: one frame differs from Encode", prefer)
		r = vkz(t, dir, nil, "encode", "-q", "-f", "--backend", "cpu", "--prefer", prefer, "--frame", "64KiB", "-o",
			"many.vkz", in)
		require.Equal(t, exitOK, r.code, r.stderr)
		many := read(t, filepath.Join(dir, "many.vkz"))
		info, err := codec.Inspect(many)
		require.NoError(t, err)
		require.Greater(t, len(info.Containers), 3)
		loss := float64(len(many))/float64(len(whole)) - 1
		t.Logf("--prefer %s: %d bytes whole, %d in %d frames of 64 KiB (%+.3f %%)", prefer, len(whole), len(many),
			len(info.Containers), 100*loss)
		assert.Less(t, loss, 0.005, "--prefer %s", prefer)
		r = vkz(t, dir, nil, "decode", "-q", "-c", "many.vkz")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, string(kvSample), r.stdout)
	}
}
