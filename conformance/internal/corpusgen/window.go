package corpusgen

import (
	"encoding/binary"
	"fmt"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/conformance"
	"github.com/vkzip/vkzip/synth"
)

// The corpora of the window formats: TBE-3 (docs/FORMAT.md §12, BF16) and the exponent-window formats xw2, xw3,
// xw4 (§13; F8_E5M2, F8_E4M3 except xw4, F16, F32). Both keep a per-chunk window of exponents, a chunk table of
// §5.3's shape (info, sideOffset, crc) and fixed-offset dense streams, so one set of categories, parameterised by
// the format's geometry, covers them. Expectations come from the reference, as for every corpus.

const tbe3 = "tbe3"

// windowFormat is one window format's corpus: its dtypes and the version of its cases.
type windowFormat struct {
	name    string
	id      uint8
	version int
	dtypes  []layout.DType
}

var windowFormats = []windowFormat{
	{tbe3, layout.FormatTBE3, 2, []layout.DType{layout.DTypeBF16}},
	{"xw3", layout.FormatXW3, 2, []layout.DType{layout.DTypeF8E5M2, layout.DTypeF8E4M3, layout.DTypeF16, layout.DTypeF32}},
	{"xw2", layout.FormatXW2, 2, []layout.DType{layout.DTypeF8E5M2, layout.DTypeF8E4M3, layout.DTypeF16, layout.DTypeF32}},
	{"xw4", layout.FormatXW4, 2, []layout.DType{layout.DTypeF8E5M2, layout.DTypeF16, layout.DTypeF32}},
}

// Float kinds of the float/1 generator (conformance.Float*).
const (
	fkKV      = conformance.FloatKV
	fkUniform = conformance.FloatUniform
	fkAll     = conformance.FloatAll
	fkWindow  = conformance.FloatWindow
	fkEscmix  = conformance.FloatEscmix
	fkGauss   = conformance.FloatGauss
)

// floatBits is the exponent and mantissa widths of a float dtype (BF16 included).
var floatBits = conformance.FloatBits

func init() {
	for _, wf := range windowFormats {
		wf := wf
		RegisterFormat(Format{Name: wf.name, ID: wf.id, Version: wf.version})
		reg := func(name string, min int, about string, gen func(g *Gen, wf windowFormat) error) {
			Register(Category{Format: wf.name, Name: name, Min: min, About: about,
				Generate: func(g *Gen) error { return gen(g, wf) }})
		}
		per := len(wf.dtypes)
		reg("bitpatterns", 2*per, "every bit pattern of the dtype, ascending and shuffled (raw chunks, escapes)", wBitPatterns)
		reg("windows", 8*per, "exponents in windows at the bottom and top of the range, exactly the window and one wider", wWindows)
		reg("window-sweep", 5*per, "exactly-fitting windows at starts across the whole exponent range", wSweep)
		reg("lengths", 30*per, "lengths around groups, tiles and chunks (1, 3, 24..65, chunk±1, 2·chunk+3) for every chunk size", wLengths)
		reg("escapes", 5*per, "no escape, few, many, all-fallback (uniform bits: raw chunks), raw and coded chunks mixed", wEscapes)
		reg("kv", 3*per, "real KV-cache tensors (stories260K) converted to the dtype, several chunk sizes", wKV)
		reg("synthetic", 3*per, "Gaussian at several scales converted to the dtype", wSynthetic)
		reg("stored", 3, "tensors the format does not code travel stored (containers only)", wStored)
		reg("invalid-container", 20, "broken containers and the format's directory rules (container level)", wInvalidContainer)
		reg("invalid-table", 20, "chunk tables that contradict the body (body level; corrupt)", wInvalidTable)
		reg("invalid-checksum", 10, "flipped bits under chunk checksums (body level)", wInvalidChecksum)
		reg("invalid-stream", 10, "non-canonical bodies: CRC fields without checksums, padding, changed pieces with CRCs re-fixed (body level)", wInvalidStream)
	}
}

