package nccl

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkzip/vkzip/cudabridge"
)

// EnvRequireNCCL makes a missing NCCL a test failure instead of a skip (set
// on the GPU machine).
const EnvRequireNCCL = "VKZIP_REQUIRE_NCCL"

func TestBogusLibraryIsErrNoNCCL(t *testing.T) {
	dir := t.TempDir()
	notALib := filepath.Join(dir, "libnccl.so.2")
	if err := os.WriteFile(notALib, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	// libc.so.6 loads but has none of NCCL's entry points.
	for _, path := range []string{"/nonexistent/libnccl.so.2", notALib, "libc.so.6", ""} {
		l, err := LoadLibrary(path)
		if !errors.Is(err, ErrNoNCCL) || l != nil {
			t.Errorf("LoadLibrary(%q) = %v, %v; want ErrNoNCCL", path, l, err)
		}
	}
	t.Setenv(EnvLib, "/nonexistent/libnccl.so.2")
	if LibraryPath() != "/nonexistent/libnccl.so.2" {
		t.Errorf("LibraryPath ignores %s", EnvLib)
	}
	_, err := Load()
	if !errors.Is(err, ErrNoNCCL) || !strings.Contains(err.Error(), EnvLib) {
		t.Errorf("Load with a bogus %s: %v (want ErrNoNCCL and a hint at %s)", EnvLib, err, EnvLib)
	}
	t.Setenv(EnvLib, "  ")
	if LibraryPath() != DefaultLibrary {
		t.Errorf("blank %s: LibraryPath %q", EnvLib, LibraryPath())
	}
}

// TestNoNCCLHere checks the behaviour on a machine without NCCL (CI,
// developers' machines): Load fails with ErrNoNCCL, cleanly.
func TestNoNCCLHere(t *testing.T) {
	l, err := Load()
	if err == nil {
		t.Skipf("NCCL is installed here (%s, %s): nothing to check", l.Path(), l.VersionString())
	}
	if !errors.Is(err, ErrNoNCCL) {
		t.Fatalf("Load without NCCL: %v, want ErrNoNCCL", err)
	}
	if os.Getenv(EnvRequireNCCL) == "1" {
		t.Fatalf("%s=1 but: %v", EnvRequireNCCL, err)
	}
	t.Logf("as expected: %v", err)
}

// TestSafetyEnv: the multicast switches are forced even over other values,
// the direct-access default only fills a gap, and children inherit both.
func TestSafetyEnv(t *testing.T) {
	t.Setenv("NCCL_NVLS_ENABLE", "1")
	t.Setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "0")
	t.Setenv("NVSHMEM_DISABLE_NVLS", "")
	t.Setenv("NCCL_P2P_DIRECT_DISABLE", "0") // the user's choice stays
	LoadLibrary("/nonexistent/libnccl.so.2")
	for _, kv := range SafetyEnv {
		if got := os.Getenv(kv[0]); got != kv[1] {
			t.Errorf("%s = %q after Load, want %q", kv[0], got, kv[1])
		}
	}
	if got := os.Getenv("NCCL_P2P_DIRECT_DISABLE"); got != "0" {
		t.Errorf("NCCL_P2P_DIRECT_DISABLE overridden to %q", got)
	}
	os.Unsetenv("NCCL_P2P_DIRECT_DISABLE") // t.Setenv restores it afterwards
	if err := ApplyEnv(); err != nil {
		t.Fatal(err)
	}
	if got := os.Getenv("NCCL_P2P_DIRECT_DISABLE"); got != "1" {
		t.Errorf("NCCL_P2P_DIRECT_DISABLE = %q when unset before, want 1", got)
	}
	out, err := exec.Command("/bin/sh", "-c",
		`echo "$NCCL_NVLS_ENABLE $TORCH_SYMM_MEM_DISABLE_MULTICAST $NVSHMEM_DISABLE_NVLS $NCCL_P2P_DIRECT_DISABLE"`).Output()
	if err != nil {
		t.Skipf("no /bin/sh: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != "0 1 1 1" {
		t.Errorf("a child sees %q, want \"0 1 1 1\"", got)
	}
	if m := Env(); m["NCCL_NVLS_ENABLE"] != "0" {
		t.Errorf("Env() = %v", m)
	}
}

// TestLayout compares the C layer's types with nccl.h: ncclUniqueId is 128
// bytes, the enums are int-sized, and the values vkzip passes match the Go
// constants.
func TestLayout(t *testing.T) {
	if !builtWithNCCL {
		t.Skip("stub build: no C layer")
	}
	got := cLayout()
	want := [12]int{128, 4, 4, 48, 16, 24, 32, 40, int(Uint8), int(BFloat16), int(InProgress), int(Timeout)}
	names := []string{"sizeof(ncclUniqueId)", "sizeof(ncclResult_t)", "sizeof(ncclDataType_t)", "sizeof(cnl_op)",
		"offsetof(buf)", "offsetof(count)", "offsetof(comm)", "offsetof(stream)", "ncclUint8", "ncclBfloat16",
		"ncclInProgress", "ncclTimeout"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s = %d, want %d", names[i], got[i], want[i])
		}
	}
	// nccl.h: ncclInt8 = 0, ncclUint8 = 1, ..., ncclBfloat16 = 9.
	if Int8 != 0 || Uint8 != 1 || Int32 != 2 || Uint32 != 3 || Int64 != 4 || Uint64 != 5 || Float16 != 6 ||
		Float32 != 7 || Float64 != 8 || BFloat16 != 9 {
		t.Error("ncclDataType_t values")
	}
	if UniqueIDBytes != len(UniqueID{}) {
		t.Error("UniqueID size")
	}
}

