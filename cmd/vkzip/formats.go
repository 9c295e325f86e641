package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/vkcodec"
)

var formatsVerb = &verb{
	name:    "formats",
	args:    "[flags]",
	summary: "list the tensor formats, the dtypes they code and what each is for",
	about: `
Lists the body formats this binary knows (docs/FORMAT.md §4): id, name, the dtypes it codes, chunk sizes, whether
it uses a calibrated codebook, the backends that run it, the dtypes it is the encoder's default for and what it is
for. The names are what 'vkzip encode --format' takes; a tensor the chosen formats do not code gets its dtype's
default, and a tensor no format codes (another dtype, no values) is stored.`,
	examples: `  vkzip formats
  vkzip formats --json`,
	run: runFormats,
}

// formatOut is one format as `formats` reports it.
type formatOut struct {
	ID        uint8    `json:"id"`
	Name      string   `json:"name"`
	Aliases   []string `json:"aliases,omitempty"`
	DTypes    []string `json:"dtypes"` // ["any"] for stored
	MinChunk  uint64   `json:"min_chunk,omitempty"`
	MaxChunk  uint64   `json:"max_chunk,omitempty"`
	Codebook  bool     `json:"codebook"`
	MaxValues uint64   `json:"max_values,omitempty"`
	Backends  []string `json:"backends"`
	Default   []string `json:"default_for,omitempty"` // dtypes it is the encoder's default for
	About     string   `json:"about"`
}

func runFormats(_ context.Context, v *verb, args []string) error {
	fs := newFlags(v)
	asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
	pos, err := parseArgs(v, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("formats takes no arguments")
	}
	return listFormats(os.Stdout, *asJSON)
}

func formatList() []formatOut {
	gpu := vkcodec.Formats()
	cpu := codec.NewCPUBackend(1)
	var out []formatOut
	for _, f := range codec.Formats() {
		fo := formatOut{ID: f.ID, Name: f.Name, Aliases: f.Aliases, About: f.About}
		if f.Chunked() {
			fo.MinChunk, fo.MaxChunk, fo.MaxValues = 1<<f.MinShift, 1<<f.MaxShift, f.MaxValues
		}
		for _, d := range f.DTypeList() {
			fo.DTypes = append(fo.DTypes, d.String())
			fo.Codebook = fo.Codebook || f.UsesCodebook(d)
		}
		if len(fo.DTypes) == 0 {
			fo.DTypes = []string{"any"}
		}
		if cpu.SupportsFormat(f.ID) {
			fo.Backends = append(fo.Backends, "cpu")
		}
		if slices.Contains(gpu, f.ID) {
			fo.Backends = append(fo.Backends, "vulkan")
		}
		fo.Default = defaultFor(f)
		out = append(out, fo)
	}
	return out
}

func listFormats(w io.Writer, asJSON bool) error {
	list := formatList()
	if asJSON {
		return writeJSON(w, list)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "id\tname\tdtypes\tchunk\tcodebook\tbackends\tdefault for\twhat for")
	for _, f := range list {
		chunk, cb := "-", "-"
		if f.MaxChunk != 0 {
			chunk = fmt.Sprintf("%d-%d", f.MinChunk, f.MaxChunk)
		}
		if f.Codebook {
			cb = "yes"
		}
		name := f.Name
		if len(f.Aliases) > 0 {
			name += " (" + strings.Join(f.Aliases, ", ") + ")"
		}
		def := "-"
		if len(f.Default) > 0 {
			def = strings.Join(f.Default, ",")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.ID, name, strings.Join(f.DTypes, ","), chunk, cb,
			strings.Join(f.Backends, ","), def, f.About)
	}
	return tw.Flush()
}

// defaultFor lists the dtypes an encoder without --format codes in f.
func defaultFor(f *codec.Format) []string {
	var out []string
	defaults, _ := codec.ParseFormats("")
	for _, d := range f.DTypes {
		for _, id := range defaults {
			if g, ok := codec.LookupFormat(id); ok && g.Accepts(d, 1) {
				if g.ID == f.ID {
					out = append(out, d.String())
				}
				break
			}
		}
	}
	return out
}