func fspec(d layout.DType, n int, seed uint64, kind, p int64) *Spec {
	return &Spec{Gen: "float/1", N: n, Seed: seed, Args: []int64{int64(d), kind, p}}
}

// dt names a dtype in case ids.
func dtn(d layout.DType) string { return d.String() }

func wBitPatterns(g *Gen, wf windowFormat) error {
	var vs []Valid
	for i, d := range wf.dtypes {
		n := 1 << (8 * min(d.Size(), 2))
		if n < 4096 {
			n = 4096 // 8-bit dtypes: every pattern 16 times over
		}
		vs = append(vs,
			Valid{ID: dtn(d) + "/ascending/c1024", Spec: fspec(d, n, uint64(10+i), fkAll, 0), DType: d, Chunk: 1024, Checksums: true},
			Valid{ID: dtn(d) + "/shuffled/c65536/nocrc", Spec: fspec(d, n, uint64(20+i), fkAll, 1), DType: d, Chunk: 65536})
	}
	return genAll(g, vs)
}

func wWindows(g *Gen, wf windowFormat) error {
	var vs []Valid
	for i, d := range wf.dtypes {
		E, _, _ := floatBits(d)
		win := 7 // TBE-3 and xw3: 7 exponents with a code
		switch wf.id {
		case layout.FormatXW2:
			win = 3
		case layout.FormatXW4:
			win = 15
		}
		top := 1<<E - 1
		for k, w := range []struct {
			name       string
			base, span int
			chunk      int
		}{
			{"bottom-exact", 0, win - 1, 1024}, {"bottom-wider", 0, win, 2048},
			{"top-exact", top - win + 1, win - 1, 1024}, {"top-wider", top - win, win, 4096},
			{"middle-exact", top / 2, win - 1, 65536}, {"single", top / 2, 0, 1024},
			{"all", 0, top, 1024}, {"middle-wider2", top/2 - 1, win + 1, 16384},
		} {
			vs = append(vs, Valid{ID: fmt.Sprintf("%s/%s/c%d", dtn(d), w.name, w.chunk),
				Spec: fspec(d, 3*w.chunk+77, uint64(100+10*i+k), fkWindow, int64(w.base<<8|w.span)), DType: d,
				Chunk: w.chunk, Checksums: k%3 != 2})
		}
	}
	return genAll(g, vs)
}

// winSize is the number of exponents with a code.
func winSize(wf windowFormat) int {
	switch wf.id {
	case layout.FormatXW2:
		return 3
	case layout.FormatXW4:
		return 15
	}
	return 7
}

func wSweep(g *Gen, wf windowFormat) error {
	var vs []Valid
	for i, d := range wf.dtypes {
		E, _, _ := floatBits(d)
		win := winSize(wf)
		top := 1<<E - win // the highest window start
		steps := 10
		if wf.id == layout.FormatTBE3 {
			steps = 35
		}
		prev := -1
		for k := 0; k <= steps; k++ {
			start := top * k / steps
			if start == prev {
				continue
			}
			prev = start
			vs = append(vs, Valid{ID: fmt.Sprintf("%s/start%d/c1024", dtn(d), start),
				Spec: fspec(d, 2048+5, uint64(500+40*i+k), fkWindow, int64(start<<8|(win-1))), DType: d, Chunk: 1024,
				Checksums: k%2 == 0})
		}
	}
	return genAll(g, vs)
}

func wLengths(g *Gen, wf windowFormat) error {
	var vs []Valid
	i := 0
	for _, d := range wf.dtypes {
		for _, s := range shifts() {
			c := 1 << s
			for _, n := range []int{1, 3, 24, 25, 31, 32, 33, 63, 64, 65, c - 1, c + 1, 2*c + 3} {
				if s > 10 && n < c-1 {
					continue // short tensors are one partial chunk at any chunk size: once is enough
				}
				cs := i%2 == 0
				id := fmt.Sprintf("%s/n%d/c%d", dtn(d), n, c)
				if !cs {
					id += "/nocrc"
				}
				vs = append(vs, Valid{ID: id, Spec: fspec(d, n, uint64(200+i), fkKV, 0), DType: d, Chunk: c, Checksums: cs})
				i++
			}
		}
		vs = append(vs, Valid{ID: dtn(d) + "/n0/c1024", Bytes: []byte{}, DType: d, Chunk: 1024, Checksums: true,
			Note: "stored: no values"})
	}
	return genAll(g, vs)
}

