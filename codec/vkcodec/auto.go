package vkcodec

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/vk"
)

// auto on Vulkan (docs/FORMAT.md §11).
//
// Encode: every candidate encodes the whole tensor into a scratch body with its own kernels; auto_pick, one
// dispatch per candidate in id order, sizes each chunk's one-chunk body and keeps the smallest; sz4_scan turns the
// sizes into offsets; auto_gather, one dispatch per candidate, copies the pieces of the chunks that chose it out of
// its body into place. One submission.
//
// Decode: one pass. Each candidate's decoder, built over pieces (sz4_decode_pieces, zf12_decode_pieces,
// tbe3_decode_pieces for BF16; xw_decode_pieces, specialised per format and dtype, for F8_E5M2, F8_E4M3, F16 and
// F32), takes the chunks whose table entry names its format and decodes them (the choice of candidate is the
// encoder's: docs/FORMAT.md §11.2); the dispatches run together, each chunk decoded once, and a workgroup with none
// of its format's chunks leaves at once.
//
// The device-resident operations (PrepareEncodeTyped, PrepareDecodeTyped; PrepareEncodeFormat and
// PrepareDecodeFormat for BF16) run the same recorded passes over the caller's buffers.
//
// The candidate bodies and the auto body must each fit one storage-buffer binding; larger tensors are refused
// (ErrTooLarge) and stay with the CPU backend.

func init() {
	gpuFormats[layout.FormatAuto] = gpuFormat{encode: (*Backend).encodeAuto, decode: (*Backend).decodeAuto}
}

// push-constant sizes of the auto kernels, in bytes
const (
	pushPieces     = 4 * (4 + 18)
	pushTBE3Pieces = 4 * (4 + 12)
	pushPick       = 4 * (4 + 4)
	pushGather     = 4 * (12 + 5)
)

// autoKernels are the piece decoders of the candidates the kernels handle, by format id.
var autoKernels = map[uint8]string{layout.FormatSplitZip4: "sz4_decode_pieces", layout.FormatZF12: "zf12_decode_pieces",
	layout.FormatTBE3: "tbe3_decode_pieces", layout.FormatXW3: "xw_decode_pieces", layout.FormatXW2: "xw_decode_pieces",
	layout.FormatXW4: "xw_decode_pieces"}

func isXW(id uint8) bool { _, ok := layout.XWCodeBits(id); return ok }

// autoCands lists auto's candidates for d (by id) or says why this backend cannot run auto on d: a candidate
// without piece kernels here.
func autoCands(d layout.DType) ([]uint8, error) {
	var ids []uint8
	for _, f := range codec.AutoCandidates(d) {
		if _, ok := autoKernels[f.ID]; !ok {
			return nil, &codec.Error{Class: codec.ErrUnsupported, Chunk: -1,
				Detail: fmt.Sprintf("vulkan backend: auto candidate %s has no piece kernels", f.Name)}
		}
		ids = append(ids, f.ID)
	}
	if len(ids) == 0 {
		return nil, &codec.Error{Class: codec.ErrUnsupported, Chunk: -1,
			Detail: fmt.Sprintf("vulkan backend: auto on %v has no candidates", d)}
	}
	return ids, nil
}

// candLayout is where a candidate's scratch body keeps each chunk's piece: up to three dense streams with fixed
// per-chunk pieces, the chunk table and the side section. SplitZip-4 and zf12 scratch bodies are their formats'
// whole bodies; TBE-3's has its regions at binding-aligned offsets (its kernels address the SM stream in 16-byte
// units).
type candLayout struct {
	id               uint8
	streams          [3]uint64 // byte offsets; ^0 when absent
	full, last       [3]uint64 // piece bytes of a full chunk and of the last
	table, side, max uint64
}

