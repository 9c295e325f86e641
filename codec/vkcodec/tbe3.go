package vkcodec

import (
	"strings"

	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/shaders"
)

// TBE-3 on the Vulkan backend (docs/FORMAT.md §12): encode in two passes as SplitZip-4's (tbe3_encode: window,
// dense pieces and their partial CRC, side pieces to per-chunk scratch slots; tbe3_place: side offsets from pass 1's
// block sums, side pieces placed, CRCs finished), decode in one (tbe3_decode). The SM stream may start at any word
// of a binding (the kernels then use word access), and every side word placed is a whole scratch word written by
// pass 1 (a coded chunk zeroes its slot's words before ORing fallback bytes in), so nothing of the body is cleared
// beforehand.

func init() { register(layout.FormatTBE3, tbe3Codec{}) }

type tbe3Codec struct{}

// kernelDefaults: 5-bit CRC tables for the TBE-3 kernels (their tables in shared memory shrink from 20 to 4.4 KiB:
// decode +31 %, encode +13 % on an H200).
func (tbe3Codec) kernelDefaults(kernel string) (crcBits, unroll int) {
	if strings.HasPrefix(kernel, "tbe3_") {
		return 5, 0
	}
	return 0, 0
}

// tbe3Seg is a run of chunks whose per-chunk regions fit one binding each.
type tbe3Seg struct {
	first, count     uint64
	vals, planes, sm view
	scratch          loc // encode: the side pieces, a slot of TBE3RawSide(chunk values) bytes per chunk
}

// tbe3Plan is the device layout of one TBE-3 tensor.
type tbe3Plan struct {
	t            *tensor
	g            layout.TBE3
	wg           uint32
	segs         []tbe3Seg
	table, side  view
	sideLen      uint32
	work, status loc
	nb           uint64
	kdFull       uint32 // x^(8·|dense pieces|) of a full chunk, and of the last chunk
	kdLast       uint32
}

// tbe3Offsets is where a TBE-3 body keeps its SM stream, chunk table and side section (the plane stream starts
// it): the format's own body, or auto's scratch body for the candidate.
type tbe3Offsets struct{ sm, table, side uint64 }

func tbe3Of(t *tensor) layout.TBE3 { return layout.TBE3{N: t.n, Shift: t.shift} }

func tbe3BodyOffsets(g layout.TBE3) tbe3Offsets {
	return tbe3Offsets{sm: g.PlaneBytes(), table: g.TableOffset(), side: g.SideOffset()}
}

// tbe3PlaneRange is a segment's byte range of the plane stream: whole chunk pieces, the last to the stream's end.
func tbe3PlaneRange(g layout.TBE3, first, count uint64) (lo, hi uint64) {
	piece := layout.TBE3PlanePiece(g.ChunkValues())
	lo = first * piece
	if first+count == g.Chunks() {
		return lo, g.PlaneBytes()
	}
	return lo, (first + count) * piece
}

// tbe3SMRange is a segment's byte range of the SM stream, the last one to the padded end.
func tbe3SMRange(g layout.TBE3, first, count uint64) (lo, hi uint64) {
	lo = first << g.Shift
	if first+count == g.Chunks() {
		return lo, g.SMBytes()
	}
	return lo, (first + count) << g.Shift
}

// tbe3WG is the workgroup size of the TBE-3 kernels: Tune.TBE3WG, else 128 (faster than 256 both ways on an
// H100: more workgroups per SM, cheaper barriers), else the chunk kernels' where that is less. Each thread handles
// whole 32-value units, so it must divide the n/32 units of a chunk.
func (b *Backend) tbe3WG(shift uint) uint32 {
	return min(b.knobWG(b.t.TBE3WG, min(128, uint32(b.t.WorkGroup))), uint32(1)<<shift/32)
}

func (tbe3Codec) check(b *Backend, t *tensor) error {
	if t.shift < layout.MinChunkShift || t.shift > layout.MaxChunkShift || t.n > layout.MaxCodedValues || t.n == 0 {
		return invalid("TBE-3 tensor of %d values in chunks of 2^%d", t.n, t.shift)
	}
	g := tbe3Of(t)
	return b.checkBF16(t, g.MaxBodySize()-g.SideOffset(), layout.ChunkEntrySize*g.Chunks())
}

func (tbe3Codec) shape(t *tensor) shape {
	g := tbe3Of(t)
	return sideShape(g.MinBodySize(), g.MaxBodySize(), g.SideOffset(), g.Chunks())
}

