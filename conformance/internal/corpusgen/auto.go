package corpusgen

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
)

// The auto corpus (docs/FORMAT.md §11): bodies whose chunks mix the candidate formats, ties, and bodies that break
// the table, the pieces or the choice. A case's body expectation is always an auto body (Backend.Encode with
// format auto); its container is what the encoder writes, which may be one candidate for the whole tensor.

const autoName = "auto"

func init() {
	// Version 4: a chunk in a candidate that is not its smallest is valid (the choice is the encoder's, FORMAT §11.2),
	// so the wrong-choice payloads of version 3 are gone.
	RegisterFormat(Format{Name: autoName, ID: layout.FormatAuto, Version: 5})
	reg := func(name string, min int, about string, gen func(g *Gen) error) {
		Register(Category{Format: autoName, Name: name, Min: min, About: about, Generate: gen})
	}
	reg("mix", 40, "chunks that prefer SplitZip-4 and chunks that prefer zf12 (or TBE-3, where a stray exponent leaves a zf12 block raw), in several orders, lengths and chunk sizes", autoMixCases)
	reg("lengths", 30, "lengths around blocks and chunks for every chunk size, chunks alternating between the candidates", autoLengths)
	reg("mix3", 21, "chunks that prefer SplitZip-4, zf12 and TBE-3 in several orders, lengths and chunk sizes", autoMix3Cases)
	reg("ties", 3, "chunks both candidates code in the same number of bytes: the lower id, SplitZip-4, wins", autoTies)
	reg("single", 8, "tensors one candidate wins throughout (the container then holds that format), real KV data, lengths", autoSingle)
	reg("invalid-table", 45, "auto tables that contradict the pieces (body level; corrupt)", autoInvalidTable)
	reg("invalid-checksum", 12, "flipped bits under table-entry and piece checksums (body level)", autoInvalidChecksum)
	reg("invalid-entry", 3, "entry CRC fields in payloads without checksums (non-canonical)", autoInvalidEntry)
	reg("xw", 24, "F8_E5M2, F8_E4M3, F16, F32: chunks that prefer xw2, xw3 and xw4 (pieces of the exponent-window formats)", autoXWCases)
	reg("invalid-xw", 8, "F8/F16/F32 auto bodies: broken pieces (corrupt)", autoInvalidXW)
	reg("invalid-tbe3", 12, "TBE-3 pieces broken in structure, checksum or canonical form (each its class)", autoInvalidTBE3)
	reg("invalid-container", 6, "auto directory rules (container level)", autoInvalidContainer)

}

func autoxw(d layout.DType, n int, seed uint64, chunk int, pattern ...int64) *Spec {
	return &Spec{Gen: "autoxw/1", N: n, Seed: seed, Args: append([]int64{int64(d), int64(chunk)}, pattern...)}
}

var xwDTypes = []layout.DType{layout.DTypeF8E5M2, layout.DTypeF8E4M3, layout.DTypeF16, layout.DTypeF32}

func autoXWCases(g *Gen) error {
	var vs []Valid
	for i, d := range xwDTypes {
		s := uint64(700 + 20*i)
		vs = append(vs,
			Valid{ID: dtn(d) + "/234/c1024", Spec: autoxw(d, 3*1024+77, s, 1024, 3, 7, 15), DType: d, Chunk: 1024, Checksums: true},
			Valid{ID: dtn(d) + "/234/c1024/nocrc", Spec: autoxw(d, 3*1024+77, s, 1024, 3, 7, 15), DType: d, Chunk: 1024},
			Valid{ID: dtn(d) + "/42/c4096", Spec: autoxw(d, 2*4096+33, s+1, 4096, 15, 3), DType: d, Chunk: 4096, Checksums: true},
			Valid{ID: dtn(d) + "/short/n31", Spec: autoxw(d, 31, s+2, 1024, 7), DType: d, Chunk: 1024, Checksums: true},
			Valid{ID: dtn(d) + "/32/c65536/nocrc", Spec: autoxw(d, 65536+1000, s+3, 65536, 7, 3), DType: d, Chunk: 65536},
			Valid{ID: dtn(d) + "/one/c2048", Spec: autoxw(d, 5000, s+4, 2048, 3), DType: d, Chunk: 2048, Checksums: true,
				Note: "one candidate throughout: the container holds it whole"})
	}
	return genAll(g, vs)
}