func candidateLayout(id uint8, d layout.DType, n uint64, shift uint) candLayout {
	g := layout.SZ4{N: n, Shift: shift}
	c := g.Chunks()
	l := candLayout{id: id, streams: [3]uint64{0, g.CodeBytes(), ^uint64(0)}}
	l.full = [3]uint64{g.ChunkValues() / 2, g.ChunkValues(), 0}
	l.last = [3]uint64{g.CodeBytes() - (c-1)*g.ChunkValues()/2, g.LowBytes() - (c-1)*g.ChunkValues(), 0}
	switch id {
	case layout.FormatSplitZip4:
		l.table, l.side, l.max = g.TableOffset(), g.SideOffset(), g.MaxBodySize()
	case layout.FormatZF12:
		z := layout.ZF12{N: n, Shift: shift}
		l.streams[2] = z.HeaderOffset()
		l.full[2], l.last[2] = z.HeaderPiece(), z.HeaderPiece()
		l.table, l.side, l.max = z.TableOffset(), z.SideOffset(), z.MaxBodySize()
	case layout.FormatXW3, layout.FormatXW2, layout.FormatXW4:
		// Planes, byte stream (absent for F8), table and side section at binding-aligned offsets: the kernels
		// bind each region whole.
		x, _ := layout.NewXW(id, d, n, shift)
		pf := 4 * uint64(x.Planes()) * g.ChunkValues() / layout.XWGroup
		kb := uint64(x.KB())
		lows := alignRegion(x.PlaneBytes())
		l.streams = [3]uint64{0, lows, ^uint64(0)}
		l.full = [3]uint64{pf, kb * g.ChunkValues(), 0}
		l.last = [3]uint64{x.PlaneBytes() - (c-1)*pf, x.LowBytes() - (c-1)*kb*g.ChunkValues(), 0}
		if kb == 0 {
			l.streams[1], l.full[1], l.last[1] = ^uint64(0), 0, 0
		}
		l.table = lows + alignRegion(max(x.LowBytes(), 4))
		l.side = l.table + alignRegion(layout.ChunkEntrySize*c)
		l.max = l.side + max(x.MaxBodySize()-x.SideOffset(), 4)
	case layout.FormatTBE3:
		t := layout.TBE3{N: n, Shift: shift}
		al := alignRegion
		sm := al(t.PlaneBytes())
		l.streams = [3]uint64{0, sm, ^uint64(0)}
		l.full = [3]uint64{layout.TBE3PlanePiece(g.ChunkValues()), g.ChunkValues(), 0}
		l.last = [3]uint64{layout.TBE3PlanePiece(g.ChunkLen(c - 1)), t.SMBytes() - (c-1)*g.ChunkValues(), 0}
		l.table = sm + al(t.SMBytes())
		l.side = l.table + al(layout.ChunkEntrySize*c)
		l.max = l.side + max(t.MaxBodySize()-t.SideOffset(), 4)
	}
	return l
}

func alignRegion(x uint64) uint64 { return (x + regionAlign - 1) &^ (regionAlign - 1) }

func (l candLayout) dense(last bool) uint64 {
	p := l.full
	if last {
		p = l.last
	}
	return p[0] + p[1] + p[2]
}

func autoMax(n uint64, d layout.DType, shift uint) uint64 {
	f, _ := codec.LookupFormat(layout.FormatAuto)
	return f.MaxBodyOf(n, d, shift)
}

// checkAuto refuses tensors whose bodies do not fit one binding.
func (b *Backend) checkAuto(n uint64, d layout.DType, shift uint, ids []uint8) error {
	for _, id := range ids {
		if m := candidateLayout(id, d, n, shift).max; m > b.slabMax {
			return errTooBig(m, b.slabMax)
		}
	}
	if m := layout.Align4(n * uint64(d.Size())); m > b.slabMax {
		return errTooBig(m, b.slabMax)
	}
	if m := autoMax(n, d, shift); m > b.slabMax {
		return errTooBig(m, b.slabMax)
	}
	return nil
}

