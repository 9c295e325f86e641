package shaders

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSPIRVFresh recompiles every kernel and fails if a committed .spv differs: run `go generate ./shaders`.
func TestSPIRVFresh(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc not installed: cannot check that the committed SPIR-V is fresh (apt-get install glslc)")
	}
	dir := t.TempDir()
	for _, n := range Names {
		out := filepath.Join(dir, n+".spv")
		cmd := exec.Command("glslc", "-fshader-stage=compute", "--target-env=vulkan1.1", "-O", n+".comp", "-o", out)
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", b)
		fresh, err := os.ReadFile(out)
		require.NoError(t, err)
		committed, err := SPIRV(n)
		require.NoError(t, err)
		require.True(t, bytes.Equal(fresh, committed), "%s.spv is stale: run go generate ./shaders", n)
	}
}

// TestSPIRVValid runs spirv-val on every kernel.
func TestSPIRVValid(t *testing.T) {
	if _, err := exec.LookPath("spirv-val"); err != nil {
		t.Skip("spirv-val not installed (apt-get install spirv-tools)")
	}
	for _, n := range Names {
		b, err := exec.Command("spirv-val", "--target-env", "vulkan1.1", n+".spv").CombinedOutput()
		require.NoError(t, err, "%s: %s", n, b)
	}
}

// TestGeneratedFresh regenerates layout.glsl (from codec/layout) and contracts.glsl (from contracts.go) and
// compares them with the committed files: the kernels' numbers and declarations must come from Go.
func TestGeneratedFresh(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	dir := t.TempDir()
	b, err := exec.Command("go", "run", "./gen", "-o", dir).CombinedOutput()
	require.NoError(t, err, "%s", b)
	for _, f := range []string{"layout.glsl", "contracts.glsl"} {
		want, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		committed, err := os.ReadFile(f)
		require.NoError(t, err, "%s is not committed: run go generate ./shaders", f)
		require.Equal(t, string(want), string(committed), "%s is stale: run go generate ./shaders", f)
	}
}

// TestKernelsSelectTheirContract: every kernel source defines its own KERNEL_<NAME>, and only that one, so that
// contracts.glsl declares exactly its contract.
func TestKernelsSelectTheirContract(t *testing.T) {
	for _, k := range Kernels {
		src, err := os.ReadFile(k.Name + ".comp")
		require.NoError(t, err)
		defs := regexp.MustCompile(`(?m)^#define (KERNEL_\w+)`).FindAllStringSubmatch(string(src), -1)
		require.Len(t, defs, 1, "%s.comp defines one KERNEL_ macro", k.Name)
		require.Equal(t, k.Macro(), defs[0][1], "%s.comp", k.Name)
	}
}

func TestSPIRVNoExtraCapabilities(t *testing.T) {
	// Portability: 32-bit storage access only (no 8/16-bit storage, no Int64 or Int16), except in the variants the
	// host picks by device features: each has a portable twin.
	const int64Cap, int16Cap = 11, 22
	gated := map[string]struct {
		caps []uint32
		twin string
	}{"huff_decode_i64": {[]uint32{int64Cap, int16Cap}, "huff_decode"}} // codec/vkcodec: huffTuning.Int64
	for _, n := range Names {
		b, err := SPIRV(n)
		require.NoError(t, err)
		require.Zero(t, len(b)%4)
		caps := capabilities(b)
		g, isGated := gated[n]
		if isGated {
			for _, c := range g.caps {
				require.Contains(t, caps, c, "%s is the variant that uses capability %d", n, c)
			}
			require.Contains(t, Names, g.twin, "%s has a portable twin", n)
		}
		for _, bad := range []uint32{4433, 4434, 4435, 4436, 4448, int64Cap, int16Cap} { // 16/8-bit storage, Int64, Int16
			if isGated && slices.Contains(g.caps, bad) {
				continue
			}
			require.NotContains(t, caps, bad, "%s uses capability %d", n, bad)
		}
	}
}

// capabilities lists the OpCapability operands of a SPIR-V module.
func capabilities(b []byte) []uint32 {
	w := func(i int) uint32 {
		return uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24
	}
	var caps []uint32
	for i := 5; i < len(b)/4; {
		op := w(i)
		n := int(op >> 16)
		if n == 0 {
			break
		}
		if op&0xFFFF == 17 { // OpCapability
			caps = append(caps, w(i+1))
		}
		i += n
	}
	return caps
}
