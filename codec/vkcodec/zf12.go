package vkcodec

import (
	"context"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/vk"
)

// zf12 on Vulkan (docs/FORMAT.md §10): a three-pass encode (chunk kernel, prefix sum of side sizes with sz4_scan,
// placement) and a one-pass decode, with a header stream next to the code and low streams.

func init() {
	gpuFormats[layout.FormatZF12] = gpuFormat{encode: (*Backend).encodeZF12, decode: (*Backend).decodeZF12}
}

// push-constant sizes of the zf12 kernels, in bytes
const (
	pushZF12Encode = 4 * 14
	pushZF12Place  = 4 * 11
	pushZF12Decode = 4 * 19
)

// zsegment is a run of chunks of a zf12 tensor whose per-chunk regions fit one binding each.
type zsegment struct {
	first, count              uint64
	src, codes, lows, heads   staged
	scratch                   loc
	dst                       staged
	vSrc, vCodes, vLows, vDst view
	vHeads                    view
}

// zf12Plan is the device layout of one zf12 body.
type zf12Plan struct {
	g      layout.ZF12
	tc     tensorConsts
	wg     uint32
	segs   []zsegment
	table  staged
	side   staged
	vTable view
	vSide  view
	work   staged // encode: block sums, prefixes, side total
	status staged // decode: status words
	nb     uint64 // 64-chunk blocks
}

// sz4 gives the code/low stream arithmetic, which zf12 shares with SplitZip-4.
func zsz4(g layout.ZF12) layout.SZ4 { return layout.SZ4{N: g.N, Shift: g.Shift} }

func headRange(g layout.ZF12, first, count uint64) (lo, hi uint64) {
	return first * g.HeaderPiece(), (first + count) * g.HeaderPiece()
}

// checkZF12 refuses tensors the kernels cannot take on this device.
func (b *Backend) checkZF12(n uint64, shift uint) error {
	g := layout.ZF12{N: n, Shift: shift}
	if side := g.MaxBodySize() - g.SideOffset(); side > b.slabMax {
		return errTooBig(side, b.slabMax)
	}
	if t := layout.ChunkEntrySize * g.Chunks(); t > b.slabMax {
		return errTooBig(t, b.slabMax)
	}
	return nil
}

func (b *Backend) planZF12(s *session, n uint64, shift uint, encode bool) (*zf12Plan, error) {
	g := layout.ZF12{N: n, Shift: shift}
	p := &zf12Plan{g: g, tc: newTensorConsts(n, shift), wg: b.wgFor(shift, g.Chunks())}
	C := g.Chunks()
	p.nb = (C + 63) / 64
	per := b.segChunks(shift)
	sz := zsz4(g)
	var err error
	for first := uint64(0); first < C; first += per {
		sg := zsegment{first: first, count: min(per, C-first)}
		cl, ch := codeRange(sz, sg.first, sg.count)
		ll, lh := lowRange(sz, sg.first, sg.count)
		hl, hh := headRange(g, sg.first, sg.count)
		vl, vh := valueRange(sz, sg.first, sg.count)
		if encode {
			if sg.src, err = s.allocIn(b, 2*(vh-vl)); err != nil {
				return nil, err
			}
			if sg.codes, err = s.allocOut(b, ch-cl); err != nil {
				return nil, err
			}
			if sg.lows, err = s.allocOut(b, lh-ll); err != nil {
				return nil, err
			}
			if sg.heads, err = s.allocOut(b, hh-hl); err != nil {
				return nil, err
			}
			if sg.scratch, err = s.dev.alloc(sg.count << shift / 2); err != nil {
				return nil, err
			}
		} else {
			if sg.codes, err = s.allocIn(b, ch-cl); err != nil {
				return nil, err
			}
			if sg.lows, err = s.allocIn(b, lh-ll); err != nil {
				return nil, err
			}
			if sg.heads, err = s.allocIn(b, hh-hl); err != nil {
				return nil, err
			}
			if sg.dst, err = s.allocOut(b, 2*(vh-vl)); err != nil {
				return nil, err
			}
		}
		sg.vSrc, sg.vCodes, sg.vLows, sg.vDst = viewOf(sg.src.dev), viewOf(sg.codes.dev), viewOf(sg.lows.dev), viewOf(sg.dst.dev)
		sg.vHeads = viewOf(sg.heads.dev)
		p.segs = append(p.segs, sg)
	}
	tableBytes := layout.ChunkEntrySize * C
	sideMax := max(g.MaxBodySize()-g.SideOffset(), 4)
	if encode {
		if p.table, err = s.allocOut(b, tableBytes); err != nil {
			return nil, err
		}
		if p.side, err = s.allocOut(b, sideMax); err != nil {
			return nil, err
		}
		p.work, err = s.allocOut(b, 4*(2*p.nb+1))
	} else {
		if p.table, err = s.allocIn(b, tableBytes); err != nil {
			return nil, err
		}
		if p.side, err = s.allocIn(b, sideMax); err != nil {
			return nil, err
		}
		p.status, err = s.allocOut(b, 32)
	}
	p.vTable, p.vSide = viewOf(p.table.dev), viewOf(p.side.dev)
	return p, err
}

