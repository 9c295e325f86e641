package corpusgen

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/vkzip/vkzip/codec/layout"
)

// Invalid zf12 payloads (docs/FORMAT.md §10), as format-agnostic ops on reference payloads; the class each must
// give is stated here and checked against the reference by the generator.

// zbody is a reference zf12 body with its geometry.
type zbody struct {
	layout.ZF12
	b  []byte
	in []byte
}

func (g *Gen) zf12Body(id string) (*zbody, error) {
	c := g.Case(id)
	if c == nil || g.Body(id) == nil {
		return nil, fmt.Errorf("no body for base %s", id)
	}
	s, err := shiftOf(c.Chunk)
	if err != nil {
		return nil, err
	}
	return &zbody{ZF12: layout.ZF12{N: c.NumValues(), Shift: s}, b: g.Body(id), in: g.Values(id)}, nil
}

func (z *zbody) chunks() int          { return int(z.Chunks()) }
func (z *zbody) m(c int) int          { return int(z.ChunkLen(uint64(c))) }
func (z *zbody) blocks(c int) int     { return (z.m(c) + layout.ZF12Block - 1) / layout.ZF12Block }
func (z *zbody) entry(c int) int      { return int(z.TableOffset()) + c*layout.ChunkEntrySize }
func (z *zbody) word(c, w int) uint32 { return binary.LittleEndian.Uint32(z.b[z.entry(c)+4*w:]) }
func (z *zbody) count(c int) int      { return int(z.word(c, layout.EntryInfo)) }
func (z *zbody) headAt(c, b int) int  { return int(z.HeaderOffset()) + c*int(z.HeaderPiece()) + b }
func (z *zbody) hdr(c, b int) byte    { return z.b[z.headAt(c, b)] }
func (z *zbody) raw(c, b int) bool    { return z.hdr(c, b) == layout.ZF12RawHeader }

// value is the index of block b of chunk c's first value.
func (z *zbody) value(c, b int) int { return c<<z.Shift + b*layout.ZF12Block }

// mb is the number of values of block b of chunk c.
func (z *zbody) mb(c, b int) int { return min(layout.ZF12Block, z.m(c)-b*layout.ZF12Block) }

func (z *zbody) code(c int) (lo, hi int) {
	lo = c << z.Shift / 2
	if c == z.chunks()-1 {
		return lo, int(z.CodeBytes())
	}
	return lo, lo + 1<<z.Shift/2
}

func (z *zbody) low(c int) (lo, hi int) {
	lo = int(z.CodeBytes()) + c<<z.Shift
	if c == z.chunks()-1 {
		return lo, int(z.HeaderOffset())
	}
	return lo, lo + 1<<z.Shift
}

func (z *zbody) head(c int) (lo, hi int) {
	lo = z.headAt(c, 0)
	return lo, lo + int(z.HeaderPiece())
}

// blockSide is where raw block b of chunk c has its side nibbles, and how many bytes they take (padded).
func (z *zbody) blockSide(c, b int) (at, n int) {
	at = int(z.SideOffset()) + int(z.word(c, layout.EntrySideOff))
	for k := 0; k < b; k++ {
		if z.raw(c, k) {
			at += int(layout.ZF12BlockSide(uint64(z.mb(c, k))))
		}
	}
	return at, int(layout.ZF12BlockSide(uint64(z.mb(c, b))))
}

func (z *zbody) side(c int) (lo, hi int) {
	lo, _ = z.blockSide(c, 0)
	hi, _ = z.blockSide(c, z.blocks(c))
	return lo, hi
}

// crcOpWith recomputes chunk c's CRC (docs/FORMAT.md §10.4) with its side piece at [sl, sh) of the edited body.
func (z *zbody) crcOpWith(c, sl, sh int) Op {
	e := z.entry(c)
	hl, hh := z.head(c)
	cl, ch := z.code(c)
	ll, lh := z.low(c)
	return Op{Op: "crc", At: e + 8, Ranges: [][2]int64{{int64(e), int64(e + 8)}, {int64(hl), int64(hh)},
		{int64(sl), int64(sh)}, {int64(cl), int64(ch)}, {int64(ll), int64(lh)}}}
}

func (z *zbody) crcOp(c int) Op {
	sl, sh := z.side(c)
	return z.crcOpWith(c, sl, sh)
}