// autoTBE3Plan plans TBE-3's encode of a whole tensor into a candidate scratch body (candLayout's regions): the
// TBE-3 format's own recordings over views of it.
func (b *Backend) autoTBE3Plan(s *session, src vk.BufferRange, n uint64, shift uint, l candLayout,
	body loc) (*tbe3Plan, error) {
	g := layout.TBE3{N: n, Shift: shift}
	C := g.Chunks()
	p := &tbe3Plan{g: g, wg: b.tbe3WG(shift), nb: (C + 63) / 64}
	sz := layout.SZ4{N: n, Shift: shift}
	br := body.rng()
	for first, per := uint64(0), b.segChunks(shift); first < C; first += per {
		sg := tbe3Seg{first: first, count: min(per, C-first)}
		pl, ph := tbe3PlaneRange(g, sg.first, sg.count)
		sl, sh := tbe3SMRange(g, sg.first, sg.count)
		vl, vh := valueRange(sz, sg.first, sg.count)
		sg.vVals = bufView(src, 2*vl, layout.Align4(2*(vh-vl)))
		sg.vPlanes = bufView(br, pl, ph-pl)
		sg.vSM = bufView(br, l.streams[1]+sl, sh-sl)
		p.segs = append(p.segs, sg)
	}
	p.vTable = bufView(br, l.table, layout.ChunkEntrySize*C)
	p.vSide = bufView(br, l.side, l.max-l.side)
	var err error
	p.work, err = s.allocOut(b, 4*(2*p.nb+1))
	return p, err
}

// autoXWViews plans an exponent-window candidate's encode of the tensor at src into its scratch body
// (candLayout's regions, each starting a binding), for the format's own kernels (xw.go).
func (b *Backend) autoXWViews(s *session, src vk.BufferRange, id uint8, d layout.DType, n uint64, shift uint,
	l candLayout, body loc) (*xwViews, error) {
	x, _ := layout.NewXW(id, d, n, shift)
	size := uint64(d.Size())
	in := func(off, sz uint64) view { return viewOf(loc{buf: body.buf, off: body.off + off, size: sz}) }
	v := &xwViews{x: x, size: size, vals: bufView(src, 0, layout.Align4(n*size)), planes: in(0, x.PlaneBytes()),
		lows: in(alignRegion(x.PlaneBytes()), max(x.LowBytes(), 4)), table: in(l.table, layout.ChunkEntrySize*x.Chunks()),
		side: in(l.side, l.max-l.side)}
	return v, b.xwKernels().encodeWords(s, v)
}

