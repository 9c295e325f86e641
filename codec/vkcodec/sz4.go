package vkcodec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/internal/vktune"
	"github.com/vkzip/vkzip/vk"
)

// segment is a run of chunks [first, first+count) whose per-chunk regions fit one binding each.
type segment struct {
	first, count uint64
	src          staged // values (encode input)
	codes, lows  staged // the segment's pieces of the two dense streams
	scratch      loc    // escapes / raw spill, per chunk (encode)
	dst          staged // decoded values (decode output)
	// What the kernels bind: set from the staged regions (host calls) or from caller buffers (device calls).
	vSrc, vCodes, vLows, vDst view
}

// view is a binding range plus the offset of the data within it: bindings must start at aligned offsets, data in
// a caller's buffer need not.
type view struct {
	l    loc
	base uint64 // bytes from the binding's start to the data
}

func viewOf(l loc) view { return view{l: l} }

// viewAt binds size bytes at off of buf, starting the binding at the aligned offset below.
func viewAt(buf *vk.Buffer, off, size uint64) view {
	a := off &^ (regionAlign - 1)
	return view{l: loc{buf: buf, off: a, size: max(size+off-a, 16)}, base: off - a}
}

// tensorPlan is the device layout of one tensor body.
type tensorPlan struct {
	g      layout.SZ4
	tc     tensorConsts
	wg     uint32
	segs   []segment
	table  staged
	side   staged
	vTable view
	vSide  view
	work   staged // encode: block sums, prefixes, side total
	status staged // decode: status words
	nb     uint64 // 64-chunk blocks
}

// streamRange is a segment's byte range of the code or low stream: whole chunk pieces, the last one to the padded
// end of the stream.
func codeRange(g layout.SZ4, first, count uint64) (lo, hi uint64) {
	lo = first << g.Shift / 2
	if first+count == g.Chunks() {
		return lo, g.CodeBytes()
	}
	return lo, (first + count) << g.Shift / 2
}

func lowRange(g layout.SZ4, first, count uint64) (lo, hi uint64) {
	lo = first << g.Shift
	if first+count == g.Chunks() {
		return lo, g.LowBytes()
	}
	return lo, (first + count) << g.Shift
}

// valueRange is a segment's range of values.
func valueRange(g layout.SZ4, first, count uint64) (lo, hi uint64) {
	return first << g.Shift, min((first+count)<<g.Shift, g.N)
}

func (b *Backend) plan(s *session, n uint64, shift uint, encode bool) (*tensorPlan, error) {
	p := &tensorPlan{g: layout.SZ4{N: n, Shift: shift}, tc: newTensorConsts(n, shift), wg: b.wgFor(shift, layout.SZ4{N: n, Shift: shift}.Chunks())}
	C := p.g.Chunks()
	p.nb = (C + 63) / 64
	per := b.segChunks(shift)
	var err error
	for first := uint64(0); first < C; first += per {
		sg := segment{first: first, count: min(per, C-first)}
		cl, ch := codeRange(p.g, sg.first, sg.count)
		ll, lh := lowRange(p.g, sg.first, sg.count)
		vl, vh := valueRange(p.g, sg.first, sg.count)
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
			if sg.dst, err = s.allocOut(b, 2*(vh-vl)); err != nil {
				return nil, err
			}
		}
		p.segs = append(p.segs, sg)
	}
	tableBytes := layout.ChunkEntrySize * C
	sideMax := p.g.MaxBodySize() - p.g.SideOffset()
	if encode {
		if p.table, err = s.allocOut(b, tableBytes); err != nil {
			return nil, err
		}
		if p.side, err = s.allocOut(b, max(sideMax, 4)); err != nil {
			return nil, err
		}
		p.work, err = s.allocOut(b, 4*(2*p.nb+1))
	} else {
		if p.table, err = s.allocIn(b, tableBytes); err != nil {
			return nil, err
		}
		if p.side, err = s.allocIn(b, max(sideMax, 4)); err != nil {
			return nil, err
		}
		p.status, err = s.allocOut(b, 32)
	}
	for i := range p.segs {
		sg := &p.segs[i]
		sg.vSrc, sg.vCodes, sg.vLows, sg.vDst = viewOf(sg.src.dev), viewOf(sg.codes.dev), viewOf(sg.lows.dev), viewOf(sg.dst.dev)
	}
	p.vTable, p.vSide = viewOf(p.table.dev), viewOf(p.side.dev)
	return p, err
}

