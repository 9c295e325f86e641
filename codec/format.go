package codec

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/vkzip/vkzip/codec/layout"
)

// Format describes one tensor body format: which tensors it codes, the directory rules of its records, its
// reference codec and how inspect reads its chunk table. Formats register themselves (RegisterFormat) in init
// functions; the container, the encoder's format choice, the CPU backend, Inspect and the CLI consult the registry
// and know no format by its id. GPU backends keep their own table of the formats they run.
type Format struct {
	ID      uint8
	Name    string
	Aliases []string
	About   string         // one line: what the format is for
	DTypes  []layout.DType // dtypes it codes; empty means any (stored)
	// MinShift..MaxShift is the range of chunkShift; 0..0 for an unchunked format (stored).
	MinShift, MaxShift uint8
	// ShiftFor is the chunk shift an encoder uses for a tensor of n values when the caller sets no chunk size (nil:
	// the container default, layout.DefaultChunkShift).
	ShiftFor  func(n uint64) uint
	Codebook  bool   // tensors reference a container codebook (layout.CodebookExp8)
	MaxValues uint64 // largest element count it codes; larger tensors are stored
	NoEmpty   bool   // a record of this format with no elements is non-canonical (encoders store them)
	// BodyBounds gives the smallest and largest valid body of a tensor of n values of dtype d at chunk shift s:
	// what the directory check enforces and what an encoder must have room for.
	BodyBounds func(n uint64, d layout.DType, shift uint) (lo, hi uint64)
	// CPU is the reference codec as the CPU backend runs it; nil for stored, which the container layer handles on
	// every backend.
	CPU CPUCodec
	// Chunks lists the chunk table of a body for Inspect, after checking its structure (nil: no chunks).
	Chunks func(body []byte, d layout.DType, n uint64, shift uint) ([]ChunkInfo, error)
	// CRCWords appends to dst the checksum words of a body (docs/FORMAT.md §4.4): the u32 CRC-32C words the body
	// carries, in its order, which together cover every byte of it. A version 2 seal is computed over them. It is
	// called after the body has passed its format's checks, but stays bounds-safe on any input (*corrupt*). Every
	// coded format has one; stored's single word is the container layer's.
	CRCWords func(body []byte, d layout.DType, n uint64, shift uint, dst []uint32) ([]uint32, error)
	// Table, where set, places a body's chunk table from the tensor's geometry alone: it starts at byte off of the
	// body and holds entries entries of layout.ChunkEntrySize bytes (ok false: the format does not code d). The
	// body's checksum words are then the crc word of each entry, in order, so a caller whose body lies elsewhere
	// (device memory) reads just the table to seal or check it (ReadSeal). RegisterFormat derives CRCWords from it.
	Table func(d layout.DType, n uint64, shift uint) (off, entries uint64, ok bool)
	// CheckBody checks a body's structure (its corrupt rules: chunk table, headers) without decoding it.
	CheckBody func(body []byte, d layout.DType, n uint64, shift uint) error
	// ChunkBodySize is the length of the body this format encodes m values of dtype d (src, m ≤ 2^shift, one chunk)
	// to, found without encoding them: how auto (§11) compares the formats of a chunk. Formats that have it are
	// auto's candidates for their dtypes.
	ChunkBodySize func(src []byte, d layout.DType, m int, shift uint, cb *Codebook) uint64

	// dtypes and codebookFor, when set, replace DTypes and Codebook (auto: whatever its candidates code and use).
	dtypes      func() []layout.DType
	codebookFor func(d layout.DType) bool

	planned bool // the CPU backend can size bodies before encoding them (PlannedEncoder)
}

// CPUCodec runs a format's reference codec on the CPU backend's goroutines. Jobs all have the format's id.
type CPUCodec interface {
	Encode(b *CPUBackend, ctx context.Context, jobs []EncodeJob) error
	Decode(b *CPUBackend, ctx context.Context, jobs []DecodeJob) error
}

// ChunkInfo is one chunk-table entry as Inspect reports it.
type ChunkInfo struct {
	Format     string `json:"format"` // the format the chunk is coded in (auto bodies mix them)
	Kind       string `json:"kind"`   // "coded" or "raw" (a SplitZip-4 chunk of exponent bytes)
	Values     uint64 `json:"values"`
	Escapes    uint64 `json:"escapes"`              // SplitZip-4 escapes, TBE-3 fallbacks, xw escapes
	Window     *uint8 `json:"window,omitempty"`     // TBE-3 and xw coded chunks: the window's lowest exponent
	RawBlocks  uint64 `json:"raw_blocks,omitempty"` // zf12: blocks left raw
	SideOffset uint32 `json:"side_offset"`
	CRC        uint32 `json:"crc"`
}

