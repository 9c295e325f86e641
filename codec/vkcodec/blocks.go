package vkcodec

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/vk"
)

// Block operations: a stream of KV blocks (a layer's blocks of a request, say) encoded or decoded many at a time.
// One prepared operation holds a fixed set of same-size SplitZip-4 blocks in device buffers; each run is one queue
// submission in which every block's pass runs beside the others' (one barrier between passes, not one per
// block), so 2 MiB blocks fill the GPU together the way one large tensor does. Runs reuse everything prepared:
// no allocation, no re-recording; the only host traffic is the block sizes (encode) or lengths and verdicts
// (decode). Several prepared operations may be in flight at once (SubmitWith ... Finish), on the device's
// compute queues in turn.

// BlockEncodeOp encodes a fixed set of blocks of n BF16 values each.
type BlockEncodeOp struct {
	recorded
	work    loc    // host-visible work words of every block, stride apart
	stride  uint64 // bytes between blocks' work words
	nb      uint64 // 64-chunk groups of a block's prefix sum
	sideOff uint64
}

// BlockDecodeOp decodes a fixed set of SplitZip-4 bodies of n values each; the body lengths are given per run.
type BlockDecodeOp struct {
	recorded
	status   staged // StatusWords words per block
	g        layout.SZ4
	sideCap  []uint64 // side bytes each body's binding holds
	statusUp []byte   // the status template written before each run (host side of status when staging)
}

// blockWG is the workgroup size of a batch: the batch, not each small block, decides whether the device is full.
func (b *Backend) blockWG(g layout.SZ4, blocks int) uint32 {
	return b.wgFor(g.Shift, g.Chunks()*uint64(blocks))
}

// checkBlockRanges refuses block sets the kernels could not run safely: misaligned or out-of-buffer ranges, and
// outputs that overlap each other (two blocks writing the same bytes would race).
func checkBlockRanges(ins, outs []vk.BufferRange, inAlign, outAlign, inBytes, outBytes uint64, inWhat, outWhat string) error {
	if len(ins) == 0 || len(ins) != len(outs) {
		return invalid("%d %ss and %d %ss: want the same number, at least one", len(ins), inWhat, len(outs), outWhat)
	}
	type span struct {
		lo, hi uint64
		i      int
	}
	spans := map[*vk.Buffer][]span{} // output ranges per buffer
	for i := range ins {
		if ins[i].Offset%inAlign != 0 || outs[i].Offset%outAlign != 0 {
			return invalid("block %d: %s offset must be a multiple of %d and %s offset of %d", i, inWhat, inAlign,
				outWhat, outAlign)
		}
		if err := within(ins[i], 0, inBytes, fmt.Sprintf("block %d %s", i, inWhat)); err != nil {
			return err
		}
		if err := within(outs[i], 0, outBytes, fmt.Sprintf("block %d %s", i, outWhat)); err != nil {
			return err
		}
		spans[outs[i].Buf] = append(spans[outs[i].Buf], span{outs[i].Offset, outs[i].Offset + outBytes, i})
	}
	for _, ss := range spans {
		sort.Slice(ss, func(a, c int) bool { return ss[a].lo < ss[c].lo })
		for k := 1; k < len(ss); k++ {
			if ss[k].lo < ss[k-1].hi {
				return invalid("blocks %d and %d: %s ranges overlap", ss[k-1].i, ss[k].i, outWhat)
			}
		}
	}
	return nil
}

// PrepareEncodeBlocks records the encode of len(srcs) blocks of n values each: block i from srcs[i] (16-byte
// aligned, align4(2n) bytes) into dsts[i] (4-byte aligned, room for layout.SZ4.MaxBodySize bytes; the dsts must
// not overlap). Every block uses the same chunk size, codebook and checksum flag.
func (b *Backend) PrepareEncodeBlocks(ctx context.Context, srcs []vk.BufferRange, n uint64, shift uint,
	cb codec.Codebook, checksums bool, dsts []vk.BufferRange) (*BlockEncodeOp, error) {
	if err := b.checkSZ4(layout.FormatSplitZip4, n, shift); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, invalid("empty blocks")
	}
	g := layout.SZ4{N: n, Shift: shift}
	if err := checkBlockRanges(srcs, dsts, 16, 4, layout.Align4(2*n), g.MaxBodySize(), "source", "destination"); err != nil {
		return nil, err
	}
	s, err := b.opSession()
	if err != nil {
		return nil, err
	}
	op := &BlockEncodeOp{recorded: recorded{b: b, s: s}}
	if err := op.prepare(ctx, srcs, g, &cb, checksums, dsts); err != nil {
		op.Close()
		return nil, err
	}
	return op, nil
}