// recordAutoEncode records the auto encode of n values of dtype d at src into dst (device ranges; dst has room
// for the largest auto body). The returned work words hold the pieces' total size at word 2·chunks.
func (b *Backend) recordAutoEncode(ctx context.Context, s *session, src vk.BufferRange, n uint64, d layout.DType,
	shift uint, cb *codec.Codebook, checksums bool, dst vk.BufferRange, ids []uint8) (staged, error) {
	C := layout.SZ4{N: n, Shift: shift}.Chunks()
	var none staged
	type cand struct {
		l    candLayout
		body loc
		sz4  *tensorPlan
		zf12 *zf12Plan
		tbe3 *tbe3Plan
		xw   *xwViews
		work staged
		nb   uint64
	}
	cs := make([]cand, len(ids))
	for k, id := range ids {
		c := &cs[k]
		c.l = candidateLayout(id, d, n, shift)
		var err error
		if c.body, err = s.dev.alloc(c.l.max); err != nil {
			return none, err
		}
		switch id {
		case layout.FormatSplitZip4:
			c.sz4, err = b.sz4EncodeViews(s, src, layout.SZ4{N: n, Shift: shift}, c.body.rng())
			if err == nil {
				c.work, c.nb = c.sz4.work, c.sz4.nb
			}
		case layout.FormatZF12:
			c.zf12, err = b.zf12EncodeViews(s, src, layout.ZF12{N: n, Shift: shift}, c.body.rng())
			if err == nil {
				c.work, c.nb = c.zf12.work, c.zf12.nb
			}
		case layout.FormatTBE3:
			c.tbe3, err = b.autoTBE3Plan(s, src, n, shift, c.l, c.body)
			if err == nil {
				c.work, c.nb = c.tbe3.work, c.tbe3.nb
			}
		case layout.FormatXW3, layout.FormatXW2, layout.FormatXW4:
			c.xw, err = b.autoXWViews(s, src, id, d, n, shift, c.l, c.body)
			if err == nil {
				c.work, c.nb = c.xw.work, c.xw.nb()
			}
		default:
			err = unsupportedFormat(id)
		}
		if err != nil {
			return none, err
		}
	}
	work, err := s.allocOut(b, 4*(3*C+1))
	if err != nil {
		return none, err
	}
	cmd := s.cmd
	for _, c := range cs {
		cmd.FillBuffer(c.work.dev.buf, c.work.dev.off, c.work.dev.size, 0) // tbe3_place clears its own side pieces
	}
	cmd.Barrier()
	job := codec.EncodeJob{Codebook: cb, Checksums: checksums}
	for _, c := range cs {
		switch {
		case c.sz4 != nil:
			err = b.recordEncodeA(ctx, s, &job, c.sz4)
		case c.zf12 != nil:
			err = b.recordZF12Encode(ctx, s, checksums, c.zf12)
		case c.xw != nil:
			err = b.xwKernels().recordEncode(s, c.xw)
		default:
			err = b.recordTBE3Encode(ctx, s, &job, c.tbe3)
		}
		if err != nil {
			return none, err
		}
	}
	cmd.Barrier()
	for _, c := range cs {
		if c.sz4 != nil {
			continue // SplitZip-4's placement sums the side sizes itself
		}
		if err := b.recordScan(s, &tensorPlan{work: c.work, nb: c.nb}); err != nil {
			return none, err
		}
	}
	cmd.Barrier()
	for _, c := range cs {
		switch {
		case c.sz4 != nil:
			err = b.recordPlace(ctx, s, &job, c.sz4)
		case c.zf12 != nil:
			err = b.recordZF12Place(ctx, s, checksums, c.zf12)
		case c.xw != nil:
			err = b.xwKernels().recordPlace(s, c.xw, checksums)
		default:
			err = b.recordTBE3Place(ctx, s, &job, c.tbe3)
		}
		if err != nil {
			return none, err
		}
	}
	cmd.Barrier()

	// Pick each chunk's smallest candidate (one dispatch per candidate, in id order), then offsets.
	wg := uint32(b.t.WorkGroup)
	pick, err := b.pipeline("auto_pick", wg, 0)
	if err != nil {
		return none, err
	}
	for k, c := range cs {
		bd, err := s.bind(b, pick, work.dev, c.body, c.work.dev)
		if err != nil {
			return none, err
		}
		var pw pushWriter
		pw.u32(uint32(c.l.table/4), uint32(2*c.nb), uint32(c.l.dense(false)), uint32(c.l.dense(true)))
		pw.u32(uint32(C), uint32(c.l.id), b2u(k == 0), 0)
		cmd.Dispatch(pick, bd, pw.b, uint32(min((C+uint64(wg)-1)/uint64(wg), uint64(b.groups))), 1, 1)
		cmd.Barrier()
	}
	if err := b.recordScan(s, &tensorPlan{work: work, nb: C}); err != nil {
		return none, err
	}
	cmd.Barrier()

	// Gather the pieces, each candidate those of its chunks.
	gather, err := b.pipeline("auto_gather", wg, 0)
	if err != nil {
		return none, err
	}
	consts, err := b.constsFor(ctx, "auto_gather", wg, shift)
	if err != nil {
		return none, err
	}
	out := bufView(dst, 0, autoMax(n, d, shift))
	w32 := func(x uint64) uint32 {
		if x == ^uint64(0) {
			return ^uint32(0)
		}
		return uint32(x / 4)
	}
	for _, c := range cs {
		bd, err := s.bind(b, gather, out.l, c.body, work.dev, consts)
		if err != nil {
			return none, err
		}
		l := c.l
		var pw pushWriter
		pw.u32(w32(l.streams[0]), w32(l.streams[1]), w32(l.streams[2]), uint32(l.table/4))
		pw.u32(uint32(l.full[0]), uint32(l.full[1]), uint32(l.full[2]), uint32(l.side/4))
		pw.u32(uint32(l.last[0]), uint32(l.last[1]), uint32(l.last[2]), 0)
		pw.u32(uint32(C), b2u(checksums), uint32(out.base/4), 0, uint32(l.id))
		cmd.Dispatch(gather, bd, pw.b, uint32(min(C, uint64(b.groups))), 1, 1)
	}
	cmd.Barrier()
	return work, nil
}

