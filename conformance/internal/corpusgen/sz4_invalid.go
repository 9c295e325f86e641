package corpusgen

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/cdeflate"
	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
)

// Invalid SplitZip-4 payloads. Each is a reference payload changed by format-agnostic ops (corpus.go), computed
// here with knowledge of the layout; the class each must give is the reference's, and is also stated here, so that
// a reference that changes its mind fails the generator instead of silently changing the corpus.

// Class names.
const (
	cFormat       = "format"
	cVersion      = "version"
	cTruncated    = "truncated"
	cChecksum     = "checksum"
	cCorrupt      = "corrupt"
	cNonCanonical = "non-canonical"
	cTooLarge     = "too-large"
	cUnsupported  = "unsupported"
)

// body is a reference SplitZip-4 body with its geometry: the byte ranges of every chunk's pieces.
type body struct {
	layout.SZ4
	b  []byte
	cb codec.Codebook
	in []byte // the values it encodes
}

func (g *Gen) sz4Body(id string) (*body, error) {
	c := g.Case(id)
	if c == nil || g.Body(id) == nil {
		return nil, fmt.Errorf("no body for base %s", id)
	}
	cb, err := parseCodebook(c.Codebook)
	if err != nil {
		return nil, err
	}
	s, err := shiftOf(c.Chunk)
	if err != nil {
		return nil, err
	}
	return &body{SZ4: layout.SZ4{N: c.NumValues(), Shift: s}, b: g.Body(id), cb: cb, in: g.Values(id)}, nil
}

func (s *body) chunks() int          { return int(s.Chunks()) }
func (s *body) m(c int) int          { return int(s.ChunkLen(uint64(c))) }
func (s *body) entry(c int) int      { return int(s.TableOffset()) + c*layout.ChunkEntrySize }
func (s *body) word(c, w int) uint32 { return binary.LittleEndian.Uint32(s.b[s.entry(c)+4*w:]) }
func (s *body) raw(c int) bool {
	return s.word(c, layout.EntryInfo)>>layout.KindShift == layout.ChunkRaw
}
func (s *body) count(c int) int { return int(s.word(c, layout.EntryInfo) & layout.CountMask) }

func (s *body) code(c int) (lo, hi int) {
	lo = c << s.Shift / 2
	if c == s.chunks()-1 {
		return lo, int(s.CodeBytes())
	}
	return lo, lo + 1<<s.Shift/2
}

func (s *body) low(c int) (lo, hi int) {
	lo = int(s.CodeBytes()) + c<<s.Shift
	if c == s.chunks()-1 {
		return lo, int(s.TableOffset())
	}
	return lo, lo + 1<<s.Shift
}

func (s *body) side(c int) (lo, hi int) {
	lo = int(s.SideOffset()) + int(s.word(c, layout.EntrySideOff))
	n := 4 * s.count(c)
	if s.raw(c) {
		n = int(layout.RawSide(uint64(s.m(c))))
	}
	return lo, lo + n
}

// esc is the offset of escape word i of chunk c.
func (s *body) esc(c, i int) int { lo, _ := s.side(c); return lo + 4*i }

func (s *body) escWord(c, i int) uint32 { return binary.LittleEndian.Uint32(s.b[s.esc(c, i):]) }

// crcOp recomputes chunk c's CRC (docs/FORMAT.md §5.6) over the payload as the earlier ops left it.
func (s *body) crcOp(c int) Op {
	e := s.entry(c)
	sl, sh := s.side(c)
	cl, ch := s.code(c)
	ll, lh := s.low(c)
	return Op{Op: "crc", At: e + 8, Ranges: [][2]int64{{int64(e), int64(e + 8)}, {int64(sl), int64(sh)},
		{int64(cl), int64(ch)}, {int64(ll), int64(lh)}}}
}

// firstChunk returns the first chunk that satisfies ok, or -1.
func (s *body) firstChunk(ok func(c int) bool) int {
	for c := 0; c < s.chunks(); c++ {
		if ok(c) {
			return c
		}
	}
	return -1
}

func xor(at int, b ...byte) Op { return Op{Op: "xor", At: at, Hex: hex.EncodeToString(b)} }

func set32(at int, v uint32) Op {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	return Op{Op: "splice", At: at, N: 4, Hex: hex.EncodeToString(b[:])}
}

func set16(at int, v uint16) Op {
	var b [2]byte
	binary.LittleEndian.PutUint16(b[:], v)
	return Op{Op: "splice", At: at, N: 2, Hex: hex.EncodeToString(b[:])}
}

