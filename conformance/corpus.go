package conformance

import (
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"sync"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
)

// The committed corpus, one directory per format. Embedded so that an installed binary runs it from any folder.
//
//go:embed corpus
var embedded embed.FS

// Schema is the version of the manifest layout (not of a corpus: each manifest carries its own Version).
const Schema = 1

// Manifest is one format's corpus: corpus/<format>/manifest.json.
type Manifest struct {
	Schema   int    `json:"schema"`
	Format   string `json:"format"`    // codec format name, as codec.WithFormat takes it
	FormatID uint8  `json:"format_id"` // id in EncodeJob/DecodeJob and the directory
	// Version changes whenever a case is added, removed or changes its expectations.
	Version   int       `json:"version"`
	Generator string    `json:"generator"` // how to regenerate
	Inputs    []Input   `json:"inputs"`
	Cases     []Case    `json:"cases"`
	Invalid   []Invalid `json:"invalid"`
}

// Input is a case's data: stored bytes (Gen "bytes": a range of data.bin) or the output of a frozen generator.
type Input struct {
	ID     string  `json:"id"`
	Gen    string  `json:"gen"`
	N      int     `json:"n,omitempty"` // values
	Seed   uint64  `json:"seed,omitempty"`
	Args   []int64 `json:"args,omitempty"`
	Off    int64   `json:"off,omitempty"` // bytes: offset and length in data.bin
	Len    int64   `json:"len,omitempty"`
	SHA256 string  `json:"sha256"` // of the bytes, stored or generated: a changed generator is caught here
}

// Case is a valid input with its encoding options and the expected encodings.
type Case struct {
	ID        string   `json:"id"`
	Category  string   `json:"category"`
	Input     string   `json:"input"`
	DType     string   `json:"dtype"`
	Shape     []uint64 `json:"shape"`
	Chunk     int      `json:"chunk"`    // values per chunk
	Codebook  string   `json:"codebook"` // hex; the one calibration gives when Calibrate is set
	Calibrate bool     `json:"calibrate,omitempty"`
	Checksums bool     `json:"checksums"`
	// Body is the tensor body a Backend.Encode returns (absent when the tensor is not coded, e.g. 0 values);
	// Container is the whole payload codec.Codec.Encode returns for one tensor record named ID with
	// codec.WithContainerVersion(1) (the base of the container-level invalid payloads); ContainerV2 is the same
	// payload as encoders write it by default, container version 2 (docs/FORMAT.md §4.4).
	Body        *Expect `json:"body,omitempty"`
	Container   Expect  `json:"container"`
	ContainerV2 *Expect `json:"container_v2,omitempty"`
	Note        string  `json:"note,omitempty"`
}

// Expect is the length and SHA-256 of an expected payload.
type Expect struct {
	Len    int    `json:"len"`
	SHA256 string `json:"sha256"`
}

// Levels of a payload.
const (
	LevelBody      = "body"      // a tensor body, given to Backend.Decode
	LevelContainer = "container" // a whole payload, given to codec.Codec.DecodeAll
)

// Invalid is a payload every backend must reject with Class: the reference payload of case Base at Level,
// changed by Ops. Body-level cases go straight to Backend.Decode, with the base case's parameters unless
// Checksums or Codebook override them.
type Invalid struct {
	ID        string `json:"id"`
	Category  string `json:"category"`
	Level     string `json:"level"`
	Base      string `json:"base"`
	Ops       []Op   `json:"ops"`
	Checksums *bool  `json:"checksums,omitempty"`
	Codebook  string `json:"codebook,omitempty"`
	SHA256    string `json:"sha256"` // of the changed payload
	Class     string `json:"class"`  // error class name (ClassName)
	// Chunk is the chunk the reference reports (the lowest-numbered of the deciding class), -1 for none.
	Chunk int64  `json:"chunk"`
	Note  string `json:"note"`
}

// Op is one edit of a payload. Ops are format-agnostic so that the runner needs no format knowledge:
//
//	xor    At, Hex: XOR the bytes at At with Hex
//	splice At, N, Hex or Data: replace N bytes at At with Hex (or with Data, a range [off, off+len) of data.bin)
//	trunc  N: keep the first N bytes
//	crc    At, Ranges: write the little-endian CRC-32C of the concatenated ranges [a, b) at At
type Op struct {
	Op     string     `json:"op"`
	At     int        `json:"at,omitempty"`
	N      int        `json:"n,omitempty"`
	Hex    string     `json:"hex,omitempty"`
	Data   *[2]int64  `json:"data,omitempty"`
	Ranges [][2]int64 `json:"ranges,omitempty"`
}

