package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/vkzip/vkzip/codec"
)

// version overrides the module version: go build -ldflags "-X main.version=v1.2.3" ./cmd/vkzip
var version = ""

var versionVerb = &verb{
	name:    "version",
	args:    "[flags]",
	summary: "print the version, VCS revision and Go version of this binary",
	about: `
Prints the version of this binary: the one set at link time (-ldflags "-X main.version=..."), else the main
module's version from the build information ("(devel)" for a build from a source tree), with the VCS revision
and whether the tree was modified when the build recorded them, the Go version and the backends compiled in.`,
	examples: `  vkzip version
  vkzip version --json`,
	run: runVersion,
}

type versionInfo struct {
	Version  string   `json:"version"`
	Revision string   `json:"revision,omitempty"`
	Time     string   `json:"time,omitempty"`
	Modified *bool    `json:"modified,omitempty"`
	Go       string   `json:"go"`
	OS       string   `json:"os"`
	Arch     string   `json:"arch"`
	Backends []string `json:"backends"`
}

func buildVersion() versionInfo {
	vi := versionInfo{Version: version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		Backends: codec.Backends()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if vi.Version == "" {
			vi.Version = bi.Main.Version
		}
		vi.Go = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				vi.Revision = s.Value
			case "vcs.time":
				vi.Time = s.Value
			case "vcs.modified":
				m := s.Value == "true"
				vi.Modified = &m
			}
		}
	}
	if vi.Version == "" {
		vi.Version = "(unknown)"
	}
	return vi
}

func runVersion(ctx context.Context, v *verb, args []string) error {
	fs := newFlags(v)
	asJSON := fs.Bool("json", false, "print a JSON object")
	pos, err := parseArgs(v, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("version takes no arguments")
	}
	vi := buildVersion()
	if *asJSON {
		return writeJSON(os.Stdout, vi)
	}
	line := "vkzip " + vi.Version
	if vi.Revision != "" {
		line += " (" + vi.Revision
		if vi.Modified != nil && *vi.Modified {
			line += ", modified"
		}
		line += ")"
	}
	fmt.Printf("%s %s %s/%s, backends %v\n", line, vi.Go, vi.OS, vi.Arch, vi.Backends)
	return nil
}
