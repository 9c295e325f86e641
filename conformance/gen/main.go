// Command gen writes the conformance corpus (conformance/corpus/<format>/manifest.json and data.bin) from the
// categories registered in package conformance/internal/corpusgen, computing every expectation with the Go reference backend.
//
//	go run ./conformance/gen                     # regenerate (from the repository root)
//	go run ./conformance/gen -import-kv FILE     # first copy the real KV samples from a safetensors file
//
// Regenerating must not change a committed byte unless a case or the reference changed on purpose: review the
// diff of conformance/corpus/ and bump the format's Version in the registration when expectations change.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vkzip/vkzip/conformance/internal/corpusgen"
	"github.com/vkzip/vkzip/tensorfile"
)

func main() {
	dir := flag.String("dir", "conformance/corpus", "corpus directory (read for sources, written)")
	importKV := flag.String("import-kv", "", "copy the real KV samples from this safetensors file first")
	flag.Parse()
	if err := run(*dir, *importKV); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir, importKV string) error {
	if importKV != "" {
		if err := copyKV(importKV, filepath.Join(dir, "splitzip4", corpusgen.KVSourceFile)); err != nil {
			return err
		}
	}
	corpusgen.Verify = verifySpec
	return corpusgen.Generate(os.DirFS(dir), dir)
}

// copyKV writes the BF16 data of the sample tensors, concatenated, to dst.
func copyKV(src, dst string) error {
	f, err := tensorfile.Open(src, tensorfile.OpenOptions{})
	if err != nil {
		return err
	}
	defer f.Close()
	var out []byte
	for _, name := range corpusgen.KVSampleNames() {
		t, ok := f.Lookup(name)
		if !ok {
			return fmt.Errorf("%s: no tensor %s", src, name)
		}
		out = append(out, t.Data...)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, out, 0o644)
}