// autoInvalidXW: a piece of the F8/F16/F32 mixes whose own table entry is broken (corrupt).
func autoInvalidXW(g *Gen) error {
	for _, d := range xwDTypes {
		for _, base := range []string{"xw/" + dtn(d) + "/234/c1024", "xw/" + dtn(d) + "/234/c1024/nocrc"} {
			a, err := g.autoBody(base)
			if err != nil {
				return err
			}
			id := func(name string) string { return base[len("xw/"):] + "/" + name }
			x, _ := layout.NewXW(a.format(1), d, uint64(1024), a.shift)
			lo, _ := a.piece(1)
			entry := lo + int(x.TableOffset())
			if err := add(g, BadPayload{ID: id("c1-kind"), Level: LevelBody, Base: base, Ops: []Op{xor(entry+3, 0x02)},
				Want: cCorrupt, Note: "chunk 1's piece: its own chunk kind 2"}); err != nil {
				return err
			}
		}
	}
	return nil
}

func automix(n int, seed uint64, chunk int, pattern ...int64) *Spec {
	return &Spec{Gen: "automix/1", N: n, Seed: seed, Args: append([]int64{int64(chunk)}, pattern...)}
}

// Base cases of the invalid categories.
const (
	autoBase      = "mix/sz/c1024"       // 5 chunks: sz4, zf12, sz4, zf12, sz4 (m=300)
	autoBaseNoCRC = "mix/sz/c1024/nocrc" //
)

func autoMixCases(g *Gen) error {
	var vs []Valid
	for i, c := range []int{1024, 4096, 65536} {
		n := 4*c + 300
		vs = append(vs,
			Valid{ID: fmt.Sprintf("sz/c%d", c), Spec: automix(n, uint64(400+i), c, 0, 1), Chunk: c, Codebook: &kvCB, Checksums: true},
			Valid{ID: fmt.Sprintf("sz/c%d/nocrc", c), Spec: automix(n, uint64(400+i), c, 0, 1), Chunk: c, Codebook: &kvCB},
			Valid{ID: fmt.Sprintf("zzs/c%d", c), Spec: automix(n+c/2, uint64(410+i), c, 1, 1, 0), Chunk: c, Codebook: &kvCB, Checksums: true},
			Valid{ID: fmt.Sprintf("zs-short/c%d/nocrc", c), Spec: automix(c+7, uint64(420+i), c, 1, 0), Chunk: c, Codebook: &kvCB})
	}
	pats := map[string][]int64{"sz": {0, 1}, "zs": {1, 0}, "szz": {0, 1, 1}, "zzs": {1, 1, 0}}
	for i, c := range []int{1024, 2048} {
		for _, pn := range []string{"sz", "zs", "szz", "zzs"} {
			for j, n := range []int{513, c + 1, 3*c - 1, 5*c + 3, 7 * c} {
				vs = append(vs, Valid{ID: fmt.Sprintf("%s/n%d/c%d", pn, n, c), Spec: automix(n, uint64(500+100*i+10*j), c, pats[pn]...),
					Chunk: c, Codebook: &kvCB, Checksums: j%2 == 0})
			}
		}
	}
	return genAll(g, vs)
}

// Base cases of the TBE-3 categories: 5 chunks s, z, t, s, t (m = 300) and 3 chunks t, s, t (m = 7).
const (
	autoBase3      = "mix3/szt/c1024"
	autoBase3NoCRC = "mix3/szt/c1024/nocrc"
)