// recordAutoDecode records the one-pass decode of an auto body of bodyLen bytes at body into n values at dst; the
// kernels report into status (8 words, zero flags and ~0 chunks).
func (b *Backend) recordAutoDecode(ctx context.Context, s *session, body vk.BufferRange, bodyLen, n uint64,
	d layout.DType, shift uint, cb *codec.Codebook, checksums bool, dst vk.BufferRange, status loc, ids []uint8) error {
	g := layout.SZ4{N: n, Shift: shift}
	C := g.Chunks()
	tc := newTensorConsts(n, shift)
	wg := b.wgFor(shift, C)
	bv := bufView(body, 0, bodyLen)
	var mask uint32
	for _, id := range ids {
		mask |= 1 << id
	}
	var cbw codec.Codebook
	if cb != nil {
		cbw = *cb
	}
	per := b.segChunks(shift)
	for k, id := range ids {
		name := autoKernels[id]
		if isXW(id) {
			// One dispatch over the whole tensor, as the format's own decoder (its output is one binding).
			x, _ := layout.NewXW(id, d, n, shift)
			pipe, err := b.xwKernels().pipeline(name, x, d.Size())
			if err != nil {
				return err
			}
			dv := bufView(dst, 0, layout.Align4(n*uint64(d.Size())))
			bd, err := s.bind(b, pipe, bv.l, bv.l, bv.l, bv.l, dv.l, status)
			if err != nil {
				return err
			}
			var pw pushWriter
			pw.u32(uint32(C), uint32(g.ChunkLen(C-1)), b2u(checksums), uint32(bodyLen-layout.ChunkEntrySize*C),
				uint32(layout.Align4(n*uint64(d.Size()))/4), uint32(bv.base/4), uint32(bv.base/4+layout.ChunkEntryWords*C),
				mask, b2u(k == 0), uint32(id), uint32(dv.base/4))
			s.cmd.Dispatch(pipe, bd, pw.b, uint32(min(C, uint64(b.groups))), 1, 1)
			continue
		}
		kwg := wg
		if id == layout.FormatTBE3 {
			kwg = min(wg, b.tbe3WG(shift)) // whole 32-value units per thread
		}
		pipe, err := b.pipeline(name, kwg, shift)
		if err != nil {
			return err
		}
		cl, err := b.constsFor(ctx, name, kwg, shift)
		if err != nil {
			return err
		}
		for first := uint64(0); first < C; first += per {
			count := min(per, C-first)
			vl, vh := valueRange(g, first, count)
			dv := bufView(dst, 2*vl, layout.Align4(2*(vh-vl)))
			binds := []loc{bv.l, bv.l, bv.l, bv.l}
			if id == layout.FormatZF12 {
				binds = append(binds, bv.l)
			}
			binds = append(binds, dv.l, cl, status)
			bd, err := s.bind(b, pipe, binds...)
			if err != nil {
				return err
			}
			piecesLen := uint32(bodyLen - layout.ChunkEntrySize*C)
			autoBase, pieceBase := uint32(bv.base/4), uint32(bv.base/4+layout.ChunkEntryWords*C)
			var pw pushWriter
			pw.codebook(&cbw)
			if id == layout.FormatTBE3 {
				pw.u32(tc.chunks, uint32(first), uint32(count), tc.lastLen, b2u(checksums), piecesLen, 0, autoBase,
					pieceBase, mask, b2u(k == 0), uint32(dv.base/16))
			} else {
				pw.u32(tc.chunks, uint32(first), uint32(count), tc.lastLen, tc.invC, tc.invL, tc.shLowFull,
					tc.shLowLast, tc.kdFull, tc.kdLast, b2u(checksums), piecesLen, 0, autoBase, pieceBase, mask,
					b2u(k == 0), uint32(dv.base/16))
			}
			s.cmd.Dispatch(pipe, bd, pw.b, uint32(min(count, uint64(b.groups))), 1, 1)
		}
	}
	return nil
}