// deviceBytes: SplitZip-4's estimate, whose dense streams of 12/8 bytes per value against TBE-3's 11/8 cover TBE-3's
// side section of at most 5/8 against 4/8, plus the 1/8 by which TBE-3's scratch slots (5/8) exceed SplitZip-4's.
func (tbe3Codec) deviceBytes(b *Backend, t *tensor, encode bool) uint64 {
	g, per := layout.SZ4{N: t.n, Shift: t.shift}, b.segChunks(t.shift)
	total := planBytes(g, per, encode)
	if encode {
		extra := layout.TBE3RawSide(g.ChunkValues()) - g.ChunkValues()/2
		for first := uint64(0); first < g.Chunks(); first += per {
			total += alignRegion(min(per, g.Chunks()-first) * extra)
		}
	}
	return total
}

// planTBE3 lays out a TBE-3 tensor whose body regions start at o.
func (b *Backend) planTBE3(t *tensor, r *regions, o tbe3Offsets, sideLen uint64) *tbe3Plan {
	g := tbe3Of(t)
	last := g.ChunkLen(g.Chunks() - 1)
	p := &tbe3Plan{t: t, g: g, wg: b.tbe3WG(t.shift), nb: (g.Chunks() + 63) / 64, work: r.work.dev,
		status: r.status, sideLen: uint32(sideLen),
		kdFull: crc32c.XPow(8 * (layout.TBE3PlanePiece(g.ChunkValues()) + g.ChunkValues())),
		kdLast: crc32c.XPow(8 * (layout.TBE3PlanePiece(last) + layout.Align4(last)))}
	b.segments(layout.SZ4{N: t.n, Shift: t.shift}, func(first, count uint64) {
		pl, ph := tbe3PlaneRange(g, first, count)
		sl, sh := tbe3SMRange(g, first, count)
		vl, vh := valueRange(layout.SZ4{N: t.n, Shift: t.shift}, first, count)
		sg := tbe3Seg{first: first, count: count, vals: r.valsAt(2*vl, layout.Align4(2*(vh-vl))),
			planes: r.bodyAt(pl, ph-pl), sm: r.bodyAt(o.sm+sl, sh-sl)}
		if r.encode {
			sg.scratch = r.scratch(count * layout.TBE3RawSide(g.ChunkValues()))
		}
		p.segs = append(p.segs, sg)
	})
	p.table = r.bodyAt(o.table, layout.ChunkEntrySize*g.Chunks())
	p.side = r.bodyAt(o.side, sideLen)
	return p
}

func (tbe3Codec) encode(b *Backend, t *tensor, r *regions) (*plan, error) {
	g := tbe3Of(t)
	return b.planTBE3(t, r, tbe3BodyOffsets(g), g.MaxBodySize()-g.SideOffset()).encodePlan(), nil
}

func (p *tbe3Plan) encodePlan() *plan {
	return &plan{passes: []func(*recorder) error{p.recordEncode, p.recordPlace}}
}

func (tbe3Codec) decode(b *Backend, t *tensor, r *regions) (*plan, error) {
	g := tbe3Of(t)
	p := b.planTBE3(t, r, tbe3BodyOffsets(g), t.bodyLen-g.SideOffset())
	return &plan{passes: []func(*recorder) error{p.recordDecode}}, nil
}

// kernel is a TBE-3 kernel's key at workgroups of wg and the CRC constants it binds (the SplitZip-4 constants: the
// kernels use their M^4, M^(4WG), M^(8WG) tables, KC and the x^(±8·2^k) powers).
func (p *tbe3Plan) kernel(rec *recorder, k *shaders.Kernel, wg uint32) (kernelKey, loc, error) {
	kk := rec.b.chunkKey(k, wg, p.g.Shift)
	cs, err := rec.consts(kk, p.g.Shift)
	return kk, cs, err
}

func (p *tbe3Plan) lastLen() uint32 { return uint32(p.g.ChunkLen(p.g.Chunks() - 1)) }

// perSegment records kernel k at workgroups of wg once per segment, with the push block and bindings seg gives for
// it (cs: the CRC constants).
func (p *tbe3Plan) perSegment(rec *recorder, k *shaders.Kernel, wg uint32,
	seg func(sg tbe3Seg, cs loc) ([]byte, []loc)) error {
	kk, cs, err := p.kernel(rec, k, wg)
	if err != nil {
		return err
	}
	for _, sg := range p.segs {
		push, binds := seg(sg, cs)
		if err := rec.dispatch(kk, push, rec.b.gridOf(sg.count), binds...); err != nil {
			return err
		}
	}
	return nil
}

