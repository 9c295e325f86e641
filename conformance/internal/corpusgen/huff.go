package corpusgen

import (
	"encoding/binary"
	"fmt"

	"github.com/vkzip/vkzip/codec/layout"
)

// The huff corpus (docs/FORMAT.md §14): per-chunk canonical Huffman codes of BF16 exponents in 32 lanes.
// Expectations come from the reference, as for every corpus; the categories reach lane counts around 32, chunk
// sizes 2^12..2^16, single-symbol and deep (length-limited) codes, raw chunks, and every rule of §14.4–§14.6.

const huffName = "huff"

func init() {
	RegisterFormat(Format{Name: huffName, ID: layout.FormatHuff, Version: 2})
	reg := func(name string, min int, about string, gen func(g *Gen) error) {
		Register(Category{Format: huffName, Name: name, Min: min, About: about, Generate: gen})
	}
	reg("lengths", 40, "lengths around lanes and chunks (1, 31..33, chunk±1, 2·chunk+3) at chunk sizes 2^12, 2^14, 2^16", hLengths)
	reg("patterns", 15, "every bit pattern (raw chunks), one exponent, windows of 2..256 exponents, Gaussian scales, escapes", hPatterns)
	reg("kv", 3, "real KV-cache tensors (stories260K) at several chunk sizes", hKV)
	reg("invalid-table", 12, "chunk tables and piece headers that contradict the body (body level; corrupt)", hInvalidTable)
	reg("invalid-checksum", 4, "flipped bits under chunk checksums (body level)", hInvalidChecksum)
	reg("invalid-stream", 10, "lane streams, padding and choices changed with CRCs re-fixed, CRC fields without checksums (body level)", hInvalidStream)
	reg("invalid-container", 6, "the format's directory rules (container level)", hInvalidContainer)
}

func bspec(gen string, n int, seed uint64, args ...int64) *Spec {
	return &Spec{Gen: gen, N: n, Seed: seed, Args: args}
}

func hLengths(g *Gen) error {
	var vs []Valid
	for i, c := range []int{4096, 8192, 16384, 32768, 65536} {
		ns := []int{1, 5, 32, 33, c - 1, c, c + 1, 2*c + 3}
		if c == 16384 {
			ns = append(ns, 2, 31, 63, 64, 65, 100, 1000)
		}
		for k, n := range ns {
			vs = append(vs, Valid{ID: fmt.Sprintf("kvlike/n%d/c%d", n, c), Spec: bspec("kvlike/1", n, uint64(500+20*i+k)),
				Chunk: c, Checksums: k%2 == 0})
		}
	}
	return genAll(g, vs)
}

func hPatterns(g *Gen) error {
	d := layout.DTypeBF16
	vs := []Valid{
		{ID: "bitpatterns/ascending/c4096", Spec: fspec(d, 65536, 600, fkAll, 0), Chunk: 4096, Checksums: true},
		{ID: "bitpatterns/shuffled/c65536/nocrc", Spec: fspec(d, 65536, 601, fkAll, 1), Chunk: 65536},
		{ID: "uniform/c16384", Spec: fspec(d, 40000, 602, fkUniform, 0), Chunk: 16384, Checksums: true, Note: "raw chunks"},
		{ID: "one-exponent/c4096", Spec: fspec(d, 9000, 603, fkWindow, 120<<8), Chunk: 4096, Checksums: true, Note: "1-bit codes"},
		{ID: "one-exponent-0/c16384/nocrc", Spec: fspec(d, 20000, 604, fkWindow, 0), Chunk: 16384},
		{ID: "two-exponents-top/c4096", Spec: fspec(d, 5000, 605, fkWindow, 254<<8|1), Chunk: 4096, Checksums: true},
		{ID: "window16/c16384", Spec: fspec(d, 33000, 606, fkWindow, 100<<8|15), Chunk: 16384, Checksums: true},
		{ID: "window64/c4096/nocrc", Spec: fspec(d, 12000, 607, fkWindow, 60<<8|63), Chunk: 4096},
		{ID: "window256/c65536", Spec: fspec(d, 70000, 608, fkWindow, 255), Chunk: 65536, Checksums: true},
		{ID: "window2/c4096", Spec: fspec(d, 6000, 613, fkWindow, 110<<8|1), Chunk: 4096, Checksums: true},
		{ID: "window4/c8192", Spec: fspec(d, 9000, 614, fkWindow, 110<<8|3), Chunk: 8192, Checksums: true},
		{ID: "window8/c4096/nocrc", Spec: fspec(d, 6000, 615, fkWindow, 110<<8|7), Chunk: 4096},
		{ID: "window32/c32768", Spec: fspec(d, 40000, 616, fkWindow, 90<<8|31), Chunk: 32768, Checksums: true},
		{ID: "window128/c4096", Spec: fspec(d, 5000, 617, fkWindow, 20<<8|127), Chunk: 4096, Checksums: true},
		{ID: "window200/c16384/nocrc", Spec: fspec(d, 17000, 618, fkWindow, 30<<8|199), Chunk: 16384},
		{ID: "gauss/s0/c16384", Spec: fspec(d, 50000, 609, fkGauss, 0), Chunk: 16384, Checksums: true},
		{ID: "gauss/s-40/c4096/nocrc", Spec: fspec(d, 10000, 610, fkGauss, -40), Chunk: 4096},
		{ID: "escmix/2000/c16384", Spec: fspec(d, 40000, 611, fkEscmix, 2000), Chunk: 16384, Checksums: true},
		{ID: "escmix/300000/c4096", Spec: fspec(d, 20000, 612, fkEscmix, 300000), Chunk: 4096, Checksums: true},
	}
	return genAll(g, vs)
}