// Base cases of the invalid categories (valid here): several chunks, coded and raw, a short last chunk.
const (
	wBaseMixed = "escapes/%s/mixed/c1024"       // coded and raw chunks, partial last chunk, checksums
	wBaseNoCRC = "escapes/%s/mixed/c1024/nocrc" // the same values without checksums
	wBaseKV    = "escapes/%s/few/c2048"         // every chunk coded, some escapes, checksums
)

func wEscapes(g *Gen, wf windowFormat) error {
	var vs []Valid
	for i, d := range wf.dtypes {
		s := uint64(300 + 10*i)
		// Mixed: KV-like chunks with uniform-bit chunks between them (raw) and a partial last chunk.
		kv, err := lookupFloat(d, 4*1024+333, s, fkKV, 0)
		if err != nil {
			return err
		}
		un, err := lookupFloat(d, 1024, s+1, fkUniform, 0)
		if err != nil {
			return err
		}
		sz := d.Size()
		mixed := append([]byte(nil), kv...)
		copy(mixed[1*1024*sz:], un)
		copy(mixed[3*1024*sz:], un)
		vs = append(vs,
			Valid{ID: dtn(d) + "/mixed/c1024", Bytes: mixed, DType: d, Chunk: 1024, Checksums: true, Note: "chunks 1 and 3 raw"},
			Valid{ID: dtn(d) + "/mixed/c1024/nocrc", Bytes: mixed, DType: d, Chunk: 1024},
			Valid{ID: dtn(d) + "/few/c2048", Spec: fspec(d, 5*2048+100, s+2, fkEscmix, 2000), DType: d, Chunk: 2048, Checksums: true},
			Valid{ID: dtn(d) + "/many/c4096/nocrc", Spec: fspec(d, 3*4096, s+3, fkEscmix, 100000), DType: d, Chunk: 4096},
			Valid{ID: dtn(d) + "/none/c8192", Spec: fspec(d, 2*8192+5, s+4, fkEscmix, 0), DType: d, Chunk: 8192, Checksums: true},
			Valid{ID: dtn(d) + "/all-fallback/c1024", Spec: fspec(d, 4096, s+5, fkUniform, 0), DType: d, Chunk: 1024, Checksums: true,
				Note: "uniform bits: every chunk raw"},
			Valid{ID: dtn(d) + "/all-fallback/c65536/nocrc", Spec: fspec(d, 70000, s+6, fkUniform, 0), DType: d, Chunk: 65536})
	}
	return genAll(g, vs)
}

func lookupFloat(d layout.DType, n int, seed uint64, kind, p int64) ([]byte, error) {
	f, _ := lookupInput("float/1")
	return f(n, seed, []int64{int64(d), kind, p})
}

func wKV(g *Gen, wf windowFormat) error {
	src, err := g.SourceOf(sz4, KVSourceFile)
	if err != nil {
		return err
	}
	const per = 2 * 512 * 4 * 8
	if len(src) != per*len(kvSamples) {
		return fmt.Errorf("%s: %d bytes, want %d", KVSourceFile, len(src), per*len(kvSamples))
	}
	var vs []Valid
	for _, d := range wf.dtypes {
		all := src
		if d != layout.DTypeBF16 {
			if all, err = synth.ConvertBF16(nil, src, d); err != nil {
				return err
			}
		}
		one := len(all) / len(kvSamples)
		shape := []uint64{512, 4, 8}
		vs = append(vs,
			Valid{ID: dtn(d) + "/" + kvSamples[0] + "/c65536", Bytes: all[:one], DType: d, Shape: shape, Chunk: 65536, Checksums: true},
			Valid{ID: dtn(d) + "/" + kvSamples[0] + "/c4096/nocrc", Bytes: all[:one], DType: d, Shape: shape, Chunk: 4096},
			Valid{ID: dtn(d) + "/" + kvSamples[0] + "/c1024", Bytes: all[:one], DType: d, Shape: shape, Chunk: 1024, Checksums: true})
	}
	return genAll(g, vs)
}