// zf12PlanBytes is the device memory planZF12 takes for one tensor.
func zf12PlanBytes(g layout.ZF12, per uint64, encode bool) uint64 {
	a := func(n uint64) uint64 { return (max((n+15)&^15, 16) + regionAlign - 1) &^ (regionAlign - 1) }
	sz := zsz4(g)
	var total uint64
	C := g.Chunks()
	for first := uint64(0); first < C; first += per {
		count := min(per, C-first)
		cl, ch := codeRange(sz, first, count)
		ll, lh := lowRange(sz, first, count)
		hl, hh := headRange(g, first, count)
		vl, vh := valueRange(sz, first, count)
		total += a(ch-cl) + a(lh-ll) + a(hh-hl) + a(2*(vh-vl))
		if encode {
			total += a(count << g.Shift / 2)
		}
	}
	total += a(layout.ChunkEntrySize*C) + a(max(g.MaxBodySize()-g.SideOffset(), 4))
	if encode {
		total += a(4 * (2*((C+63)/64) + 1))
	} else {
		total += a(32)
	}
	return total
}

func (b *Backend) encodeZF12(ctx context.Context, jobs []codec.EncodeJob) error {
	for i := range jobs {
		j := &jobs[i]
		if err := b.checkZF12(j.N, j.Shift); err != nil {
			return err
		}
		g := layout.ZF12{N: j.N, Shift: j.Shift}
		if j.N == 0 || uint64(len(j.Src)) < 2*j.N || uint64(cap(j.Dst)) < g.MaxBodySize() {
			return &codec.Error{Class: codec.ErrInvalidInput, Chunk: -1, Detail: "empty tensor, or source or destination too small"}
		}
	}
	return b.inBatches(ctx, len(jobs), func(i int) (uint64, uint64) {
		g := layout.ZF12{N: jobs[i].N, Shift: jobs[i].Shift}
		return jobs[i].N, zf12PlanBytes(g, b.segChunks(g.Shift), true)
	}, func(from, to int) error { return b.encodeZF12Batch(ctx, jobs[from:to]) })
}

