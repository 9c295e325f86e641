package vkcodec

import (
	"strings"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/shaders"
)

// zf12 on Vulkan (docs/FORMAT.md §10): a three-pass encode (zf12_encode: block ranges, dense pieces, headers, raw
// side nibbles to scratch; sz4_scan; zf12_place) and a one-pass decode, with a header stream next to the code and
// low streams (the layout is SplitZip-4's plus that stream: planChunked).

func init() { register(layout.FormatZF12, zf12Codec{}) }

type zf12Codec struct{}

func zf12Of(t *tensor) layout.ZF12 { return layout.ZF12{N: t.n, Shift: t.shift} }

func (zf12Codec) check(b *Backend, t *tensor) error {
	if t.n == 0 {
		return invalid("zf12: empty tensor")
	}
	g := zf12Of(t)
	return b.checkBF16(t, g.MaxBodySize()-g.SideOffset(), layout.ChunkEntrySize*g.Chunks())
}

func (zf12Codec) shape(t *tensor) shape {
	g := zf12Of(t)
	return sideShape(g.MinBodySize(), g.MaxBodySize(), g.SideOffset(), g.Chunks())
}

// deviceBytes bounds the plan by SplitZip-4's plus the header stream and zf12's larger side section, with a
// region's alignment per segment.
func (zf12Codec) deviceBytes(b *Backend, t *tensor, encode bool) uint64 {
	g := zf12Of(t)
	per := b.segChunks(t.shift)
	segs := (g.Chunks() + per - 1) / per
	return planBytes(layout.SZ4{N: t.n, Shift: t.shift}, per, encode) + alignRegion(g.Chunks()*g.HeaderPiece()) +
		segs*regionAlign + alignRegion(g.MaxBodySize()-g.SideOffset())
}

func (zf12Codec) plan(b *Backend, t *tensor, r *regions) *chunkedPlan {
	g := zf12Of(t)
	return b.planChunked(t, r, g.TableOffset(), g.SideOffset(), g.HeaderOffset(), g.HeaderPiece())
}

func (f zf12Codec) encode(b *Backend, t *tensor, r *regions) (*plan, error) {
	p := f.plan(b, t, r)
	return &plan{passes: []func(*recorder) error{p.recordZF12Encode, scanPass(p.work, p.nb), p.recordZF12Place}}, nil
}

func (f zf12Codec) decode(b *Backend, t *tensor, r *regions) (*plan, error) {
	return &plan{passes: []func(*recorder) error{f.plan(b, t, r).recordZF12Decode}}, nil
}

func (p *chunkedPlan) recordZF12Encode(rec *recorder) error {
	kk, cs, err := p.chunkKernel(rec, kZF12Encode, p.wg)
	if err != nil {
		return err
	}
	for _, sg := range p.segs {
		pc := shaders.ZF12EncodePush{ChunkCRC: chunkCRC(p.tc, sg.first, sg.count), Checksums: b2u(p.t.checksums),
			SrcBase:  uint32(sg.vals.base / 16),
			CodeBase: sg.codes.words(), LowBase: sg.lows.words(), HeadBase: sg.heads.words(),
			TableBase: p.table.words()}
		if err := rec.dispatch(kk, shaders.PushBytes(&pc), rec.b.gridOf(sg.count), sg.vals.l, sg.codes.l, sg.lows.l,
			sg.heads.l, p.table.l, sg.scratch, cs, p.work); err != nil {
			return err
		}
	}
	return nil
}

func (p *chunkedPlan) recordZF12Place(rec *recorder) error {
	kk, cs, err := p.chunkKernel(rec, kZF12Place, p.wg)
	if err != nil {
		return err
	}
	for _, sg := range p.segs {
		pc := shaders.ZF12PlacePush{Chunks: p.tc.chunks, SegFirst: uint32(sg.first), SegChunks: uint32(sg.count),
			LastLen: p.tc.lastLen, NB: uint32(p.nb), KdFull: p.tc.kdFull, KdLast: p.tc.kdLast,
			Checksums: b2u(p.t.checksums), TableBase: p.table.words(), SideBase: p.side.words(),
			HeadBase: sg.heads.words()}
		if err := rec.dispatch(kk, shaders.PushBytes(&pc), rec.b.gridOf(sg.count), p.table.l, sg.scratch, p.side.l, cs,
			p.work, sg.heads.l); err != nil {
			return err
		}
	}
	return nil
}

func (p *chunkedPlan) recordZF12Decode(rec *recorder) error {
	kk, cs, err := p.chunkKernel(rec, kZF12Decode, p.wg)
	if err != nil {
		return err
	}
	kk = kk.with("DEBUG_BOUNDS", b2u(rec.b.t.DebugBounds))
	for _, sg := range p.segs {
		pc := shaders.ZF12DecodePush{ChunkSeg: chunkSeg(p.tc, sg.first, sg.count, p.t.checksums),
			SideLen: p.sideLen, StatusBase: p.statusBase, CodeBase: sg.codes.words(), LowBase: sg.lows.words(),
			HeadBase: sg.heads.words(), TableBase: p.table.words(), SideBase: p.side.words(),
			DstBase: uint32(sg.vals.base / 16)}
		if err := rec.dispatch(kk, shaders.PushBytes(&pc), rec.b.gridOf(sg.count), sg.codes.l, sg.lows.l, sg.heads.l,
			p.table.l, p.side.l, sg.vals.l, cs, p.status); err != nil {
			return err
		}
	}
	return nil
}

// kernelDefaults: 5-bit CRC tables for the zf12 kernels (their tables in shared memory shrink from 20 to 4.4 KiB:
// encode +14 % on an H200).
func (zf12Codec) kernelDefaults(kernel string) (crcBits, unroll int) {
	if strings.HasPrefix(kernel, "zf12_") {
		return 5, 0
	}
	return 0, 0
}

// sharedBytes is the shared memory of the zf12 kernels (the CRC tables dominate), for workgroups of wg threads and
// chunks of at most 2^16 values.
func (zf12Codec) sharedBytes(b *Backend, wg uint32) uint32 {
	const blocks = 1 << layout.MaxChunkShift / layout.ZF12Block
	tables := b.crcTables(kZF12Encode.Name)
	return max(4*(tables+4*blocks+3*wg+1), 4*(tables+5*blocks+2*wg+2))
}

// candLayout: a zf12 candidate's scratch body is the format's whole body.
func (zf12Codec) candLayout(t *tensor) candLayout {
	z := zf12Of(t)
	l := sz4CandLayout(t.n, t.shift)
	l.id = layout.FormatZF12
	l.streams[2] = z.HeaderOffset()
	l.full[2], l.last[2] = z.HeaderPiece(), z.HeaderPiece()
	l.table, l.side, l.max = z.TableOffset(), z.SideOffset(), z.MaxBodySize()
	return l
}

func (f zf12Codec) candEncode(b *Backend, t *tensor, r *regions, _ candLayout) *plan {
	p, _ := f.encode(b, t, r)
	return p
}

func (zf12Codec) candDecode(rec *recorder, t *tensor, a *autoPieces) error {
	return chunkPieces(rec, t, a, kZF12Pieces, 5)
}
