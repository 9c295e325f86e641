//go:build unix

package cudavk

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/cudabridge"
	"github.com/vkzip/vkzip/vk/vktest"
)

// socketPair is a connected pair of Unix stream sockets, closed at the
// end of the test.
func socketPair(t *testing.T) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*net.UnixConn)
	}
	a, b := conn(fds[0]), conn(fds[1])
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func openBackend(t *testing.T) *vkcodec.Backend {
	t.Helper()
	b, err := vkcodec.Open(vkcodec.Options{})
	if err != nil {
		vktest.Unavailable(t, "vulkan backend: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// mapShared maps a received buffer fd and finds its data by the server's
// probe marker (lavapipe exports memfds with a header before the data).
func mapShared(t *testing.T, fd int, marker string) ([]byte, int) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	m, err := syscall.Mmap(fd, 0, int(st.Size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Skipf("exported Vulkan memory is not mappable here (%v): the mmap client needs lavapipe", err)
	}
	t.Cleanup(func() { syscall.Munmap(m) })
	mk, _ := hex.DecodeString(marker)
	off := bytes.Index(m, mk)
	if off < 0 {
		t.Skip("probe marker not found: exported memory is not host memory on this device")
	}
	return m, off
}

// TestSelfTestGoClient plays the client in Go, without CUDA: buffers are
// mapped from the received fds (lavapipe), the server signals "ready"
// itself (host_signal), and the host-staged round goes over the socket.
func TestSelfTestGoClient(t *testing.T) {
	b := openBackend(t)
	if b.Info().Type != 4 { // vk.DeviceTypeCPU
		t.Skip("the mmap client needs a CPU Vulkan device (lavapipe)")
	}
	srv, cli := socketPair(t)
	const n = 40000 // not a multiple of the chunk size
	type served struct {
		rep *SelfTestReport
		err error
	}
	done := make(chan served, 1)
	go func() {
		rep, err := ServeSelfTest(context.Background(), b, srv, SelfTestOptions{Values: 1 << 16, Shift: 12,
			Checksums: true, Probe: true, Timeout: time.Minute})
		done <- served{rep, err}
	}()
	h, fds, err := cudabridge.RecvHandshake(cli)
	if err != nil {
		t.Fatal(err)
	}
	defer cudabridge.CloseFDs(fds)
	cfg, err := cudabridge.RecvControl(cli)
	if err != nil || cfg.Op() != "config" {
		t.Fatalf("config: %v %v", cfg, err)
	}
	if v, _ := cfg.Uint("values"); v != 1<<16 || len(h.Buffers) != 3 {
		t.Fatalf("config %v, handshake %+v", cfg, h)
	}
	probe, _ := cfg["probe"].(map[string]any)
	maps := map[string][]byte{}
	for _, bd := range h.Buffers {
		m, off := mapShared(t, fds[bd.FD], probe[bd.Name].(string))
		maps[bd.Name] = m[off+int(bd.Offset):]
	}
	kv := make([]byte, 2*n)
	rand.Read(kv)
	copy(maps["src"], kv)
	cudabridge.SendControl(cli, cudabridge.Control{"op": "imported"})
	cudabridge.SendControl(cli, cudabridge.Control{"op": "encode", "round": "zero-copy", "values": n, "ready": 1, "encoded": 2, "done": 3,
		"host_signal": true})
	res, err := cudabridge.RecvControl(cli)
	if err != nil || !res.Bool("ok") {
		t.Fatalf("shared round: %v %v", res, err)
	}
	if !bytes.Equal(maps["dst"][:2*n], kv) {
		t.Fatal("decoded dst differs from what the client wrote into src")
	}
	if hs, _ := res["counters"].(map[string]any)["host_staged_bytes"].(json.Number).Int64(); hs != 0 {
		t.Fatalf("shared round staged %d bytes through host memory", hs)
	}
	// Host-staged round.
	cudabridge.SendControl(cli, cudabridge.Control{"op": "host_encode", "round": "host", "values": n})
	cudabridge.SendFrame(cli, cudabridge.KindData, kv, nil)
	if res, err = cudabridge.RecvControl(cli); err != nil || !res.Bool("ok") {
		t.Fatalf("host round: %v %v", res, err)
	}
	kind, back, _, err := cudabridge.RecvFrame(cli, 2*n)
	if err != nil || kind != cudabridge.KindData || !bytes.Equal(back, kv) {
		t.Fatalf("host round data: %v %v", kind, err)
	}
	// A bad request is answered, not fatal.
	cudabridge.SendControl(cli, cudabridge.Control{"op": "encode", "values": 1 << 20, "ready": 4, "encoded": 5, "done": 6})
	if res, err = cudabridge.RecvControl(cli); err != nil || res.Bool("ok") {
		t.Fatalf("oversized request: %v %v", res, err)
	}
	cudabridge.SendControl(cli, cudabridge.Control{"op": "bye", "ok": true})
	if bye, err := cudabridge.RecvControl(cli); err != nil || bye.Op() != "bye" {
		t.Fatalf("bye: %v %v", bye, err)
	}
	s := <-done
	if s.err != nil {
		t.Fatal(s.err)
	}
	if len(s.rep.Rounds) != 3 || s.rep.Counters.HostStagedBytes != 4*n || s.rep.Rounds[0].Counters.HostStagedBytes != 0 {
		t.Fatalf("report: %+v", s.rep)
	}
}

// TestPythonClientLocal runs examples/cuda_client.py against this
// package's server in its CUDA-less local mode: the protocol, fd passing,
// handshake parsing and checks of the H200 script, exercised everywhere.
func TestPythonClientLocal(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	b := openBackend(t)
	if b.Info().Type != 4 {
		t.Skip("the local client needs a CPU Vulkan device (lavapipe)")
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "cuda_client.py")
	sock := filepath.Join(t.TempDir(), "s.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type served struct {
		rep *SelfTestReport
		err error
	}
	done := make(chan served, 1)
	go func() {
		rep, err := ListenSelfTest(ctx, b, sock, SelfTestOptions{Values: 1 << 16, Probe: true, Checksums: true})
		done <- served{rep, err}
	}()
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	out, err := exec.CommandContext(ctx, py, script, "--connect", sock, "--mode", "local", "--values", "65536",
		"--allow-host-ordering").CombinedOutput()
	s := <-done
	if err != nil || s.err != nil {
		t.Fatalf("client: %v, server: %v\n%s", err, s.err, out)
	}
	if !bytes.Contains(out, []byte("ALL CHECKS PASSED")) || !s.rep.ClientOK {
		t.Fatalf("client output:\n%s", out)
	}
}
