package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/vkzip/vkzip/calib"
	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/tensorfile"
	"github.com/vkzip/vkzip/transfer"
)

// The CLI's JSON vocabulary is documented, key by key, in docs/JSON.md; TestJSONKeysDocumented fails when a verb
// prints a key that document does not list.

// jsonErrors is set for a command line with --json: its failures are then printed as JSON objects
// {"error": MESSAGE, "class": CLASS} (errorJSON) instead of "vkzip: VERB: MESSAGE" lines, with the same exit
// codes. errorOut is where they go: stdout, unless the command's data goes there (-c, -o -), then stderr.
var (
	jsonErrors bool
	errorOut   io.Writer = os.Stdout
)

// errInternal classes a panic: a bug, exit 3.
var errInternal = errors.New("internal error")

// errorJSON is the object a failure under --json prints.
type errorJSON struct {
	Verb  string `json:"verb,omitempty"`
	Input string `json:"input,omitempty"` // the input that failed, for commands of several inputs
	Error string `json:"error"`
	Class string `json:"class"`
}

// wantsJSON reports whether a verb's arguments ask for --json (before any "--"): failures in parsing them are
// JSON too, so it is read before the verb's own flag parsing.
func wantsJSON(args []string) bool {
	want := false
	for _, a := range args {
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "json" {
			continue
		}
		want = true
		if hasVal {
			b, err := strconv.ParseBool(val)
			want = err == nil && b
		}
	}
	return want
}

// dataOnStdout notes that the command's data goes to stdout: its JSON reports and errors go to stderr.
func dataOnStdout() { errorOut = os.Stderr }

// errorClass names the class of a failure, for scripts: the codec's error classes by their names, then the
// classes of the other packages and of the CLI itself.
func errorClass(err error) string {
	var ue *usageError
	classes := []struct {
		target error
		name   string
	}{
		{codec.ErrChecksum, "checksum"}, {codec.ErrCorrupt, "corrupt"}, {codec.ErrTruncated, "truncated"},
		{codec.ErrFormat, "format"}, {codec.ErrVersion, "version"}, {codec.ErrNonCanonical, "noncanonical"},
		{codec.ErrTooLarge, "too_large"}, {codec.ErrInvalidInput, "invalid_input"},
		{codec.ErrUnsupported, "unsupported"}, {codec.ErrNoDevice, "no_device"},
		{codec.ErrDeviceLost, "device_lost"}, {codec.ErrClosed, "closed"},
		{errVerify, "verify"},
		{tensorfile.ErrInvalid, "invalid_input"}, {tensorfile.ErrUnsupported, "unsupported"},
		{tensorfile.ErrTooLarge, "too_large"},
		{calib.ErrInvalid, "invalid_input"}, {calib.ErrUnsupported, "unsupported"}, {calib.ErrNoBF16, "invalid_input"},
		{transfer.ErrHashMismatch, "checksum"}, {transfer.ErrProtocol, "protocol"}, {transfer.ErrVersion, "version"},
		{transfer.ErrTooLarge, "too_large"}, {transfer.ErrConnection, "connection"}, {transfer.ErrRemote, "remote"},
		{transfer.ErrFailed, "remote"}, {transfer.ErrPayload, "corrupt"},
		{fs.ErrExist, "exists"}, {fs.ErrNotExist, "not_found"}, {fs.ErrPermission, "permission"},
	}
	switch {
	case errors.Is(err, errInternal):
		return "internal"
	case errors.As(err, &ue):
		return "usage"
	case errors.Is(err, context.Canceled):
		return "interrupted"
	}
	for _, c := range classes {
		if errors.Is(err, c.target) {
			return c.name
		}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return "io"
	}
	return "failed"
}

// printFailure reports one failure of verb (input: the input it concerns, "" for the command): a JSON object
// under --json, else one line "vkzip: VERB: MESSAGE" on stderr.
func printFailure(verb, input, msg string, err error) {
	if jsonErrors {
		class := "failed"
		if err != nil {
			class = errorClass(err)
		}
		enc := json.NewEncoder(errorOut)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(errorJSON{Verb: verb, Input: input, Error: msg, Class: class})
		return
	}
	prefix := "vkzip: "
	if verb != "" {
		prefix += verb + ": "
	}
	fmt.Fprintf(os.Stderr, "%s%s\n", prefix, msg)
}

// backendNote is codec.OpenBackend's note on how "auto" chose, as one line for stderr: without the "vkzip: "
// prefixes the backends' reasons carry, since the line has its own.
func backendNote(note string) string { return errMessage(errors.New(note)) }

// noteShown makes the backend note appear once per process, whatever opens backends.
var noteShown bool

// showBackendNote prints a backend note once per process, unless quiet or empty.
func showBackendNote(verb, note string, quiet bool) {
	if quiet || note == "" || noteShown {
		return
	}
	noteShown = true
	fmt.Fprintf(os.Stderr, "vkzip: %s: %s\n", verb, backendNote(note))
}

// escapingFormats are the formats whose chunks escape values their codes do not cover: SplitZip-4 (escapes),
// TBE-3 (fallbacks) and the xw formats (escapes). huff codes every exponent, zf12 keeps whole blocks raw (its
// raw_blocks), stored codes nothing: an escape rate does not apply to them.
var escapingFormats = map[string]bool{"splitzip4": true, "tbe3": true, "xw2": true, "xw3": true, "xw4": true}

// escapeTally sums escapes and values over chunks of the escaping formats.
type escapeTally struct{ escapes, values uint64 }

func (t *escapeTally) add(chunks []codec.ChunkInfo) {
	for _, ch := range chunks {
		if escapingFormats[ch.Format] {
			t.escapes += ch.Escapes
			t.values += ch.Values
		}
	}
}

// rate is the fraction of values escaped, nil where no chunk is in an escaping format (the field is then absent
// or null rather than a misleading 0).
func (t *escapeTally) rate() *float64 {
	if t.values == 0 {
		return nil
	}
	r := float64(t.escapes) / float64(t.values)
	return &r
}

// count is the number of escapes, nil where the rate does not apply.
func (t *escapeTally) count() *uint64 {
	if t.values == 0 {
		return nil
	}
	n := t.escapes
	return &n
}

// bodyEscapes is the escape count and rate of the body of job j (encoded into body), from its chunk table.
func bodyEscapes(body []byte, j codec.EncodeJob) (*uint64, *float64) {
	fd, ok := codec.LookupFormat(j.Format)
	if !ok || fd.Chunks == nil {
		return nil, nil
	}
	chunks, err := fd.Chunks(body, j.DType, j.N, j.Shift)
	if err != nil {
		return nil, nil
	}
	var t escapeTally
	t.add(chunks)
	return t.count(), t.rate()
}

// benchSourceKeys renames bench --source's result (examples/cudavk.BenchResult) into the CLI's vocabulary.
var benchSourceKeys = map[string]string{"size_bytes": "raw_bytes"}

// renamedJSON is v as JSON with its object keys renamed by names at every depth: how results of other packages
// (printed by GPU-only paths) speak this CLI's vocabulary.
func renamedJSON(v any, names map[string]string) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var x any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // 64-bit counts stay exact
	if err := d.Decode(&x); err != nil {
		return nil, err
	}
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			m := make(map[string]any, len(t))
			for k, e := range t {
				if n, ok := names[k]; ok {
					k = n
				}
				m[k] = walk(e)
			}
			return m
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		}
		return x
	}
	return walk(x), nil
}