func autoMix3Cases(g *Gen) error {
	vs := []Valid{
		{ID: "szt/c1024", Spec: automix(4*1024+300, 450, 1024, 0, 1, 2, 0, 2), Chunk: 1024, Codebook: &kvCB, Checksums: true},
		{ID: "szt/c1024/nocrc", Spec: automix(4*1024+300, 450, 1024, 0, 1, 2, 0, 2), Chunk: 1024, Codebook: &kvCB},
		{ID: "tst/c1024", Spec: automix(2*1024+7, 451, 1024, 2, 0), Chunk: 1024, Codebook: &kvCB, Checksums: true,
			Note: "a last chunk of 7 values: TBE-3's raw side is empty there"},
	}
	pats := map[string][]int64{"tz": {2, 1}, "st": {0, 2}, "tzs": {2, 1, 0}, "tts": {2, 2, 0}, "t": {2}}
	for i, c := range []int{1024, 4096, 65536} {
		for j, pn := range []string{"tz", "st", "tzs", "tts", "t"} {
			n := 3*c + 100*j + 1
			if c == 65536 {
				n = c + 2048 + j
			}
			vs = append(vs, Valid{ID: fmt.Sprintf("%s/n%d/c%d", pn, n, c), Spec: automix(n, uint64(460+10*i+j), c, pats[pn]...),
				Chunk: c, Codebook: &kvCB, Checksums: (i+j)%2 == 0})
		}
	}
	for _, n := range []int{64, 65, 1000} {
		vs = append(vs, Valid{ID: fmt.Sprintf("t-short/n%d", n), Spec: automix(n, uint64(490+n), 1024, 2), Chunk: 1024,
			Codebook: &kvCB, Checksums: true})
	}
	return genAll(g, vs)
}

func autoLengths(g *Gen) error {
	var vs []Valid
	i := 0
	for _, s := range shifts() {
		c := 1 << s
		for _, n := range []int{511, 512, c - 1, c, c + 1, 2*c + 3} {
			if s > 10 && n < 1024 {
				continue
			}
			vs = append(vs, Valid{ID: fmt.Sprintf("n%d/c%d", n, c), Spec: automix(n, uint64(600+i), c, 1, 0), Chunk: c,
				Codebook: &kvCB, Checksums: i%2 == 0})
			i++
		}
	}
	return genAll(g, vs)
}

func autoTies(g *Gen) error {
	// A chunk of 1,024 values whose blocks all code in zf12 and that SplitZip-4 codes with one escape: both bodies
	// take 1,552 bytes, and SplitZip-4 (id 1) must be chosen.
	tie := func(n, chunk int, seed uint64) []byte {
		r := newRNG(seed)
		b := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			e := uint8(124 + r.below(4)) // in kvCB and in one zf12 range
			if i%chunk == 100 {
				e = 131 // not in kvCB: SplitZip-4's one escape per chunk; still within the range
			}
			put(b, i, bf16(r.next()>>16, e))
		}
		return b
	}
	for _, e := range []uint8{124, 125, 126, 127, 131} {
		if (e == 131) == kvCB.Has(e) {
			return fmt.Errorf("the tie needs 124..127 in kvCB and 131 not")
		}
	}
	return genAll(g, []Valid{
		{ID: "one-escape/c1024", Bytes: tie(3*1024, 1024, 1), Chunk: 1024, Codebook: &kvCB, Checksums: true},
		{ID: "one-escape/c1024/nocrc", Bytes: tie(3*1024, 1024, 2), Chunk: 1024, Codebook: &kvCB},
		{ID: "one-escape/c2048", Bytes: tie(2*2048, 2048, 3), Chunk: 2048, Codebook: &kvCB, Checksums: true,
			Note: "four header bytes for four blocks, one escape: a tie too"},
	})
}