func (p *tbe3Plan) recordEncode(rec *recorder) error {
	return p.perSegment(rec, kTBE3Encode, p.wg, func(sg tbe3Seg, cs loc) ([]byte, []loc) {
		pc := shaders.TBE3EncodePush{Chunks: uint32(p.g.Chunks()), SegFirst: uint32(sg.first),
			SegChunks: uint32(sg.count), LastLen: p.lastLen(), Checksums: b2u(p.t.checksums),
			SrcBase: uint32(sg.vals.base / 16), PlaneBase: sg.planes.words(), SMBase: sg.sm.words(),
			TableBase: p.table.words()}
		return shaders.PushBytes(&pc), []loc{sg.vals.l, sg.planes.l, sg.sm.l, p.table.l, sg.scratch, cs, p.work}
	})
}

// recordPlace records the placement pass (side_place.glsl, as SplitZip-4's), one workgroup of placeWG invocations
// per chunk.
func (p *tbe3Plan) recordPlace(rec *recorder) error {
	return p.perSegment(rec, kTBE3Place, rec.b.placeWG(), func(sg tbe3Seg, cs loc) ([]byte, []loc) {
		pc := shaders.TBE3PlacePush{Chunks: uint32(p.g.Chunks()), SegFirst: uint32(sg.first),
			SegChunks: uint32(sg.count), LastLen: p.lastLen(), NB: uint32(p.nb), KdFull: p.kdFull, KdLast: p.kdLast,
			Checksums: b2u(p.t.checksums), TableBase: p.table.words(), SideBase: p.side.words()}
		return shaders.PushBytes(&pc), []loc{p.table.l, sg.scratch, p.side.l, cs, p.work}
	})
}

func (p *tbe3Plan) recordDecode(rec *recorder) error {
	return p.perSegment(rec, kTBE3Decode, p.wg, func(sg tbe3Seg, cs loc) ([]byte, []loc) {
		pc := shaders.TBE3DecodePush{Chunks: uint32(p.g.Chunks()), SegFirst: uint32(sg.first),
			SegChunks: uint32(sg.count), LastLen: p.lastLen(), Checksums: b2u(p.t.checksums), SideLen: p.sideLen,
			PlaneBase: sg.planes.words(), SMBase: sg.sm.words(), TableBase: p.table.words(),
			SideBase: p.side.words(), DstBase: uint32(sg.vals.base / 16)}
		return shaders.PushBytes(&pc), []loc{sg.planes.l, sg.sm.l, p.table.l, p.side.l, sg.vals.l, cs, p.status}
	})
}

// candLayout: a TBE-3 candidate's scratch body has its regions at binding-aligned offsets (its kernels address the
// SM stream in 16-byte units).
func (tbe3Codec) candLayout(t *tensor) candLayout {
	g := tbe3Of(t)
	c, cv := g.Chunks(), g.ChunkValues()
	sm := alignRegion(g.PlaneBytes())
	l := candLayout{id: layout.FormatTBE3, streams: [3]uint64{0, sm, ^uint64(0)},
		full: [3]uint64{layout.TBE3PlanePiece(cv), cv, 0},
		last: [3]uint64{layout.TBE3PlanePiece(g.ChunkLen(c - 1)), g.SMBytes() - (c-1)*cv, 0}}
	l.table = sm + alignRegion(g.SMBytes())
	l.side = l.table + alignRegion(layout.ChunkEntrySize*c)
	l.max = l.side + max(g.MaxBodySize()-g.SideOffset(), 4)
	return l
}

func (tbe3Codec) candEncode(b *Backend, t *tensor, r *regions, l candLayout) *plan {
	return b.planTBE3(t, r, tbe3Offsets{sm: l.streams[1], table: l.table, side: l.side}, l.max-l.side).encodePlan()
}

func (tbe3Codec) candDecode(rec *recorder, t *tensor, a *autoPieces) error {
	b, g := rec.b, tbe3Of(t)
	C := g.Chunks()
	kk := b.chunkKey(kTBE3Pieces, min(b.wgFor(t.shift, C), b.tbe3WG(t.shift)), t.shift) // whole 32-value units
	cs, err := rec.consts(kk, t.shift)
	if err != nil {
		return err
	}
	for _, sg := range a.segs {
		pc := shaders.TBE3DecodePiecesPush{CB: codebookWords(a.cb), Chunks: uint32(C), SegFirst: uint32(sg.first),
			SegChunks: uint32(sg.count), LastLen: uint32(g.ChunkLen(C - 1)), Checksums: b2u(a.checksums),
			PiecesLen: a.piecesLen(C), AutoBase: a.autoBase(), PieceBase: a.pieceBase(C), Cands: a.mask,
			Validate: b2u(a.validate), DstBase: uint32(sg.dst.base / 16)}
		if err := rec.dispatch(kk, shaders.PushBytes(&pc), b.gridOf(sg.count), a.body.l, a.body.l, a.body.l, a.body.l,
			sg.dst.l, cs, a.status); err != nil {
			return err
		}
	}
	return nil
}
