package vkcodec

import (
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/shaders"
)

// The exponent-window formats (xw2, xw3, xw4 over F8_E5M2, F8_E4M3, F16, F32; docs/FORMAT.md §13), producing and
// accepting exactly the reference codec's bytes: encode in three passes (xw_encode: dense streams and their CRC,
// escapes to scratch, info words and side sizes; sz4_scan; xw_place: side pieces, offsets, CRCs), decode in one
// (xw_decode).
// Pipelines are specialised per format, dtype, chunk size and workgroup size. Each stream of a tensor is one
// binding, so a tensor is refused (ErrTooLarge) when a stream exceeds the device's binding range.

func init() {
	for _, id := range []uint8{layout.FormatXW2, layout.FormatXW3, layout.FormatXW4} {
		register(id, xwCodec{})
	}
}

type xwCodec struct{}

// xwOffsets is where an exponent-window body keeps its byte stream, chunk table and side section (the plane
// stream starts it): the format's own body, or auto's scratch body for the candidate.
type xwOffsets struct{ lows, table, side uint64 }

// xwPlan is where the kernels of one tensor read and write.
type xwPlan struct {
	t                               *tensor
	x                               layout.XW
	size                            uint64 // bytes per value
	vals, planes, lows, table, side view
	sideLen                         uint64 // decode: bytes in the side section
	scratch                         loc    // encode: a slot of escape or raw-exponent words per chunk
	work, status                    loc
}

func xwOf(t *tensor) (layout.XW, bool) { return layout.NewXW(t.format, t.dt, t.n, t.shift) }

func (xwCodec) check(b *Backend, t *tensor) error {
	x, ok := xwOf(t)
	switch {
	case !ok:
		return invalid("%s does not code %v", codec.FormatName(t.format), t.dt)
	case t.shift < layout.MinChunkShift || t.shift > layout.MaxChunkShift:
		return invalid("chunk shift %d outside [%d, %d]", t.shift, layout.MinChunkShift, layout.MaxChunkShift)
	case t.n > layout.MaxCodedValues:
		return &codec.Error{Class: codec.ErrTooLarge, Chunk: -1, Detail: fmt.Sprintf("%d values", t.n)}
	}
	for _, sz := range []uint64{t.valueBytes(), x.PlaneBytes(), x.LowBytes(), x.MaxBodySize() - x.SideOffset(),
		layout.ChunkEntrySize * x.Chunks(), x.Chunks() * x.RawSide(x.ChunkValues())} {
		if sz > b.slabMax {
			return errTooBig(sz, b.slabMax)
		}
	}
	return nil
}

func (xwCodec) shape(t *tensor) shape {
	x, _ := xwOf(t)
	return sideShape(x.MinBodySize(), x.MaxBodySize(), x.SideOffset(), x.Chunks())
}

func (xwCodec) deviceBytes(b *Backend, t *tensor, encode bool) uint64 {
	x, _ := xwOf(t)
	total := alignRegion(layout.Align4(t.valueBytes())) + alignRegion(x.PlaneBytes()) + alignRegion(x.LowBytes()) +
		alignRegion(layout.ChunkEntrySize*x.Chunks()) + alignRegion(x.MaxBodySize()-x.SideOffset()) + 4*regionAlign
	if encode {
		total += alignRegion(x.Chunks() * x.RawSide(x.ChunkValues()))
	}
	return total
}

// planXW lays out an exponent-window tensor whose body regions start at o (side section of sideLen bytes).
func planXW(t *tensor, r *regions, o xwOffsets, sideLen uint64) *xwPlan {
	x, _ := xwOf(t)
	p := &xwPlan{t: t, x: x, size: uint64(t.dt.Size()), sideLen: sideLen, work: r.work.dev, status: r.status,
		vals: r.valsAt(0, layout.Align4(t.valueBytes())), planes: r.bodyAt(0, x.PlaneBytes()),
		lows: r.bodyAt(o.lows, x.LowBytes()), table: r.bodyAt(o.table, layout.ChunkEntrySize*x.Chunks()),
		side: r.bodyAt(o.side, sideLen)}
	if r.encode {
		// Scratch needs no clearing: each chunk zeroes the words it ORs escapes into.
		p.scratch = r.scratch(max(x.Chunks()*x.RawSide(x.ChunkValues()), 4))
	}
	return p
}

