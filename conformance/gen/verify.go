package main

import (
	"fmt"
	"testing/fstest"

	"github.com/vkzip/vkzip/conformance"
	"github.com/vkzip/vkzip/internal/spec"
)

// verifySpec refuses a SplitZip-4 corpus that internal/spec (the codec written from docs/FORMAT.md alone) does not
// reproduce case by case: bodies, v1 containers and, where present, v2 containers.
func verifySpec(format string, files map[string][]byte) error {
	if format != "splitzip4" {
		return nil
	}
	fsys := fstest.MapFS{
		"corpus/" + format + "/manifest.json": {Data: files["manifest.json"]},
		"corpus/" + format + "/data.bin":      {Data: files["data.bin"]},
	}
	cs, err := conformance.LoadFS(fsys)
	if err != nil {
		return err
	}
	if len(cs) != 1 {
		return fmt.Errorf("%d corpora loaded from one manifest", len(cs))
	}
	rep, err := spec.CheckSZ4Manifest(files["manifest.json"], cs[0].Input)
	if err != nil {
		return fmt.Errorf("the spec codec disagrees: %w", err)
	}
	fmt.Printf("gen: %s: spec codec agrees on %d cases (%d bodies, %d v1 containers, %d v2 containers)\n", format,
		rep.Cases, rep.Bodies, rep.Containers, rep.ContainersV2)
	return nil
}
