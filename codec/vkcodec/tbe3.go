package vkcodec

import (
	"context"
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/shaders"
	"github.com/vkzip/vkzip/vk"
)

// TBE-3 on the Vulkan backend (docs/FORMAT.md §12): encode in three passes (tbe3_encode: window, dense pieces and
// their partial CRC; sz4_scan: prefix sum of side sizes; tbe3_place: side pieces and CRCs), decode in one
// (tbe3_decode). Host-memory jobs here (the session, staging, batching and status helpers are SplitZip-4's);
// device-resident operations in ops_tbe3.go record the same passes over a caller's buffers.

// tbe3Seg is a run of chunks whose per-chunk regions fit one binding each.
type tbe3Seg struct {
	first, count         uint64
	src, planes, sm, dst staged // host path: the staging regions
	// What the kernels bind: views of the staging regions, or of a caller's buffers (values at vVals: the source
	// of an encode, the destination of a decode).
	vVals, vPlanes, vSM view
}

// tbe3Plan is the device layout of one TBE-3 body.
type tbe3Plan struct {
	g             layout.TBE3
	wg            uint32
	segs          []tbe3Seg
	table         staged
	side          staged
	vTable, vSide view
	work          staged // encode: block sums, prefixes, side total (sz4_scan's layout)
	status        staged // decode: status words (statusErr's layout)
	nb            uint64 // 64-chunk blocks
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

// tbe3WG is the workgroup size of the TBE-3 kernels: each thread handles whole 32-value units, so it must divide
// the n/32 units of a chunk.
func (b *Backend) tbe3WG(shift uint) uint32 { return min(uint32(b.t.WorkGroup), uint32(1)<<shift/32) }

// push-constant sizes of the TBE-3 kernels, in bytes
const (
	pushTBE3Encode = 4 * 9
	pushTBE3Place  = 4 * 10
	pushTBE3Decode = 4 * 12
)

// tbe3Pipeline returns (and caches with the other pipelines) a TBE-3 kernel for workgroups of wg threads and
// chunks of 2^shift values.
func (b *Backend) tbe3Pipeline(name string, wg uint32, shift uint) (*vk.Pipeline, error) {
	key := pipeKey{name, wg, uint32(shift)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.pipes[key]; p != nil {
		return p, nil
	}
	code, err := shaders.SPIRV(name)
	if err != nil {
		return nil, err
	}
	desc := vk.PipelineDesc{Name: name, SPIRV: code, CaptureStatistics: true, Spec: []vk.SpecConst{
		{ID: 0, Value: wg}, {ID: 1, Value: uint32(shift)}, {ID: 2, Value: uint32(b.t.Repl)},
		{ID: crcBitsSpecID, Value: uint32(b.crcBits(name))}}}
	switch name {
	case "tbe3_encode":
		desc.Bindings, desc.PushConstantSize = 6, pushTBE3Encode
	case "tbe3_place":
		desc.Bindings, desc.PushConstantSize = 6, pushTBE3Place
	case "tbe3_decode":
		desc.Bindings, desc.PushConstantSize = 7, pushTBE3Decode
	default:
		return nil, fmt.Errorf("vkcodec: no TBE-3 kernel %q", name)
	}
	p, err := b.dev.NewPipeline(desc)
	if err != nil {
		return nil, err
	}
	b.pipes[key] = p
	return p, nil
}

// tbe3Kernel is a TBE-3 pipeline for a plan and the CRC constants it binds (the SplitZip-4 constants: the
// kernels use their M^4, M^(4WG), M^(8WG) tables, KC and the x^(±8·2^k) powers).
func (b *Backend) tbe3Kernel(ctx context.Context, name string, p *tbe3Plan) (*vk.Pipeline, loc, error) {
	pipe, err := b.tbe3Pipeline(name, p.wg, p.g.Shift)
	if err != nil {
		return nil, loc{}, err
	}
	consts, err := b.constsFor(ctx, name, p.wg, p.g.Shift)
	if err != nil {
		return nil, loc{}, err
	}
	return pipe, consts, nil
}

// checkTBE3 refuses tensors the kernels cannot take on this device.
func (b *Backend) checkTBE3(format uint8, n uint64, shift uint) error {
	if format != layout.FormatTBE3 {
		return &codec.Error{Class: codec.ErrUnsupported, Chunk: -1, Detail: fmt.Sprintf("vulkan TBE-3: format %d", format)}
	}
	if shift < layout.MinChunkShift || shift > layout.MaxChunkShift || n > layout.MaxCodedValues {
		return invalid("TBE-3 tensor of %d values in chunks of 2^%d", n, shift)
	}
	g := layout.TBE3{N: n, Shift: shift}
	if side := g.MaxBodySize() - g.SideOffset(); side > b.slabMax {
		return errTooBig(side, b.slabMax)
	}
	if t := layout.ChunkEntrySize * g.Chunks(); t > b.slabMax {
		return errTooBig(t, b.slabMax)
	}
	return nil
}

func (b *Backend) planTBE3(s *session, n uint64, shift uint, encode bool, sideLen uint64) (*tbe3Plan, error) {
	g := layout.TBE3{N: n, Shift: shift}
	p := &tbe3Plan{g: g, wg: b.tbe3WG(shift), nb: (g.Chunks() + 63) / 64}
	sz := layout.SZ4{N: n, Shift: shift} // same chunking: its value ranges are TBE-3's
	C := g.Chunks()
	per := b.segChunks(shift)
	var err error
	alloc := s.allocIn
	if encode {
		alloc = s.allocOut
	}
	for first := uint64(0); first < C; first += per {
		sg := tbe3Seg{first: first, count: min(per, C-first)}
		pl, ph := tbe3PlaneRange(g, sg.first, sg.count)
		sl, sh := tbe3SMRange(g, sg.first, sg.count)
		vl, vh := valueRange(sz, sg.first, sg.count)
		if encode {
			if sg.src, err = s.allocIn(b, 2*(vh-vl)); err != nil {
				return nil, err
			}
			sg.vVals = viewOf(sg.src.dev)
		} else if sg.dst, err = s.allocOut(b, 2*(vh-vl)); err != nil {
			return nil, err
		} else {
			sg.vVals = viewOf(sg.dst.dev)
		}
		if sg.planes, err = alloc(b, ph-pl); err != nil {
			return nil, err
		}
		if sg.sm, err = alloc(b, sh-sl); err != nil {
			return nil, err
		}
		sg.vPlanes, sg.vSM = viewOf(sg.planes.dev), viewOf(sg.sm.dev)
		p.segs = append(p.segs, sg)
	}
	if p.table, err = alloc(b, layout.ChunkEntrySize*C); err != nil {
		return nil, err
	}
	if p.side, err = alloc(b, max(sideLen, 4)); err != nil {
		return nil, err
	}
	p.vTable, p.vSide = viewOf(p.table.dev), viewOf(p.side.dev)
	if encode {
		p.work, err = s.allocOut(b, 4*(2*p.nb+1))
	} else {
		p.status, err = s.allocOut(b, 32)
	}
	return p, err
}

// EncodeTBE3 encodes TBE-3 bodies from host memory, one queue submission per batch that fits the memory budget.
func (b *Backend) EncodeTBE3(ctx context.Context, jobs []codec.EncodeJob) error {
	for i := range jobs {
		j := &jobs[i]
		if err := b.checkTBE3(j.Format, j.N, j.Shift); err != nil {
			return err
		}
		g := layout.TBE3{N: j.N, Shift: j.Shift}
		if j.N == 0 || uint64(len(j.Src)) < 2*j.N || uint64(cap(j.Dst)) < g.MaxBodySize() {
			return invalid("TBE-3 encode: empty tensor, or source or destination too small")
		}
	}
	// SplitZip-4's device-memory estimate bounds TBE-3's: the same staged values, dense streams of 11/8 against
	// 12/8 bytes per value, and side sections of at most 5/8 against 4/8 plus 4/8 of scratch.
	return b.inBatches(ctx, len(jobs), func(i int) (uint64, uint64) {
		return jobs[i].N, planBytes(layout.SZ4{N: jobs[i].N, Shift: jobs[i].Shift}, b.segChunks(jobs[i].Shift), true)
	},
		func(from, to int) error { return b.encodeTBE3Batch(ctx, jobs[from:to]) })
}

func (b *Backend) encodeTBE3Batch(ctx context.Context, jobs []codec.EncodeJob) error {
	s, err := b.getSession()
	if err != nil {
		return err
	}
	defer b.putSession(s)
	s.reset()
	plans := make([]*tbe3Plan, len(jobs))
	for i := range jobs {
		g := layout.TBE3{N: jobs[i].N, Shift: jobs[i].Shift}
		if plans[i], err = b.planTBE3(s, g.N, g.Shift, true, g.MaxBodySize()-g.SideOffset()); err != nil {
			return err
		}
		for _, sg := range plans[i].segs {
			vl, vh := valueRange(layout.SZ4{N: g.N, Shift: g.Shift}, sg.first, sg.count)
			stageValues(sg.src.host.bytes(), jobs[i].Src, vl, vh)
		}
	}
	cmd := s.cmd
	if err := cmd.Begin(); err != nil {
		return err
	}
	for _, p := range plans {
		cmd.FillBuffer(p.work.dev.buf, p.work.dev.off, p.work.dev.size, 0)
		for _, sg := range p.segs {
			b.copyUp(cmd, sg.src)
		}
	}
	if err := b.recordEncodePasses(s, len(plans),
		func(i int) error { return b.recordTBE3Encode(ctx, s, &jobs[i], plans[i]) },
		b.scanPass(s, func(i int) *tensorPlan { return &tensorPlan{work: plans[i].work, nb: plans[i].nb} }),
		func(i int) error { return b.recordTBE3Place(ctx, s, &jobs[i], plans[i]) }); err != nil {
		return err
	}
	for _, p := range plans {
		for _, sg := range p.segs {
			b.copyDown(cmd, sg.planes)
			b.copyDown(cmd, sg.sm)
		}
		b.copyDownTable(cmd, p.table, p.side, p.work)
	}
	cmd.BarrierToHost()
	if err := b.run(ctx, cmd); err != nil {
		return err
	}
	for i, p := range plans {
		j := &jobs[i]
		out := j.Dst[:cap(j.Dst)]
		for _, sg := range p.segs {
			pl, ph := tbe3PlaneRange(p.g, sg.first, sg.count)
			copy(out[pl:ph], sg.planes.host.bytes())
			sl, sh := tbe3SMRange(p.g, sg.first, sg.count)
			copy(out[p.g.PlaneBytes()+sl:p.g.PlaneBytes()+sh], sg.sm.host.bytes())
		}
		if err := placeTable(j, out, p.g.TableOffset(), p.g.SideOffset(), p.table, p.side, p.work, p.nb,
			p.g.MaxBodySize()-p.g.SideOffset(), "vulkan TBE-3 encode"); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) recordTBE3Encode(ctx context.Context, s *session, j *codec.EncodeJob, p *tbe3Plan) error {
	pipe, cs, err := b.tbe3Kernel(ctx, "tbe3_encode", p)
	if err != nil {
		return err
	}
	C := p.g.Chunks()
	for _, sg := range p.segs {
		bd, err := s.bind(b, pipe, sg.vVals.l, sg.vPlanes.l, sg.vSM.l, p.vTable.l, cs, p.work.dev)
		if err != nil {
			return err
		}
		var pw pushWriter
		pw.u32(uint32(C), uint32(sg.first), uint32(sg.count), uint32(p.g.ChunkLen(C-1)), b2u(j.Checksums),
			uint32(sg.vVals.base/16), uint32(sg.vPlanes.base/4), uint32(sg.vSM.base/4), uint32(p.vTable.base/4))
		s.cmd.Dispatch(pipe, bd, pw.b, uint32(min(sg.count, uint64(b.groups))), 1, 1)
	}
	return nil
}

func (b *Backend) recordTBE3Place(ctx context.Context, s *session, j *codec.EncodeJob, p *tbe3Plan) error {
	pipe, cs, err := b.tbe3Kernel(ctx, "tbe3_place", p)
	if err != nil {
		return err
	}
	C := p.g.Chunks()
	for _, sg := range p.segs {
		bd, err := s.bind(b, pipe, sg.vVals.l, sg.vPlanes.l, p.vTable.l, p.vSide.l, cs, p.work.dev)
		if err != nil {
			return err
		}
		var pw pushWriter
		pw.u32(uint32(C), uint32(sg.first), uint32(sg.count), uint32(p.g.ChunkLen(C-1)), uint32(p.nb),
			b2u(j.Checksums), uint32(sg.vVals.base/16), uint32(sg.vPlanes.base/4), uint32(p.vTable.base/4),
			uint32(p.vSide.base/4))
		s.cmd.Dispatch(pipe, bd, pw.b, uint32(min(sg.count, uint64(b.groups))), 1, 1)
	}
	return nil
}

// DecodeTBE3 decodes TBE-3 bodies. What needs no chunk data (sizes, the chunk table) is checked on the host first,
// as the reference does (the kernel checks the table again); per-job verdicts come back as status words.
func (b *Backend) DecodeTBE3(ctx context.Context, jobs []codec.DecodeJob) error {
	for i := range jobs {
		j := &jobs[i]
		j.Err = nil
		if err := b.checkTBE3(j.Format, j.N, j.Shift); err != nil {
			return err
		}
		if uint64(len(j.Dst)) != 2*j.N {
			return invalid("destination size")
		}
		if err := codec.CheckTBE3Body(j.Body, j.N, j.Shift); err != nil {
			j.Err = tensorErr(err, j.Name)
		}
	}
	return b.inBatches(ctx, len(jobs), func(i int) (uint64, uint64) {
		return jobs[i].N, planBytes(layout.SZ4{N: jobs[i].N, Shift: jobs[i].Shift}, b.segChunks(jobs[i].Shift), false)
	},
		func(from, to int) error { return b.decodeTBE3Batch(ctx, jobs[from:to]) })
}

func (b *Backend) decodeTBE3Batch(ctx context.Context, jobs []codec.DecodeJob) error {
	s, err := b.getSession()
	if err != nil {
		return err
	}
	defer b.putSession(s)
	s.reset()
	plans := make([]*tbe3Plan, len(jobs))
	for i := range jobs {
		j := &jobs[i]
		if j.Err != nil {
			continue
		}
		g := layout.TBE3{N: j.N, Shift: j.Shift}
		p, err := b.planTBE3(s, j.N, j.Shift, false, uint64(len(j.Body))-g.SideOffset())
		if err != nil {
			return err
		}
		plans[i] = p
		for _, sg := range p.segs {
			pl, ph := tbe3PlaneRange(g, sg.first, sg.count)
			copy(sg.planes.host.bytes(), j.Body[pl:ph])
			sl, sh := tbe3SMRange(g, sg.first, sg.count)
			copy(sg.sm.host.bytes(), j.Body[g.PlaneBytes()+sl:g.PlaneBytes()+sh])
		}
		stageTable(p.table, p.side, j.Body, g.TableOffset(), g.SideOffset())
	}
	cmd := s.cmd
	if err := cmd.Begin(); err != nil {
		return err
	}
	for _, p := range plans {
		if p == nil {
			continue
		}
		resetStatus(cmd, p.status.dev)
		for _, sg := range p.segs {
			b.copyUp(cmd, sg.planes)
			b.copyUp(cmd, sg.sm)
		}
		b.copyUpTable(cmd, p.table, p.side)
	}
	cmd.Barrier()
	for i, p := range plans {
		if p == nil {
			continue
		}
		sideLen := uint64(len(jobs[i].Body)) - p.g.SideOffset()
		if err := b.recordTBE3Decode(ctx, s, &jobs[i], p, uint32(sideLen)); err != nil {
			return err
		}
	}
	cmd.Barrier()
	for _, p := range plans {
		if p == nil {
			continue
		}
		for _, sg := range p.segs {
			b.copyDown(cmd, sg.dst)
		}
		b.copyDown(cmd, p.status)
	}
	cmd.BarrierToHost()
	if err := b.run(ctx, cmd); err != nil {
		return err
	}
	for i, p := range plans {
		if p == nil {
			continue
		}
		j := &jobs[i]
		for _, sg := range p.segs {
			vl, vh := valueRange(layout.SZ4{N: p.g.N, Shift: p.g.Shift}, sg.first, sg.count)
			copy(j.Dst[2*vl:2*vh], sg.dst.host.bytes())
		}
		j.Err = statusErr(p.status.host.bytes(), j.Name)
	}
	return nil
}

func (b *Backend) recordTBE3Decode(ctx context.Context, s *session, j *codec.DecodeJob, p *tbe3Plan, sideLen uint32) error {
	pipe, cs, err := b.tbe3Kernel(ctx, "tbe3_decode", p)
	if err != nil {
		return err
	}
	C := p.g.Chunks()
	for _, sg := range p.segs {
		bd, err := s.bind(b, pipe, sg.vPlanes.l, sg.vSM.l, p.vTable.l, p.vSide.l, sg.vVals.l, cs, p.status.dev)
		if err != nil {
			return err
		}
		var pw pushWriter
		pw.u32(uint32(C), uint32(sg.first), uint32(sg.count), uint32(p.g.ChunkLen(C-1)), b2u(j.Checksums), sideLen,
			0, uint32(sg.vPlanes.base/4), uint32(sg.vSM.base/4), uint32(p.vTable.base/4), uint32(p.vSide.base/4),
			uint32(sg.vVals.base/16))
		s.cmd.Dispatch(pipe, bd, pw.b, uint32(min(sg.count, uint64(b.groups))), 1, 1)
	}
	return nil
}