func autoSingle(g *Gen) error {
	src, err := g.SourceOf(sz4, KVSourceFile)
	if err != nil {
		return err
	}
	const per = 2 * 512 * 4 * 8
	return genAll(g, []Valid{
		{ID: "kv/c65536", Bytes: src[:per], Shape: []uint64{512, 4, 8}, Chunk: 65536, Checksums: true, Note: "calibrated: SplitZip-4 throughout"},
		{ID: "kv/c1024/kvcb", Bytes: src[per : 2*per], Shape: []uint64{512, 4, 8}, Chunk: 1024, Codebook: &kvCB, Checksums: true},
		{ID: "zf12-only/c4096", Spec: automix(10000, 430, 4096, 1), Chunk: 4096, Codebook: &kvCB, Checksums: true},
		{ID: "n1/c1024", Spec: &Spec{Gen: "kvlike/1", N: 1, Seed: 431}, Chunk: 1024, Codebook: &kvCB, Checksums: true},
		{ID: "n513/c1024/nocrc", Spec: automix(513, 432, 1024, 1), Chunk: 1024, Codebook: &kvCB},
		{ID: "allbits/c4096", Spec: &Spec{Gen: "allbits/1", N: 65536, Seed: 7, Args: []int64{1}}, Chunk: 4096, Codebook: &kvCB,
			Checksums: true, Note: "shuffled: every chunk raw in either candidate"},
		{ID: "n0", Bytes: []byte{}, Chunk: 1024, Checksums: true},
		{ID: "f32", Bytes: src[:400], DType: layout.DTypeF32, Chunk: 1024, Checksums: true},
	})
}

// abody is a reference auto body with its table.
type abody struct {
	b     []byte
	in    []byte
	n     uint64
	shift uint
	crc   bool
	d     layout.DType
}

func (g *Gen) autoBody(id string) (*abody, error) {
	c := g.Case(id)
	if c == nil || g.Body(id) == nil {
		return nil, fmt.Errorf("no body for base %s", id)
	}
	s, err := shiftOf(c.Chunk)
	if err != nil {
		return nil, err
	}
	d, ok := layout.ParseDType(c.DType)
	if !ok {
		return nil, fmt.Errorf("base %s: dtype %q", id, c.DType)
	}
	return &abody{b: g.Body(id), in: g.Values(id), n: c.NumValues(), shift: s, crc: c.Checksums, d: d}, nil
}

func (a *abody) chunks() int       { return int(layout.SZ4{N: a.n, Shift: a.shift}.Chunks()) }
func (a *abody) entry(c int) int   { return layout.ChunkEntrySize * c }
func (a *abody) info(c int) uint32 { return binary.LittleEndian.Uint32(a.b[a.entry(c):]) }
func (a *abody) off(c int) int     { return int(binary.LittleEndian.Uint32(a.b[a.entry(c)+4:])) * 4 }
func (a *abody) piece(c int) (lo, hi int) {
	base := layout.ChunkEntrySize * a.chunks()
	hi = len(a.b)
	if c+1 < a.chunks() {
		hi = base + a.off(c+1)
	}
	return base + a.off(c), hi
}
func (a *abody) format(c int) uint8 { return uint8(a.info(c) >> layout.KindShift) }

// with rebuilds the body with chunk c coded in format id (same values): table offsets and entry CRCs follow.
func (a *abody) with(c int, id uint8) ([]byte, error) {
	f, ok := codec.LookupFormat(id)
	if !ok {
		return nil, fmt.Errorf("format %d", id)
	}
	g := layout.SZ4{N: a.n, Shift: a.shift}
	m := g.ChunkLen(uint64(c))
	v0, sz := uint64(c)<<a.shift, uint64(a.d.Size())
	var cb *codec.Codebook
	if f.UsesCodebook(a.d) {
		kv := kvCB
		cb = &kv
	}
	jobs := []codec.EncodeJob{{Format: id, DType: a.d, Src: a.in[sz*v0 : sz*(v0+m)], N: m, Shift: a.shift, Codebook: cb,
		Checksums: a.crc, Dst: make([]byte, f.MaxBodyOf(m, a.d, a.shift))}}
	if err := codec.NewCPUBackend(1).Encode(context.Background(), jobs); err != nil {
		return nil, err
	}
	out := make([]byte, layout.ChunkEntrySize*a.chunks())
	var pos uint32
	for k := 0; k < a.chunks(); k++ {
		lo, hi := a.piece(k)
		p, info := a.b[lo:hi], a.info(k)
		if k == c {
			p, info = jobs[0].Out, uint32(id)<<layout.KindShift
		}
		binary.LittleEndian.PutUint32(out[a.entry(k):], info)
		binary.LittleEndian.PutUint32(out[a.entry(k)+4:], pos/4)
		if a.crc {
			var e [8]byte
			binary.LittleEndian.PutUint32(e[:], info)
			binary.LittleEndian.PutUint32(e[4:], pos/4)
			binary.LittleEndian.PutUint32(out[a.entry(k)+8:], crc32c.Checksum(e[:]))
		}
		out = append(out, p...)
		pos += uint32(len(p))
	}
	return out, nil
}