func trunc(n int) Op { return Op{Op: "trunc", N: n} }

func appendHex(at int, h string) Op { return Op{Op: "splice", At: at, Hex: h} }

// shiftOps moves body-relative ops to a container where the body starts at off.
func shiftOps(ops []Op, off int) []Op {
	out := make([]Op, len(ops))
	for i, op := range ops {
		op.At += off
		if op.Op == "trunc" {
			op.N += off
		}
		if op.Ranges != nil {
			r := make([][2]int64, len(op.Ranges))
			for j, x := range op.Ranges {
				r[j] = [2]int64{x[0] + int64(off), x[1] + int64(off)}
			}
			op.Ranges = r
		}
		out[i] = op
	}
	return out
}

// edit is a named change of a payload.
type edit struct {
	name, note string
	ops        []Op
}

func add(g *Gen, p BadPayload) error {
	_, err := g.Invalid(p)
	return err
}

func genInvalidTable(g *Gen) error {
	for _, base := range []string{baseMixed1K, baseMixed1KNoCRC, baseRawTail, baseK1500, baseMixed8K} {
		s, err := g.sz4Body(base)
		if err != nil {
			return err
		}
		last := s.chunks() - 1
		bad := func(name, note string, ops ...Op) error {
			return add(g, BadPayload{ID: base[len("escape-bursts/"):] + "/" + name, Level: LevelBody, Base: base,
				Ops: ops, Want: cCorrupt, Note: note})
		}
		second := min(1, last)
		if err := bad("kind2", "chunk kind above 1", xor(s.entry(second)+3, 0x02)); err != nil {
			return err
		}
		if r := s.firstChunk(s.raw); r >= 0 {
			if err := bad("raw-count", "raw chunk with a non-zero escape count", xor(s.entry(r), 0x01)); err != nil {
				return err
			}
		}
		if !s.raw(last) {
			if err := bad("count-over-m", "more escapes than values", set32(s.entry(last), uint32(s.m(last)+1))); err != nil {
				return err
			}
		}
		if c := s.firstChunk(func(c int) bool { return !s.raw(c) && c < last }); c >= 0 {
			if err := bad("count-plus1", "an escape count the side offsets do not follow",
				set32(s.entry(c), uint32(s.count(c)+1))); err != nil {
				return err
			}
		}
		if last >= 1 {
			if err := bad("sideoff-c1", "side offset not the running sum",
				set32(s.entry(1)+4, s.word(1, layout.EntrySideOff)+4)); err != nil {
				return err
			}
		}
		if err := bad("sideoff-c0", "first side offset not 0", set32(s.entry(0)+4, 4)); err != nil {
			return err
		}
		n := len(s.b)
		for _, x := range []edit{
			{"short-side", "side section 4 bytes short", []Op{trunc(n - 4)}},
			{"long-side", "4 bytes past the side section", []Op{appendHex(n, "00000000")}},
			{"short-table", "body ends inside the chunk table", []Op{trunc(int(s.SideOffset()) - 4)}},
			{"dense-only", "body ends after the dense streams", []Op{trunc(int(s.TableOffset()))}},
			{"empty", "empty body", []Op{trunc(0)}},
		} {
			if err := bad(x.name, x.note, x.ops...); err != nil {
				return err
			}
		}
	}
	return nil
}

func genInvalidChecksum(g *Gen) error {
	for _, base := range []string{baseMixed1K, baseRawTail, baseK1500} {
		s, err := g.sz4Body(base)
		if err != nil {
			return err
		}
		last := s.chunks() - 1
		bad := func(name, note string, ops ...Op) error {
			return add(g, BadPayload{ID: base[len("escape-bursts/"):] + "/" + name, Level: LevelBody, Base: base,
				Ops: ops, Want: cChecksum, Note: note})
		}
		cl, _ := s.code(0)
		ll, _ := s.low(last)
		ce := s.firstChunk(func(c int) bool { return !s.raw(c) && s.count(c) > 0 })
		cases := []edit{
			{"code-c0", "a flipped code bit", []Op{xor(cl+5, 0x10)}},
			{"low-last", "a flipped sign bit in the last chunk", []Op{xor(ll+1, 0x80)}},
			{"crc-field", "a flipped CRC field", []Op{xor(s.entry(last)+8, 0x01)}},
			{"code-last-byte", "the last code byte (padding) flipped", []Op{xor(int(s.CodeBytes())-1, 0x01)}},
			{"low-pad", "the last low-stream byte flipped", []Op{xor(int(s.TableOffset())-1, 0x04)}},
			{"two-chunks", "flips in the last chunk and chunk 0: chunk 0 is reported", []Op{xor(ll, 0x01), xor(cl, 0x01)}},
		}
		if ce >= 0 {
			cases = append(cases,
				edit{"escape-pos", "an escape position bit", []Op{xor(s.esc(ce, 0)+1, 0x01)}},
				edit{"precedence", "a non-canonical escape (CRC fixed) before a checksum mismatch: checksum wins",
					[]Op{xor(s.esc(ce, 0)+3, 0x01), s.crcOp(ce), xor(ll+2, 0x02)}})
		}
		if r := s.firstChunk(s.raw); r >= 0 {
			sl, _ := s.side(r)
			cases = append(cases, edit{"raw-side", "a raw chunk's exponent byte", []Op{xor(sl+3, 0x01)}})
		}
		for _, x := range cases {
			if err := bad(x.name, x.note, x.ops...); err != nil {
				return err
			}
		}
	}
	return nil
}