func hKV(g *Gen) error {
	src, err := g.SourceOf(sz4, KVSourceFile)
	if err != nil {
		return err
	}
	one := len(src) / len(kvSamples)
	shape := []uint64{512, 4, 8}
	var vs []Valid
	for i, s := range kvSamples[:1] {
		b := src[i*one : (i+1)*one]
		vs = append(vs,
			Valid{ID: s + "/c16384", Bytes: b, Shape: shape, Chunk: 16384, Checksums: true},
			Valid{ID: s + "/c4096/nocrc", Bytes: b, Shape: shape, Chunk: 4096},
			Valid{ID: s + "/c65536", Bytes: b, Shape: shape, Chunk: 65536, Checksums: true})
	}
	return genAll(g, vs)
}

// hbody is a reference huff body with its geometry.
type hbody struct {
	b                   []byte
	n                   uint64
	shift               uint
	chunks              int
	table, pieces, lows int
}

const (
	hBaseMixed = "patterns/escmix/300000/c4096" // coded chunks, checksums
	hBaseRaw   = "patterns/uniform/c16384"      // raw chunks, checksums
	hBaseNoCRC = "kv/seq0.layer0.k/c4096/nocrc" // four coded chunks without checksums
	hBaseOne   = "patterns/one-exponent/c4096"  // single-symbol codes
)

func (g *Gen) huffBody(id string) (*hbody, error) {
	c := g.Case(id)
	if c == nil || g.Body(id) == nil {
		return nil, fmt.Errorf("no body for base %s", id)
	}
	s, err := shiftOf(c.Chunk)
	if err != nil {
		return nil, err
	}
	h := layout.Huff{N: c.NumValues(), Shift: s}
	return &hbody{b: g.Body(id), n: h.N, shift: s, chunks: int(h.Chunks()), table: int(h.TableOffset()),
		pieces: int(h.PieceOffset()), lows: int(h.LowBytes())}, nil
}

func (w *hbody) entry(c int) int      { return w.table + c*layout.ChunkEntrySize }
func (w *hbody) word(c, k int) uint32 { return binary.LittleEndian.Uint32(w.b[w.entry(c)+4*k:]) }
func (w *hbody) raw(c int) bool       { return w.word(c, layout.EntryInfo)>>24 == 1 }

// piece is chunk c's piece; low its low piece.
func (w *hbody) piece(c int) (lo, hi int) {
	lo = w.pieces + 4*int(w.word(c, layout.EntrySideOff))
	if c+1 < w.chunks {
		return lo, w.pieces + 4*int(w.word(c+1, layout.EntrySideOff))
	}
	return lo, len(w.b)
}