// tableCRCWords appends the crc word (word 2) of each of the chunks entries of a chunk table at offset table in
// body: the checksum words of every format whose chunks are checksummed by their table entries.
func tableCRCWords(body []byte, table, chunks uint64, dst []uint32) ([]uint32, error) {
	if table > uint64(len(body)) || chunks > (uint64(len(body))-table)/layout.ChunkEntrySize {
		return dst, errorf(ErrCorrupt, "chunk table of %d entries at %d outside the %d-byte body", chunks, table, len(body))
	}
	tab := body[table : table+chunks*layout.ChunkEntrySize]
	dst = slices.Grow(dst, int(chunks))
	for ; len(tab) >= layout.ChunkEntrySize; tab = tab[layout.ChunkEntrySize:] {
		dst = append(dst, binary.LittleEndian.Uint32(tab[4*layout.EntryCRC:]))
	}
	return dst, nil
}

// Accepts reports whether the format codes a tensor of n values of dtype d.
func (f *Format) Accepts(d layout.DType, n uint64) bool {
	if f.ID == layout.FormatStored {
		return true
	}
	return slices.Contains(f.DTypeList(), d) && n >= 1 && n <= f.MaxValues
}

// DTypeList is the dtypes the format codes (nil for stored, which takes any).
func (f *Format) DTypeList() []layout.DType {
	if f.dtypes != nil {
		return f.dtypes()
	}
	return f.DTypes
}

// UsesCodebook reports whether a tensor of dtype d in this format references a container codebook.
func (f *Format) UsesCodebook(d layout.DType) bool {
	if f.codebookFor != nil {
		return f.codebookFor(d)
	}
	return f.Codebook
}

// Chunked reports whether the format has a chunk shift.
func (f *Format) Chunked() bool { return f.MaxShift != 0 }

// MaxBodyOf is the largest body of n values of dtype d at chunk shift s.
func (f *Format) MaxBodyOf(n uint64, d layout.DType, shift uint) uint64 {
	_, hi := f.BodyBounds(n, d, shift)
	return hi
}

// MaxBody is the largest body of n values of size bytes each at chunk shift s: the largest over the format's
// dtypes of that size (F8_E5M2 and F8_E4M3 bodies differ), so a destination of this capacity fits any of them.
func (f *Format) MaxBody(n uint64, size int, shift uint) uint64 {
	var hi uint64
	for d := layout.DType(0); d.Valid(); d++ {
		if d.Size() == size && (f.ID == layout.FormatStored || slices.Contains(f.DTypeList(), d)) {
			hi = max(hi, f.MaxBodyOf(n, d, shift))
		}
	}
	return hi
}

var (
	fmtMu   sync.RWMutex
	fmtByID = map[uint8]*Format{}
)

// RegisterFormat adds a format to the registry. It panics on a duplicate id or name: ids are allocated in
// codec/layout, and two registrations of one are a build error.
func RegisterFormat(f Format) {
	fmtMu.Lock()
	defer fmtMu.Unlock()
	if _, dup := fmtByID[f.ID]; dup {
		panic(fmt.Sprintf("codec: format id %d registered twice", f.ID))
	}
	for _, g := range fmtByID {
		for _, n := range append([]string{f.Name}, f.Aliases...) {
			if n == g.Name || slices.Contains(g.Aliases, n) {
				panic(fmt.Sprintf("codec: format name %q registered twice", n))
			}
		}
	}
	if f.CRCWords == nil && f.Table != nil {
		table, id := f.Table, f.ID
		f.CRCWords = func(body []byte, d layout.DType, n uint64, shift uint, dst []uint32) ([]uint32, error) {
			off, entries, ok := table(d, n, shift)
			if !ok {
				return dst, errorf(ErrCorrupt, "%s does not code %v", FormatName(id), d)
			}
			return tableCRCWords(body, off, entries, dst)
		}
	}
	fmtByID[f.ID] = &f
}

// LookupFormat returns the registered format with id id.
func LookupFormat(id uint8) (*Format, bool) {
	fmtMu.RLock()
	defer fmtMu.RUnlock()
	f, ok := fmtByID[id]
	return f, ok
}

