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
it uses a calibrated codebook, the backends that run it, the dtypes it is the encoder's default for, the
'vkzip encode --prefer' modes that pick it, its measured speed and what it is for. Speeds are GB/s of encode and
decode on one H100 (vkzip bench --backend vulkan --size 512MiB, kvlike data, converted for the other dtypes;
measure your own device with 'vkzip bench').

The names are what 'vkzip encode --format' and codec.WithFormat take: each tensor is coded in the first listed
format that codes its dtype, and a tensor none of them codes is stored. What the --prefer modes pick:
` + wrapIndented(preferHelp(), 116, 13) + ``,
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
	Codebook  bool     `json:"uses_codebook"`
	MaxValues uint64   `json:"max_values,omitempty"`
	Backends  []string `json:"backends"`
	Default   []string `json:"default_for,omitempty"` // dtypes it is the encoder's default for
	// Prefer maps each --prefer mode that codes some dtype in this format to those dtypes.
	Prefer map[string][]string `json:"prefer,omitempty"`
	// H100 is the measured encode/decode speed on one H100 ("" where none was measured).
	H100  string `json:"h100,omitempty"`
	About string `json:"about"`
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
		fo.Prefer = preferredFor(f)
		fo.H100 = h100Speeds[f.Name]
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
	fmt.Fprintln(tw, "id\tname\tdtypes\tchunk\tcodebook\tbackends\tdefault for\t--prefer\tH100 GB/s enc/dec\twhat for")
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
		pref := "-"
		var modes []string
		for _, m := range preferModes {
			if d, ok := f.Prefer[m.name]; ok {
				if slices.Equal(d, f.DTypes) {
					modes = append(modes, m.name)
				} else {
					modes = append(modes, m.name+" ("+strings.Join(d, ",")+")")
				}
			}
		}
		if len(modes) > 0 {
			pref = strings.Join(modes, ", ")
		}
		speed := "-"
		if f.H100 != "" {
			speed = f.H100
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.ID, name, strings.Join(f.DTypes, ","), chunk, cb,
			strings.Join(f.Backends, ","), def, pref, speed, f.About)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nvkzip encode --prefer MODE (codec.WithFormat takes the same lists):\n%s\n", wrapIndented(preferHelp(), 116, 13))
	return err
}

// wrapIndented wraps each line of s at width columns, indenting continuation lines by indent spaces.
func wrapIndented(s string, width, indent int) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		// The line's lead (its indent and any "name = " label) is kept as it is.
		lead := line[:len(line)-len(strings.TrimLeft(line, " "))]
		if i := strings.Index(line, "= "); i >= 0 {
			lead = line[:i+1]
		}
		cur := strings.TrimRight(lead, " ")
		for _, w := range strings.Fields(line[len(lead):]) {
			if len(cur)+1+len(w) > width && len(cur) > indent {
				out = append(out, cur)
				cur = strings.Repeat(" ", indent) + w
				continue
			}
			cur += " " + w
		}
		out = append(out, cur)
	}
	return strings.Join(out, "\n")
}

// h100Speeds are encode/decode GB/s measured on one H100 with vkzip bench --backend vulkan --size 512MiB --data
// kvlike (other dtypes: the same data converted), and the ratio there (bench/RESULTS.md, bench/raw/h100-*). They
// say how the formats compare; a device's own numbers come from vkzip bench.
var h100Speeds = map[string]string{
	"splitzip4": "1505/1529 (1.33x)",
	"zf12":      "846/1349 (1.31x)",
	"tbe3":      "536/453 (1.40x)",
	"auto":      "BF16 477/424 (1.40x), F16 134/652 (1.12x): sizes every candidate",
	"huff":      "458/965 (1.47x)",
	"xw3":       "F16 503/700 (1.12x), F8_E5M2 336/666 (1.27x)",
	"xw2":       "F16 363/342 (1.08x)",
	"xw4":       "F16 503/890 (1.07x), F8_E5M2 339/933 (1.14x)",
}

// preferredFor maps each --prefer mode to the dtypes it codes in f.
func preferredFor(f *codec.Format) map[string][]string {
	out := map[string][]string{}
	for _, m := range preferModes {
		ids, err := codec.ParseFormats(m.formats)
		if err != nil {
			continue
		}
		for _, d := range f.DTypeList() {
			for _, id := range ids {
				if g, ok := codec.LookupFormat(id); ok && g.Accepts(d, 1) {
					if g.ID == f.ID {
						out[m.name] = append(out[m.name], d.String())
					}
					break
				}
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
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