// apply returns a copy of p changed by ops; data is data.bin.
func apply(p []byte, ops []Op, data []byte) ([]byte, error) {
	out := append([]byte(nil), p...)
	for _, op := range ops {
		var ins []byte
		if op.Hex != "" {
			b, err := hex.DecodeString(op.Hex)
			if err != nil {
				return nil, fmt.Errorf("op %s: %v", op.Op, err)
			}
			ins = b
		}
		if op.Data != nil {
			o, n := op.Data[0], op.Data[1]
			if o < 0 || n < 0 || o+n > int64(len(data)) {
				return nil, fmt.Errorf("op %s: data range %v outside data.bin", op.Op, *op.Data)
			}
			ins = data[o : o+n]
		}
		switch op.Op {
		case "xor":
			if op.At < 0 || op.At+len(ins) > len(out) {
				return nil, fmt.Errorf("xor at %d outside %d bytes", op.At, len(out))
			}
			for i, x := range ins {
				out[op.At+i] ^= x
			}
		case "splice":
			if op.At < 0 || op.N < 0 || op.At+op.N > len(out) {
				return nil, fmt.Errorf("splice at %d+%d outside %d bytes", op.At, op.N, len(out))
			}
			out = append(out[:op.At:op.At], append(append([]byte(nil), ins...), out[op.At+op.N:]...)...)
		case "trunc":
			if op.N < 0 || op.N > len(out) {
				return nil, fmt.Errorf("trunc to %d of %d bytes", op.N, len(out))
			}
			out = out[:op.N]
		case "crc":
			c := crc32c.Checksum(nil)
			for _, r := range op.Ranges {
				if r[0] < 0 || r[1] < r[0] || r[1] > int64(len(out)) {
					return nil, fmt.Errorf("crc range %v outside %d bytes", r, len(out))
				}
				c = crc32c.Update(c, out[r[0]:r[1]])
			}
			if op.At < 0 || op.At+4 > len(out) {
				return nil, fmt.Errorf("crc at %d outside %d bytes", op.At, len(out))
			}
			binary.LittleEndian.PutUint32(out[op.At:], c)
		default:
			return nil, fmt.Errorf("unknown op %q", op.Op)
		}
	}
	return out, nil
}

// Error classes by name: the names reports and manifests use for codec's error values.
var classes = []struct {
	name string
	err  error
}{
	{"format", codec.ErrFormat}, {"version", codec.ErrVersion}, {"truncated", codec.ErrTruncated},
	{"checksum", codec.ErrChecksum}, {"corrupt", codec.ErrCorrupt}, {"non-canonical", codec.ErrNonCanonical},
	{"too-large", codec.ErrTooLarge}, {"unsupported", codec.ErrUnsupported}, {"invalid-input", codec.ErrInvalidInput},
	{"no-device", codec.ErrNoDevice}, {"device-lost", codec.ErrDeviceLost}, {"closed", codec.ErrClosed},
}