func wSynthetic(g *Gen, wf windowFormat) error {
	var vs []Valid
	for i, d := range wf.dtypes {
		s := uint64(400 + 10*i)
		vs = append(vs,
			Valid{ID: dtn(d) + "/gauss/s0/c65536", Spec: fspec(d, 100000, s, fkGauss, 0), DType: d, Chunk: 65536, Checksums: true},
			Valid{ID: dtn(d) + "/gauss/s-20/c16384/nocrc", Spec: fspec(d, 40000, s+1, fkGauss, -20), DType: d, Chunk: 16384},
			Valid{ID: dtn(d) + "/gauss/s30/c4096", Spec: fspec(d, 30000, s+2, fkGauss, 30), DType: d, Chunk: 4096, Checksums: true})
	}
	return genAll(g, vs)
}

func wStored(g *Gen, wf windowFormat) error {
	seq := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + 3)
		}
		return b
	}
	other := layout.DTypeF16 // a float dtype the format does not code
	if wf.id != layout.FormatTBE3 {
		other = layout.DTypeBF16
	}
	return genAll(g, []Valid{
		{ID: "u8/n7/nocrc", Bytes: seq(7), DType: layout.DTypeU8, Chunk: 1024},
		{ID: "i32/n100", Bytes: seq(400), DType: layout.DTypeI32, Chunk: 1024, Checksums: true},
		{ID: dtn(other) + "/n333", Bytes: seq(666), DType: other, Chunk: 65536, Checksums: true},
	})
}

// wbody is a reference body of a window format with its geometry: the dense streams' pieces per chunk, the table
// and the side section.
type wbody struct {
	b          []byte
	n          uint64
	shift      uint
	chunks     int
	table      int // offset of the chunk table
	sideStart  int // offset of the side section
	tableEnd   int
	pieces     func(c int) [][2]int // chunk c's dense pieces in CRC order (after its side piece)
	maxBody    uint64
	maxBase    int // largest valid window start
	windowMask uint32
}

func (g *Gen) windowBody(wf windowFormat, id string) (*wbody, error) {
	c := g.Case(id)
	if c == nil || g.Body(id) == nil {
		return nil, fmt.Errorf("no body for base %s", id)
	}
	s, err := shiftOf(c.Chunk)
	if err != nil {
		return nil, err
	}
	d, err := c.ParsedDType()
	if err != nil {
		return nil, err
	}
	n := c.NumValues()
	w := &wbody{b: g.Body(id), n: n, shift: s}
	cv := 1 << s
	if wf.id == layout.FormatTBE3 {
		t := layout.TBE3{N: n, Shift: s}
		w.chunks, w.table, w.sideStart, w.maxBody = int(t.Chunks()), int(t.TableOffset()), int(t.SideOffset()), t.MaxBodySize()
		w.maxBase = layout.TBE3MaxWindowStart
		lp, ls := int(t.PlaneBytes()), int(t.SMBytes())
		w.pieces = func(c int) [][2]int {
			pl, ph := c*3*cv/8, (c+1)*3*cv/8
			sl, sh := lp+c*cv, lp+(c+1)*cv
			if c == w.chunks-1 {
				ph, sh = lp, lp+ls
			}
			return [][2]int{{pl, ph}, {sl, sh}}
		}
	} else {
		x, ok := layout.NewXW(wf.id, d, n, s)
		if !ok {
			return nil, fmt.Errorf("base %s: no xw geometry", id)
		}
		w.chunks, w.table, w.sideStart, w.maxBody = int(x.Chunks()), int(x.TableOffset()), int(x.SideOffset()), x.MaxBodySize()
		w.maxBase = int(x.MaxBase())
		lp, lb := int(x.PlaneBytes()), int(x.LowBytes())
		pc, kb := 4*int(x.Planes())*cv/layout.XWGroup, int(x.KB())*cv
		w.pieces = func(c int) [][2]int {
			pl, ph := c*pc, (c+1)*pc
			bl, bh := lp+c*kb, lp+(c+1)*kb
			if c == w.chunks-1 {
				ph, bh = lp, lp+lb
			}
			return [][2]int{{pl, ph}, {bl, bh}}
		}
	}
	w.tableEnd = w.table + layout.ChunkEntrySize*w.chunks
	return w, nil
}