// mutation is a change that makes a body non-canonical; chunks are the chunks it touches (whose CRCs a variant
// with checksums re-fixes).
type mutation struct {
	name, note string
	ops        []Op
	chunks     []int
}

// streamMutations lists the non-canonical changes that apply to a body.
func streamMutations(s *body) []mutation {
	var ms []mutation
	addM := func(name, note string, chunks []int, ops ...Op) {
		ms = append(ms, mutation{name, note, ops, chunks})
	}
	last := s.chunks() - 1
	n := int(s.N)
	if n%2 == 1 && !s.raw(last) {
		addM("code-nibble", "the code nibble after the last value", []int{last}, xor((n-1)/2, 0x10))
	}
	if (n+1)/2 < int(s.CodeBytes()) {
		addM("code-pad", "a code padding byte", []int{last}, xor((n+1)/2, 0x01))
	}
	if n < int(s.LowBytes()) {
		addM("low-pad", "a low-stream padding byte", []int{last}, xor(int(s.CodeBytes())+n, 0x20))
	}
	if ce := s.firstChunk(func(c int) bool { return !s.raw(c) && s.count(c) > 0 }); ce >= 0 {
		w0 := s.escWord(ce, 0)
		pos := int(w0 & layout.EscapePosMask)
		addM("esc-reserved", "an escape's reserved byte", []int{ce}, xor(s.esc(ce, 0)+3, 0x01))
		addM("esc-has-code", "an escape for an exponent the codebook has", []int{ce},
			Op{Op: "splice", At: s.esc(ce, 0) + 2, N: 1, Hex: hex.EncodeToString([]byte{s.cb[3]})})
		cl, _ := s.code(ce)
		addM("esc-code", "an escaped value with a non-zero code", []int{ce}, xor(cl+pos/2, byte(1)<<(4*(pos&1))))
		if s.count(ce) >= 2 {
			w1 := s.escWord(ce, 1)
			addM("esc-unordered", "two escapes swapped", []int{ce}, set32(s.esc(ce, 0), w1), set32(s.esc(ce, 1), w0))
			addM("esc-duplicate", "two escapes at one position", []int{ce}, set16(s.esc(ce, 1), uint16(pos)))
		}
		if k := s.count(ce); k > 1100 {
			// Past what the decoder stages in shared memory at once (1,024 escapes by default).
			addM("late-unordered", "escapes 1200 and 1201 swapped", []int{ce},
				set32(s.esc(ce, 1200), s.escWord(ce, 1201)), set32(s.esc(ce, 1201), s.escWord(ce, 1200)))
			addM("late-has-code", "escape 1300 for an exponent the codebook has", []int{ce},
				Op{Op: "splice", At: s.esc(ce, 1300) + 2, N: 1, Hex: hex.EncodeToString([]byte{s.cb[0]})})
			p := int(s.escWord(ce, 1100) & layout.EscapePosMask)
			addM("late-code", "escape 1100's value with a non-zero code", []int{ce}, xor(cl+p/2, byte(2)<<(4*(p&1))))
			addM("late-reserved", "the last escape's reserved byte", []int{ce}, xor(s.esc(ce, k-1)+3, 0x80))
		}
	}
	// An escape at a position past the chunk's values: only a partial chunk has room for one in 16 bits.
	if !s.raw(last) && s.count(last) > 0 && s.m(last) < 1<<s.Shift {
		k := s.count(last)
		addM("esc-beyond", "the last escape past the chunk's values", []int{last},
			set16(s.esc(last, k-1), uint16(s.m(last))))
	}
	if r := s.firstChunk(s.raw); r >= 0 {
		m := s.m(r)
		head := int(layout.RawHead(uint64(m)))
		cl, ch := s.code(r)
		sl, sh := s.side(r)
		if cl+head < ch {
			addM("raw-code-pad", "a raw chunk's code-piece padding", []int{r}, xor(cl+head, 0x01))
		}
		if sl+m-head < sh {
			addM("raw-side-pad", "a raw chunk's side padding", []int{r}, xor(sh-1, 0x01))
		}
		// Every exponent of the raw chunk replaced by one the codebook has: it needs no escapes now.
		var ops []Op
		for j := 0; j < m; j++ {
			at := cl + j
			if j >= head {
				at = sl + j - head
			}
			if !s.cb.Has(s.b[at]) {
				ops = append(ops, Op{Op: "splice", At: at, N: 1, Hex: hex.EncodeToString([]byte{s.cb[0]})})
			}
		}
		addM("raw-should-be-coded", "a raw chunk whose values need no escapes", []int{r}, ops...)
	}
	if last >= 2 && len(ms) > 0 {
		// Non-canonical in two chunks: the lower one is reported.
		c0 := ms[0]
		lo := s.firstChunk(func(c int) bool { return !s.raw(c) && s.count(c) > 0 })
		if lo >= 0 && lo < last && c0.chunks[0] == last {
			ops := append([]Op{xor(s.esc(lo, 0)+3, 0x40)}, c0.ops...)
			addM("two-chunks", "non-canonical in chunk "+fmt.Sprint(lo)+" and the last: the lower is reported",
				[]int{lo, last}, ops...)
		}
	}
	return ms
}

