package shaders

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// contractProblems lists where module m disagrees with kernel k's contract: binding numbers, element types and
// qualifiers, SpecIds and defaults, push-constant member offsets and types, and, when m keeps its names (compiled
// without -O), the blocks', constants' and push members' names.
func contractProblems(k *Kernel, m *module) []string {
	var p []string
	bad := func(format string, a ...any) { p = append(p, fmt.Sprintf(k.Name+": "+format, a...)) }

	bufs, err := m.buffers()
	if err != nil {
		return []string{k.Name + ": " + err.Error()}
	}
	seen := map[uint32]bool{}
	for _, v := range bufs {
		if v.set != 0 {
			bad("a buffer in descriptor set %d", v.set)
		}
		if int(v.binding) >= len(k.Bindings) {
			bad("binding %d is not declared (%d bindings)", v.binding, len(k.Bindings))
			continue
		}
		seen[v.binding] = true
		b := k.Bindings[v.binding]
		if v.nonWritable != b.ReadOnly || v.nonRead != b.WriteOnly || v.coherent != b.Coherent {
			bad("binding %d (%s): readonly %v writeonly %v coherent %v in SPIR-V, %v %v %v declared", v.binding,
				b.Name, v.nonWritable, v.nonRead, v.coherent, b.ReadOnly, b.WriteOnly, b.Coherent)
		}
		if !slices.ContainsFunc(b.views(), func(w View) bool {
			return w.Elem == v.elem && (v.block == "" || w.Block == v.block && w.Array == v.array)
		}) {
			bad("binding %d (%s): block %q %s %s[] is none of its declared views %v", v.binding, b.Name, v.block,
				v.elem, v.array, b.views())
		}
	}
	for i, b := range k.Bindings {
		if !seen[uint32(i)] {
			bad("binding %d (%s) is declared but the kernel has no buffer there", i, b.Name)
		}
	}

	ids := map[uint32]bool{}
	for _, s := range m.specs {
		ids[s.id] = true
		i := slices.IndexFunc(k.Spec, func(d Spec) bool { return d.ID == s.id })
		if i < 0 {
			bad("SpecId %d (%q) is not declared", s.id, s.name)
			continue
		}
		d := k.Spec[i]
		if s.wgSize {
			if d.Name != "WG" {
				bad("the workgroup size is SpecId %d, declared as %s, not WG", s.id, d.Name)
			}
			continue
		}
		if s.value != d.Default {
			bad("SpecId %d (%s): default %d in SPIR-V, %d declared", s.id, d.Name, s.value, d.Default)
		}
		if s.name != "" && s.name != d.Name {
			bad("SpecId %d is %s in SPIR-V, %s declared", s.id, s.name, d.Name)
		}
	}
	if m.names != nil && len(m.names) > 0 { // an unoptimized module keeps every declared constant
		for _, d := range k.Spec {
			if !ids[d.ID] {
				bad("%s (SpecId %d) is declared but not in the kernel", d.Name, d.ID)
			}
		}
	}

	pm, err := m.push()
	if err != nil {
		return append(p, k.Name+": "+err.Error())
	}
	if k.Push == nil {
		if len(pm) > 0 {
			bad("a push-constant block of %d members, none declared", len(pm))
		}
		return p
	}
	want, err := k.pushMembers()
	if err != nil {
		return append(p, k.Name+": "+err.Error())
	}
	if len(pm) != len(want) {
		bad("%d push-constant members in SPIR-V, %d declared", len(pm), len(want))
		return p
	}
	for i, w := range want {
		g := pm[i]
		typ, name := w.typ, w.name
		if w.typ == "uint" && w.words > 1 {
			typ, name = fmt.Sprintf("uint[%d]", w.words), name[:len(name)-len(fmt.Sprintf("[%d]", w.words))]
		}
		if g.offset != w.offset || g.typ != typ || (g.name != "" && g.name != name) {
			bad("push member %d: %s %q at offset %d in SPIR-V, %s %q at %d declared", i, g.typ, g.name, g.offset,
				typ, name, w.offset)
		}
	}
	return p
}

// TestContractsMatchSPIRV reads every committed kernel and fails where it disagrees with its Go contract.
func TestContractsMatchSPIRV(t *testing.T) {
	for _, n := range Names {
		b, err := SPIRV(n)
		require.NoError(t, err)
		m, err := parseSPIRV(b)
		require.NoError(t, err, n)
		require.Empty(t, contractProblems(Lookup(n), m), "%s.spv disagrees with contracts.go (go generate ./shaders?)", n)
	}
}

