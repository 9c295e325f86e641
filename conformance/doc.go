// Package conformance proves that vkzip's backends are exact: every backend, on every device, must encode a fixed
// corpus to exactly the bytes the Go reference produced when the corpus was generated, decode it bitwise, decode
// every other backend's payloads, and reject invalid payloads with the error class the reference gives
// (docs/FORMAT.md §6). See docs/CONFORMANCE.md.
//
// The corpus is versioned and embedded (go:embed), one directory per format under corpus/: a manifest.json with
// the cases and their expected SHA-256s, and data.bin with the inputs that are stored rather than generated.
// It is written by
//
//	go run ./conformance/gen
//
// from the categories registered in the generator package (conformance/internal/corpusgen, which the vkzip
// binary does not link); a test there regenerates it and requires identical bytes, so the expectations only
// change on purpose, in a reviewed diff. A new format plugs in by registering its categories there (and, where
// needed, input generators with RegisterInput here: the runner rebuilds inputs from them) and generating its
// corpus directory: the runner reads whatever the manifests hold and needs no change.
//
// Run checks a set of backends against the corpus and returns a Report; `vkzip conformance` is its command line.
package conformance