// codedInsteadOfRaw rebuilds raw chunk r of a body as a coded chunk with all its escapes: decodable, but a coded
// chunk with 4·count ≥ rawSide(m) is never produced. Later side offsets (and, with checksums, CRCs) follow.
func codedInsteadOfRaw(s *body, r int, checksums bool) []byte {
	m := s.m(r)
	v0 := r << s.Shift
	ct := s.cb.CodeTable()
	cl, ch := s.code(r)
	code := make([]byte, ch-cl)
	var side []byte
	for j := 0; j < m; j++ {
		v := binary.LittleEndian.Uint16(s.in[2*(v0+j):])
		e := uint8(v >> 7)
		cd := ct[e]
		if cd == codec.NoCode {
			cd = 0
			side = binary.LittleEndian.AppendUint32(side, uint32(j)|uint32(e)<<layout.EscapeExpShift)
		}
		code[j/2] |= cd << (4 * (j & 1))
	}
	sl, sh := s.side(r)
	out := append([]byte(nil), s.b[:sl]...)
	copy(out[cl:ch], code)
	out = append(out, side...)
	out = append(out, s.b[sh:]...)
	delta := uint32(len(side) - (sh - sl))
	binary.LittleEndian.PutUint32(out[s.entry(r):], uint32(len(side)/4))
	for c := r + 1; c < s.chunks(); c++ {
		e := s.entry(c) + 4
		binary.LittleEndian.PutUint32(out[e:], binary.LittleEndian.Uint32(out[e:])+delta)
	}
	if checksums {
		ns := &body{SZ4: s.SZ4, b: out, cb: s.cb, in: s.in}
		var ops []Op
		for c := r; c < s.chunks(); c++ {
			ops = append(ops, ns.crcOp(c))
		}
		fixed, err := apply(out, ops, nil)
		if err != nil {
			panic(err) // ranges come from the body itself
		}
		out = fixed
	}
	return out
}