// TestContractsMatchNames compiles every kernel without optimization, which keeps the names, and checks the names
// of its blocks, specialization constants and push members against the contract.
func TestContractsMatchNames(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc not installed: cannot compile the kernels with their names (apt-get install glslc)")
	}
	dir := t.TempDir()
	for _, n := range Names {
		out := filepath.Join(dir, n+".spv")
		b, err := exec.Command("glslc", "-fshader-stage=compute", "--target-env=vulkan1.1", "-g", n+".comp", "-o", out).CombinedOutput()
		require.NoError(t, err, "%s", b)
		b, err = os.ReadFile(out)
		require.NoError(t, err)
		m, err := parseSPIRV(b)
		require.NoError(t, err, n)
		require.NotEmpty(t, m.names, n)
		require.Empty(t, contractProblems(Lookup(n), m), n)
	}
}

// TestContractMismatchDetected perturbs copies of a contract, one way each, and expects the check to see it, on
// the committed SPIR-V and on a named compile.
func TestContractMismatchDetected(t *testing.T) {
	b, err := SPIRV("sz4_encode")
	require.NoError(t, err)
	m, err := parseSPIRV(b)
	require.NoError(t, err)
	orig := Lookup("sz4_encode")
	require.Empty(t, contractProblems(orig, m))

	type swapped struct { // SZ4EncodePush with two members exchanged
		CB        [4]uint32 `glsl:"cb"`
		SegFirst  uint32    `glsl:"segFirst"`
		Chunks    uint32    `glsl:"chunks"`
		SegChunks uint32    `glsl:"segChunks"`
		LastLen   uint32    `glsl:"lastLen"`
		InvC      uint32    `glsl:"invC"`
		InvL      uint32    `glsl:"invL"`
		ShLowFull uint32    `glsl:"shLowFull"`
		ShLowLast uint32    `glsl:"shLowLast"`
		Checksums uint32    `glsl:"checksums"`
		SrcBase   uint32    `glsl:"srcBase"`
		CodeBase  uint32    `glsl:"codeBase"`
		LowBase   uint32    `glsl:"lowBase"`
		TableBase uint32    `glsl:"tableBase"`
	}
	type flat struct { // cb as four uints: same offsets, other types
		CB     [4]uint32 `glsl:"cb"`
		Chunks uint32    `glsl:"chunks"`
	}
	perturb := map[string]func(k *Kernel){
		"binding dropped":        func(k *Kernel) { k.Bindings = k.Bindings[:len(k.Bindings)-1] },
		"bindings swapped":       func(k *Kernel) { k.Bindings[1], k.Bindings[2] = k.Bindings[2], k.Bindings[1] },
		"readonly lost":          func(k *Kernel) { k.Bindings[5].ReadOnly = false },
		"view type changed":      func(k *Kernel) { k.Bindings[2].Views = []View{view("Lows", "lows", "uvec4")} },
		"spec id moved":          func(k *Kernel) { k.Spec[1].ID = 9 },
		"spec default changed":   func(k *Kernel) { k.Spec[2].Default = 2 },
		"WG renamed":             func(k *Kernel) { k.Spec[0].Name = "THREADS" },
		"push members swapped":   func(k *Kernel) { k.Push = reflect.TypeFor[swapped]() },
		"push member missing":    func(k *Kernel) { k.Push = reflect.TypeFor[flat]() },
		"push of another kernel": func(k *Kernel) { k.Push = reflect.TypeFor[SZ4PlacePush]() },
		"push dropped":           func(k *Kernel) { k.Push = nil },
	}
	for name, f := range perturb {
		t.Run(name, func(t *testing.T) {
			k := *orig
			k.Bindings = slices.Clone(orig.Bindings)
			k.Spec = slices.Clone(orig.Spec)
			f(&k)
			if name == "WG renamed" || name == "push members swapped" {
				// Same numbers, other names: only a module that keeps its names tells.
				if _, err := exec.LookPath("glslc"); err != nil {
					t.Skip("glslc not installed")
				}
				out := filepath.Join(t.TempDir(), "k.spv")
				b, err := exec.Command("glslc", "-fshader-stage=compute", "--target-env=vulkan1.1", "-g", "sz4_encode.comp",
					"-o", out).CombinedOutput()
				require.NoError(t, err, "%s", b)
				b, err = os.ReadFile(out)
				require.NoError(t, err)
				named, err := parseSPIRV(b)
				require.NoError(t, err)
				require.Empty(t, contractProblems(orig, named))
				require.NotEmpty(t, contractProblems(&k, named), "%s not detected", name)
				return
			}
			require.NotEmpty(t, contractProblems(&k, m), "%s not detected", name)
		})
	}
	// The perturbations worked on copies.
	require.Empty(t, contractProblems(Lookup("sz4_encode"), m))
}