func (b *Backend) encodeZF12Batch(ctx context.Context, jobs []codec.EncodeJob) error {
	s, err := b.getSession()
	if err != nil {
		return err
	}
	defer b.putSession(s)
	s.reset()
	plans := make([]*zf12Plan, len(jobs))
	for i := range jobs {
		if plans[i], err = b.planZF12(s, jobs[i].N, jobs[i].Shift, true); err != nil {
			return err
		}
		for _, sg := range plans[i].segs {
			vl, vh := valueRange(zsz4(plans[i].g), sg.first, sg.count)
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
		func(i int) error { return b.recordZF12Encode(ctx, s, jobs[i].Checksums, plans[i]) },
		b.scanPass(s, func(i int) *tensorPlan { return &tensorPlan{work: plans[i].work, nb: plans[i].nb} }),
		func(i int) error { return b.recordZF12Place(ctx, s, jobs[i].Checksums, plans[i]) }); err != nil {
		return err
	}
	for _, p := range plans {
		for _, sg := range p.segs {
			b.copyDown(cmd, sg.codes)
			b.copyDown(cmd, sg.lows)
			b.copyDown(cmd, sg.heads)
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
		sz := zsz4(p.g)
		for _, sg := range p.segs {
			cl, ch := codeRange(sz, sg.first, sg.count)
			copy(out[cl:ch], sg.codes.host.bytes())
			ll, lh := lowRange(sz, sg.first, sg.count)
			copy(out[p.g.CodeBytes()+ll:p.g.CodeBytes()+lh], sg.lows.host.bytes())
			hl, hh := headRange(p.g, sg.first, sg.count)
			copy(out[p.g.HeaderOffset()+hl:p.g.HeaderOffset()+hh], sg.heads.host.bytes())
		}
		if err := placeTable(j, out, p.g.TableOffset(), p.g.SideOffset(), p.table, p.side, p.work, p.nb,
			p.side.dev.size, "vulkan encode"); err != nil {
			return err
		}
	}
	return nil
}

// zf12Kernel is the pipeline of a zf12 chunk kernel for a plan, and the CRC constants it binds.
func (b *Backend) zf12Kernel(ctx context.Context, name string, p *zf12Plan) (*vkPipe, error) {
	pipe, err := b.pipeline(name, p.wg, p.g.Shift)
	if err != nil {
		return nil, err
	}
	consts, err := b.constsFor(ctx, name, p.wg, p.g.Shift)
	if err != nil {
		return nil, err
	}
	return &vkPipe{pipe, consts}, nil
}

func (b *Backend) recordZF12Encode(ctx context.Context, s *session, checksums bool, p *zf12Plan) error {
	k, err := b.zf12Kernel(ctx, "zf12_encode", p)
	if err != nil {
		return err
	}
	for _, sg := range p.segs {
		bd, err := s.bind(b, k.pipe, sg.vSrc.l, sg.vCodes.l, sg.vLows.l, sg.vHeads.l, p.vTable.l, sg.scratch, k.consts,
			p.work.dev)
		if err != nil {
			return err
		}
		var pw pushWriter
		pw.u32(p.tc.chunks, uint32(sg.first), uint32(sg.count), p.tc.lastLen, p.tc.invC, p.tc.invL, p.tc.shLowFull,
			p.tc.shLowLast, b2u(checksums), uint32(sg.vSrc.base/16), uint32(sg.vCodes.base/4), uint32(sg.vLows.base/4),
			uint32(sg.vHeads.base/4), uint32(p.vTable.base/4))
		s.cmd.Dispatch(k.pipe, bd, pw.b, uint32(min(sg.count, uint64(b.groups))), 1, 1)
	}
	return nil
}

func (b *Backend) recordZF12Place(ctx context.Context, s *session, checksums bool, p *zf12Plan) error {
	k, err := b.zf12Kernel(ctx, "zf12_place", p)
	if err != nil {
		return err
	}
	for _, sg := range p.segs {
		bd, err := s.bind(b, k.pipe, p.vTable.l, sg.scratch, p.vSide.l, k.consts, p.work.dev, sg.vHeads.l)
		if err != nil {
			return err
		}
		var pw pushWriter
		pw.u32(p.tc.chunks, uint32(sg.first), uint32(sg.count), p.tc.lastLen, uint32(p.nb), p.tc.kdFull,
			p.tc.kdLast, b2u(checksums), uint32(p.vTable.base/4), uint32(p.vSide.base/4), uint32(sg.vHeads.base/4))
		s.cmd.Dispatch(k.pipe, bd, pw.b, uint32(min(sg.count, uint64(b.groups))), 1, 1)
	}
	return nil
}

func (b *Backend) decodeZF12(ctx context.Context, jobs []codec.DecodeJob) error {
	for i := range jobs {
		j := &jobs[i]
		j.Err = nil
		if err := b.checkZF12(j.N, j.Shift); err != nil {
			return err
		}
		if j.N == 0 || uint64(len(j.Dst)) != 2*j.N {
			return &codec.Error{Class: codec.ErrInvalidInput, Chunk: -1, Detail: "empty tensor or destination size"}
		}
		if err := codec.CheckZF12Table(j.Body, j.N, j.Shift); err != nil {
			j.Err = tensorErr(err, j.Name)
		}
	}
	return b.inBatches(ctx, len(jobs), func(i int) (uint64, uint64) {
		g := layout.ZF12{N: jobs[i].N, Shift: jobs[i].Shift}
		return jobs[i].N, zf12PlanBytes(g, b.segChunks(g.Shift), false)
	}, func(from, to int) error { return b.decodeZF12Batch(ctx, jobs[from:to]) })
}

func (b *Backend) decodeZF12Batch(ctx context.Context, jobs []codec.DecodeJob) error {
	s, err := b.getSession()
	if err != nil {
		return err
	}
	defer b.putSession(s)
	s.reset()
	plans := make([]*zf12Plan, len(jobs))
	for i := range jobs {
		j := &jobs[i]
		if j.Err != nil {
			continue
		}
		p, err := b.planZF12(s, j.N, j.Shift, false)
		if err != nil {
			return err
		}
		plans[i] = p
		sz := zsz4(p.g)
		for _, sg := range p.segs {
			cl, ch := codeRange(sz, sg.first, sg.count)
			copy(sg.codes.host.bytes(), j.Body[cl:ch])
			ll, lh := lowRange(sz, sg.first, sg.count)
			copy(sg.lows.host.bytes(), j.Body[p.g.CodeBytes()+ll:p.g.CodeBytes()+lh])
			hl, hh := headRange(p.g, sg.first, sg.count)
			copy(sg.heads.host.bytes(), j.Body[p.g.HeaderOffset()+hl:p.g.HeaderOffset()+hh])
		}
		stageTable(p.table, p.side, j.Body, p.g.TableOffset(), p.g.SideOffset())
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
			b.copyUp(cmd, sg.codes)
			b.copyUp(cmd, sg.lows)
			b.copyUp(cmd, sg.heads)
		}
		b.copyUpTable(cmd, p.table, p.side)
	}
	cmd.Barrier()
	for i, p := range plans {
		if p == nil {
			continue
		}
		if err := b.recordZF12Decode(ctx, s, jobs[i].Checksums, p, uint32(len(jobs[i].Body)-int(p.g.SideOffset()))); err != nil {
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
			vl, vh := valueRange(zsz4(p.g), sg.first, sg.count)
			copy(j.Dst[2*vl:2*vh], sg.dst.host.bytes())
		}
		j.Err = statusErr(p.status.host.bytes(), j.Name)
	}
	return nil
}

func (b *Backend) recordZF12Decode(ctx context.Context, s *session, checksums bool, p *zf12Plan, sideLen uint32) error {
	k, err := b.zf12Kernel(ctx, "zf12_decode", p)
	if err != nil {
		return err
	}
	for _, sg := range p.segs {
		bd, err := s.bind(b, k.pipe, sg.vCodes.l, sg.vLows.l, sg.vHeads.l, p.vTable.l, p.vSide.l, sg.vDst.l, k.consts,
			p.status.dev)
		if err != nil {
			return err
		}
		var pw pushWriter
		pw.u32(p.tc.chunks, uint32(sg.first), uint32(sg.count), p.tc.lastLen, p.tc.invC, p.tc.invL, p.tc.shLowFull,
			p.tc.shLowLast, p.tc.kdFull, p.tc.kdLast, b2u(checksums), sideLen, 0, uint32(sg.vCodes.base/4),
			uint32(sg.vLows.base/4), uint32(sg.vHeads.base/4), uint32(p.vTable.base/4), uint32(p.vSide.base/4),
			uint32(sg.vDst.base/16))
		s.cmd.Dispatch(k.pipe, bd, pw.b, uint32(min(sg.count, uint64(b.groups))), 1, 1)
	}
	return nil
}

// zf12Shared is the shared memory of the zf12 kernels in bytes (the CRC tables dominate), for workgroups of wg
// threads and chunks of at most 2^16 values.
func zf12Shared(tables, wg uint32) (encode, decode uint32) {
	const blocks = 1 << layout.MaxChunkShift / layout.ZF12Block
	return 4 * (tables + 4*blocks + 3*wg + 1), 4 * (tables + 5*blocks + 2*wg + 2)
}

// vkPipe is a chunk kernel's pipeline and the CRC constants it binds.
type vkPipe struct {
	pipe   *vk.Pipeline
	consts loc
}