func TestVersionString(t *testing.T) {
	for code, want := range map[int]string{22803: "2.28.3", 21903: "2.19.3", 2708: "2.7.8", 2406: "2.4.6"} {
		if got := VersionString(code); got != want {
			t.Errorf("VersionString(%d) = %q, want %q", code, got, want)
		}
	}
}

func TestErrorClasses(t *testing.T) {
	e := &Error{Func: "ncclSend", Code: InvalidArgument, Desc: "invalid argument"}
	if !errors.Is(e, ErrInvalid) || errors.Is(e, ErrNoNCCL) || errors.Is(e, ErrUnsupported) {
		t.Errorf("classes of %v", e)
	}
	if !errors.Is(&Error{Code: ResultMissingSymbol}, ErrUnsupported) || !errors.Is(&Error{Code: resultNoNCCL}, ErrNoNCCL) {
		t.Error("missing symbol / no NCCL classes")
	}
	if s := e.Error(); s != "nccl: ncclSend: ncclInvalidArgument (invalid argument)" {
		t.Errorf("message %q", s)
	}
	if Result(42).String() != "ncclResult_t(42)" || RemoteError.String() != "ncclRemoteError" {
		t.Error("Result names")
	}
	for _, dt := range []struct {
		t DataType
		n int
	}{{Uint8, 1}, {BFloat16, 2}, {Float32, 4}, {Uint64, 8}, {DataType(12), 0}} {
		if dt.t.Size() != dt.n {
			t.Errorf("size of type %d: %d", dt.t, dt.t.Size())
		}
	}
}

// buildFake compiles testdata/fakenccl.c into a shared library.
func buildFake(t *testing.T, name string, defines ...string) string {
	t.Helper()
	if !builtWithNCCL {
		t.Skip("stub build: nothing is loaded")
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler here to build the stand-in library")
	}
	out := filepath.Join(t.TempDir(), name)
	args := append([]string{"-shared", "-fPIC", "-O1", "-o", out, "testdata/fakenccl.c"}, defines...)
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("cc %v: %v\n%s", args, err, b)
	}
	return out
}