func xwBodyOffsets(x layout.XW) xwOffsets {
	return xwOffsets{lows: x.PlaneBytes(), table: x.TableOffset(), side: x.SideOffset()}
}

func (xwCodec) encode(b *Backend, t *tensor, r *regions) (*plan, error) {
	x, _ := xwOf(t)
	return planXW(t, r, xwBodyOffsets(x), x.MaxBodySize()-x.SideOffset()).encodePlan(), nil
}

func (p *xwPlan) encodePlan() *plan {
	return &plan{passes: []func(*recorder) error{p.recordEncode, scanPass(p.work, p.nb()), p.recordPlace}}
}

func (xwCodec) decode(b *Backend, t *tensor, r *regions) (*plan, error) {
	x, _ := xwOf(t)
	p := planXW(t, r, xwBodyOffsets(x), t.bodyLen-x.SideOffset())
	return &plan{passes: []func(*recorder) error{p.recordDecode}}, nil
}

func (p *xwPlan) nb() uint64 { return (p.x.Chunks() + 63) / 64 }

// xwCRC are the CRC-32C constants of geometry x's dense pieces (shaders.XWCRC): their lengths in a full and in the
// last chunk.
func xwCRC(x layout.XW) shaders.XWCRC {
	C := x.Chunks()
	pFull := 4 * uint64(x.Planes()) * x.ChunkValues() / layout.XWGroup
	lFull := uint64(x.KB()) * x.ChunkValues()
	pLast, lLast := x.PlaneBytes()-(C-1)*pFull, x.LowBytes()-(C-1)*lFull
	return shaders.XWCRC{InvPlaneLast: xInvPow(8 * (pFull - pLast)), InvLowLast: xInvPow(8 * (lFull - lLast)),
		ShLowFull: crc32c.XPow(8 * lFull), ShLowLast: crc32c.XPow(8 * lLast),
		ShDenseFull: crc32c.XPow(8 * (pFull + lFull)), ShDenseLast: crc32c.XPow(8 * (pLast + lLast))}
}

// xwConsts are the CRC table buffers of kernel kk over geometry x: those built for workgroups of P·WG (the plane
// piece: one round of groups is P·WG words), of LW·WG/2 (the byte piece; the plane one again when there is none)
// and of 32 (the header and side piece, over 32 invocations).
func (r *recorder) xwConsts(kk kernelKey, x layout.XW) (planes, lows, head loc, err error) {
	wg, bits := kk.wg(), r.b.keyCRCBits(kk)
	if head, err = r.b.constsBits(r.ctx, bits, 32, x.Shift); err != nil {
		return
	}
	if planes, err = r.b.constsBits(r.ctx, bits, uint32(x.Planes())*wg, x.Shift); err != nil || x.KB() == 0 {
		return planes, planes, head, err
	}
	lows, err = r.b.constsBits(r.ctx, bits, 4*uint32(x.KB())*wg, x.Shift)
	return planes, lows, head, err
}

// xwKey is the key of an exponent-window kernel for geometry x over values of size bytes, in workgroups of the
// backend's size (at most a chunk's groups).
func (b *Backend) xwKey(k *shaders.Kernel, x layout.XW, size uint64) kernelKey {
	return b.xwKeyWG(k, x, size, uint32(b.t.WorkGroup))
}

func (b *Backend) xwKeyWG(k *shaders.Kernel, x layout.XW, size uint64, wg uint32) kernelKey {
	wg = min(wg, uint32(1)<<x.Shift/layout.XWGroup)
	bits := b.crcBits(k.Name)
	if k == kXWDecode || k == kXWPieces {
		bits = b.xwDecodeBits(x, wg, bits)
	}
	return keyOf(k, wg).with("SHIFT", uint32(x.Shift)).
		with("E", uint32(x.E)).with("M", uint32(x.M)).with("W", uint32(x.W)).with("SIZE", uint32(size)).
		withIf("CRC_BITS", uint32(bits))
}