// firstBlock returns the first (chunk, block) that satisfies ok, or (-1, -1).
func (z *zbody) firstBlock(ok func(c, b int) bool) (int, int) {
	for c := 0; c < z.chunks(); c++ {
		for b := 0; b < z.blocks(c); b++ {
			if ok(c, b) {
				return c, b
			}
		}
	}
	return -1, -1
}

// nibble is value i's code nibble.
func (z *zbody) nibble(i int) byte { return z.b[i/2] >> (4 * (i & 1)) & 15 }

// maxOffset is the largest offset (nibble & 7) of coded block b of chunk c.
func (z *zbody) maxOffset(c, b int) int {
	top := 0
	for i := z.value(c, b); i < z.value(c, b)+z.mb(c, b); i++ {
		top = max(top, int(z.nibble(i)&7))
	}
	return top
}

// recodeOps rewrites the code nibbles of block b of chunk c with f(value index, high byte) (an even number of
// values from a byte boundary, except the tensor's last block).
func (z *zbody) recodeOps(c, b int, f func(i int, h byte) byte) Op {
	v0, mb := z.value(c, b), z.mb(c, b)
	out := make([]byte, (mb+1)/2)
	copy(out, z.b[v0/2:])
	for i := v0; i < v0+mb; i++ {
		k := (i - v0) / 2
		sh := 4 * ((i - v0) & 1)
		out[k] = out[k]&^(15<<sh) | f(i, z.in[2*i+1])<<sh
	}
	return Op{Op: "splice", At: v0 / 2, N: len(out), Hex: hex.EncodeToString(out)}
}

// asRaw turns coded block b of chunk c into a raw block with the same values: header, count, nibbles, 256 side
// bytes inserted and later side offsets moved. It returns the ops and the chunk's side range afterwards.
func (z *zbody) asRaw(c, b int) (ops []Op, sl, sh int) {
	at, n := z.blockSide(c, b)
	v0, mb := z.value(c, b), z.mb(c, b)
	side := make([]byte, n)
	for i := 0; i < mb; i++ {
		side[i/2] |= (z.in[2*(v0+i)+1] >> 4) << (4 * (i & 1))
	}
	ops = []Op{
		{Op: "splice", At: z.headAt(c, b), N: 1, Hex: "ff"},
		set32(z.entry(c), uint32(z.count(c)+1)),
		z.recodeOps(c, b, func(_ int, h byte) byte { return h & 15 }),
	}
	for d := c + 1; d < z.chunks(); d++ {
		ops = append(ops, set32(z.entry(d)+4, z.word(d, layout.EntrySideOff)+uint32(n)))
	}
	ops = append(ops, Op{Op: "splice", At: at, Hex: hex.EncodeToString(side)})
	sl, sh = z.side(c)
	return ops, sl, sh + n
}

func zfInvalidTable(g *Gen) error {
	for _, base := range []string{zfBaseMixed, zfBaseMixedNoCRC, zfBaseBig, zfBaseNarrow} {
		z, err := g.zf12Body(base)
		if err != nil {
			return err
		}
		last := z.chunks() - 1
		bad := func(name, note string, ops ...Op) error {
			return add(g, BadPayload{ID: base[len("raw-blocks/"):] + "/" + name, Level: LevelBody, Base: base,
				Ops: ops, Want: cCorrupt, Note: note})
		}
		var es []edit
		second := min(1, last)
		es = append(es, edit{"kind", "kind bits in the info word", []Op{xor(z.entry(second)+3, 0x01)}},
			edit{"count-plus1-last", "one raw block more in the table than in the headers", []Op{set32(z.entry(last), uint32(z.count(last)+1))}},
			edit{"sideoff-c0", "first side offset not 0", []Op{set32(z.entry(0)+4, 4)}})
		if last >= 1 {
			es = append(es, edit{"count-plus1", "a raw-block count the headers and side offsets do not follow",
				[]Op{set32(z.entry(0), uint32(z.count(0)+1))}},
				edit{"sideoff-c1", "side offset not the running sum", []Op{set32(z.entry(1)+4, z.word(1, layout.EntrySideOff)+4)}})
		}
		if c, b := z.firstBlock(z.raw); c >= 0 {
			es = append(es, edit{"count-minus1", "one raw block fewer in the table", []Op{set32(z.entry(c), uint32(z.count(c)-1))}},
				edit{"raw-to-coded", "a raw block's header turned into a base", []Op{{Op: "splice", At: z.headAt(c, b), N: 1, Hex: "10"}}})
		}
		if c, b := z.firstBlock(func(c, b int) bool { return !z.raw(c, b) }); c >= 0 {
			at := z.headAt(c, b)
			es = append(es, edit{"header-80", "header byte 0x80", []Op{{Op: "splice", At: at, N: 1, Hex: "80"}}},
				edit{"header-fe", "header byte 0xFE", []Op{{Op: "splice", At: at, N: 1, Hex: "fe"}}},
				edit{"coded-to-raw", "a coded block marked raw, count unchanged", []Op{{Op: "splice", At: at, N: 1, Hex: "ff"}}},
				edit{"coded-to-raw-counted", "a coded block marked raw and counted, side piece unchanged",
					[]Op{{Op: "splice", At: at, N: 1, Hex: "ff"}, set32(z.entry(c), uint32(z.count(c)+1))}})
		}
		n := len(z.b)
		es = append(es,
			edit{"short-side", "side section 4 bytes short", []Op{trunc(n - 4)}},
			edit{"long-side", "4 bytes past the side section", []Op{appendHex(n, "00000000")}},
			edit{"short-table", "body ends inside the chunk table", []Op{trunc(int(z.SideOffset()) - 4)}},
			edit{"headers-only", "body ends after the header stream", []Op{trunc(int(z.TableOffset()))}},
			edit{"empty", "empty body", []Op{trunc(0)}})
		for _, x := range es {
			if err := bad(x.name, x.note, x.ops...); err != nil {
				return err
			}
		}
	}
	return nil
}

