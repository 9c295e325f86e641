package corpusgen

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
)

// GeneratorCommand is how the corpus is regenerated; manifests record it.
const GeneratorCommand = "go run ./conformance/gen"

// Gen builds one format's corpus: categories add cases to it, and it computes every expectation with the CPU
// reference backend.
type Gen struct {
	f    Format
	cat  Category
	src  fs.FS
	ref  *codec.CPUBackend
	m    Manifest
	data bytes.Buffer
	// per input: id by content, so that equal inputs are stored once
	inputBySHA map[string]string
	values     map[string][]byte // input bytes by input id
	bodies     map[string][]byte // reference body by case id
	conts      map[string][]byte // reference container by case id
	cases      map[string]*Case
	added      int // cases added by the current category
}

// Valid describes a valid case. Exactly one of Bytes and Spec gives the input.
type Valid struct {
	ID        string // within the category; the case id is "category/ID"
	Bytes     []byte
	Spec      *Spec
	DType     layout.DType // default BF16
	Shape     []uint64     // default [values]
	Chunk     int          // values per chunk, default 65,536
	Codebook  *codec.Codebook
	Checksums bool
	Note      string
}

// Spec is a generated input: a registered generator's name and its parameters.
type Spec struct {
	Gen  string
	N    int
	Seed uint64
	Args []int64
}

// BadPayload describes an invalid case: the reference payload of case Base (a full case id) at Level, changed by
// Ops. Want is the class the change is meant to give ("" accepts whatever the reference says, and drops the case
// if the reference still decodes it).
type BadPayload struct {
	ID        string
	Level     string
	Base      string
	Ops       []Op
	Checksums *bool
	Codebook  *codec.Codebook
	Want      string
	Note      string
}

// Source reads a committed source file of the format (<format>/<name> in the corpus), e.g. real KV samples.
func (g *Gen) Source(name string) ([]byte, error) {
	return fs.ReadFile(g.src, g.f.Name+"/"+name)
}

// SourceOf reads a committed source file of another format's corpus directory (a real KV sample shared by several
// formats is stored once).
func (g *Gen) SourceOf(format, name string) ([]byte, error) {
	return fs.ReadFile(g.src, format+"/"+name)
}

// Category is the category being generated.
func (g *Gen) Category() string { return g.cat.Name }

// Body is the reference body of a case (nil if it has none).
func (g *Gen) Body(id string) []byte { return g.bodies[id] }

// Container is the reference container of a case.
func (g *Gen) Container(id string) []byte { return g.conts[id] }

// Case is an added case.
func (g *Gen) Case(id string) *Case { return g.cases[id] }

// Values is the input of an added case.
func (g *Gen) Values(id string) []byte { return g.values[g.cases[id].Input] }

// Blob stores bytes in data.bin for an Op's Data.
func (g *Gen) Blob(b []byte) *[2]int64 {
	r := [2]int64{int64(g.data.Len()), int64(len(b))}
	g.data.Write(b)
	for g.data.Len()%8 != 0 {
		g.data.WriteByte(0)
	}
	return &r
}

func (g *Gen) input(v Valid) (string, []byte, error) {
	var in Input
	var b []byte
	switch {
	case v.Spec != nil && v.Bytes == nil:
		f, ok := lookupInput(v.Spec.Gen)
		if !ok {
			return "", nil, fmt.Errorf("unknown generator %q", v.Spec.Gen)
		}
		var err error
		if b, err = f(v.Spec.N, v.Spec.Seed, v.Spec.Args); err != nil {
			return "", nil, err
		}
		in = Input{Gen: v.Spec.Gen, N: v.Spec.N, Seed: v.Spec.Seed, Args: v.Spec.Args}
	case v.Spec == nil:
		b = v.Bytes
		in = Input{Gen: GenBytes, Len: int64(len(b))}
	default:
		return "", nil, fmt.Errorf("both bytes and a generator spec")
	}
	in.SHA256 = sha(b)
	if id, ok := g.inputBySHA[in.SHA256]; ok {
		return id, b, nil
	}
	if in.Gen == GenBytes {
		r := g.Blob(b)
		in.Off = r[0]
	}
	in.ID = fmt.Sprintf("in%03d", len(g.m.Inputs))
	g.m.Inputs = append(g.m.Inputs, in)
	g.inputBySHA[in.SHA256] = in.ID
	g.values[in.ID] = b
	return in.ID, b, nil
}