// encodeSZ4 encodes SplitZip-4 bodies from host memory in one queue submission: inputs are staged, the two passes
// (sz4_encode, sz4_place) run for every job, and the outputs come back through staging.
func (b *Backend) encodeSZ4(ctx context.Context, jobs []codec.EncodeJob) error {
	for i := range jobs {
		j := &jobs[i]
		if err := b.checkSZ4(j.Format, j.N, j.Shift); err != nil {
			return err
		}
	}
	return b.inBatches(ctx, len(jobs), func(i int) (uint64, uint64) {
		return jobs[i].N, planBytes(layout.SZ4{N: jobs[i].N, Shift: jobs[i].Shift}, b.segChunks(jobs[i].Shift), true)
	}, func(from, to int) error { return b.encodeBatch(ctx, jobs[from:to]) })
}

// inBatches splits jobs into consecutive runs whose device memory fits the budget, one submission each, and
// stops between runs when ctx is done; job(i) gives job i's value count and the device memory its plan takes. A
// single job over the budget is refused.
func (b *Backend) inBatches(ctx context.Context, n int, job func(i int) (values, bytes uint64),
	run func(from, to int) error) error {
	budget := b.o.MemoryBudget
	for from := 0; from < n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		to, used := from, uint64(0)
		for to < n {
			v, need := job(to)
			if budget > 0 && need > budget {
				return &codec.Error{Class: codec.ErrTooLarge, Chunk: -1, Detail: fmt.Sprintf(
					"a tensor of %d values needs %d bytes of device memory, over the %d-byte budget", v, need, budget)}
			}
			if budget > 0 && to > from && used+need > budget {
				break
			}
			used += need
			to++
		}
		if err := run(from, to); err != nil {
			return err
		}
		from = to
	}
	return nil
}