// withOps are the edits that turn the body into a.with(c, id): chunk c's new piece in place of the old one (the
// pieces after it move with the splice) and the new table, so the corpus stores only what changes.
func (a *abody) withOps(g *Gen, c int, id uint8) ([]Op, error) {
	body, err := a.with(c, id)
	if err != nil {
		return nil, err
	}
	t := layout.ChunkEntrySize * a.chunks()
	lo, hi := a.piece(c)
	piece := body[lo : hi+len(body)-len(a.b)]
	return []Op{{Op: "splice", At: lo, N: hi - lo, Data: g.Blob(piece)},
		{Op: "splice", At: 0, N: t, Data: g.Blob(body[:t])}}, nil
}

// entryCRCOp recomputes table entry c's CRC.
func (a *abody) entryCRCOp(c int) Op {
	e := a.entry(c)
	return Op{Op: "crc", At: e + 8, Ranges: [][2]int64{{int64(e), int64(e + 8)}}}
}

func autoInvalidTable(g *Gen) error {
	for _, base := range []string{autoBase, autoBaseNoCRC, "mix/sz/c4096", "mix/sz/c4096/nocrc"} {
		a, err := g.autoBody(base)
		if err != nil {
			return err
		}
		bad := func(name, note string, ops ...Op) error {
			return add(g, BadPayload{ID: base[len("mix/"):] + "/" + name, Level: LevelBody, Base: base, Ops: ops,
				Want: cCorrupt, Note: note})
		}
		cv := 1 << a.shift
		n, C := len(a.b), a.chunks()
		z := 1 // a zf12 chunk
		if a.format(z) != layout.FormatZF12 || a.format(0) != layout.FormatSplitZip4 {
			return fmt.Errorf("%s: chunk formats %d, %d", base, a.format(0), a.format(1))
		}
		lo, _ := a.piece(0)
		for _, x := range []edit{
			{"format-9", "a format id auto has no candidate for", []Op{xor(a.entry(2)+3, 0x01^0x09)}},
			{"format-stored", "stored is not a candidate", []Op{xor(a.entry(2)+3, 0x01)}},
			{"format-auto", "auto is not its own candidate", []Op{xor(a.entry(2)+3, 0x01^0x04)}},
			{"format-swap", "a SplitZip-4 piece called zf12", []Op{xor(a.entry(0)+3, 0x01^0x02)}},
			{"format-swap-z", "a zf12 piece called SplitZip-4", []Op{xor(a.entry(z)+3, 0x02^0x01)}},
			{"low-bits", "info bits below the format", []Op{xor(a.entry(1), 0x01)}},
			{"first-offset", "the first piece not at offset 0", []Op{set32(a.entry(0)+4, 1)}},
			{"offset-plus4", "an offset past the running sum", []Op{set32(a.entry(2)+4, uint32(a.off(2)/4+1))}},
			{"offset-minus4", "an offset before the running sum", []Op{set32(a.entry(2)+4, uint32(a.off(2)/4-1))}},
			{"offset-huge", "an offset past the body", []Op{set32(a.entry(C-1)+4, 1<<30)}},
			{"offsets-reversed", "offsets going backwards", []Op{set32(a.entry(3)+4, 0)}},
			{"piece-structure", "a SplitZip-4 piece's own chunk kind", []Op{xor(lo+cv/2+cv+3, 0x04)}},
			{"short", "the last piece 4 bytes short", []Op{trunc(n - 4)}},
			{"long", "4 bytes after the last piece", []Op{appendHex(n, "00000000")}},
			{"table-only", "the table and nothing else", []Op{trunc(layout.ChunkEntrySize * C)}},
		} {
			if err := bad(x.name, x.note, x.ops...); err != nil {
				return err
			}
		}
	}
	return nil
}

