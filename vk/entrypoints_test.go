//go:build cgo

package vk

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
)

// Section headings of doc.go whose tables list entry points.
const (
	docVulkanGoHeading = "vulkan-go entry points"
	docCLayerHeading   = "C layer entry points"
)

var (
	vkNameRE = regexp.MustCompile(`\bvk[A-Z][A-Za-z0-9]*\b`)
	// A string literal naming an entry point, anywhere in the C layer.
	cLiteralRE = regexp.MustCompile(`"(vk[A-Z][A-Za-z0-9]*)"`)
	// A lookup call and its name argument.
	cLookupRE = regexp.MustCompile(`\b(g_gipa|GetDeviceProcAddr|dlsym)\s*\(\s*[^,()]*,\s*([^)]*)\)`)
)

// docEntryPoints parses doc.go: the C layer table (name → reason) and the
// vulkan-go table (names). Table rows are tab-indented comment lines.
func docEntryPoints(src string) (cLayer map[string]string, vgo []string, err error) {
	cLayer = map[string]string{}
	section := ""
	for i, line := range strings.Split(src, "\n") {
		if h, ok := strings.CutPrefix(line, "// # "); ok {
			section = strings.TrimSpace(h)
			continue
		}
		row, ok := strings.CutPrefix(line, "//\t")
		if !ok {
			continue
		}
		switch section {
		case docVulkanGoHeading:
			vgo = append(vgo, vkNameRE.FindAllString(row, -1)...)
		case docCLayerHeading:
			name, reason, _ := strings.Cut(strings.TrimSpace(row), " ")
			if !vkNameRE.MatchString(name) {
				return nil, nil, fmt.Errorf("doc.go:%d: C layer row %q does not start with an entry point", i+1, row)
			}
			if strings.TrimSpace(reason) == "" {
				return nil, nil, fmt.Errorf("doc.go:%d: %s has no reason", i+1, name)
			}
			if _, dup := cLayer[name]; dup {
				return nil, nil, fmt.Errorf("doc.go:%d: %s listed twice", i+1, name)
			}
			cLayer[name] = strings.TrimSpace(reason)
		}
	}
	if len(cLayer) == 0 || len(vgo) == 0 {
		return nil, nil, fmt.Errorf("doc.go has no %q or %q table", docCLayerHeading, docVulkanGoHeading)
	}
	return cLayer, vgo, nil
}

// cLayerEntryPoints returns every entry-point name the C source mentions
// as a string literal (what it passes to vkGetInstanceProcAddr,
// vkGetDeviceProcAddr and dlsym, directly or through LOADI/LOADD). A
// lookup whose name argument is not a literal is an error unless it is
// one of allowedDynamic (the LOADI/LOADD macro bodies and vkz_resolve,
// which only compares vulkan-go's addresses).
func cLayerEntryPoints(src string, allowedDynamic []string) (map[string]bool, error) {
	names := map[string]bool{}
	for _, m := range cLiteralRE.FindAllStringSubmatch(src, -1) {
		names[m[1]] = true
	}
	var errs []string
	for _, m := range cLookupRE.FindAllStringSubmatch(src, -1) {
		arg := strings.TrimSpace(m[2])
		if strings.HasPrefix(arg, `"`) || slices.Contains(allowedDynamic, arg) {
			continue
		}
		errs = append(errs, fmt.Sprintf("%s with a non-literal name %q", m[1], arg))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("C layer: %s", strings.Join(errs, "; "))
	}
	return names, nil
}