func (w *wbody) entry(c int) int      { return w.table + c*layout.ChunkEntrySize }
func (w *wbody) word(c, k int) uint32 { return binary.LittleEndian.Uint32(w.b[w.entry(c)+4*k:]) }
func (w *wbody) raw(c int) bool       { return w.word(c, layout.EntryInfo)>>24 == 1 }
func (w *wbody) m(c int) int          { return int(min(w.n-uint64(c)<<w.shift, 1<<w.shift)) }

// side is chunk c's side piece.
func (w *wbody) side(c int) (lo, hi int) {
	lo = w.sideStart + int(w.word(c, layout.EntrySideOff))
	if c+1 < w.chunks {
		return lo, w.sideStart + int(w.word(c+1, layout.EntrySideOff))
	}
	return lo, len(w.b)
}

// crcOp recomputes chunk c's CRC over info, sideOffset, its side piece and its dense pieces.
func (w *wbody) crcOp(c int) Op {
	e := w.entry(c)
	sl, sh := w.side(c)
	r := [][2]int64{{int64(e), int64(e + 8)}, {int64(sl), int64(sh)}}
	for _, p := range w.pieces(c) {
		r = append(r, [2]int64{int64(p[0]), int64(p[1])})
	}
	return Op{Op: "crc", At: e + 8, Ranges: r}
}

func (w *wbody) firstChunk(ok func(c int) bool) int {
	for c := 0; c < w.chunks; c++ {
		if ok(c) {
			return c
		}
	}
	return -1
}