func (op *BlockEncodeOp) prepare(ctx context.Context, srcs []vk.BufferRange, g layout.SZ4, cb *codec.Codebook,
	checksums bool, dsts []vk.BufferRange) error {
	b, s := op.b, op.s
	op.nb = (g.Chunks() + 63) / 64
	op.sideOff = g.SideOffset()
	words := 4 * (2*op.nb + 1)
	op.stride = (words + regionAlign - 1) &^ (regionAlign - 1)
	work, err := s.allocOut(b, op.stride*uint64(len(srcs)))
	if err != nil {
		return err
	}
	op.work = work.host
	wg := b.blockWG(g, len(srcs))
	plans := make([]*tensorPlan, len(srcs))
	for i := range srcs {
		w := staged{dev: loc{buf: work.dev.buf, off: work.dev.off + uint64(i)*op.stride, size: words}}
		if plans[i], err = b.sz4EncodePlan(s, srcs[i], g, dsts[i], w, wg); err != nil {
			return err
		}
	}
	if err := op.beginTimed(2); err != nil {
		return err
	}
	cmd := s.cmd
	cmd.FillBuffer(work.dev.buf, work.dev.off, work.dev.size, 0)
	job := codec.EncodeJob{Codebook: cb, Checksums: checksums}
	err = b.recordEncodePasses(s, len(plans),
		func(i int) error { return b.recordEncodeA(ctx, s, &job, plans[i]) },
		func(i int) error { return b.recordPlace(ctx, s, &job, plans[i]) })
	if err != nil {
		return err
	}
	cmd.Timestamp(op.qp, 1)
	b.copyDown(cmd, work)
	cmd.BarrierToHost()
	return cmd.End()
}

// Blocks is the number of blocks the operation encodes.
func (op *BlockEncodeOp) Blocks() int { return int(op.work.size / op.stride) }

// Run encodes every block once and writes each block's body length in bytes to sizes (len ≥ Blocks()).
func (op *BlockEncodeOp) Run(ctx context.Context, sizes []uint64) error {
	if err := op.SubmitWith(nil, nil); err != nil {
		return err
	}
	return op.Finish(ctx, sizes)
}

// SubmitWith queues one run without waiting, after waits and signalling signals; Finish must follow.
func (op *BlockEncodeOp) SubmitWith(waits, signals []vk.SemaphoreValue) error {
	return op.submitWith(waits, signals)
}

// Finish waits for the run queued by SubmitWith and writes each block's body length to sizes.
func (op *BlockEncodeOp) Finish(ctx context.Context, sizes []uint64) error {
	if len(sizes) < op.Blocks() {
		// Still wait: the submission must not outlive the call that queued it.
		if err := op.finish(ctx); err != nil {
			return err
		}
		return invalid("sizes holds %d entries for %d blocks", len(sizes), op.Blocks())
	}
	if err := op.finish(ctx); err != nil {
		return err
	}
	w := op.work.bytes()
	op.b.dev.CountReadback(4 * uint64(op.Blocks()))
	for i := range op.Blocks() {
		sizes[i] = op.sideOff + uint64(binary.LittleEndian.Uint32(w[uint64(i)*op.stride+4*2*op.nb:]))
	}
	return nil
}

// PrepareDecodeBlocks records the decode of len(bodies) SplitZip-4 bodies of n values each: body i at bodies[i]
// (4-byte aligned; the range must hold layout.SZ4.MaxBodySize bytes, whatever a run's body length) into dsts[i]
// (16-byte aligned, align4(2n) bytes; the dsts must not overlap). The bodies' lengths are given to each run.
func (b *Backend) PrepareDecodeBlocks(ctx context.Context, bodies []vk.BufferRange, n uint64, shift uint,
	cb codec.Codebook, checksums bool, dsts []vk.BufferRange) (*BlockDecodeOp, error) {
	if err := b.checkSZ4(layout.FormatSplitZip4, n, shift); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, invalid("empty blocks")
	}
	g := layout.SZ4{N: n, Shift: shift}
	if err := checkBlockRanges(bodies, dsts, 4, 16, g.MaxBodySize(), layout.Align4(2*n), "body", "destination"); err != nil {
		return nil, err
	}
	s, err := b.opSession()
	if err != nil {
		return nil, err
	}
	op := &BlockDecodeOp{recorded: recorded{b: b, s: s}, g: g}
	if err := op.prepare(ctx, bodies, &cb, checksums, dsts); err != nil {
		op.Close()
		return nil, err
	}
	return op, nil
}