// xwDecodeShared is the shared memory in bytes of the exponent-window decoders (shaders/xw_decode.glsl) for geometry
// x, workgroups of wg and CRC tables of bits-bit fields: the histogram's columns and bin sums, one zero-code prefix
// per group of a chunk, the workgroup's sums, the three dense shift tables and the header's, two XOR words.
func xwDecodeShared(x layout.XW, wg uint32, bits int) uint32 {
	nbins := uint32(1) << x.E
	hcols := uint32(32) // lane-private histogram columns where they fit
	if nbins > 64 {
		hcols = 8
	}
	groups := uint32(1) << x.Shift / layout.XWGroup
	return 4 * (nbins*hcols + nbins + groups + wg + 4*crcTableWords(bits) + 2)
}

// xwDecodeBits is the decoders' CRC table width: bits, or the widest narrower one whose tables let the decoder fit
// the device's shared memory (wide exponents at large chunks exceed the 32 KiB some devices give a workgroup).
func (b *Backend) xwDecodeBits(x layout.XW, wg uint32, bits int) int {
	limit := b.info.Limits.MaxComputeSharedMemorySize
	for bits > 4 && xwDecodeShared(x, wg, bits) > limit {
		bits--
	}
	return bits
}

// xwEncodeWG is xw_encode's workgroup size: as wide as the device allows (up to 1024, or Tune.XWEncodeWG), so
// that a chunk's groups are few per invocation and their value words stay in registers between the window choice
// and the coding.
func (b *Backend) xwEncodeWG() uint32 { return b.knobWG(b.t.XWEncodeWG, 1024) }

// xwDecodeWG is the decoders' workgroup size: Tune.XWDecodeWG, else the chunk kernels'.
func (b *Backend) xwDecodeWG() uint32 { return b.knobWG(b.t.XWDecodeWG, uint32(b.t.WorkGroup)) }

// recordEncode records pass 1 (xw_encode): dense streams and their linear CRC, escapes to scratch, info words and
// side sizes.
func (p *xwPlan) recordEncode(rec *recorder) error {
	x, C := p.x, p.x.Chunks()
	kk := rec.b.xwKeyWG(kXWEncode, x, p.size, rec.b.xwEncodeWG())
	cp, cl, _, err := rec.xwConsts(kk, x)
	if err != nil {
		return err
	}
	pc := shaders.XWEncodePush{Chunks: uint32(C), LastLen: uint32(x.ChunkLen(C - 1)),
		SrcWords: uint32(layout.Align4(x.N*p.size) / 4), LowWords: uint32(x.LowBytes() / 4), SrcBase: p.vals.words(),
		PlaneBase: p.planes.words(), LowBase: p.lows.words(), TableBase: p.table.words(),
		Checksums: b2u(p.t.checksums), XWCRC: xwCRC(x)}
	return rec.dispatch(kk, shaders.PushBytes(&pc), rec.b.gridOf(C), p.vals.l, p.planes.l, p.lows.l, p.table.l,
		p.scratch, p.work, cp, cl)
}

// recordPlace records pass 3 (xw_place), after sz4_scan over work: side pieces, offsets and CRCs.
func (p *xwPlan) recordPlace(rec *recorder) error {
	x, C := p.x, p.x.Chunks()
	crc := xwCRC(x)
	pc := shaders.XWPlacePush{Chunks: uint32(C), LastLen: uint32(x.ChunkLen(C - 1)), NB: uint32(p.nb()),
		Checksums: b2u(p.t.checksums), TableBase: p.table.words(), SideBase: p.side.words(),
		ShDenseFull: crc.ShDenseFull, ShDenseLast: crc.ShDenseLast}
	kk := rec.b.xwKey(kXWPlace, x, p.size)
	_, _, ch, err := rec.xwConsts(kk, x)
	if err != nil {
		return err
	}
	return rec.dispatch(kk, shaders.PushBytes(&pc), rec.b.gridOf(C), p.table.l, p.scratch, p.side.l, p.work, ch)
}