func (w *hbody) low(c int) (lo, hi int) {
	lo = c << w.shift
	if c == w.chunks-1 {
		return lo, w.lows
	}
	return lo, lo + 1<<w.shift
}

// tb is the code table size of coded chunk c.
func (w *hbody) tb(c int) int {
	p, _ := w.piece(c)
	return int(layout.HuffTableBytes(uint(w.b[p]), uint(w.b[p+1])))
}

// crcOp recomputes chunk c's CRC over info, piece offset, piece and low piece.
func (w *hbody) crcOp(c int) Op {
	e := w.entry(c)
	pl, ph := w.piece(c)
	ll, lh := w.low(c)
	return Op{Op: "crc", At: e + 8, Ranges: [][2]int64{{int64(e), int64(e + 8)}, {int64(pl), int64(ph)}, {int64(ll), int64(lh)}}}
}

func hInvalidTable(g *Gen) error {
	for _, base := range []string{hBaseMixed, hBaseRaw, hBaseNoCRC} {
		w, err := g.huffBody(base)
		if err != nil {
			return err
		}
		es := []edit{
			{"kind-2", "kind 2 in the info word", []Op{{Op: "splice", At: w.entry(0) + 3, N: 1, Hex: "02"}}},
			{"long", "4 bytes past the piece section", []Op{appendHex(len(w.b), "00000000")}},
			{"short", "piece section 4 bytes short", []Op{trunc(len(w.b) - 4)}},
			{"low-only", "body ends after the low stream", []Op{trunc(w.table)}},
		}
		if w.chunks > 1 {
			es = append(es, edit{"offset-c1", "piece offset not the running sum", []Op{set32(w.entry(1)+4, w.word(1, layout.EntrySideOff)+1)}})
		}
		if w.raw(0) {
			es = append(es, edit{"raw-length", "a raw entry with a piece length", []Op{set32(w.entry(0), 1<<24|4)}})
		} else {
			p, _ := w.piece(0)
			tb := w.tb(0)
			info := w.word(0, layout.EntryInfo)
			es = append(es,
				edit{"piece-words-plus1", "a coded piece one word longer than its lanes", []Op{set32(w.entry(0), info+1)}},
				edit{"lo-above-hi", "code table's first symbol above its last", []Op{xor(p, 0xFF)}},
				edit{"length-12", "a code length of 12", []Op{{Op: "splice", At: p + 2, N: 1, Hex: fmt.Sprintf("%02x", w.b[p+2]&0xF0|12)}}},
				edit{"kraft", "lengths that are no complete code", []Op{xor(p+2, 0x01)}},
				edit{"lane-count", "lane 0 one word longer, the piece not", []Op{xor(p+tb, 0x01)}})
		}
		for _, x := range es {
			if err := add(g, BadPayload{ID: base + "/" + x.name, Level: LevelBody, Base: base, Ops: x.ops, Want: cCorrupt,
				Note: x.note}); err != nil {
				return err
			}
		}
	}
	return nil
}

func hInvalidChecksum(g *Gen) error {
	for _, base := range []string{hBaseMixed, hBaseRaw} {
		w, err := g.huffBody(base)
		if err != nil {
			return err
		}
		last := w.chunks - 1
		_, ph := w.piece(last)
		es := []edit{
			{"low-c0", "a flipped low byte in chunk 0", []Op{xor(5, 0x10)}},
			{"piece-last", "a flipped piece bit in the last chunk", []Op{xor(ph-1, 0x02)}},
			{"crc-field", "a flipped CRC field", []Op{xor(w.entry(last)+8, 0x01)}},
		}
		for _, x := range es {
			if err := add(g, BadPayload{ID: base + "/" + x.name, Level: LevelBody, Base: base, Ops: x.ops, Want: cChecksum,
				Note: x.note}); err != nil {
				return err
			}
		}
	}
	return nil
}

