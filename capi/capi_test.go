//go:build cgo

package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/tensorfile"
)

// cFunc is a C function signature with parameter names dropped and const ignored: "char*", "size_t", ...
type cFunc struct {
	ret    string
	params []string
}

func (f cFunc) String() string { return f.ret + "(" + strings.Join(f.params, ", ") + ")" }

var (
	cComment = regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`)
	cProto   = regexp.MustCompile(`(?m)^([A-Za-z_][\w \t\*]*?)\b(vkzip_\w+)\s*\(([^)]*)\)\s*;`)
	cDef     = regexp.MustCompile(`(?m)^([A-Za-z_][\w \t\*]*?)\b(vkzip_\w+)\s*\(([^)]*)\)\s*\{`)
)

// cType normalises a C type: const dropped, stars attached ("const char *" → "char*").
func cType(s string) string {
	s = regexp.MustCompile(`\bconst\b`).ReplaceAllString(s, " ")
	stars := strings.Count(s, "*")
	base := strings.Join(strings.Fields(strings.ReplaceAll(s, "*", " ")), " ")
	return base + strings.Repeat("*", stars)
}

// cParam is the type of one C parameter declaration ("const uint8_t codebook[16]" → "uint8_t*").
func cParam(p string) string {
	p = strings.TrimSpace(p)
	stars := 0
	if i := strings.IndexByte(p, '['); i >= 0 {
		p, stars = p[:i], 1
	}
	p = strings.ReplaceAll(p, "*", " * ")
	f := strings.Fields(regexp.MustCompile(`\bconst\b`).ReplaceAllString(p, " "))
	if len(f) > 1 && f[len(f)-1] != "*" {
		f = f[:len(f)-1] // the parameter's name
	}
	return cType(strings.Join(f, " ")) + strings.Repeat("*", stars)
}

func parseC(t *testing.T, src string, re *regexp.Regexp) map[string]cFunc {
	t.Helper()
	src = cComment.ReplaceAllString(src, "")
	out := map[string]cFunc{}
	for _, m := range re.FindAllStringSubmatch(src, -1) {
		f := cFunc{ret: cType(m[1])}
		if ps := strings.TrimSpace(m[3]); ps != "void" && ps != "" {
			for _, p := range strings.Split(ps, ",") {
				f.params = append(f.params, cParam(p))
			}
		}
		if _, dup := out[m[2]]; dup {
			t.Fatalf("%s declared twice", m[2])
		}
		out[m[2]] = f
	}
	return out
}

// goCType is the C type cgo gives a Go parameter type of an export.
func goCType(t *testing.T, e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return goCType(t, x.X) + "*"
	case *ast.SelectorExpr:
		pkg := x.X.(*ast.Ident).Name
		switch {
		case pkg == "C":
			return x.Sel.Name
		case pkg == "unsafe" && x.Sel.Name == "Pointer":
			return "void*"
		}
	}
	t.Fatalf("export parameter of type %T has no C mapping here", e)
	return ""
}

// goExports parses the package's //export functions into their C signatures.
func goExports(t *testing.T) map[string]cFunc {
	fset := token.NewFileSet()
	files, _ := filepath.Glob("*.go")
	out := map[string]cFunc{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Doc == nil {
				continue
			}
			var exported string
			for _, c := range fd.Doc.List {
				if s, ok := strings.CutPrefix(c.Text, "//export "); ok {
					exported = strings.TrimSpace(s)
				}
			}
			if exported == "" {
				continue
			}
			if exported != fd.Name.Name {
				t.Errorf("//export %s on func %s", exported, fd.Name.Name)
			}
			cf := cFunc{ret: "void"}
			if fd.Type.Results != nil {
				cf.ret = goCType(t, fd.Type.Results.List[0].Type)
			}
			for _, p := range fd.Type.Params.List {
				for range max(len(p.Names), 1) {
					cf.params = append(cf.params, goCType(t, p.Type))
				}
			}
			out[exported] = cf
		}
	}
	return out
}

// TestHeaderMatchesExports fails when include/vkzip.h, shim.c and the Go exports drift apart: every function of
// the header is defined in shim.c with the same signature (the C compiler checks that too), every one backed by Go
// has an export vkzipgo_NAME with the same C parameter and result types that shim.c calls, and no export is
// orphaned.
func TestHeaderMatchesExports(t *testing.T) {
	hdr, err := os.ReadFile("include/vkzip.h")
	if err != nil {
		t.Fatal(err)
	}
	shim, err := os.ReadFile("shim.c")
	if err != nil {
		t.Fatal(err)
	}
	public := parseC(t, string(hdr), cProto)
	defs := parseC(t, string(shim), cDef)
	exports := goExports(t)
	if len(public) < 20 {
		t.Fatalf("parsed only %d functions from the header: %v", len(public), public)
	}
	cOnly := []string{"vkzip_abi_version", "vkzip_last_error", "vkzip_error_class", "vkzip_free"}
	for name, want := range public {
		def, ok := defs[name]
		if !ok {
			t.Errorf("%s is declared in vkzip.h but not defined in shim.c", name)
			continue
		}
		if def.String() != want.String() {
			t.Errorf("%s: header %v, shim.c %v", name, want, def)
		}
		goName := "vkzipgo_" + strings.TrimPrefix(name, "vkzip_")
		exp, ok := exports[goName]
		switch {
		case slices.Contains(cOnly, name):
			if ok {
				t.Errorf("%s is C only, but %s is exported", name, goName)
			}
		case !ok:
			t.Errorf("%s has no Go export %s", name, goName)
		default:
			if exp.String() != want.String() {
				t.Errorf("%s: header %v, Go export %s %v", name, want, goName, exp)
			}
			if !bytes.Contains(shim, []byte(goName+"(")) {
				t.Errorf("shim.c never calls %s", goName)
			}
		}
	}
	for name := range exports {
		if _, ok := public["vkzip_"+strings.TrimPrefix(name, "vkzipgo_")]; !ok {
			t.Errorf("export %s has no function in vkzip.h", name)
		}
	}
	for name := range defs {
		if _, ok := public[name]; !ok && !strings.HasPrefix(name, "vkzip__") { // vkzip__: internal (shim.h)
			t.Errorf("shim.c defines %s, which vkzip.h does not declare", name)
		}
	}
}

// TestEncodeBound checks vkzip_encode_bound's promise on data that compresses worst (random bits) and best
// (zeros), in every format, at sizes around chunk and block edges.
func TestEncodeBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dtypes := []layout.DType{layout.DTypeBF16, layout.DTypeF16, layout.DTypeF32, layout.DTypeF8E4M3, layout.DTypeF8E5M2, layout.DTypeI32}
	sizes := []int{0, 1, 7, 64, 1000, 1024, 1025, 65536, 65537, 200_001}
	if testing.Short() {
		sizes = sizes[:len(sizes)-1]
	}
	for _, spec := range append(codec.FormatNames(), "huff,auto", "splitzip4,xw4,xw3") {
		c, err := codec.New(codec.WithBackendName("cpu", ""), codec.WithFormat(spec))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dtypes {
			for _, n := range sizes {
				for _, fill := range []string{"random", "zero"} {
					data := make([]byte, n*d.Size())
					if fill == "random" {
						for i := range data {
							data[i] = byte(rng.Uint32())
						}
					}
					for _, shape := range [][]uint64{nil, {uint64(n), 1}} {
						ndim := -1
						if shape != nil {
							ndim = len(shape)
						}
						bound, err := encodeBound(d, uint64(len(data)), ndim)
						if err != nil {
							t.Fatal(err)
						}
						p, err := encodeTensor(c, d, data, shape, nil)
						if err != nil {
							t.Fatalf("%s %v %d: %v", spec, d, n, err)
						}
						if uint64(len(p))+maxAlignOffset > bound {
							t.Errorf("format %s, %v × %d (%s, ndim %d): payload %d + alignment offset %d > bound %d",
								spec, d, n, fill, ndim, len(p), maxAlignOffset, bound)
						}
					}
				}
			}
		}
		c.Close()
	}
	if _, err := encodeBound(layout.DTypeF8E4M3, ^uint64(0), -1); className(statusOf(err)) != "too_large" {
		t.Errorf("bound of 2^64-1 bytes: %v", err)
	}
	if _, err := encodeBound(layout.DTypeF32, 6, -1); className(statusOf(err)) != "invalid_argument" {
		t.Errorf("bound of 6 bytes of f32: %v", err)
	}
}

// TestBufferPayloadIsCLIRaw: a buffer's payload is the CLI's for the same bytes read as a raw file from stdin
// (`vkzip encode --kind raw --dtype D -`), which reaches the codec through tensorfile and the CLI's records.
func TestBufferPayloadIsCLIRaw(t *testing.T) {
	data, err := os.ReadFile("../cmd/vkzip/testdata/kv-layer0-k-i2.npy")
	if err != nil {
		t.Fatal(err)
	}
	data = data[128:] // the npy header: the rest is 32,768 bytes of BF16
	for _, prefer := range []string{"", "speed", "balanced", "ratio"} {
		l, _ := codec.PreferFormats(prefer)
		cf := config{backend: "cpu", formats: l}
		opts, err := cf.options()
		if err != nil {
			t.Fatal(err)
		}
		c, err := codec.New(append(opts, codec.WithBackendName("cpu", ""))...)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []layout.DType{layout.DTypeBF16, layout.DTypeF16, layout.DTypeF8E4M3, layout.DTypeF32} {
			var cli bytes.Buffer // `vkzip encode --kind raw --dtype D -`
			if _, err := c.EncodeFile(t.Context(), &cli, bytes.NewReader(data), codec.FileOptions{
				OpenOptions: tensorfile.OpenOptions{Kind: tensorfile.Raw, DType: d}}); err != nil {
				t.Fatal(err)
			}
			want := cli.Bytes()
			got, err := encodeTensor(c, d, data, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("prefer %q, %v: buffer payload (%d bytes) differs from the CLI's raw payload (%d)", prefer, d, len(got), len(want))
			}
		}
		c.Close()
	}
}

// TestStatusClasses: each codec error class maps to its own status, and a panic becomes an internal error.
func TestStatusClasses(t *testing.T) {
	want := map[error]string{
		codec.ErrFormat: "format", codec.ErrVersion: "version", codec.ErrTruncated: "truncated",
		codec.ErrChecksum: "checksum", codec.ErrCorrupt: "corrupt", codec.ErrNonCanonical: "noncanonical",
		codec.ErrTooLarge: "too_large", codec.ErrInvalidInput: "invalid_argument", codec.ErrUnsupported: "unsupported",
		codec.ErrNoDevice: "no_device", codec.ErrDeviceLost: "device_lost", os.ErrNotExist: "io",
	}
	for err, cls := range want {
		wrapped := fmt.Errorf("context: %w", &codec.Error{Class: err, Chunk: -1})
		if err == os.ErrNotExist {
			wrapped = &os.PathError{Op: "open", Path: "x", Err: err}
		}
		if got := className(statusOf(wrapped)); got != cls {
			t.Errorf("%v: class %q, want %q", err, got, cls)
		}
	}
	if got := className(statusOf(errors.New("something else"))); got != "internal" {
		t.Errorf("an unclassified error: %q", got)
	}
	if got := className(guard(func() error { panic("boom") })); got != "internal" {
		t.Errorf("a panic: %q", got)
	}
	if got := className(guard(func() error { var p *int; return fmt.Errorf("%d", *p) })); got != "internal" {
		t.Errorf("a nil dereference: %q", got)
	}
	if got := className(guard(func() error { return nil })); got != "ok" {
		t.Errorf("success: %q", got)
	}
}

// TestCodebookBytes: a codebook is 16 distinct exponents or calibration JSON; anything else is refused.
func TestCodebookBytes(t *testing.T) {
	good := make([]byte, 16)
	for i := range good {
		good[i] = byte(110 + i)
	}
	if _, err := parseCodebook(good); err != nil {
		t.Error(err)
	}
	bad := slices.Clone(good)
	bad[5] = bad[6]
	if _, err := parseCodebook(bad); className(statusOf(err)) != "corrupt" {
		t.Errorf("repeated exponent: %v", err)
	}
	for _, b := range [][]byte{good[:15], []byte("{not json"), []byte("   ")} {
		if _, err := parseCodebook(b); className(statusOf(err)) != "invalid_argument" {
			t.Errorf("%q: %v", b, err)
		}
	}
}
