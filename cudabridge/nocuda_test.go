package cudabridge

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// EnvRequireCUDA makes a missing CUDA driver a test failure instead of a
// skip (set on the GPU machine).
const EnvRequireCUDA = "VKZIP_REQUIRE_CUDA"

func TestBogusLibraryIsErrNoCUDA(t *testing.T) {
	dir := t.TempDir()
	notALib := filepath.Join(dir, "libcuda.so.1")
	os.WriteFile(notALib, []byte("not an ELF file"), 0o644)
	for _, path := range []string{"/nonexistent/libcuda.so.1", notALib, "libc.so.6", ""} {
		d, err := LoadLibrary(path)
		if !errors.Is(err, ErrNoCUDA) || d != nil {
			t.Errorf("LoadLibrary(%q) = %v, %v; want ErrNoCUDA", path, d, err)
		}
	}
	t.Setenv(EnvLib, "/nonexistent/libcuda.so.1")
	if LibraryPath() != "/nonexistent/libcuda.so.1" {
		t.Errorf("LibraryPath ignores %s", EnvLib)
	}
	if _, err := Load(); !errors.Is(err, ErrNoCUDA) {
		t.Errorf("Load with a bogus %s: %v", EnvLib, err)
	}
}

// TestNoDriverHere checks the behaviour on a machine without the NVIDIA
// driver (CI, developers' machines): Load fails with ErrNoCUDA, cleanly.
func TestNoDriverHere(t *testing.T) {
	d, err := Load()
	if err == nil {
		t.Skipf("a CUDA driver is installed here (%s, CUDA %s): nothing to check", d.Path(), d.VersionString())
	}
	if !errors.Is(err, ErrNoCUDA) {
		t.Fatalf("Load without a driver: %v, want ErrNoCUDA", err)
	}
	if os.Getenv(EnvRequireCUDA) == "1" {
		t.Fatalf("%s=1 but: %v", EnvRequireCUDA, err)
	}
	t.Logf("as expected: %v", err)
}

func TestErrorClasses(t *testing.T) {
	e := &Error{Func: "cuMemCreate", Code: ErrorNotSupported, Name: "CUDA_ERROR_NOT_SUPPORTED"}
	if !errors.Is(e, ErrUnsupported) || errors.Is(e, ErrNoCUDA) {
		t.Errorf("classes of %v", e)
	}
	if !errors.Is(&Error{Code: ResultMissingSymbol}, ErrUnsupported) || !errors.Is(&Error{Code: ErrorInvalidValue}, ErrInvalid) {
		t.Error("missing symbol / invalid value classes")
	}
	if s := e.Error(); s != "cudabridge: cuMemCreate: CUDA_ERROR_NOT_SUPPORTED" {
		t.Errorf("message %q", s)
	}
	if Result(12345).String() != "CUresult(12345)" || ErrorNoDevice.String() != "CUDA_ERROR_NO_DEVICE" {
		t.Error("Result names")
	}
	c := Counters{HostStagedBytes: 10, DeviceCopyBytes: 5, ZeroCopyBytes: 7}
	if d := c.Sub(Counters{HostStagedBytes: 4, DeviceCopyBytes: 5, ZeroCopyBytes: 1}); d != (Counters{6, 0, 6}) {
		t.Errorf("Sub: %+v", d)
	}
}