func wInvalidTable(g *Gen, wf windowFormat) error {
	for _, d := range wf.dtypes {
		for _, base := range []string{fmt.Sprintf(wBaseMixed, dtn(d)), fmt.Sprintf(wBaseNoCRC, dtn(d)), fmt.Sprintf(wBaseKV, dtn(d))} {
			w, err := g.windowBody(wf, base)
			if err != nil {
				return err
			}
			last := w.chunks - 1
			es := []edit{
				{"kind-2", "kind 2 in the info word", []Op{{Op: "splice", At: w.entry(0) + 3, N: 1, Hex: "02"}}},
				{"sideoff-c0", "first side offset not 0", []Op{set32(w.entry(0)+4, 4)}},
				{"sideoff-c1", "side offset not the running sum", []Op{set32(w.entry(1)+4, w.word(1, layout.EntrySideOff)+4)}},
				{"long-side", "4 bytes past the side section", []Op{appendHex(len(w.b), "00000000")}},
				{"short-table", "body ends inside the chunk table", []Op{trunc(w.tableEnd - 4)}},
				{"dense-only", "body ends after the dense streams", []Op{trunc(w.table)}},
				{"empty", "empty body", []Op{trunc(0)}},
			}
			if w.sideStart < len(w.b) {
				es = append(es, edit{"short-side", "side section 4 bytes short", []Op{trunc(len(w.b) - 4)}})
			}
			if c := w.firstChunk(func(c int) bool { return !w.raw(c) }); c >= 0 {
				info := w.word(c, layout.EntryInfo)
				es = append(es,
					edit{"window-past-top", "a coded window start past the largest", []Op{set32(w.entry(c), info&0xFFFF|uint32(w.maxBase+1)<<16)}},
					edit{"count-past-m", "more fallbacks than values", []Op{set32(w.entry(c), info&^0xFFFF|uint32(w.m(c)+1))}})
			}
			if c := w.firstChunk(w.raw); c >= 0 {
				es = append(es, edit{"raw-low-bits", "a raw entry with a count", []Op{set32(w.entry(c), 1<<24|1)}})
			}
			if c := w.firstChunk(func(c int) bool { return !w.raw(c) && c < last }); c >= 0 {
				es = append(es, edit{"count-plus128", "128 fallbacks more than the side offsets say",
					[]Op{set32(w.entry(c), w.word(c, layout.EntryInfo)+4*32)}})
			}
			for _, x := range es {
				if err := add(g, BadPayload{ID: base[len("escapes/"):] + "/" + x.name, Level: LevelBody, Base: base,
					Ops: x.ops, Want: cCorrupt, Note: x.note}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func wInvalidChecksum(g *Gen, wf windowFormat) error {
	for _, d := range wf.dtypes {
		for _, base := range []string{fmt.Sprintf(wBaseMixed, dtn(d)), fmt.Sprintf(wBaseKV, dtn(d))} {
			w, err := g.windowBody(wf, base)
			if err != nil {
				return err
			}
			last := w.chunks - 1
			p0, pl := w.pieces(0), w.pieces(last)
			if pl[1][0] == pl[1][1] { // no byte stream (F8_E5M2): planes only
				p0[1], pl[1] = p0[0], pl[0]
			}
			es := []edit{
				{"plane-c0", "a flipped plane bit in chunk 0", []Op{xor(p0[0][0]+5, 0x10)}},
				{"dense-last", "a flipped dense-stream bit in the last chunk", []Op{xor(pl[1][0]+1, 0x02)}},
				{"crc-field", "a flipped CRC field", []Op{xor(w.entry(last)+8, 0x01)}},
				{"two-chunks", "flips in the last chunk and chunk 0: chunk 0 is reported", []Op{xor(pl[1][0], 0x01), xor(p0[1][0], 0x01)}},
			}
			if c := w.firstChunk(func(c int) bool { s, e := w.side(c); return e > s }); c >= 0 {
				s, _ := w.side(c)
				es = append(es, edit{"side", "a flipped side bit", []Op{xor(s, 0x01)}})
			}
			for _, x := range es {
				if err := add(g, BadPayload{ID: base[len("escapes/"):] + "/" + x.name, Level: LevelBody, Base: base,
					Ops: x.ops, Want: cChecksum, Note: x.note}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func wInvalidStream(g *Gen, wf windowFormat) error {
	for _, d := range wf.dtypes {
		for _, b := range []string{wBaseKV, "escapes/%s/none/c8192", "escapes/%s/all-fallback/c1024"} {
			if err := wStreamChanges(g, wf, fmt.Sprintf(b, dtn(d)), ""); err != nil {
				return err
			}
		}
		base, noCRC := fmt.Sprintf(wBaseMixed, dtn(d)), fmt.Sprintf(wBaseNoCRC, dtn(d))
		w, err := g.windowBody(wf, noCRC)
		if err != nil {
			return err
		}
		id := func(b, s string) string { return b[len("escapes/"):] + "/" + s }
		// Stated classes.
		if err := add(g, BadPayload{ID: id(noCRC, "crc-field"), Level: LevelBody, Base: noCRC,
			Ops: []Op{xor(w.entry(0)+8, 0x01)}, Want: cNonCanonical, Note: "a CRC field without checksums"}); err != nil {
			return err
		}
		f := false
		if err := add(g, BadPayload{ID: id(base, "crc-read-without"), Level: LevelBody, Base: base, Checksums: &f,
			Want: cNonCanonical, Note: "CRC fields present, checksums off"}); err != nil {
			return err
		}
		last := w.chunks - 1
		pl := w.pieces(last)
		if wf.id == layout.FormatTBE3 && w.n%4 != 0 {
			if err := add(g, BadPayload{ID: id(noCRC, "sm-pad"), Level: LevelBody, Base: noCRC,
				Ops: []Op{xor(pl[1][1]-1, 0x01)}, Want: cNonCanonical, Note: "an SM padding byte"}); err != nil {
				return err
			}
		}
		if err := wStreamChanges(g, wf, base, noCRC); err != nil {
			return err
		}
	}
	return nil
}

// wStreamChanges adds changed-piece cases on base (checksummed: CRCs re-fixed) and noCRC (unless ""): the
// reference decides each class (never a decode); cases the reference still decodes are dropped by the generator.
func wStreamChanges(g *Gen, wf windowFormat, base, noCRC string) error {
	id := func(b, s string) string { return b[len("escapes/"):] + "/" + s }
	wc, err := g.windowBody(wf, base)
	if err != nil {
		return err
	}
	w := wc
	for c := 0; c < w.chunks; c++ {
		p := w.pieces(c)
		ats := []int{p[0][0], p[0][0] + 9, p[0][1] - 1}
		if p[1][1] > p[1][0] {
			ats = append(ats, p[1][0]+3, p[1][1]-1)
		}
		for k, at := range ats {
			for _, bit := range []byte{0x01, 0x80} {
				name := fmt.Sprintf("c%d-at%d-bit%02x", c, k, bit)
				if noCRC != "" {
					if err := add(g, BadPayload{ID: id(noCRC, name), Level: LevelBody, Base: noCRC,
						Ops: []Op{xor(at, bit)}, Note: "a changed dense byte, checksums off"}); err != nil {
						return err
					}
				}
				if err := add(g, BadPayload{ID: id(base, name+"-crc"), Level: LevelBody, Base: base,
					Ops: []Op{xor(at, bit), wc.crcOp(c)}, Note: "a changed dense byte, CRC re-fixed"}); err != nil {
					return err
				}
			}
		}
		if s, e := w.side(c); e > s && noCRC != "" {
			if err := add(g, BadPayload{ID: id(noCRC, fmt.Sprintf("c%d-side-last", c)), Level: LevelBody, Base: noCRC,
				Ops: []Op{xor(e-1, 0x80)}, Note: "the last side byte changed"}); err != nil {
				return err
			}
		}
		if !w.raw(c) {
			info := w.word(c, layout.EntryInfo)
			if win := info >> 16 & 0xFF; win > 0 {
				if err := add(g, BadPayload{ID: id(base, fmt.Sprintf("c%d-window-minus1-crc", c)), Level: LevelBody, Base: base,
					Ops: []Op{set32(wc.entry(c), info-1<<16), wc.crcOp(c)}, Note: "the window start one lower, CRC re-fixed"}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func wInvalidContainer(g *Gen, wf windowFormat) error {
	d := wf.dtypes[0]
	base, baseNoCRC := fmt.Sprintf(wBaseMixed, dtn(d)), fmt.Sprintf(wBaseNoCRC, dtn(d))
	p := g.Container(base)
	end := metaEnd(p)
	n := len(p)
	bad := func(id, want, note string, ops ...Op) error {
		return add(g, BadPayload{ID: id, Level: LevelContainer, Base: base, Ops: ops, Want: want, Note: note})
	}
	w, err := g.windowBody(wf, base)
	if err != nil {
		return err
	}
	type tc struct {
		id, want, note string
		ops            []Op
	}
	for _, c := range []tc{
		{"trunc/0", cTruncated, "empty input", []Op{trunc(0)}},
		{"trunc/meta", cTruncated, "header without its body", []Op{trunc(end)}},
		{"trunc/body-half", cTruncated, "half the body", []Op{trunc(end + (n-end)/2)}},
		{"trunc/last4", cTruncated, "the last 4 bytes missing", []Op{trunc(n - 4)}},
		{"magic/0", cFormat, "first magic byte", []Op{xor(0, 0x01)}},
		{"version/3", cVersion, "version 3", []Op{set16(8, 3)}},
		{"meta/byte", cChecksum, "a metadata byte flipped", []Op{xor(25, 0x08)}},
		{"flags/checksums-cleared-fixed", cNonCanonical, "CHECKSUMS cleared, metadata CRC fixed: CRC fields non-canonical", []Op{xor(10, 0x01), metaCRCOp(end)}},
		{"body/flip", cChecksum, "a body bit under a chunk checksum", []Op{xor(end+100, 0x04)}},
		{"body/table-kind", cCorrupt, "kind 2 in the body's table", shiftOps([]Op{{Op: "splice", At: w.entry(0) + 3, N: 1, Hex: "02"}}, end)},
		{"stream/garbage", cCorrupt, "4 bytes after the final container", []Op{appendHex(n, "00000000")}},
	} {
		if err := bad(c.id, c.want, c.note, c.ops...); err != nil {
			return err
		}
	}
	dir, err := directory(p)
	if err != nil {
		return err
	}
	f := fields(dir)
	put64 := func(d []byte, at int, v uint64) []byte { binary.LittleEndian.PutUint64(d[at:], v); return d }
	wrong := layout.DTypeF16
	if wf.id != layout.FormatTBE3 {
		wrong = layout.DTypeBF16
	}
	for _, e := range []struct {
		id, want, note string
		change         func(d []byte) []byte
	}{
		{"reserved", cNonCanonical, "reserved byte 1", func(d []byte) []byte { d[f.reserved] = 1; return d }},
		{"dtype-wrong", cCorrupt, "a dtype the format does not code", func(d []byte) []byte { d[f.dtype] = byte(wrong); return d }},
		{"format-6", cUnsupported, "format 6 (reserved)", func(d []byte) []byte { d[f.format] = 6; return d }},
		{"shift-9", cCorrupt, "chunk shift 9", func(d []byte) []byte { d[f.shift] = 9; return d }},
		{"shift-17", cCorrupt, "chunk shift 17", func(d []byte) []byte { d[f.shift] = 17; return d }},
		{"codebook-index-0", cNonCanonical, "codebook 0 referenced: the format takes none", func(d []byte) []byte {
			binary.LittleEndian.PutUint32(d[f.cbIndex:], 0)
			return d
		}},
		{"elements-2^32", cTooLarge, "2^32 values: past the coded-tensor limit", func(d []byte) []byte {
			return put64(put64(d, f.dims, 1<<32), f.elements, 1<<32)
		}},
		{"bodylen+4", cTruncated, "a body 4 bytes past the input", func(d []byte) []byte {
			return put64(d, f.bodyLen, binary.LittleEndian.Uint64(d[f.bodyLen:])+4)
		}},
		{"bodylen-3", cCorrupt, "a body length not a multiple of 4", func(d []byte) []byte {
			return put64(d, f.bodyLen, binary.LittleEndian.Uint64(d[f.bodyLen:])-3)
		}},
		{"bodylen-min", cCorrupt, "a body shorter than its dense streams and table", func(d []byte) []byte { return put64(d, f.bodyLen, 4) }},
		{"bodylen-max", cCorrupt, "a body longer than every chunk raw", func(d []byte) []byte {
			return put64(d, f.bodyLen, w.maxBody+4)
		}},
	} {
		h := rebuildHeader(p, e.change(append([]byte(nil), dir...)), canonical)
		if err := bad("dir/"+e.id, e.want, e.note, Op{Op: "splice", At: 0, N: end, Data: g.Blob(h)}); err != nil {
			return err
		}
	}
	q := g.Container(baseNoCRC)
	qe := metaEnd(q)
	wn, err := g.windowBody(wf, baseNoCRC)
	if err != nil {
		return err
	}
	for _, c := range []tc{
		{"nocrc/crc-field", cNonCanonical, "a chunk CRC field without CHECKSUMS", shiftOps([]Op{xor(wn.entry(1)+8, 0x01)}, qe)},
		{"nocrc/checksums-set-fixed", cChecksum, "CHECKSUMS set on zero CRC fields, metadata CRC fixed", []Op{xor(10, 0x01), metaCRCOp(qe)}},
		{"nocrc/side-offset", cCorrupt, "a side offset, checksums off", shiftOps([]Op{xor(wn.entry(2)+4, 0x04)}, qe)},
	} {
		if err := add(g, BadPayload{ID: c.id, Level: LevelContainer, Base: baseNoCRC, Ops: c.ops, Want: c.want, Note: c.note}); err != nil {
			return err
		}
	}
	return nil
}