func (op *BlockDecodeOp) prepare(ctx context.Context, bodies []vk.BufferRange, cb *codec.Codebook, checksums bool,
	dsts []vk.BufferRange) error {
	b, s, g := op.b, op.s, op.g
	var err error
	// Status words go up (the run's side lengths, the reset verdicts) and come back down (the verdicts).
	if op.status, err = s.allocIn(b, 4*layout.StatusWords*uint64(len(bodies))); err != nil {
		return err
	}
	down := op.status
	if !b.unified {
		if down.host, err = s.down.alloc(op.status.dev.size); err != nil {
			return err
		}
	}
	op.statusUp = op.status.host.bytes()
	wg := b.blockWG(g, len(bodies))
	plans := make([]*tensorPlan, len(bodies))
	op.sideCap = make([]uint64, len(bodies))
	for i := range bodies {
		p, side := b.sz4DecodePlan(bodies[i], g, g.MaxBodySize()-g.SideOffset(), dsts[i], wg)
		p.status = staged{dev: op.status.dev}
		plans[i], op.sideCap[i] = p, side
	}
	if err := op.beginTimed(2); err != nil {
		return err
	}
	cmd := s.cmd
	b.copyUp(cmd, op.status)
	cmd.Barrier()
	job := codec.DecodeJob{Codebook: cb, Checksums: checksums}
	for i, p := range plans {
		if err := b.recordDecodeAt(ctx, s, &job, p, layout.SideLenRuntime, uint32(i*layout.StatusWords)); err != nil {
			return err
		}
	}
	cmd.Barrier()
	cmd.Timestamp(op.qp, 1)
	b.copyDown(cmd, down)
	cmd.BarrierToHost()
	op.status = down
	return cmd.End()
}

// Blocks is the number of blocks the operation decodes.
func (op *BlockDecodeOp) Blocks() int { return len(op.sideCap) }

// Run decodes every block once; bodyLens[i] is body i's length in bytes. The error, if any, is that of the
// lowest-numbered invalid block, with the reference's class (errors.Is with codec.ErrCorrupt, ...).
func (op *BlockDecodeOp) Run(ctx context.Context, bodyLens []uint64) error {
	if err := op.SubmitWith(bodyLens, nil, nil); err != nil {
		return err
	}
	return op.Finish(ctx)
}

// SubmitWith checks the body lengths, writes them for the kernels and queues one run without waiting.
func (op *BlockDecodeOp) SubmitWith(bodyLens []uint64, waits, signals []vk.SemaphoreValue) error {
	if len(bodyLens) != op.Blocks() {
		return invalid("%d body lengths for %d blocks", len(bodyLens), op.Blocks())
	}
	if op.sub != nil {
		return invalid("operation submitted twice without Finish")
	}
	g := op.g
	for i, l := range bodyLens {
		if l < g.MinBodySize() || l > g.MaxBodySize() || l%4 != 0 || l-g.SideOffset() > op.sideCap[i] {
			return &codec.Error{Class: codec.ErrCorrupt, Tensor: blockName(i), Chunk: -1,
				Detail: fmt.Sprintf("body of %d bytes outside [%d, %d]", l, g.MinBodySize(), g.MaxBodySize())}
		}
	}
	st := op.statusUp
	for i, l := range bodyLens {
		w := st[4*layout.StatusWords*i:]
		for k := range layout.StatusWords {
			v := uint32(0)
			if k >= 1 && k <= 3 {
				v = 0xFFFFFFFF // lowest chunk per class: none yet
			}
			binary.LittleEndian.PutUint32(w[4*k:], v)
		}
		binary.LittleEndian.PutUint32(w[4*layout.StatusSideLen:], uint32(l-g.SideOffset()))
	}
	return op.submitWith(waits, signals)
}

// Finish waits for the run queued by SubmitWith and returns the first invalid block's error, if any.
func (op *BlockDecodeOp) Finish(ctx context.Context) error {
	if err := op.finish(ctx); err != nil {
		return err
	}
	st := op.status.host.bytes()
	op.b.dev.CountReadback(uint64(len(st)))
	for i := range op.Blocks() {
		if err := statusErr(st[4*layout.StatusWords*i:4*layout.StatusWords*(i+1)], blockName(i)); err != nil {
			return err
		}
	}
	return nil
}

func blockName(i int) string { return fmt.Sprintf("block %d", i) }