// Valid adds a valid case and computes its expected encodings with the reference.
func (g *Gen) Valid(v Valid) error {
	id := g.cat.Name + "/" + v.ID
	if _, dup := g.cases[id]; dup {
		return fmt.Errorf("case %s added twice", id)
	}
	inID, b, err := g.input(v)
	if err != nil {
		return fmt.Errorf("case %s: %w", id, err)
	}
	if v.DType == 0 {
		v.DType = layout.DTypeBF16
	}
	if v.Chunk == 0 {
		v.Chunk = 1 << layout.DefaultChunkShift
	}
	shape := v.Shape
	if shape == nil {
		shape = []uint64{uint64(len(b) / v.DType.Size())}
	}
	cb, calibrate := v.Codebook, v.Codebook == nil
	fd, ok := codec.LookupFormat(g.f.ID)
	if !ok {
		return fmt.Errorf("case %s: format %d is not in this build", id, g.f.ID)
	}
	if !fd.UsesCodebook(v.DType) {
		// A format without codebooks: the case names none, and nothing is calibrated.
		cb, calibrate = nil, false
	} else if calibrate {
		var h codec.ExpHistogram
		h.Add(b)
		x := codec.CodebookFromHistogram(&h)
		cb = &x
	}
	c := Case{ID: id, Category: g.cat.Name, Input: inID, DType: v.DType.String(), Shape: shape, Chunk: v.Chunk,
		Calibrate: calibrate, Checksums: v.Checksums, Note: v.Note}
	if cb != nil {
		c.Codebook = hex.EncodeToString(cb[:])
	}
	enc, err := encodeCase(context.Background(), g.ref, g.f, &c, cb, b)
	if err != nil {
		return fmt.Errorf("case %s: reference: %w", id, err)
	}
	if enc.bodyErr != nil {
		return fmt.Errorf("case %s: reference body: %w", id, enc.bodyErr)
	}
	if enc.contErr != nil {
		return fmt.Errorf("case %s: reference container: %w", id, enc.contErr)
	}
	if enc.contV2Err != nil {
		return fmt.Errorf("case %s: reference container (version 2): %w", id, enc.contV2Err)
	}
	c.Container = Expect{Len: len(enc.container), SHA256: sha(enc.container)}
	c.ContainerV2 = &Expect{Len: len(enc.containerV2), SHA256: sha(enc.containerV2)}
	if enc.body != nil {
		c.Body = &Expect{Len: len(enc.body), SHA256: sha(enc.body)}
		// The body a backend returns is the body inside the container: one expectation cannot drift from the other.
		ct, err := codec.ParseHeader(enc.container)
		if err != nil {
			return fmt.Errorf("case %s: %w", id, err)
		}
		r := ct.Recs[len(ct.Recs)-1]
		// (auto's encoder may write the tensor in one candidate: then the container holds that body instead.)
		if r.Format == g.f.ID && !bytes.Equal(enc.container[r.BodyOff:r.BodyOff+r.BodyLen], enc.body) {
			return fmt.Errorf("case %s: reference body differs from the body in its container", id)
		}
	}
	// The reference must decode what it encoded.
	if out, err := decodeBody(context.Background(), g.ref, g.f, &c, cb, c.Checksums, enc.body, len(b)); err != nil ||
		(enc.body != nil && !bytes.Equal(out, b)) {
		return fmt.Errorf("case %s: reference does not decode its body: %v", id, err)
	}
	if out, err := decodeContainer(g.ref, enc.container); err != nil || !bytes.Equal(out, b) {
		return fmt.Errorf("case %s: reference does not decode its container: %v", id, err)
	}
	if out, err := decodeContainer(g.ref, enc.containerV2); err != nil || !bytes.Equal(out, b) {
		return fmt.Errorf("case %s: reference does not decode its version 2 container: %v", id, err)
	}
	g.m.Cases = append(g.m.Cases, c)
	g.cases[id] = &g.m.Cases[len(g.m.Cases)-1]
	g.bodies[id], g.conts[id] = enc.body, enc.container
	g.added++
	return nil
}