// Formats lists the registered formats by id.
func Formats() []*Format {
	fmtMu.RLock()
	defer fmtMu.RUnlock()
	out := make([]*Format, 0, len(fmtByID))
	for _, f := range fmtByID {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// FormatByName maps a format name or alias to its id; "" is the default, splitzip4.
func FormatByName(name string) (uint8, bool) {
	if name == "" {
		return layout.FormatSplitZip4, true
	}
	for _, f := range Formats() {
		if f.Name == name || slices.Contains(f.Aliases, name) {
			return f.ID, true
		}
	}
	return 0, false
}

// defaultFormats is what an encoder uses without WithFormat, in order of preference: SplitZip-4 for BF16, xw3 for
// F8_E5M2, F8_E4M3, F16 and F32.
var defaultFormats = []uint8{layout.FormatSplitZip4, layout.FormatXW3}

// DefaultFormatNames names the default format list (what WithFormat("") selects).
func DefaultFormatNames() []string {
	var out []string
	for _, id := range defaultFormats {
		out = append(out, FormatName(id))
	}
	return out
}

// ParseFormats maps a format list, names or aliases separated by commas ("tbe3,xw2"), to format ids in order,
// dropping repeats; "" is the default list. An encoder codes each tensor in the first listed format that takes it
// and stores the tensors none of them takes.
func ParseFormats(spec string) ([]uint8, error) {
	if strings.TrimSpace(spec) == "" {
		return slices.Clone(defaultFormats), nil
	}
	var ids []uint8
	for _, name := range strings.Split(spec, ",") {
		name = strings.TrimSpace(name)
		id, ok := FormatByName(name)
		if !ok || name == "" {
			return nil, errorf(ErrUnsupported, "format %q (have %v)", name, FormatNames())
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// pickFormat is the first format of list that codes a tensor of n values of dtype d, or stored.
func pickFormat(list []uint8, d layout.DType, n uint64) *Format {
	for _, id := range list {
		if f, ok := LookupFormat(id); ok && f.Accepts(d, n) {
			return f
		}
	}
	f, _ := LookupFormat(layout.FormatStored)
	return f
}

// FormatNames lists the names of the registered formats, by id.
func FormatNames() []string {
	var out []string
	for _, f := range Formats() {
		out = append(out, f.Name)
	}
	return out
}

// FormatName is the name of a format id ("format7" for an id this build does not know).
func FormatName(id uint8) string {
	if f, ok := LookupFormat(id); ok {
		return f.Name
	}
	return fmt.Sprintf("format%d", id)
}

// FormatSupporter is implemented by backends that run only some formats. Backends without it are assumed to
// run every coded format.
type FormatSupporter interface {
	SupportsFormat(id uint8) bool
}

// SupportsFormat reports whether backend b runs format id (stored is the container's and runs everywhere).
func SupportsFormat(b Backend, id uint8) bool {
	if id == layout.FormatStored {
		return true
	}
	if s, ok := b.(FormatSupporter); ok {
		return s.SupportsFormat(id)
	}
	return true
}

// EncodeByFormat calls fn once per format present in jobs, in order of first appearance, with that format's jobs
// (results are copied back into jobs). A backend runs mixed calls with it.
func EncodeByFormat(jobs []EncodeJob, fn func(id uint8, jobs []EncodeJob) error) error {
	return byFormat(jobs, func(j *EncodeJob) uint8 { return j.Format }, fn)
}

// DecodeByFormat is EncodeByFormat for decode jobs.
func DecodeByFormat(jobs []DecodeJob, fn func(id uint8, jobs []DecodeJob) error) error {
	return byFormat(jobs, func(j *DecodeJob) uint8 { return j.Format }, fn)
}

// byFormat is EncodeByFormat and DecodeByFormat for any job type; format reads a job's format id.
func byFormat[J any](jobs []J, format func(*J) uint8, fn func(id uint8, jobs []J) error) error {
	if len(jobs) == 0 {
		return nil
	}
	if sameFormat(len(jobs), func(i int) uint8 { return format(&jobs[i]) }) {
		return fn(format(&jobs[0]), jobs)
	}
	for _, id := range formatOrder(len(jobs), func(i int) uint8 { return format(&jobs[i]) }) {
		var sub []J
		var at []int
		for i := range jobs {
			if format(&jobs[i]) == id {
				sub, at = append(sub, jobs[i]), append(at, i)
			}
		}
		err := fn(id, sub)
		for k, i := range at {
			jobs[i] = sub[k]
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func sameFormat(n int, id func(int) uint8) bool {
	for i := 1; i < n; i++ {
		if id(i) != id(0) {
			return false
		}
	}
	return true
}

func formatOrder(n int, id func(int) uint8) []uint8 {
	var out []uint8
	for i := 0; i < n; i++ {
		if !slices.Contains(out, id(i)) {
			out = append(out, id(i))
		}
	}
	return out
}

// formatOf returns the registered format of a job, or an unsupported error naming the backend.
func formatOf(backend string, id uint8) (*Format, error) {
	f, ok := LookupFormat(id)
	if !ok || f.CPU == nil {
		return nil, errorf(ErrUnsupported, "%s backend: format %d", backend, id)
	}
	return f, nil
}

func init() {
	RegisterFormat(Format{ID: layout.FormatStored, Name: "stored",
		About: "bytes as they are plus a CRC-32C: any dtype, and the fallback for tensors no format codes",
		BodyBounds: func(n uint64, d layout.DType, _ uint) (uint64, uint64) {
			b := layout.StoredBody(n * uint64(d.Size()))
			return b, b
		}})
}