func hInvalidStream(g *Gen) error {
	w, err := g.huffBody(hBaseNoCRC)
	if err != nil {
		return err
	}
	f := false
	if err := add(g, BadPayload{ID: hBaseNoCRC + "/crc-field", Level: LevelBody, Base: hBaseNoCRC,
		Ops: []Op{xor(w.entry(0)+8, 0x01)}, Want: cNonCanonical, Note: "a CRC field without checksums"}); err != nil {
		return err
	}
	if err := add(g, BadPayload{ID: hBaseMixed + "/crc-read-without", Level: LevelBody, Base: hBaseMixed, Checksums: &f,
		Want: cNonCanonical, Note: "CRC fields present, checksums off"}); err != nil {
		return err
	}
	for _, base := range []string{hBaseMixed, hBaseRaw, hBaseOne, hBaseNoCRC, "lengths/kvlike/n65537/c65536"} {
		w, err := g.huffBody(base)
		if err != nil {
			return err
		}
		fix := func(c int, ops ...Op) []Op {
			if g.Case(base).Checksums {
				return append(ops, w.crcOp(c))
			}
			return ops
		}
		for c := 0; c < w.chunks; c++ {
			if c != 0 && c != w.chunks-1 {
				continue // first and last chunk: enough positions, and the corpus stays small
			}
			pl, ph := w.piece(c)
			ats := []int{pl, pl + 1, ph - 1, ph - 4}
			if !w.raw(c) {
				tb := w.tb(c)
				ats = append(ats, pl+tb-1, pl+tb+64, pl+tb+64+1, pl+2)
			}
			for k, at := range ats {
				for _, bit := range []byte{0x01, 0x80} {
					if err := add(g, BadPayload{ID: fmt.Sprintf("%s/c%d-at%d-bit%02x", base, c, k, bit), Level: LevelBody,
						Base: base, Ops: fix(c, xor(at, bit)), Note: "a changed piece byte (CRC re-fixed)"}); err != nil {
						return err
					}
				}
			}
			if int(w.n)%4 != 0 && c == w.chunks-1 {
				if err := add(g, BadPayload{ID: fmt.Sprintf("%s/c%d-low-pad", base, c), Level: LevelBody, Base: base,
					Ops: fix(c, xor(w.lows-1, 0x01)), Want: cNonCanonical, Note: "a low-stream padding byte"}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func hInvalidContainer(g *Gen) error {
	base := hBaseMixed
	p := g.Container(base)
	end := metaEnd(p)
	dir, err := directory(p)
	if err != nil {
		return err
	}
	f := fields(dir)
	put64 := func(d []byte, at int, v uint64) []byte { binary.LittleEndian.PutUint64(d[at:], v); return d }
	w, err := g.huffBody(base)
	if err != nil {
		return err
	}
	g2 := layout.Huff{N: w.n, Shift: w.shift}
	for _, e := range []struct {
		id, want, note string
		change         func(d []byte) []byte
	}{
		{"dtype-f16", cCorrupt, "a dtype the format does not code", func(d []byte) []byte { d[f.dtype] = byte(layout.DTypeF16); return d }},
		{"shift-11", cCorrupt, "chunk shift 11 (huff's range is 12..16)", func(d []byte) []byte { d[f.shift] = 11; return d }},
		{"shift-17", cCorrupt, "chunk shift 17", func(d []byte) []byte { d[f.shift] = 17; return d }},
		{"codebook-index-0", cNonCanonical, "codebook 0 referenced: the format takes none", func(d []byte) []byte {
			binary.LittleEndian.PutUint32(d[f.cbIndex:], 0)
			return d
		}},
		{"elements-2^32", cTooLarge, "2^32 values", func(d []byte) []byte { return put64(put64(d, f.dims, 1<<32), f.elements, 1<<32) }},
		{"bodylen-3", cCorrupt, "a body length not a multiple of 4", func(d []byte) []byte {
			return put64(d, f.bodyLen, binary.LittleEndian.Uint64(d[f.bodyLen:])-3)
		}},
		{"bodylen-max", cCorrupt, "a body longer than every chunk raw", func(d []byte) []byte {
			return put64(d, f.bodyLen, g2.MaxBodySize()+4)
		}},
	} {
		h := rebuildHeader(p, e.change(append([]byte(nil), dir...)), canonical)
		if err := add(g, BadPayload{ID: "dir/" + e.id, Level: LevelContainer, Base: base, Want: e.want, Note: e.note,
			Ops: []Op{{Op: "splice", At: 0, N: end, Data: g.Blob(h)}}}); err != nil {
			return err
		}
	}
	return nil
}