func (b *Backend) encodeAuto(ctx context.Context, jobs []codec.EncodeJob) error {
	for i := range jobs {
		j := &jobs[i]
		d := jobDType(j.DType)
		ids, err := autoCands(d)
		if err != nil {
			return err
		}
		if err := b.checkAuto(j.N, d, j.Shift, ids); err != nil {
			return err
		}
		if j.N == 0 || uint64(len(j.Src)) < uint64(d.Size())*j.N || uint64(cap(j.Dst)) < autoMax(j.N, d, j.Shift) ||
			(j.Codebook == nil && d == layout.DTypeBF16) {
			return invalid("auto: empty tensor, no codebook, or source or destination too small")
		}
		if err := b.encodeAutoOne(ctx, j, ids); err != nil {
			return err
		}
	}
	return nil
}

// encodeAutoOne encodes one job in one submission, staged through host memory.
func (b *Backend) encodeAutoOne(ctx context.Context, j *codec.EncodeJob, ids []uint8) error {
	s, err := b.getSession()
	if err != nil {
		return err
	}
	defer b.putSession(s)
	s.reset()
	d := jobDType(j.DType)
	nb := uint64(d.Size()) * j.N
	src, err := s.allocIn(b, layout.Align4(nb))
	if err != nil {
		return err
	}
	max := autoMax(j.N, d, j.Shift)
	out, err := s.allocOut(b, max)
	if err != nil {
		return err
	}
	h := src.host.bytes()
	copy(h, j.Src[:nb])
	clear(h[nb:])
	cmd := s.cmd
	if err := cmd.Begin(); err != nil {
		return err
	}
	b.copyUp(cmd, src)
	cmd.Barrier()
	work, err := b.recordAutoEncode(ctx, s, src.dev.rng(), j.N, d, j.Shift, j.Codebook, j.Checksums, out.dev.rng(), ids)
	if err != nil {
		return err
	}
	b.copyDown(cmd, out)
	b.copyDown(cmd, work)
	cmd.BarrierToHost()
	if err := b.run(ctx, cmd); err != nil {
		return err
	}
	C := layout.SZ4{N: j.N, Shift: j.Shift}.Chunks()
	size := layout.ChunkEntrySize*C + uint64(binary.LittleEndian.Uint32(work.host.bytes()[4*2*C:]))
	if size > max {
		return &codec.Error{Class: codec.ErrCorrupt, Chunk: -1, Detail: "vulkan encode: auto body size out of range"}
	}
	j.Out = j.Dst[:size]
	copy(j.Out, out.host.bytes())
	return nil
}