func genInvalidStream(g *Gen) error {
	type base struct {
		id        string
		checksums bool
	}
	for _, b := range []base{{baseMixed1KNoCRC, false}, {baseRawTailNoCRC, false}, {baseK1500NoCRC, false},
		{baseMixed8K, false}, {baseMixed1K, true}, {baseRawTail, true}, {baseK1500, true}} {
		s, err := g.sz4Body(b.id)
		if err != nil {
			return err
		}
		prefix := b.id[len("escape-bursts/"):]
		if b.checksums {
			prefix += "/crc-fixed"
		}
		for _, mu := range streamMutations(s) {
			ops := mu.ops
			if b.checksums {
				for _, c := range mu.chunks {
					ops = append(ops, s.crcOp(c))
				}
			}
			if err := add(g, BadPayload{ID: prefix + "/" + mu.name, Level: LevelBody, Base: b.id, Ops: ops,
				Want: cNonCanonical, Note: mu.note}); err != nil {
				return err
			}
		}
		if r := s.firstChunk(s.raw); r >= 0 {
			nb := codedInsteadOfRaw(s, r, b.checksums)
			if err := add(g, BadPayload{ID: prefix + "/coded-should-be-raw", Level: LevelBody, Base: b.id,
				Ops:  []Op{{Op: "splice", At: 0, N: len(s.b), Data: g.Blob(nb)}},
				Want: cNonCanonical, Note: fmt.Sprintf("raw chunk %d rebuilt as a coded chunk with all its escapes", r)}); err != nil {
				return err
			}
		}
		if b.checksums {
			off := false
			if err := add(g, BadPayload{ID: prefix[:len(prefix)-len("/crc-fixed")] + "/crc-without-checksums",
				Level: LevelBody, Base: b.id, Checksums: &off, Want: cNonCanonical,
				Note: "CRC fields decoded with checksums off"}); err != nil {
				return err
			}
		}
		// A decoder given a codebook that has an escaped exponent.
		if ce := s.firstChunk(func(c int) bool { return !s.raw(c) && s.count(c) > 0 }); ce >= 0 {
			cb := s.cb
			cb[15] = uint8(s.escWord(ce, 0) >> layout.EscapeExpShift)
			if err := add(g, BadPayload{ID: prefix + "/codebook-has-escape", Level: LevelBody, Base: b.id, Codebook: &cb,
				Want: cNonCanonical, Note: "decoded with a codebook that has an escaped exponent"}); err != nil {
				return err
			}
		}
	}
	return nil
}

// metaEnd is where a container's bodies start; the metadata CRC sits just before it.
func metaEnd(p []byte) int {
	return int(layout.Align4(layout.PreambleSize+uint64(binary.LittleEndian.Uint32(p[12:])))) + layout.MetaCRCSize
}

// metaCRCOp recomputes the metadata CRC of the container at the start of the payload.
func metaCRCOp(end int) Op {
	return Op{Op: "crc", At: end - 4, Ranges: [][2]int64{{0, int64(end - 4)}}}
}

// directory inflates a container's directory.
func directory(p []byte) ([]byte, error) {
	clen := binary.LittleEndian.Uint32(p[12:])
	return io.ReadAll(flate.NewReader(bytes.NewReader(p[layout.PreambleSize : layout.PreambleSize+clen])))
}

// rebuildHeader is the container header (preamble, canonical meta, padding, CRC) of a directory; compress lets a
// case use a different DEFLATE encoder.
func rebuildHeader(p, dir []byte, compress func([]byte) []byte) []byte {
	meta := compress(dir)
	h := append([]byte(nil), p[:12]...)
	h = binary.LittleEndian.AppendUint32(h, uint32(len(meta)))
	h = binary.LittleEndian.AppendUint32(h, uint32(len(dir)))
	h = append(h, meta...)
	for len(h)%4 != 0 {
		h = append(h, 0)
	}
	return binary.LittleEndian.AppendUint32(h, crc32c.Checksum(h))
}

func canonical(dir []byte) []byte { return cdeflate.Compress(nil, dir) }

// dirFields are the offsets of the fields of a directory with one tensor record (docs/FORMAT.md §3.1).
type dirFields struct {
	rec, nameLen, dtype, format, shift, reserved, cbIndex, rank, dims, elements, bodyLen int
}

func fields(dir []byte) dirFields {
	var f dirFields
	ncb := int(binary.LittleEndian.Uint32(dir))
	f.rec = 4 + 17*ncb + 4 // codebook count, codebooks, record count
	f.nameLen = f.rec + 1
	name := int(binary.LittleEndian.Uint16(dir[f.nameLen:]))
	f.dtype = f.nameLen + 2 + name
	f.format, f.shift, f.reserved, f.cbIndex = f.dtype+1, f.dtype+2, f.dtype+3, f.dtype+4
	f.rank = f.cbIndex + 4
	f.dims = f.rank + 1
	f.elements = f.dims + 8*int(dir[f.rank])
	f.bodyLen = f.elements + 8
	return f
}