// recordDecode records the one-pass decode (xw_decode); verdicts go to status.
func (p *xwPlan) recordDecode(rec *recorder) error {
	x, C := p.x, p.x.Chunks()
	kk := rec.b.xwKeyWG(kXWDecode, x, p.size, rec.b.xwDecodeWG())
	cp, cl, ch, err := rec.xwConsts(kk, x)
	if err != nil {
		return err
	}
	pc := shaders.XWDecodePush{Chunks: uint32(C), LastLen: uint32(x.ChunkLen(C - 1)), Checksums: b2u(p.t.checksums),
		SideLen: uint32(p.sideLen), PlaneWords: uint32(x.PlaneBytes() / 4), LowWords: uint32(x.LowBytes() / 4),
		DstWords: uint32(layout.Align4(x.N*p.size) / 4), PlaneBase: p.planes.words(), LowBase: p.lows.words(),
		TableBase: p.table.words(), SideBase: p.side.words(), DstBase: p.vals.words(), XWCRC: xwCRC(x)}
	return rec.dispatch(kk, shaders.PushBytes(&pc), rec.b.gridOf(C), p.planes.l, p.lows.l, p.table.l, p.side.l,
		p.vals.l, p.status, cp, cl, ch)
}

// candLayout: an exponent-window candidate's scratch body has its planes, byte stream (absent for F8), table and
// side section at binding-aligned offsets.
func (xwCodec) candLayout(t *tensor) candLayout {
	x, _ := xwOf(t)
	c, cv := x.Chunks(), x.ChunkValues()
	pf := 4 * uint64(x.Planes()) * cv / layout.XWGroup
	kb := uint64(x.KB())
	lows := alignRegion(x.PlaneBytes())
	l := candLayout{id: t.format, streams: [3]uint64{0, lows, ^uint64(0)}, full: [3]uint64{pf, kb * cv, 0},
		last: [3]uint64{x.PlaneBytes() - (c-1)*pf, x.LowBytes() - (c-1)*kb*cv, 0}}
	if kb == 0 {
		l.streams[1], l.full[1], l.last[1] = ^uint64(0), 0, 0
	}
	l.table = lows + alignRegion(max(x.LowBytes(), 4))
	l.side = l.table + alignRegion(layout.ChunkEntrySize*c)
	l.max = l.side + max(x.MaxBodySize()-x.SideOffset(), 4)
	return l
}

func (xwCodec) candEncode(b *Backend, t *tensor, r *regions, l candLayout) *plan {
	x, _ := xwOf(t)
	return planXW(t, r, xwOffsets{lows: alignRegion(x.PlaneBytes()), table: l.table, side: l.side},
		l.max-l.side).encodePlan()
}

// candDecode records one dispatch over the whole tensor, as the format's own decoder (its output is one binding).
func (xwCodec) candDecode(rec *recorder, t *tensor, a *autoPieces) error {
	x, _ := xwOf(t)
	C, dv, size := x.Chunks(), a.segs[0].dst, uint64(t.dt.Size())
	kk := rec.b.xwKeyWG(kXWPieces, x, size, rec.b.xwDecodeWG())
	cp, cl, ch, err := rec.xwConsts(kk, x)
	if err != nil {
		return err
	}
	pc := shaders.XWDecodePiecesPush{Chunks: uint32(C), LastLen: uint32(x.ChunkLen(C - 1)), Checksums: b2u(a.checksums),
		PiecesLen: a.piecesLen(C), DstWords: uint32(layout.Align4(t.valueBytes()) / 4), AutoBase: a.autoBase(),
		PieceBase: a.pieceBase(C), Cands: a.mask, Validate: b2u(a.validate), Self: uint32(t.format),
		DstBase: dv.words(), XWCRC: xwCRC(x)}
	return rec.dispatch(kk, shaders.PushBytes(&pc), rec.b.gridOf(C), a.body.l, a.body.l, a.body.l, a.body.l, dv.l,
		a.status, cp, cl, ch)
}