func (b *Backend) decodeAuto(ctx context.Context, jobs []codec.DecodeJob) error {
	for i := range jobs {
		j := &jobs[i]
		j.Err = nil
		d := jobDType(j.DType)
		ids, err := autoCands(d)
		if err != nil {
			return err
		}
		if err := b.checkAuto(j.N, d, j.Shift, ids); err != nil {
			return err
		}
		if j.N == 0 || uint64(len(j.Dst)) != uint64(d.Size())*j.N {
			return invalid("auto: empty tensor or destination size")
		}
		if err := codec.CheckAutoTable(j.Body, j.N, j.Shift, d); err != nil {
			j.Err = tensorErr(err, j.Name)
			continue
		}
		if err := b.decodeAutoOne(ctx, j, ids); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) decodeAutoOne(ctx context.Context, j *codec.DecodeJob, ids []uint8) error {
	s, err := b.getSession()
	if err != nil {
		return err
	}
	defer b.putSession(s)
	s.reset()
	body, err := s.allocIn(b, uint64(len(j.Body)))
	if err != nil {
		return err
	}
	d := jobDType(j.DType)
	dst, err := s.allocOut(b, layout.Align4(uint64(d.Size())*j.N))
	if err != nil {
		return err
	}
	status, err := s.allocOut(b, 32)
	if err != nil {
		return err
	}
	copy(body.host.bytes(), j.Body)
	cmd := s.cmd
	if err := cmd.Begin(); err != nil {
		return err
	}
	resetStatus(cmd, status.dev)
	b.copyUp(cmd, body)
	cmd.Barrier()
	if err := b.recordAutoDecode(ctx, s, body.dev.rng(), uint64(len(j.Body)), j.N, d, j.Shift, j.Codebook, j.Checksums,
		dst.dev.rng(), status.dev, ids); err != nil {
		return err
	}
	cmd.Barrier()
	b.copyDown(cmd, dst)
	b.copyDown(cmd, status)
	cmd.BarrierToHost()
	if err := b.run(ctx, cmd); err != nil {
		return err
	}
	copy(j.Dst, dst.host.bytes()[:len(j.Dst)])
	j.Err = statusErr(status.host.bytes(), j.Name)
	return nil
}

// autoOp checks what a prepared auto operation over n values of dt needs beyond the caller's ranges.
func (b *Backend) autoOp(dt layout.DType, n uint64, shift uint, cb *codec.Codebook) ([]uint8, error) {
	ids, err := autoCands(dt)
	if err != nil {
		return nil, err
	}
	if err := b.checkAuto(n, dt, shift, ids); err != nil {
		return nil, err
	}
	if n == 0 || (cb == nil && dt == layout.DTypeBF16) {
		return nil, invalid("auto: empty tensor or no codebook")
	}
	return ids, nil
}

func (b *Backend) prepareEncodeAuto(ctx context.Context, dt layout.DType, src vk.BufferRange, n uint64, shift uint,
	cb *codec.Codebook, checksums bool, dst vk.BufferRange) (*EncodeOp, error) {
	dt = jobDType(dt)
	ids, err := b.autoOp(dt, n, shift, cb)
	if err != nil {
		return nil, err
	}
	if err := checkEncodeRanges(src, n*uint64(dt.Size()), dst, autoMax(n, dt, shift)); err != nil {
		return nil, err
	}
	return b.newEncodeOp(func(op *EncodeOp) error {
		if err := op.beginTimed(2); err != nil {
			return err
		}
		cmd := op.s.cmd
		work, err := b.recordAutoEncode(ctx, op.s, src, n, dt, shift, cb, checksums, dst, ids)
		if err != nil {
			return err
		}
		cmd.Timestamp(op.qp, 1)
		b.copyDown(cmd, work)
		cmd.BarrierToHost()
		C := layout.SZ4{N: n, Shift: shift}.Chunks()
		op.total, op.nb, op.sideOff = work.host, C, layout.ChunkEntrySize*C
		return cmd.End()
	})
}

func (b *Backend) prepareDecodeAuto(ctx context.Context, dt layout.DType, body vk.BufferRange, bodyLen, n uint64,
	shift uint, cb *codec.Codebook, checksums bool, dst vk.BufferRange) (*DecodeOp, error) {
	dt = jobDType(dt)
	ids, err := b.autoOp(dt, n, shift, cb)
	if err != nil {
		return nil, err
	}
	f, _ := codec.LookupFormat(layout.FormatAuto)
	lo, hi := f.BodyBounds(n, dt, shift)
	if err := checkDecodeInto(body, bodyLen, lo, hi, dst, n*uint64(dt.Size())); err != nil {
		return nil, err
	}
	return b.newDecodeOp(func(op *DecodeOp) error {
		status, err := op.s.allocOut(b, 32)
		if err != nil {
			return err
		}
		return op.recordDecode(status, func() error {
			return b.recordAutoDecode(ctx, op.s, body, bodyLen, n, dt, shift, cb, checksums, dst, status.dev, ids)
		})
	})
}

// jobDType is a job's dtype, BF16 for the zero value (as package codec reads it).
func jobDType(d layout.DType) layout.DType {
	if d == layout.DTypeOpaque {
		return layout.DTypeBF16
	}
	return d
}