// ClassName names err's class ("non-canonical", ...): "" for nil, "other" for an error of no codec class.
func ClassName(err error) string {
	if err == nil {
		return ""
	}
	for _, c := range classes {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "other"
}

// ClassError is the codec error value of a class name, or nil.
func ClassError(name string) error {
	for _, c := range classes {
		if c.name == name {
			return c.err
		}
	}
	return nil
}

// errChunk is the chunk an error names, -1 for none.
func errChunk(err error) int64 {
	var e *codec.Error
	if errors.As(err, &e) {
		return e.Chunk
	}
	return -1
}

// Corpus is one format's loaded manifest with its inputs materialised and verified.
type Corpus struct {
	Manifest
	SHA256 string // of manifest.json: names the exact expectations a report was checked against
	data   []byte
	inputs map[string][]byte
	cases  map[string]*Case
}

func (c *Corpus) input(id string) []byte { return c.inputs[id] }

// caseCodebook decodes a case's codebook: nil for "" (a format without one).
func caseCodebook(s string) (*codec.Codebook, error) {
	if s == "" {
		return nil, nil
	}
	cb, err := parseCodebook(s)
	return &cb, err
}

// Codebook decodes a hex codebook.
func parseCodebook(s string) (codec.Codebook, error) {
	var cb codec.Codebook
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(cb) {
		return cb, fmt.Errorf("codebook %q: want %d hex bytes", s, len(cb))
	}
	copy(cb[:], b)
	return cb, cb.Validate()
}

// shift is the chunk shift of a chunk size.
func shiftOf(chunk int) (uint, error) {
	for s := uint(layout.MinChunkShift); s <= layout.MaxChunkShift; s++ {
		if chunk == 1<<s {
			return s, nil
		}
	}
	return 0, fmt.Errorf("chunk size %d", chunk)
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

var (
	loadOnce sync.Once
	loaded   []*Corpus
	loadErr  error
)

// Load returns the embedded corpora, one per format, inputs generated and checked against their SHA-256s.
func Load() ([]*Corpus, error) {
	loadOnce.Do(func() { loaded, loadErr = LoadFS(embedded) })
	return loaded, loadErr
}

// LoadFS loads the corpora under corpus/ of fsys.
func LoadFS(fsys fs.FS) ([]*Corpus, error) {
	dirs, err := fs.Glob(fsys, "corpus/*/manifest.json")
	if err != nil {
		return nil, err
	}
	sort.Strings(dirs)
	var out []*Corpus
	for _, m := range dirs {
		c, err := loadCorpus(fsys, path.Dir(m))
		if err != nil {
			return nil, fmt.Errorf("conformance corpus %s: %w", path.Dir(m), err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("conformance: no corpus found")
	}
	return out, nil
}

func loadCorpus(fsys fs.FS, dir string) (*Corpus, error) {
	raw, err := fs.ReadFile(fsys, dir+"/manifest.json")
	if err != nil {
		return nil, err
	}
	c := &Corpus{SHA256: sha(raw), inputs: map[string][]byte{}, cases: map[string]*Case{}}
	if err := json.Unmarshal(raw, &c.Manifest); err != nil {
		return nil, err
	}
	if c.Schema != Schema {
		return nil, fmt.Errorf("manifest schema %d, this build reads %d", c.Schema, Schema)
	}
	if c.data, err = fs.ReadFile(fsys, dir+"/data.bin"); err != nil {
		return nil, err
	}
	for _, in := range c.Inputs {
		b, err := materialize(in, c.data)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", in.ID, err)
		}
		if got := sha(b); got != in.SHA256 {
			return nil, fmt.Errorf("input %s: SHA-256 %s, manifest says %s (generator %q changed?)", in.ID, got,
				in.SHA256, in.Gen)
		}
		c.inputs[in.ID] = b
	}
	for i := range c.Cases {
		k := &c.Cases[i]
		if _, ok := c.inputs[k.Input]; !ok {
			return nil, fmt.Errorf("case %s: no input %s", k.ID, k.Input)
		}
		if _, err := shiftOf(k.Chunk); err != nil {
			return nil, fmt.Errorf("case %s: %v", k.ID, err)
		}
		if _, err := caseCodebook(k.Codebook); err != nil {
			return nil, fmt.Errorf("case %s: %v", k.ID, err)
		}
		c.cases[k.ID] = k
	}
	for _, iv := range c.Invalid {
		if _, ok := c.cases[iv.Base]; !ok {
			return nil, fmt.Errorf("invalid case %s: no base case %s", iv.ID, iv.Base)
		}
		if ClassError(iv.Class) == nil {
			return nil, fmt.Errorf("invalid case %s: unknown class %q", iv.ID, iv.Class)
		}
	}
	return c, nil
}

// materialize produces an input's bytes.
func materialize(in Input, data []byte) ([]byte, error) {
	if in.Gen == GenBytes {
		if in.Off < 0 || in.Len < 0 || in.Off+in.Len > int64(len(data)) {
			return nil, fmt.Errorf("range [%d, +%d) outside data.bin", in.Off, in.Len)
		}
		return data[in.Off : in.Off+in.Len], nil
	}
	g, ok := lookupInput(in.Gen)
	if !ok {
		return nil, fmt.Errorf("unknown generator %q", in.Gen)
	}
	return g(in.N, in.Seed, in.Args)
}