func genInvalidContainer(g *Gen) error {
	base, baseNoCRC := baseMixed1K, baseMixed1KNoCRC
	p := g.Container(base)
	end := metaEnd(p)
	n := len(p)
	bad := func(id, want, note string, ops ...Op) error {
		return add(g, BadPayload{ID: id, Level: LevelContainer, Base: base, Ops: ops, Want: want, Note: note})
	}
	sb, err := g.sz4Body(base)
	if err != nil {
		return err
	}
	type tc struct {
		id, want, note string
		ops            []Op
	}
	cases := []tc{
		{"trunc/0", cTruncated, "empty input", []Op{trunc(0)}},
		{"trunc/7", cTruncated, "inside the magic", []Op{trunc(7)}},
		{"trunc/8", cTruncated, "magic only", []Op{trunc(8)}},
		{"trunc/12", cTruncated, "inside the preamble", []Op{trunc(12)}},
		{"trunc/19", cTruncated, "one byte short of the preamble", []Op{trunc(19)}},
		{"trunc/20", cTruncated, "preamble only", []Op{trunc(20)}},
		{"trunc/meta-1", cTruncated, "inside the metadata CRC", []Op{trunc(end - 1)}},
		{"trunc/meta", cTruncated, "header without its body", []Op{trunc(end)}},
		{"trunc/body-half", cTruncated, "half the body", []Op{trunc(end + (n-end)/2)}},
		{"trunc/last4", cTruncated, "the last 4 bytes missing", []Op{trunc(n - 4)}},
		{"trunc/last1", cTruncated, "the last byte missing", []Op{trunc(n - 1)}},
		{"magic/0", cFormat, "first magic byte", []Op{xor(0, 0x01)}},
		{"magic/3", cFormat, "'Z' of the magic", []Op{xor(3, 0x20)}},
		{"magic/7", cFormat, "last magic byte", []Op{xor(7, 0x80)}},
		{"magic/short", cFormat, "bad magic in a 10-byte input", []Op{xor(1, 0x01), trunc(10)}},
		{"magic/text", cFormat, "not a vkzip payload at all", []Op{{Op: "splice", At: 0, N: n, Hex: hex.EncodeToString([]byte("safetensors? no, this is text\n"))}}},
		{"version/3", cVersion, "version 3", []Op{set16(8, 3)}},
		{"version/0", cVersion, "version 0", []Op{set16(8, 0)}},
		{"version/ffff", cVersion, "version 65535", []Op{set16(8, 0xFFFF)}},
		{"flags/unknown", cChecksum, "an unknown flag, metadata CRC not fixed", []Op{xor(10, 0x04)}},
		{"flags/unknown-fixed", cVersion, "an unknown flag, metadata CRC fixed", []Op{xor(10, 0x04), metaCRCOp(end)}},
		{"flags/high-fixed", cVersion, "flag bit 15, metadata CRC fixed", []Op{xor(11, 0x80), metaCRCOp(end)}},
		{"flags/checksums-cleared", cChecksum, "CHECKSUMS cleared, metadata CRC not fixed", []Op{xor(10, 0x01)}},
		{"flags/checksums-cleared-fixed", cNonCanonical, "CHECKSUMS cleared and the metadata CRC fixed: chunk CRC fields are then non-canonical", []Op{xor(10, 0x01), metaCRCOp(end)}},
		{"flags/final-cleared-fixed", cTruncated, "FINAL cleared: the stream ends without a final container", []Op{xor(10, 0x02), metaCRCOp(end)}},
		{"meta/crc", cChecksum, "metadata CRC flipped", []Op{xor(end-4, 0x01)}},
		{"meta/byte", cChecksum, "a metadata byte flipped", []Op{xor(25, 0x08)}},
		{"meta/rawlen", cChecksum, "metaRawLen changed, CRC not fixed", []Op{xor(16, 0x01)}},
		{"meta/rawlen-huge-fixed", cTooLarge, "metaRawLen 2^27+1", []Op{set32(16, 1<<27+1), metaCRCOp(end)}},
		{"meta/rawlen-ratio-fixed", cTooLarge, "metaRawLen beyond 172 × metaCompressedLen + 16",
			[]Op{set32(16, 172*binary.LittleEndian.Uint32(p[12:])+17), metaCRCOp(end)}},
		{"meta/rawlen-plus1-fixed", cCorrupt, "metadata inflates to fewer bytes than metaRawLen", []Op{set32(16, binary.LittleEndian.Uint32(p[16:])+1), metaCRCOp(end)}},
		{"meta/rawlen-minus1-fixed", cCorrupt, "metadata inflates to more bytes than metaRawLen", []Op{set32(16, binary.LittleEndian.Uint32(p[16:])-1), metaCRCOp(end)}},
		{"stream/garbage", cCorrupt, "4 bytes after the final container", []Op{appendHex(n, "00000000")}},
		{"stream/twice", cCorrupt, "a second container after the final one", []Op{{Op: "splice", At: n, Hex: hex.EncodeToString(p)}}},
		{"stream/nonfinal-short", cTruncated, "a non-final container followed by 4 bytes", []Op{xor(10, 0x02), metaCRCOp(end), appendHex(n, "89564b5a")}},
		{"stream/nonfinal-badmagic", cFormat, "a non-final container followed by a bad magic", []Op{xor(10, 0x02), metaCRCOp(end), {Op: "splice", At: n, Hex: hex.EncodeToString(append([]byte{0x88}, p[1:]...))}}},
		{"body/flip", cChecksum, "a body bit under a chunk checksum", []Op{xor(end+100, 0x04)}},
		{"body/table-kind", cCorrupt, "a chunk kind in the body's table", shiftOps([]Op{xor(sb.entry(0)+3, 0x04)}, end)},
	}
	if (layout.PreambleSize+int(binary.LittleEndian.Uint32(p[12:])))%4 != 0 {
		cases = append(cases, tc{"meta/padding-fixed", cNonCanonical, "non-zero metadata padding", []Op{xor(end-5, 0x01), metaCRCOp(end)}})
	}
	for _, c := range cases {
		if err := bad(c.id, c.want, c.note, c.ops...); err != nil {
			return err
		}
	}

	// Directory edits: the metadata rebuilt around a changed directory, canonical DEFLATE and CRC fixed.
	dir, err := directory(p)
	if err != nil {
		return err
	}
	f := fields(dir)
	dirEdit := func(id, want, note string, change func(d []byte) []byte) error {
		d := change(append([]byte(nil), dir...))
		h := rebuildHeader(p, d, canonical)
		return bad("dir/"+id, want, note, Op{Op: "splice", At: 0, N: end, Data: g.Blob(h)})
	}
	put64 := func(d []byte, at int, v uint64) []byte { binary.LittleEndian.PutUint64(d[at:], v); return d }
	edits := []struct {
		id, want, note string
		change         func(d []byte) []byte
	}{
		{"reserved", cNonCanonical, "reserved byte 1", func(d []byte) []byte { d[f.reserved] = 1; return d }},
		{"dtype-16", cCorrupt, "dtype 16", func(d []byte) []byte { d[f.dtype] = 16; return d }},
		{"dtype-f16", cCorrupt, "splitzip4 on an F16 tensor", func(d []byte) []byte { d[f.dtype] = byte(layout.DTypeF16); return d }},
		// Format 2 was reserved when this case was written as format-2; it is zf12 now (its own corpus covers a zf12
		// record with a codebook), so the case names a format still reserved.
		{"format-6", cUnsupported, "format 6 (reserved)", func(d []byte) []byte { d[f.format] = 6; return d }},
		{"format-255", cUnsupported, "format 255", func(d []byte) []byte { d[f.format] = 255; return d }},
		{"format-stored", cNonCanonical, "stored with a chunk shift and codebook", func(d []byte) []byte { d[f.format] = 0; return d }},
		{"shift-9", cCorrupt, "chunk shift 9", func(d []byte) []byte { d[f.shift] = 9; return d }},
		{"shift-17", cCorrupt, "chunk shift 17", func(d []byte) []byte { d[f.shift] = 17; return d }},
		{"elements+1", cCorrupt, "elements disagree with the shape", func(d []byte) []byte {
			return put64(d, f.elements, binary.LittleEndian.Uint64(d[f.elements:])+1)
		}},
		{"elements-huge", cTooLarge, "shape and elements of 2^49", func(d []byte) []byte {
			return put64(put64(d, f.dims, 1<<49), f.elements, 1<<49)
		}},
		{"bodylen+4", cTruncated, "a body 4 bytes past the input", func(d []byte) []byte {
			return put64(d, f.bodyLen, binary.LittleEndian.Uint64(d[f.bodyLen:])+4)
		}},
		{"bodylen-3", cCorrupt, "a body length not a multiple of 4", func(d []byte) []byte {
			return put64(d, f.bodyLen, binary.LittleEndian.Uint64(d[f.bodyLen:])-3)
		}},
		{"bodylen-min", cCorrupt, "a body shorter than its dense streams", func(d []byte) []byte { return put64(d, f.bodyLen, 4) }},
		{"codebook-dup", cCorrupt, "a codebook with a repeated exponent", func(d []byte) []byte { d[6] = d[5]; return d }},
		{"codebook-kind", cCorrupt, "codebook kind 2", func(d []byte) []byte { d[4] = 2; return d }},
		{"codebook-index", cCorrupt, "codebook index 1 of 1", func(d []byte) []byte { d[f.cbIndex] = 1; return d }},
		{"codebook-unreferenced", cNonCanonical, "a second codebook no tensor uses", func(d []byte) []byte {
			out := append([]byte{2, 0, 0, 0}, d[4:21]...)
			out = append(out, d[4:21]...) // a copy: entries need only be distinct within a codebook
			return append(out, d[21:]...)
		}},
		{"trailing", cCorrupt, "a byte after the last record", func(d []byte) []byte { return append(d, 0) }},
		{"record-type", cCorrupt, "record type 3", func(d []byte) []byte { d[f.rec] = 3; return d }},
		{"records-2", cCorrupt, "two records declared, one present", func(d []byte) []byte { d[f.rec-4] = 2; return d }},
		{"name-utf8", cCorrupt, "a tensor name that is not UTF-8", func(d []byte) []byte { d[f.nameLen+2] = 0xFF; return d }},
		{"rank-0", cCorrupt, "scalar shape with many elements", func(d []byte) []byte {
			d[f.rank] = 0
			return append(d[:f.dims], d[f.elements:]...)
		}},
	}
	for _, e := range edits {
		if err := dirEdit(e.id, e.want, e.note, e.change); err != nil {
			return err
		}
	}
	// The same directory, DEFLATE-compressed by another encoder: valid DEFLATE, not the canonical stream.
	if err := bad("meta/deflate-noncanonical", cNonCanonical, "metadata compressed by compress/flate",
		Op{Op: "splice", At: 0, N: end, Data: g.Blob(rebuildHeader(p, dir, func(d []byte) []byte {
			var b bytes.Buffer
			w, _ := flate.NewWriter(&b, flate.BestCompression)
			w.Write(d)
			w.Close()
			return b.Bytes()
		}))}); err != nil {
		return err
	}

	// Checksums off: the body reaches the backend, whose kernel must find the non-canonical stream.
	q := g.Container(baseNoCRC)
	qe := metaEnd(q)
	s, err := g.sz4Body(baseNoCRC)
	if err != nil {
		return err
	}
	for _, c := range []tc{
		{"nocrc/code-pad", cNonCanonical, "code padding, checksums off", shiftOps([]Op{xor((int(s.N)+1)/2, 0x01)}, qe)},
		{"nocrc/crc-field", cNonCanonical, "a chunk CRC field without CHECKSUMS", shiftOps([]Op{xor(s.entry(1)+8, 0x01)}, qe)},
		{"nocrc/checksums-set-fixed", cChecksum, "CHECKSUMS set on zero CRC fields, metadata CRC fixed", []Op{xor(10, 0x01), metaCRCOp(qe)}},
		{"nocrc/side-offset", cCorrupt, "a side offset, checksums off", shiftOps([]Op{xor(s.entry(2)+4, 0x04)}, qe)},
	} {
		if err := add(g, BadPayload{ID: c.id, Level: LevelContainer, Base: baseNoCRC, Ops: c.ops, Want: c.want, Note: c.note}); err != nil {
			return err
		}
	}

	// Stored tensors: their CRC and padding are checked by the container code on every backend.
	for _, st := range []struct {
		base string
		tcs  func(end, n int) []tc
	}{
		{"stored/f32/n100", func(end, n int) []tc {
			return []tc{
				{"stored/flip", cChecksum, "a stored byte", []Op{xor(end+10, 0x01)}},
				{"stored/crc", cChecksum, "the stored CRC", []Op{xor(n-1, 0x01)}},
				{"stored/trunc", cTruncated, "the stored body cut short", []Op{trunc(n - 2)}},
			}
		}},
		{"stored/u8/n7/nocrc", func(end, n int) []tc {
			return []tc{
				{"stored/crc-without-checksums", cNonCanonical, "a stored CRC without CHECKSUMS", []Op{xor(n-4, 0x01)}},
				{"stored/padding", cNonCanonical, "stored padding", []Op{xor(end+7, 0x01)}},
			}
		}},
		{"stored/f16/n333", func(end, n int) []tc {
			return []tc{{"stored/padding-crc-fixed", cNonCanonical, "stored padding, CRC fixed",
				[]Op{xor(end+666, 0x01), {Op: "crc", At: n - 4, Ranges: [][2]int64{{int64(end), int64(n - 4)}}}}}}
		}},
	} {
		sp := g.Container(st.base)
		for _, c := range st.tcs(metaEnd(sp), len(sp)) {
			if err := add(g, BadPayload{ID: c.id, Level: LevelContainer, Base: st.base, Ops: c.ops, Want: c.want, Note: c.note}); err != nil {
				return err
			}
		}
	}
	return nil
}