// planBytes is the device memory plan() takes for one tensor (staging on discrete devices comes on top, in host
// memory).
func planBytes(g layout.SZ4, per uint64, encode bool) uint64 {
	a := func(n uint64) uint64 { return (max((n+15)&^15, 16) + regionAlign - 1) &^ (regionAlign - 1) }
	var total uint64
	C := g.Chunks()
	for first := uint64(0); first < C; first += per {
		count := min(per, C-first)
		cl, ch := codeRange(g, first, count)
		ll, lh := lowRange(g, first, count)
		vl, vh := valueRange(g, first, count)
		total += a(ch-cl) + a(lh-ll) + a(2*(vh-vl))
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

// encodeBatch encodes jobs in one submission.
func (b *Backend) encodeBatch(ctx context.Context, jobs []codec.EncodeJob) error {
	for i := range jobs {
		j := &jobs[i]
		if err := b.checkSZ4(j.Format, j.N, j.Shift); err != nil {
			return err
		}
		g := layout.SZ4{N: j.N, Shift: j.Shift}
		if uint64(len(j.Src)) < 2*j.N || uint64(cap(j.Dst)) < g.MaxBodySize() {
			return &codec.Error{Class: codec.ErrInvalidInput, Chunk: -1, Detail: "source or destination too small"}
		}
	}
	s, err := b.getSession()
	if err != nil {
		return err
	}
	defer b.putSession(s)
	s.reset()
	plans := make([]*tensorPlan, len(jobs))
	for i := range jobs {
		if plans[i], err = b.plan(s, jobs[i].N, jobs[i].Shift, true); err != nil {
			return err
		}
		for _, sg := range plans[i].segs {
			vl, vh := valueRange(plans[i].g, sg.first, sg.count)
			stageValues(sg.src.host.bytes(), jobs[i].Src, vl, vh)
		}
	}
	cmd := s.cmd
	if err := cmd.Begin(); err != nil {
		return err
	}
	for i, p := range plans {
		cmd.FillBuffer(p.work.dev.buf, p.work.dev.off, p.work.dev.size, 0)
		for _, sg := range p.segs {
			b.copyUp(cmd, sg.src)
		}
		_ = i
	}
	if err := b.recordEncodePasses(s, len(plans),
		func(i int) error { return b.recordEncodeA(ctx, s, &jobs[i], plans[i]) },
		func(i int) error { return b.recordPlace(ctx, s, &jobs[i], plans[i]) }); err != nil {
		return err
	}
	for _, p := range plans {
		for _, sg := range p.segs {
			b.copyDown(cmd, sg.codes)
			b.copyDown(cmd, sg.lows)
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
			cl, ch := codeRange(p.g, sg.first, sg.count)
			copy(out[cl:ch], sg.codes.host.bytes())
			ll, lh := lowRange(p.g, sg.first, sg.count)
			copy(out[p.g.CodeBytes()+ll:p.g.CodeBytes()+lh], sg.lows.host.bytes())
		}
		if err := placeTable(j, out, p.g.TableOffset(), p.g.SideOffset(), p.table, p.side, p.work, p.nb,
			p.side.dev.size, "vulkan encode"); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) run(ctx context.Context, cmd *vk.Commands) error {
	if err := cmd.End(); err != nil {
		return err
	}
	return b.submit(ctx, cmd)
}

// mapVK turns device loss into the codec's typed error.
func mapVK(err error) error {
	if err == nil {
		return nil
	}
	if isDeviceLost(err) {
		return &codec.Error{Class: codec.ErrDeviceLost, Chunk: -1, Detail: err.Error()}
	}
	return err
}

// chunkKernel is the pipeline of a chunk kernel for a tensor plan, and the CRC constants it binds.
func (b *Backend) chunkKernel(ctx context.Context, name string, p *tensorPlan) (*vk.Pipeline, loc, error) {
	pipe, err := b.pipeline(name, p.wg, p.g.Shift)
	if err != nil {
		return nil, loc{}, err
	}
	consts, err := b.constsFor(ctx, name, p.wg, p.g.Shift)
	if err != nil {
		return nil, loc{}, err
	}
	return pipe, consts, nil
}

func (b *Backend) recordEncodeA(ctx context.Context, s *session, j *codec.EncodeJob, p *tensorPlan) error {
	pipe, cs, err := b.chunkKernel(ctx, "sz4_encode", p)
	if err != nil {
		return err
	}
	for _, sg := range p.segs {
		bd, err := s.bind(b, pipe, sg.vSrc.l, sg.vCodes.l, sg.vLows.l, p.vTable.l, sg.scratch, cs, p.work.dev)
		if err != nil {
			return err
		}
		var pw pushWriter
		pw.codebook(j.Codebook).u32(p.tc.chunks, uint32(sg.first), uint32(sg.count), p.tc.lastLen, p.tc.invC,
			p.tc.invL, p.tc.shLowFull, p.tc.shLowLast, b2u(j.Checksums), uint32(sg.vSrc.base/16),
			uint32(sg.vCodes.base/4), uint32(sg.vLows.base/4), uint32(p.vTable.base/4))
		s.cmd.Dispatch(pipe, bd, pw.b, uint32(min(sg.count, uint64(b.groups))), 1, 1)
	}
	return nil
}

func (b *Backend) recordScan(s *session, p *tensorPlan) error {
	wg := min(uint32(b.t.WorkGroup), 1<<layout.MaxChunkShift/8)
	pipe, err := b.pipeline("sz4_scan", wg, 0)
	if err != nil {
		return err
	}
	bd, err := s.bind(b, pipe, p.work.dev)
	if err != nil {
		return err
	}
	var pw pushWriter
	s.cmd.Dispatch(pipe, bd, pw.u32(uint32(p.nb)).b, 1, 1, 1)
	return nil
}

// recordPlace records SplitZip-4's placement pass (sz4_place: offsets from pass 1's side sums, side pieces, CRCs),
// one workgroup of placeWG invocations per chunk.
func (b *Backend) recordPlace(ctx context.Context, s *session, j *codec.EncodeJob, p *tensorPlan) error {
	wg := b.placeWG()
	pipe, err := b.pipeline("sz4_place", wg, p.g.Shift)
	if err != nil {
		return err
	}
	cs, err := b.constsFor(ctx, "sz4_place", wg, p.g.Shift)
	if err != nil {
		return err
	}
	for _, sg := range p.segs {
		bd, err := s.bind(b, pipe, p.vTable.l, sg.scratch, p.vSide.l, cs, p.work.dev)
		if err != nil {
			return err
		}
		var pw pushWriter
		pw.u32(p.tc.chunks, uint32(sg.first), uint32(sg.count), p.tc.lastLen, uint32(p.nb), p.tc.kdFull,
			p.tc.kdLast, b2u(j.Checksums), uint32(p.vTable.base/4), uint32(p.vSide.base/4))
		s.cmd.Dispatch(pipe, bd, pw.b, uint32(min(sg.count, uint64(b.groups))), 1, 1)
	}
	return nil
}

// placeWG is the placement pass's workgroup: 32 invocations (a chunk's side piece is a few words; 64 and 128 were
// no faster on the H200), or the device's widest subgroup where that is more (vktune.Params.SZ4PlaceWG).
func (b *Backend) placeWG() uint32 {
	return max(floorPow2(min(vktune.Or(b.t.SZ4PlaceWG, 32), 1024)), b.minWorkGroup())
}

// decodeSZ4 decodes SplitZip-4 bodies in one queue submission. Chunk tables are checked on the host first (the
// kernel checks them again, as it must for bodies that never pass through host memory); per-job verdicts come back
// as status words.
func (b *Backend) decodeSZ4(ctx context.Context, jobs []codec.DecodeJob) error {
	for i := range jobs {
		j := &jobs[i]
		j.Err = nil
		if err := b.checkSZ4(j.Format, j.N, j.Shift); err != nil {
			return err
		}
		if uint64(len(j.Dst)) != 2*j.N {
			return &codec.Error{Class: codec.ErrInvalidInput, Chunk: -1, Detail: "destination size"}
		}
		if err := codec.CheckSZ4Table(j.Body, j.N, j.Shift); err != nil {
			j.Err = tensorErr(err, j.Name)
		}
	}
	return b.inBatches(ctx, len(jobs), func(i int) (uint64, uint64) {
		return jobs[i].N, planBytes(layout.SZ4{N: jobs[i].N, Shift: jobs[i].Shift}, b.segChunks(jobs[i].Shift), false)
	}, func(from, to int) error { return b.decodeBatch(ctx, jobs[from:to]) })
}

// decodeBatch decodes jobs (tables already checked) in one submission.
func (b *Backend) decodeBatch(ctx context.Context, jobs []codec.DecodeJob) error {
	s, err := b.getSession()
	if err != nil {
		return err
	}
	defer b.putSession(s)
	s.reset()
	plans := make([]*tensorPlan, len(jobs))
	for i := range jobs {
		j := &jobs[i]
		if j.Err != nil {
			continue
		}
		p, err := b.plan(s, j.N, j.Shift, false)
		if err != nil {
			return err
		}
		plans[i] = p
		for _, sg := range p.segs {
			cl, ch := codeRange(p.g, sg.first, sg.count)
			copy(sg.codes.host.bytes(), j.Body[cl:ch])
			ll, lh := lowRange(p.g, sg.first, sg.count)
			copy(sg.lows.host.bytes(), j.Body[p.g.CodeBytes()+ll:p.g.CodeBytes()+lh])
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
		}
		b.copyUpTable(cmd, p.table, p.side)
	}
	cmd.Barrier()
	for i, p := range plans {
		if p == nil {
			continue
		}
		if err := b.recordDecode(ctx, s, &jobs[i], p, uint32(len(jobs[i].Body)-int(p.g.SideOffset()))); err != nil {
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
			vl, vh := valueRange(p.g, sg.first, sg.count)
			copy(j.Dst[2*vl:2*vh], sg.dst.host.bytes())
		}
		j.Err = statusErr(p.status.host.bytes(), j.Name)
	}
	return nil
}

func (b *Backend) recordDecode(ctx context.Context, s *session, j *codec.DecodeJob, p *tensorPlan, sideLen uint32) error {
	return b.recordDecodeAt(ctx, s, j, p, sideLen, 0)
}

// recordDecodeAt records the decode of plan p with its status block at word statusBase of p.status; sideLen may be
// layout.SideLenRuntime (the kernel reads it from the status block).
func (b *Backend) recordDecodeAt(ctx context.Context, s *session, j *codec.DecodeJob, p *tensorPlan, sideLen,
	statusBase uint32) error {
	pipe, cs, err := b.chunkKernel(ctx, "sz4_decode", p)
	if err != nil {
		return err
	}
	for _, sg := range p.segs {
		bd, err := s.bind(b, pipe, sg.vCodes.l, sg.vLows.l, p.vTable.l, p.vSide.l, sg.vDst.l, cs, p.status.dev)
		if err != nil {
			return err
		}
		var pw pushWriter
		pw.codebook(j.Codebook).u32(p.tc.chunks, uint32(sg.first), uint32(sg.count), p.tc.lastLen, p.tc.invC,
			p.tc.invL, p.tc.shLowFull, p.tc.shLowLast, p.tc.kdFull, p.tc.kdLast, b2u(j.Checksums), sideLen, statusBase,
			uint32(sg.vCodes.base/4), uint32(sg.vLows.base/4), uint32(p.vTable.base/4), uint32(p.vSide.base/4),
			uint32(sg.vDst.base/16))
		s.cmd.Dispatch(pipe, bd, pw.b, uint32(min(sg.count, uint64(b.groups))), 1, 1)
	}
	return nil
}

// statusErr maps a decode status block (flags, lowest chunk per class) to the reference's error class.
func statusErr(st []byte, name string) error {
	flags := binary.LittleEndian.Uint32(st)
	chunk := func(i int) int64 { return int64(binary.LittleEndian.Uint32(st[4*i:])) }
	switch {
	case flags&layout.StatusCorrupt != 0:
		return &codec.Error{Class: codec.ErrCorrupt, Tensor: name, Chunk: chunk(1), Detail: "chunk table inconsistent (GPU check)"}
	case flags&layout.StatusChecksum != 0:
		return &codec.Error{Class: codec.ErrChecksum, Tensor: name, Chunk: chunk(2), Detail: "CRC-32C mismatch (GPU check)"}
	case flags&layout.StatusNonCanonical != 0:
		return &codec.Error{Class: codec.ErrNonCanonical, Tensor: name, Chunk: chunk(3), Detail: "stream not canonical (GPU check)"}
	}
	return nil
}

func tensorErr(err error, name string) error {
	if e, ok := err.(*codec.Error); ok && e.Tensor == "" {
		c := *e
		c.Tensor = name
		return &c
	}
	return err
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func isDeviceLost(err error) bool { return errors.Is(err, vk.ErrDeviceLost) }

// Warm makes sure callers sessions exist, each with memory for encoding and decoding a tensor of values values at
// the default chunk size, so that concurrent callers find their staging and device buffers allocated (allocating
// pinned host memory costs tens of milliseconds per session on NVIDIA). It implements codec.Warmer.
func (b *Backend) Warm(ctx context.Context, callers int, values uint64) error {
	if callers <= 0 || values == 0 {
		return nil
	}
	values = min(values, layout.MaxCodedValues)
	shift := uint(layout.DefaultChunkShift)
	// One real round trip first: it builds the pipelines and constant buffers of this tensor size, which are
	// shared by all sessions.
	g := layout.SZ4{N: values, Shift: shift}
	var cb codec.Codebook
	for i := range cb {
		cb[i] = uint8(i)
	}
	enc := []codec.EncodeJob{{Format: layout.FormatSplitZip4, Src: make([]byte, 2*values), N: values, Shift: shift,
		Codebook: &cb, Checksums: true, Dst: make([]byte, g.MaxBodySize())}}
	if err := b.Encode(ctx, enc); err != nil {
		return err
	}
	dec := []codec.DecodeJob{{Name: "warm-up", Format: layout.FormatSplitZip4, Body: enc[0].Out, N: values, Shift: shift,
		Codebook: &cb, Checksums: true, Dst: make([]byte, 2*values)}}
	if err := b.Decode(ctx, dec); err != nil {
		return err
	}
	if dec[0].Err != nil {
		return dec[0].Err
	}
	ss := make([]*session, 0, callers)
	defer func() {
		for _, s := range ss {
			b.putSession(s)
		}
	}()
	for range callers {
		if err := ctx.Err(); err != nil {
			return err
		}
		s, err := b.getSession()
		if err != nil {
			return err
		}
		ss = append(ss, s)
		// Encode and decode plans share the session's arenas in turn: reserve the larger of the two per arena by
		// planning each after a reset.
		for _, enc := range []bool{true, false} {
			s.reset()
			if _, err := b.plan(s, values, shift, enc); err != nil {
				return err
			}
		}
		s.reset()
	}
	return nil
}