func autoInvalidChecksum(g *Gen) error {
	a, err := g.autoBody(autoBase)
	if err != nil {
		return err
	}
	bad := func(name, note string, ops ...Op) error {
		return add(g, BadPayload{ID: "sz/c1024/" + name, Level: LevelBody, Base: autoBase, Ops: ops, Want: cChecksum, Note: note})
	}
	l1, _ := a.piece(1)
	l3, _ := a.piece(3)
	for c := 0; c < a.chunks(); c++ {
		lo, hi := a.piece(c)
		f := codec.FormatName(a.format(c))
		if err := firstErr(
			bad(fmt.Sprintf("entry-crc-c%d", c), "a table entry's CRC", xor(a.entry(c)+8, 0x01)),
			bad(fmt.Sprintf("piece-c%d", c), "a bit in the middle of a "+f+" piece", xor((lo+hi)/2, 0x10)),
			bad(fmt.Sprintf("piece-end-c%d", c), "the last byte of a "+f+" piece", xor(hi-1, 0x80)),
		); err != nil {
			return err
		}
	}
	return bad("two-chunks", "flips in chunks 3 and 1: chunk 1 is reported", xor(l3+9, 0x02), xor(l1+9, 0x02))
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// autoInvalidEntry: an entry CRC field in a payload without checksums.
func autoInvalidEntry(g *Gen) error {
	for _, base := range []string{autoBaseNoCRC, "ties/one-escape/c1024/nocrc", autoBase3NoCRC} {
		a, err := g.autoBody(base)
		if err != nil {
			return err
		}
		id := base[len(g.Case(base).Category)+1:] + "/entry-crc-field"
		if err := add(g, BadPayload{ID: id, Level: LevelBody, Base: base, Ops: []Op{xor(a.entry(1)+8, 0x01)},
			Want: cNonCanonical, Note: "an entry CRC without checksums"}); err != nil {
			return err
		}
	}
	return nil
}

func autoInvalidContainer(g *Gen) error {
	base := "mix/zzs/c1024"
	p := g.Container(base)
	end := metaEnd(p)
	dir, err := directory(p)
	if err != nil {
		return err
	}
	f := fields(dir)
	if dir[f.format] != layout.FormatAuto {
		return fmt.Errorf("%s: the container holds format %d, not auto", base, dir[f.format])
	}
	put64 := func(d []byte, at int, v uint64) []byte { binary.LittleEndian.PutUint64(d[at:], v); return d }
	for _, e := range []struct {
		id, want, note string
		change         func(d []byte) []byte
	}{
		{"dtype-f64", cCorrupt, "auto on F64: no candidate codes it", func(d []byte) []byte { d[f.dtype] = byte(layout.DTypeF64); return d }},
		{"dtype-f16", cNonCanonical, "auto on F16 with a codebook (its candidates, the xw formats, use none)", func(d []byte) []byte {
			d[f.dtype] = byte(layout.DTypeF16)
			return d
		}},
		{"shift-9", cCorrupt, "chunk shift 9", func(d []byte) []byte { d[f.shift] = 9; return d }},
		{"no-codebook", cCorrupt, "a BF16 auto tensor without its codebook", func(d []byte) []byte {
			binary.LittleEndian.PutUint32(d[f.cbIndex:], layout.NoCodebook)
			return d
		}},
		{"bodylen-min", cCorrupt, "a body shorter than its table", func(d []byte) []byte { return put64(d, f.bodyLen, 4) }},
		{"bodylen+4", cTruncated, "a body 4 bytes past the input", func(d []byte) []byte {
			return put64(d, f.bodyLen, binary.LittleEndian.Uint64(d[f.bodyLen:])+4)
		}},
		{"format-zf12", cNonCanonical, "the auto body read as zf12 (with a codebook)", func(d []byte) []byte {
			d[f.format] = layout.FormatZF12
			return d
		}},
	} {
		h := rebuildHeader(p, e.change(append([]byte(nil), dir...)), canonical)
		if err := add(g, BadPayload{ID: "dir/" + e.id, Level: LevelContainer, Base: base,
			Ops: []Op{{Op: "splice", At: 0, N: end, Data: g.Blob(h)}}, Want: e.want, Note: e.note}); err != nil {
			return err
		}
	}
	return nil
}

// autoInvalidTBE3 breaks the TBE-3 pieces of autoBase3 (chunks 2 and 4; chunk 4 is the short last one): their own
// table entries (corrupt), bits under their checksums, and their canonical form (padding bits, a fallback count
// the codes contradict).
func autoInvalidTBE3(g *Gen) error {
	for _, base := range []string{autoBase3, autoBase3NoCRC} {
		a, err := g.autoBody(base)
		if err != nil {
			return err
		}
		crc := base == autoBase3
		for _, c := range []int{2, 4} {
			if a.format(c) != layout.FormatTBE3 {
				return fmt.Errorf("%s: chunk %d in format %d", base, c, a.format(c))
			}
			m := int(layout.SZ4{N: a.n, Shift: a.shift}.ChunkLen(uint64(c)))
			lo, hi := a.piece(c)
			pb := int(layout.TBE3PlanePiece(uint64(m)))
			entry := lo + pb + int(layout.Align4(uint64(m))) // the piece's own table entry
			bad := func(name, want, note string, ops ...Op) error {
				return add(g, BadPayload{ID: fmt.Sprintf("%s/c%d/%s", base[len("mix3/"):], c, name), Level: LevelBody,
					Base: base, Ops: ops, Want: want, Note: note})
			}
			if err := firstErr(
				bad("kind", cCorrupt, "the piece's chunk kind 2", xor(entry+3, 0x02)),
				bad("side-offset", cCorrupt, "the piece's side offset not 0", xor(entry+4, 0x04)),
				bad("window-250", cCorrupt, "a window start past 249", set32(entry, 250<<16|binary.LittleEndian.Uint32(a.b[entry:])&0xFFFF)),
			); err != nil {
				return err
			}
			if crc {
				if err := firstErr(
					bad("plane-bit", cChecksum, "a plane bit under the piece's CRC", xor(lo+5, 0x01)),
					bad("sm-byte", cChecksum, "an SM byte under the piece's CRC", xor(lo+pb+1, 0x40)),
					bad("side-byte", cChecksum, "the last side byte", xor(hi-1, 0x01)),
				); err != nil {
					return err
				}
				continue
			}
			// Without checksums: a fallback's code 0 turned into code 1 (chunk 2's value 948, exponent 40: the
			// fallback count no longer matches the codes); a plane bit at a padding position (chunk 4).
			if c == 2 {
				at := lo + 8*(948/64) + 948%64/8
				if err := bad("fallback-code", cNonCanonical, "a fallback's code 0 made 1: the count disagrees",
					xor(at, 1<<(948%8))); err != nil {
					return err
				}
			}
			if c == 4 {
				tiles := (m + 63) / 64
				// the last tile's plane-0 word: its bits past m are padding.
				at := lo + 8*(tiles-1) + 7
				if err := bad("plane-padding", cNonCanonical, "a plane bit at a padding position", xor(at, 0x80)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