func zfInvalidChecksum(g *Gen) error {
	for _, base := range []string{zfBaseMixed, zfBaseBig, zfBaseNarrow} {
		z, err := g.zf12Body(base)
		if err != nil {
			return err
		}
		last := z.chunks() - 1
		bad := func(name, note string, ops ...Op) error {
			return add(g, BadPayload{ID: base[len("raw-blocks/"):] + "/" + name, Level: LevelBody, Base: base,
				Ops: ops, Want: cChecksum, Note: note})
		}
		cl, _ := z.code(0)
		ll, _ := z.low(last)
		es := []edit{
			{"code-c0", "a flipped code bit", []Op{xor(cl+5, 0x10)}},
			{"low-last", "a flipped low-byte bit in the last chunk", []Op{xor(ll+1, 0x80)}},
			{"crc-field", "a flipped CRC field", []Op{xor(z.entry(last)+8, 0x01)}},
			{"two-chunks", "flips in the last chunk and chunk 0: chunk 0 is reported", []Op{xor(ll, 0x01), xor(cl, 0x01)}},
		}
		if c, b := z.firstBlock(func(c, b int) bool { return !z.raw(c, b) }); c >= 0 {
			es = append(es, edit{"header-base", "a coded block's base, still a base", []Op{xor(z.headAt(c, b), 0x01)}})
		}
		if c, b := z.firstBlock(z.raw); c >= 0 {
			at, _ := z.blockSide(c, b)
			es = append(es, edit{"side", "a raw block's side nibble", []Op{xor(at+7, 0x20)}})
		}
		// A non-canonical chunk (its CRC fixed) before a checksum mismatch in the last chunk: checksum wins.
		for _, m := range zfMutations(z) {
			if r, ok := m.crcs[0]; ok && len(m.crcs) == 1 && last > 0 {
				ops := append(append([]Op(nil), m.ops...), z.crcOpWith(0, r[0], r[1]), xor(ll+2, 0x02))
				es = append(es, edit{"precedence-" + m.name, "a non-canonical chunk 0 (CRC fixed), then a checksum mismatch: checksum wins", ops})
				break
			}
		}
		for _, x := range es {
			if err := bad(x.name, x.note, x.ops...); err != nil {
				return err
			}
		}
	}
	return nil
}