// Invalid adds an invalid case; the class comes from the reference. It returns false when the change did not make
// the payload invalid and Want is "" (the case is dropped).
func (g *Gen) Invalid(p BadPayload) (bool, error) {
	id := g.cat.Name + "/" + p.ID
	base, ok := g.cases[p.Base]
	if !ok {
		return false, fmt.Errorf("invalid case %s: no base case %s", id, p.Base)
	}
	var orig []byte
	switch p.Level {
	case LevelBody:
		orig = g.bodies[p.Base]
		if orig == nil {
			return false, fmt.Errorf("invalid case %s: base %s has no body", id, p.Base)
		}
	case LevelContainer:
		orig = g.conts[p.Base]
	default:
		return false, fmt.Errorf("invalid case %s: level %q", id, p.Level)
	}
	bad, err := apply(orig, p.Ops, g.data.Bytes())
	if err != nil {
		return false, fmt.Errorf("invalid case %s: %w", id, err)
	}
	iv := Invalid{ID: id, Category: g.cat.Name, Level: p.Level, Base: p.Base, Ops: p.Ops, Checksums: p.Checksums,
		SHA256: sha(bad), Note: p.Note}
	if p.Codebook != nil {
		iv.Codebook = hex.EncodeToString(p.Codebook[:])
	}
	verr, err := decodeInvalid(context.Background(), g.ref, g.f, base, &iv, bad)
	if err != nil {
		return false, fmt.Errorf("invalid case %s: reference: %w", id, err)
	}
	if verr == nil {
		if p.Want == "" {
			return false, nil
		}
		return false, fmt.Errorf("invalid case %s (%s): the reference decodes it", id, p.Note)
	}
	iv.Class, iv.Chunk = ClassName(verr), errChunk(verr)
	if p.Want != "" && iv.Class != p.Want {
		return false, fmt.Errorf("invalid case %s (%s): reference says %s (%v), want %s", id, p.Note, iv.Class, verr,
			p.Want)
	}
	g.m.Invalid = append(g.m.Invalid, iv)
	g.added++
	return true, nil
}

// Generate writes the corpus of every registered format to dir/<format>/ (manifest.json, data.bin). Sources (real
// KV samples) are read from src, a corpus directory: <format>/<name>.
func Generate(src fs.FS, dir string) error {
	for _, f := range Formats() {
		files, err := GenerateFormat(src, f)
		if err != nil {
			return err
		}
		if Verify != nil {
			if err := Verify(f.Name, files); err != nil {
				return fmt.Errorf("%s: not written: %w", f.Name, err)
			}
		}
		d := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(d, name), b, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// GenerateFormat builds one format's corpus files in memory: name → contents.
func GenerateFormat(src fs.FS, f Format) (map[string][]byte, error) {
	g := &Gen{f: f, src: src, ref: codec.NewCPUBackend(0), inputBySHA: map[string]string{},
		values: map[string][]byte{}, bodies: map[string][]byte{}, conts: map[string][]byte{}, cases: map[string]*Case{}}
	g.m = Manifest{Schema: Schema, Format: f.Name, FormatID: f.ID, Version: f.Version, Generator: GeneratorCommand}
	// Cases point into m.Cases: reserve, so that appends never move them.
	g.m.Cases = make([]Case, 0, 1<<14)
	for _, c := range Categories(f.Name) {
		g.cat, g.added = c, 0
		if err := c.Generate(g); err != nil {
			return nil, fmt.Errorf("%s/%s: %w", f.Name, c.Name, err)
		}
		if g.added < c.Min {
			return nil, fmt.Errorf("%s/%s: %d cases, the category needs at least %d", f.Name, c.Name, g.added, c.Min)
		}
	}
	if len(g.m.Cases) == cap(g.m.Cases) {
		return nil, fmt.Errorf("%s: too many cases", f.Name)
	}
	return map[string][]byte{"manifest.json": marshalManifest(&g.m), "data.bin": g.data.Bytes()}, nil
}

// marshalManifest writes one case per line: small diffs, and a reviewer sees which expectations changed.
func marshalManifest(m *Manifest) []byte {
	var b bytes.Buffer
	line := func(v any) []byte {
		x, err := json.Marshal(v)
		if err != nil {
			panic(err) // plain structs: cannot fail
		}
		return x
	}
	fmt.Fprintf(&b, "{\n\"schema\": %d,\n\"format\": %s,\n\"format_id\": %d,\n\"version\": %d,\n\"generator\": %s,\n",
		m.Schema, line(m.Format), m.FormatID, m.Version, line(m.Generator))
	list := func(name string, n int, item func(i int) any, last bool) {
		fmt.Fprintf(&b, "%q: [", name)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("\n")
			b.Write(line(item(i)))
		}
		b.WriteString("\n]")
		if !last {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	list("inputs", len(m.Inputs), func(i int) any { return m.Inputs[i] }, false)
	list("cases", len(m.Cases), func(i int) any { return m.Cases[i] }, false)
	list("invalid", len(m.Invalid), func(i int) any { return m.Invalid[i] }, true)
	b.WriteString("}\n")
	return b.Bytes()
}