// allowedDynamicLookups are the lookups of vkz.c whose name is a variable.
var allowedDynamicLookups = []string{"name", "names[i]"}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// diff returns the names in a but not in b.
func diff(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func set(names []string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// TestCLayerEntryPointsDocumented fails when vkz.c/vkz.h name an entry
// point that doc.go's C layer table does not list, when the table lists
// one the C layer no longer loads, or when an entry point is listed for
// both bindings.
func TestCLayerEntryPointsDocumented(t *testing.T) {
	cDoc, vgoDoc, err := docEntryPoints(readFile(t, "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	loaded := map[string]bool{}
	for _, f := range []string{"vkz.c", "vkz.h"} {
		names, err := cLayerEntryPoints(readFile(t, f), allowedDynamicLookups)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for n := range names {
			loaded[n] = true
		}
	}
	documented := set(sortedKeys(cDoc))
	if missing := diff(loaded, documented); len(missing) > 0 {
		t.Errorf("the C layer loads entry points doc.go's %q table does not list: %v", docCLayerHeading, missing)
	}
	if stale := diff(documented, loaded); len(stale) > 0 {
		t.Errorf("doc.go's %q table lists entry points the C layer does not load: %v", docCLayerHeading, stale)
	}
	for _, n := range vgoDoc {
		if documented[n] {
			t.Errorf("%s is listed for both the C layer and vulkan-go", n)
		}
	}
}

// vulkanGoCommands returns the Vulkan commands vulkan-go wraps: the
// functions of its vulkan.go (one per command, named without "vk").
func vulkanGoCommands(t *testing.T) map[string]bool {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goBin, "list", "-m", "-f", "{{.Dir}}", "github.com/vulkan-go/vulkan").Output()
	if err != nil {
		t.Fatalf("locating vulkan-go: %v", err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(strings.TrimSpace(string(out)), "vulkan.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmds := map[string]bool{}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.IsExported() {
			cmds["vk"+fn.Name.Name] = true
		}
	}
	if len(cmds) < 100 {
		t.Fatalf("found only %d vulkan-go commands", len(cmds))
	}
	return cmds
}

// vulkanGoCalls returns the vulkan-go commands the package's non-test Go
// files call.
func vulkanGoCalls(t *testing.T, cmds map[string]bool) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "vulkan" && cmds["vk"+sel.Sel.Name] {
				used["vk"+sel.Sel.Name] = true
			}
			return true
		})
	}
	return used
}

// vulkanGoGlobalEntryPoints are the vulkan-go commands that need no
// instance (vulkan.Init resolves them), so bindVulkanGo does not check them.
var vulkanGoGlobalEntryPoints = []string{"vkEnumerateInstanceLayerProperties"}

// TestVulkanGoEntryPointsDocumented fails when the package calls a
// vulkan-go command that doc.go's vulkan-go table or vulkanGoEntryPoints
// (the list bindVulkanGo verifies per instance) does not list, or when
// either lists one it does not call.
func TestVulkanGoEntryPointsDocumented(t *testing.T) {
	_, vgoDoc, err := docEntryPoints(readFile(t, "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	used := vulkanGoCalls(t, vulkanGoCommands(t))
	documented := set(vgoDoc)
	if missing := diff(used, documented); len(missing) > 0 {
		t.Errorf("vulkan-go commands called but not in doc.go's %q table: %v", docVulkanGoHeading, missing)
	}
	if stale := diff(documented, used); len(stale) > 0 {
		t.Errorf("doc.go's %q table lists commands the package does not call: %v", docVulkanGoHeading, stale)
	}
	checked := set(append(slices.Clone(vulkanGoEntryPoints), vulkanGoGlobalEntryPoints...))
	if missing := diff(used, checked); len(missing) > 0 {
		t.Errorf("vulkan-go commands called but not in vulkanGoEntryPoints: %v", missing)
	}
	if stale := diff(checked, used); len(stale) > 0 {
		t.Errorf("vulkanGoEntryPoints lists commands the package does not call: %v", stale)
	}
}

// TestEntryPointChecksFail shows the checks above fail on an undocumented
// entry point and on a lookup by a computed name.
func TestEntryPointChecksFail(t *testing.T) {
	doc := "// # " + docCLayerHeading + "\n//\n//\tvkQueueSubmit  hot path\n" +
		"// # " + docVulkanGoHeading + "\n//\n//\tvkCmdDispatch\n"
	cDoc, _, err := docEntryPoints(doc)
	if err != nil {
		t.Fatal(err)
	}
	src := `LOADD(QueueSubmit, "vkQueueSubmit");
	LOADD(CmdDrawIndirect, "vkCmdDrawIndirect");`
	names, err := cLayerEntryPoints(src, allowedDynamicLookups)
	if err != nil {
		t.Fatal(err)
	}
	if got := diff(names, set(sortedKeys(cDoc))); !slices.Equal(got, []string{"vkCmdDrawIndirect"}) {
		t.Errorf("undocumented entry points = %v, want [vkCmdDrawIndirect]", got)
	}
	if _, err := cLayerEntryPoints(`f = g_gipa(inst, someName);`, allowedDynamicLookups); err == nil {
		t.Error("a lookup by a computed name passed")
	}
	if _, _, err := docEntryPoints("// # " + docCLayerHeading + "\n//\tvkQueueSubmit\n// # " + docVulkanGoHeading + "\n//\tvkCmdDispatch\n"); err == nil {
		t.Error("a C layer row without a reason passed")
	}
}