// zfMutations lists the non-canonical changes that apply to a body, each with the chunks whose CRCs a variant
// with checksums re-fixes (and their side ranges afterwards).
func zfMutations(z *zbody) []zmut {
	var ms []zmut
	last := z.chunks() - 1
	one := func(c int) map[int][2]int { sl, sh := z.side(c); return map[int][2]int{c: {sl, sh}} }
	addM := func(name, note string, crcs map[int][2]int, ops ...Op) {
		ms = append(ms, zmut{name, note, ops, crcs})
	}
	n := int(z.N)
	if n%2 == 1 {
		addM("code-nibble", "the code nibble after the last value", one(last), xor((n-1)/2, 0x10))
	}
	if (n+1)/2 < int(z.CodeBytes()) {
		addM("code-pad", "a code padding byte", one(last), xor((n+1)/2, 0x01))
	}
	if n < int(z.LowBytes()) {
		addM("low-pad", "a low-stream padding byte", one(last), xor(int(z.CodeBytes())+n, 0x20))
	}
	for c := 0; c < z.chunks(); c++ {
		if z.blocks(c) < int(z.HeaderPiece()) {
			addM(fmt.Sprintf("head-pad-c%d", c), "a header byte after the chunk's last block", one(c),
				xor(z.headAt(c, z.blocks(c)), 0x01))
			break
		}
	}
	if c, b := z.firstBlock(func(c, b int) bool { return z.raw(c, b) && z.mb(c, b) < layout.ZF12Block }); c >= 0 {
		at, sz := z.blockSide(c, b)
		mb := z.mb(c, b)
		if (mb+1)/2 < sz {
			addM("side-pad", "a side padding byte of a short raw block", one(c), xor(at+sz-1, 0x01))
		}
		if mb%2 == 1 {
			addM("side-pad-nibble", "the unused side nibble of an odd short raw block", one(c), xor(at+mb/2, 0x40))
		}
	}
	if c, b := z.firstBlock(func(c, b int) bool { return !z.raw(c, b) && z.maxOffset(c, b) >= 1 }); c >= 0 {
		addM("base-overflow", "a coded block's base raised so that base + offset passes 127", one(c),
			Op{Op: "splice", At: z.headAt(c, b), N: 1, Hex: "7f"})
	}
	if c, b := z.firstBlock(func(c, b int) bool { return !z.raw(c, b) && z.maxOffset(c, b) <= 6 && z.hdr(c, b) > 0 }); c >= 0 {
		h := z.hdr(c, b)
		addM("base-not-min", "a coded block recoded with its base one lower: no offset is 0", one(c),
			Op{Op: "splice", At: z.headAt(c, b), N: 1, Hex: hex.EncodeToString([]byte{h - 1})},
			z.recodeOps(c, b, func(i int, hb byte) byte { return z.nibble(i)&8 | (z.nibble(i)&7 + 1) }))
	}
	for _, pick := range []struct {
		name string
		ok   func(c, b int) bool
	}{
		{"raw-fits", func(c, b int) bool { return !z.raw(c, b) && c < last }},
		{"raw-fits-last", func(c, b int) bool { return !z.raw(c, b) && c == last }},
	} {
		if c, b := z.firstBlock(pick.ok); c >= 0 {
			ops, sl, sh := z.asRaw(c, b)
			crcs := map[int][2]int{c: {sl, sh}}
			_, bs := z.blockSide(c, b)
			for d := c + 1; d < z.chunks(); d++ { // later chunks moved: their side offsets (and CRCs) changed
				l, h := z.side(d)
				crcs[d] = [2]int{l + bs, h + bs}
			}
			addM(pick.name, "a block that fits stored raw, with the same values", crcs, ops...)
		}
	}
	return ms
}

// zmut is a non-canonical change; crcs are the chunks whose CRCs the checksummed variant re-fixes, with their side
// ranges in the changed body.
type zmut struct {
	name, note string
	ops        []Op
	crcs       map[int][2]int
}

func zfInvalidStream(g *Gen) error {
	for _, v := range []struct {
		base     string
		fixCRC   bool
		withCRCs bool
	}{
		{zfBaseMixedNoCRC, false, false}, {zfBaseNarrowNo, false, false},
		{zfBaseMixed, true, true}, {zfBaseNarrow, true, true},
	} {
		z, err := g.zf12Body(v.base)
		if err != nil {
			return err
		}
		for _, m := range zfMutations(z) {
			ops := append([]Op(nil), m.ops...)
			if v.fixCRC {
				for c := 0; c < z.chunks(); c++ {
					if r, ok := m.crcs[c]; ok {
						ops = append(ops, z.crcOpWith(c, r[0], r[1]))
					}
				}
			}
			if err := add(g, BadPayload{ID: v.base[len("raw-blocks/"):] + "/" + m.name, Level: LevelBody, Base: v.base,
				Ops: ops, Want: cNonCanonical, Note: m.note}); err != nil {
				return err
			}
		}
		if !v.withCRCs {
			if err := add(g, BadPayload{ID: v.base[len("raw-blocks/"):] + "/crc-field", Level: LevelBody, Base: v.base,
				Ops: []Op{xor(z.entry(0)+8, 0x01)}, Want: cNonCanonical, Note: "a CRC field without checksums"}); err != nil {
				return err
			}
		}
	}
	// The checksummed body read without checksums: every CRC field is then non-canonical.
	f := false
	return add(g, BadPayload{ID: "mixed/c1024/crc-read-without", Level: LevelBody, Base: zfBaseMixed, Checksums: &f,
		Want: cNonCanonical, Note: "CRC fields present, checksums off"})
}