func readLog(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	os.Remove(path)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestStandInLibrary drives the cgo layer against a library that logs what
// it is called with (it is not NCCL and moves nothing).
func TestStandInLibrary(t *testing.T) {
	lib := buildFake(t, "libfakenccl.so")
	logPath := filepath.Join(t.TempDir(), "calls.log")
	t.Setenv("FAKE_NCCL_LOG", logPath)
	t.Setenv("NCCL_P2P_DIRECT_DISABLE", "")
	os.Unsetenv("NCCL_P2P_DIRECT_DISABLE") // restored by t.Setenv

	l, err := LoadLibrary(lib)
	if err != nil {
		t.Fatal(err)
	}
	if l.Version() != 22803 || l.VersionString() != "2.28.3" {
		t.Errorf("version %d %q", l.Version(), l.VersionString())
	}
	if l2, _ := LoadLibrary(lib); l2 != l {
		t.Error("a second load of the same path is not the cached library")
	}
	id, err := l.UniqueID()
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range id {
		if b != byte(i^0x5a) {
			t.Fatalf("UniqueID byte %d = %#x", i, b)
		}
	}

	if _, err := l.InitAll([]int{3, 3}); !errors.Is(err, ErrInvalid) {
		t.Errorf("InitAll of a repeated device: %v", err)
	}
	comms, err := l.InitAll([]int{1, 0})
	if err != nil {
		t.Fatal(err)
	}
	if comms[0].Device() != 1 || comms[0].Rank() != 0 || comms[1].Device() != 0 || comms[1].Rank() != 1 {
		t.Errorf("comms: %+v %+v", comms[0], comms[1])
	}
	got := readLog(t, logPath)
	want := "initall n=2 devs=1,0 NCCL_NVLS_ENABLE=0 NCCL_P2P_DIRECT_DISABLE=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1"
	if len(got) != 1 || got[0] != want {
		t.Errorf("log of InitAll (the environment NCCL reads):\n got %q\nwant %q", got, want)
	}

	st0 := new(cudabridge.Context).WrapStream(0xabc0)
	st1 := new(cudabridge.Context).WrapStream(0xdef0)
	n := uint64(5<<30 + 3) // wider than 32 bits
	err = l.Group(
		Send(comms[0], 0x7f0000001000, n, Uint8, 1, st0),
		Recv(comms[1], 0x7f0000002000, n, Uint8, 0, st1))
	if err != nil {
		t.Fatal(err)
	}
	got = readLog(t, logPath)
	wantLines := []string{
		"groupstart",
		"send buf=0x7f0000001000 count=5368709123 type=1 peer=1 rank=0 stream=0xabc0",
		"recv buf=0x7f0000002000 count=5368709123 type=1 peer=0 rank=1 stream=0xdef0",
		"groupend",
	}
	if strings.Join(got, "\n") != strings.Join(wantLines, "\n") {
		t.Errorf("log of Group:\n got %q\nwant %q", got, wantLines)
	}

	// A failing call inside a group: the group is still closed, and the error names the op.
	err = l.Group(Send(comms[0], 0x1000, 7, BFloat16, 1, st0), Recv(comms[1], 0x2000, 7, BFloat16, 0, st1))
	var ne *Error
	if !errors.As(err, &ne) || ne.Func != "ncclSend" || ne.Code != InvalidArgument || !errors.Is(err, ErrInvalid) ||
		!strings.Contains(err.Error(), "op 0 of 2") || !strings.Contains(err.Error(), "fake last error") {
		t.Errorf("failing send: %v", err)
	}
	if got := readLog(t, logPath); len(got) != 4 || got[3] != "groupend" {
		t.Errorf("log after a failing send: %q", got)
	}

	// Arguments refused before NCCL sees them.
	for _, bad := range [][]Op{
		{Send(comms[0], 0x1000, 4, Uint8, 0, st0)},        // to itself
		{Send(comms[0], 0, 4, Uint8, 1, st0)},             // null buffer
		{Send(comms[0], 0x1000, 4, DataType(99), 1, st0)}, // unknown type
		{Send(comms[0], 0x1000, 4, Uint8, 1, nil)},        // no stream
	} {
		if err := l.Group(bad...); !errors.Is(err, ErrInvalid) {
			t.Errorf("Group(%+v): %v, want ErrInvalid", bad[0], err)
		}
	}
	if got := readLog(t, logPath); got[0] != "" {
		t.Errorf("refused groups reached the library: %q", got)
	}

	if err := comms[1].AsyncError(); err != nil {
		t.Errorf("AsyncError: %v", err)
	}
	t.Setenv("FAKE_NCCL_ASYNC", "1")
	err = comms[1].AsyncError()
	if !errors.As(err, &ne) || ne.Code != RemoteError || !strings.Contains(err.Error(), "rank 1") {
		t.Errorf("AsyncError with a remote error: %v", err)
	}
	if err := comms[0].AsyncError(); err != nil {
		t.Errorf("AsyncError of the healthy rank: %v", err)
	}

	for _, c := range comms {
		if err := c.Destroy(); err != nil {
			t.Error(err)
		}
		c.Destroy() // idempotent: logged once
	}
	if got := readLog(t, logPath); strings.Join(got, ";") != "destroy rank=0;destroy rank=1" {
		t.Errorf("log of Destroy: %q", got)
	}
	if err := l.Group(Send(comms[0], 0x1000, 4, Uint8, 1, st0)); !errors.Is(err, ErrClosed) {
		t.Errorf("Group on a destroyed communicator: %v", err)
	}
	if err := comms[0].AsyncError(); !errors.Is(err, ErrClosed) {
		t.Errorf("AsyncError on a destroyed communicator: %v", err)
	}

	// A library that puts the communicator on another device than asked is refused.
	t.Setenv("FAKE_NCCL_WRONG_DEV", "1")
	if _, err := l.InitAll([]int{0, 1}); err == nil || !strings.Contains(err.Error(), "asked for 0") {
		t.Errorf("InitAll with a device mismatch: %v", err)
	}
}

func TestStandInLibraryRefused(t *testing.T) {
	for _, c := range []struct {
		name, define, want string
	}{
		{"libnosend.so", "-DFAKE_NO_SEND", "has no ncclSend"},
		{"libold.so", "-DFAKE_VERSION=2604", "NCCL 2.6.4; vkzip needs 2.7"},
	} {
		lib := buildFake(t, c.name, c.define)
		l, err := LoadLibrary(lib)
		if !errors.Is(err, ErrNoNCCL) || l != nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrNoNCCL saying %q", c.name, err, c.want)
		}
	}
}
