//go:build unix

package cudabridge

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

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

// sharedFile is a memfd (an anonymous file, as Vulkan and CUDA exports are
// on Linux), or an unlinked temporary file where memfd_create is missing.
func sharedFile(t *testing.T, content []byte) int {
	t.Helper()
	fd, err := memfdCreate("vkzip-test")
	if err != nil {
		t.Logf("memfd_create unavailable (%v): using an unlinked temporary file", err)
		f, err := os.CreateTemp(t.TempDir(), "shared")
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(f.Name())
		if fd, err = syscall.Dup(int(f.Fd())); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if _, err := syscall.Pwrite(fd, content, 0); err != nil {
		t.Fatal(err)
	}
	return fd
}

func TestPassMemfdOverSocketpair(t *testing.T) {
	a, b := socketPair(t)
	content := bytes.Repeat([]byte("KV cache block "), 1000)
	fd1 := sharedFile(t, content)
	fd2 := sharedFile(t, []byte("semaphore stand-in"))
	h := sampleHandshake()
	h.Buffers = h.Buffers[:1]
	h.Buffers[0].FD = 0
	h.Semaphores[0].FD = 1
	if err := SendHandshake(a, h, []int{fd1, fd2}); err != nil {
		t.Fatal(err)
	}
	// The sender's fds stay its own.
	syscall.Close(fd1)
	syscall.Close(fd2)
	got, fds, err := RecvHandshake(b)
	if err != nil {
		t.Fatal(err)
	}
	defer CloseFDs(fds)
	if len(fds) != 2 || got.Buffers[0].Name != "src" {
		t.Fatalf("got %d fds, %+v", len(fds), got)
	}
	buf := make([]byte, len(content))
	if _, err := syscall.Pread(fds[got.Buffers[0].FD], buf, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf, content) {
		t.Fatal("the received fd does not read back what was written")
	}
	// Writes through the received fd are visible through a dup of it: the same file.
	dup, err := DupFD(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(dup)
	syscall.Pwrite(fds[0], []byte("XY"), 0)
	two := make([]byte, 2)
	syscall.Pread(dup, two, 0)
	if string(two) != "XY" {
		t.Fatalf("dup reads %q", two)
	}
	if flags, err := fcntlGetFD(fds[0]); err != nil || flags&syscall.FD_CLOEXEC == 0 {
		t.Errorf("received fd is not close-on-exec (flags %#x, %v)", flags, err)
	}

	// Control and data frames round-trip too; fds on them are refused.
	if err := SendControl(a, Control{"op": "encode", "values": 42}); err != nil {
		t.Fatal(err)
	}
	c, err := RecvControl(b)
	if v, _ := c.Uint("values"); err != nil || c.Op() != "encode" || v != 42 {
		t.Fatalf("control: %v %v", c, err)
	}
	big := bytes.Repeat([]byte{7}, 3<<20)
	go SendFrame(a, KindData, big, nil)
	kind, payload, _, err := RecvFrame(b, 4<<20)
	if err != nil || kind != KindData || !bytes.Equal(payload, big) {
		t.Fatalf("data frame: %v %v %d", kind, err, len(payload))
	}
	fd3 := sharedFile(t, []byte("x"))
	defer syscall.Close(fd3)
	if err := SendFrame(a, KindControl, []byte(`{"op":"x"}`), []int{fd3}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := RecvFrame(b, 0); !errors.Is(err, ErrProtocol) {
		t.Fatalf("fd on a control frame: %v", err)
	}
	a.Close()
	if _, _, _, err := RecvFrame(b, 0); err != io.EOF {
		t.Fatalf("after close: %v", err)
	}
}

func TestRecvRejectsBadFrames(t *testing.T) {
	a, b := socketPair(t)
	fd := sharedFile(t, []byte("x"))
	defer syscall.Close(fd)
	// A handshake naming one fd but carrying none, then one with a bad version.
	frame, _ := MarshalHandshake(&Handshake{DeviceUUID: sampleHandshake().DeviceUUID,
		Semaphores: []SemaphoreDesc{{Name: "s", FD: 0, Type: SemaphoreBinary}}}, 1)
	go func() {
		SendFDs(a, frame, nil)
		bad := append([]byte(nil), frame...)
		bad[4] = 7
		SendFDs(a, bad, []int{fd})
	}()
	if _, _, err := RecvHandshake(b); !errors.Is(err, ErrProtocol) {
		t.Fatalf("missing fd: %v", err)
	}
	if _, _, err := RecvHandshake(b); !errors.Is(err, ErrProtocol) {
		t.Fatalf("bad version: %v", err)
	}
	if err := SendFDs(a, nil, []int{fd}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty data: %v", err)
	}
	if err := SendFDs(a, []byte{1}, make([]int, MaxFDs+1)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("too many fds: %v", err)
	}
}

func fcntlGetFD(fd int) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