func zfInvalidContainer(g *Gen) error {
	base, baseNoCRC := zfBaseMixed, zfBaseMixedNoCRC
	p := g.Container(base)
	end := metaEnd(p)
	n := len(p)
	bad := func(id, want, note string, ops ...Op) error {
		return add(g, BadPayload{ID: id, Level: LevelContainer, Base: base, Ops: ops, Want: want, Note: note})
	}
	z, err := g.zf12Body(base)
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
		{"body/table-kind", cCorrupt, "a chunk kind in the body's table", shiftOps([]Op{xor(z.entry(0)+3, 0x04)}, end)},
		{"body/header", cCorrupt, "a header byte 0x80", shiftOps([]Op{{Op: "splice", At: z.headAt(1, 0), N: 1, Hex: "80"}}, end)},
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
	for _, e := range []struct {
		id, want, note string
		change         func(d []byte) []byte
	}{
		{"reserved", cNonCanonical, "reserved byte 1", func(d []byte) []byte { d[f.reserved] = 1; return d }},
		{"dtype-f16", cCorrupt, "zf12 on an F16 tensor", func(d []byte) []byte { d[f.dtype] = byte(layout.DTypeF16); return d }},
		{"format-6", cUnsupported, "format 6 (reserved)", func(d []byte) []byte { d[f.format] = 6; return d }},
		{"format-splitzip4", cCorrupt, "splitzip4 without a codebook", func(d []byte) []byte { d[f.format] = layout.FormatSplitZip4; return d }},
		{"shift-9", cCorrupt, "chunk shift 9", func(d []byte) []byte { d[f.shift] = 9; return d }},
		{"shift-17", cCorrupt, "chunk shift 17", func(d []byte) []byte { d[f.shift] = 17; return d }},
		{"codebook-index-0", cNonCanonical, "codebook 0 referenced (none present): zf12 takes none", func(d []byte) []byte {
			binary.LittleEndian.PutUint32(d[f.cbIndex:], 0)
			return d
		}},
		{"codebook-present", cNonCanonical, "a zf12 tensor referencing a codebook", func(d []byte) []byte {
			cb := append([]byte{1, 0, 0, 0, layout.CodebookExp8}, kvCB[:]...)
			out := append(cb, d[4:]...)
			binary.LittleEndian.PutUint32(out[f.cbIndex+17:], 0)
			return out
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
		{"bodylen-max", cCorrupt, "a body longer than every block raw", func(d []byte) []byte {
			return put64(d, f.bodyLen, z.MaxBodySize()+4)
		}},
	} {
		h := rebuildHeader(p, e.change(append([]byte(nil), dir...)), canonical)
		if err := bad("dir/"+e.id, e.want, e.note, Op{Op: "splice", At: 0, N: end, Data: g.Blob(h)}); err != nil {
			return err
		}
	}
	q := g.Container(baseNoCRC)
	qe := metaEnd(q)
	zn, err := g.zf12Body(baseNoCRC)
	if err != nil {
		return err
	}
	for _, c := range []tc{
		{"nocrc/crc-field", cNonCanonical, "a chunk CRC field without CHECKSUMS", shiftOps([]Op{xor(zn.entry(1)+8, 0x01)}, qe)},
		{"nocrc/checksums-set-fixed", cChecksum, "CHECKSUMS set on zero CRC fields, metadata CRC fixed", []Op{xor(10, 0x01), metaCRCOp(qe)}},
		{"nocrc/side-offset", cCorrupt, "a side offset, checksums off", shiftOps([]Op{xor(zn.entry(3)+4, 0x04)}, qe)},
		{"nocrc/header-pad", cNonCanonical, "a header padding byte, checksums off", shiftOps([]Op{xor(zn.headAt(0, 2), 0x01)}, qe)},
	} {
		if err := add(g, BadPayload{ID: c.id, Level: LevelContainer, Base: baseNoCRC, Ops: c.ops, Want: c.want, Note: c.note}); err != nil {
			return err
		}
	}
	return nil
}
