package vkcodec

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/vk"
)

// Device-resident operations: tensors that already live in device buffers (a serving stack's KV blocks, CUDA
// memory imported through cudabridge, benchmark inputs) are encoded and decoded in place. An operation is
// prepared once — plan, bindings, recorded command buffer — and run many times: one queue submission per run,
// no allocation, and the only host read-back is the body size (encode) or the verdict (decode).

// recorded is what every prepared operation has: a session whose command buffer holds the operation, timestamps
// around it, and the submission in flight between SubmitWith and Finish.
type recorded struct {
	b     *Backend
	s     *session
	qp    *vk.QueryPool
	sub   *vk.Submission
	ns    []uint64 // timestamps of the last run
	gpuNs uint64
}

// submitWith queues the recorded commands without waiting: they start once every wait semaphore reached its value
// and signal every signal value when done (GPU-side ordering with other APIs, e.g. CUDA through cudabridge).
func (r *recorded) submitWith(waits, signals []vk.SemaphoreValue) error {
	if r.sub != nil {
		return invalid("operation submitted twice without Finish")
	}
	sub, err := r.b.dev.SubmitWith(r.s.cmd, waits, signals)
	if err != nil {
		return mapVK(err)
	}
	r.sub = sub
	return nil
}

// finish waits for the submission and reads the timestamps (first to last is the GPU time).
func (r *recorded) finish(ctx context.Context) error {
	sub := r.sub
	if sub == nil {
		return invalid("Finish without SubmitWith")
	}
	r.sub = nil
	if err := r.b.wait(ctx, sub); err != nil {
		return err
	}
	r.gpuNs = 0
	if ns, err := r.qp.Nanos(0, r.qp.Count()); err == nil && len(ns) > 1 && ns[len(ns)-1] >= ns[0] {
		r.ns, r.gpuNs = ns, ns[len(ns)-1]-ns[0]
	}
	return nil
}

// GPUTime is the device time of the last run, from timestamps around all of it.
func (r *recorded) GPUTime() time.Duration { return time.Duration(r.gpuNs) }

// Close releases the operation's resources (not the caller's buffers).
func (r *recorded) Close() {
	if r.qp != nil {
		r.qp.Close()
		r.qp = nil
	}
	if r.s != nil {
		r.b.putSession(r.s)
		r.s = nil
	}
}

// EncodeOp encodes n values at src into a body at dst.
type EncodeOp struct {
	recorded
	total   loc    // host-visible work words; the side section size is word 2·nb
	nb      uint64 // 64-chunk blocks of the prefix sum
	sideOff uint64 // where the side section starts in the body
}

// DecodeOp decodes a body at body into n values at dst.
type DecodeOp struct {
	recorded
	status   loc // host-visible status words
	name     string
	statusFn func(st []byte, name string) error // the format's status mapping (nil: statusErr)
}

func invalid(f string, a ...any) error {
	return &codec.Error{Class: codec.ErrInvalidInput, Chunk: -1, Detail: fmt.Sprintf(f, a...)}
}

// within checks that [off, off+n) lies in r.
func within(r vk.BufferRange, off, n uint64, what string) error {
	size := r.Size
	if size == 0 && r.Buf != nil {
		size = r.Buf.Size() - r.Offset
	}
	if r.Buf == nil || off+n > size || r.Offset+size > r.Buf.Size() {
		return invalid("%s: %d bytes at %d do not fit the given buffer range", what, n, off)
	}
	return nil
}

// bufView binds [r.Offset+off, +size) of a caller's buffer, clipped to the buffer's end.
func bufView(r vk.BufferRange, off, size uint64) view {
	v := viewAt(r.Buf, r.Offset+off, size)
	if end := v.l.off + v.l.size; end > r.Buf.Size() {
		v.l.size = r.Buf.Size() - v.l.off
	}
	return v
}

func (b *Backend) opSession() (*session, error) {
	s, err := b.getSession()
	if err != nil {
		return nil, err
	}
	s.reset()
	return s, nil
}

// PrepareEncode records the encode of n values at src (16-byte aligned offset; the range must hold
// align4(2n) bytes) into dst (4-byte aligned; room for layout.SZ4.MaxBodySize bytes).
func (b *Backend) PrepareEncode(ctx context.Context, src vk.BufferRange, n uint64, shift uint, cb codec.Codebook,
	checksums bool, dst vk.BufferRange) (*EncodeOp, error) {
	if err := b.checkSZ4(layout.FormatSplitZip4, n, shift); err != nil {
		return nil, err
	}
	g := layout.SZ4{N: n, Shift: shift}
	if n == 0 {
		return nil, invalid("empty tensor")
	}
	if err := checkEncodeRanges(src, 2*n, dst, g.MaxBodySize()); err != nil {
		return nil, err
	}
	return b.newEncodeOp(func(op *EncodeOp) error { return op.prepare(ctx, src, g, &cb, checksums, dst) })
}

// sz4EncodeViews plans the encode of g.N values at src into a body at dst (device ranges): scratch and the
// prefix-sum words come from s.
func (b *Backend) sz4EncodeViews(s *session, src vk.BufferRange, g layout.SZ4, dst vk.BufferRange) (*tensorPlan, error) {
	work, err := s.allocOut(b, 4*(2*((g.Chunks()+63)/64)+1))
	if err != nil {
		return nil, err
	}
	return b.sz4EncodePlan(s, src, g, dst, work, b.wgFor(g.Shift, g.Chunks()))
}

// sz4EncodePlan is sz4EncodeViews with the prefix-sum words and the workgroup size given (block batches share one
// work region and size workgroups by the whole batch).
func (b *Backend) sz4EncodePlan(s *session, src vk.BufferRange, g layout.SZ4, dst vk.BufferRange, work staged,
	wg uint32) (*tensorPlan, error) {
	p := &tensorPlan{g: g, tc: newTensorConsts(g.N, g.Shift), wg: wg, work: work}
	C := g.Chunks()
	p.nb = (C + 63) / 64
	per := b.segChunks(g.Shift)
	var err error
	for first := uint64(0); first < C; first += per {
		sg := segment{first: first, count: min(per, C-first)}
		cl, ch := codeRange(g, sg.first, sg.count)
		ll, lh := lowRange(g, sg.first, sg.count)
		vl, vh := valueRange(g, sg.first, sg.count)
		sg.vSrc = bufView(src, 2*vl, layout.Align4(2*(vh-vl)))
		sg.vCodes = bufView(dst, cl, ch-cl)
		sg.vLows = bufView(dst, g.CodeBytes()+ll, lh-ll)
		if sg.scratch, err = s.dev.alloc(sg.count << g.Shift / 2); err != nil {
			return nil, err
		}
		p.segs = append(p.segs, sg)
	}
	p.vTable = bufView(dst, g.TableOffset(), layout.ChunkEntrySize*C)
	p.vSide = bufView(dst, g.SideOffset(), max(g.MaxBodySize()-g.SideOffset(), 4))
	return p, nil
}

func (op *EncodeOp) prepare(ctx context.Context, src vk.BufferRange, g layout.SZ4, cb *codec.Codebook, checksums bool,
	dst vk.BufferRange) error {
	b, s := op.b, op.s
	p, err := b.sz4EncodeViews(s, src, g, dst)
	if err != nil {
		return err
	}
	job := codec.EncodeJob{Codebook: cb, Checksums: checksums}
	return op.recordPasses(p.work, p.nb, g.SideOffset(), func() error { return b.recordEncodeA(ctx, s, &job, p) },
		func() error { return b.recordPlace(ctx, s, &job, p) })
}

// Run encodes once and returns the body's length in bytes.
func (op *EncodeOp) Run(ctx context.Context) (uint64, error) {
	if err := op.SubmitWith(nil, nil); err != nil {
		return 0, err
	}
	return op.Finish(ctx)
}

// SubmitWith queues the recorded encode without waiting, after waits and signalling signals; Finish must follow
// before the next Run or SubmitWith.
func (op *EncodeOp) SubmitWith(waits, signals []vk.SemaphoreValue) error {
	return op.submitWith(waits, signals)
}

// Finish waits for the submission of SubmitWith and returns the body's length in bytes.
func (op *EncodeOp) Finish(ctx context.Context) (uint64, error) {
	if err := op.finish(ctx); err != nil {
		return 0, err
	}
	op.b.dev.CountReadback(4)
	return op.sideOff + uint64(binary.LittleEndian.Uint32(op.total.bytes()[4*2*op.nb:])), nil
}

// PassTimes is the device time of each pass in the last Run: the chunk kernel (dense pieces, escapes), the prefix sum
// of the side sizes (not for SplitZip-4, whose placement sums them itself), the placement. Nil before a Run, and for
// operations timed as one span.
func (op *EncodeOp) PassTimes() []time.Duration {
	var t []time.Duration
	for i := 1; i < len(op.ns) && len(op.ns) > 2; i++ {
		t = append(t, time.Duration(op.ns[i]-op.ns[i-1]))
	}
	return t
}

// PrepareDecode records the decode of a body of bodyLen bytes at body (4-byte aligned offset) into n values at dst
// (16-byte aligned; room for align4(2n) bytes). The kernel validates the chunk table itself: the body is never
// read by the host.
func (b *Backend) PrepareDecode(ctx context.Context, body vk.BufferRange, bodyLen, n uint64, shift uint,
	cb codec.Codebook, checksums bool, dst vk.BufferRange) (*DecodeOp, error) {
	if err := b.checkSZ4(layout.FormatSplitZip4, n, shift); err != nil {
		return nil, err
	}
	g := layout.SZ4{N: n, Shift: shift}
	if n == 0 {
		return nil, invalid("empty tensor")
	}
	if err := checkDecodeRanges(body, bodyLen, g.MinBodySize(), g.MaxBodySize(), dst, n); err != nil {
		return nil, err
	}
	return b.newDecodeOp(func(op *DecodeOp) error { return op.prepare(ctx, body, bodyLen, g, &cb, checksums, dst) })
}

func (op *DecodeOp) prepare(ctx context.Context, body vk.BufferRange, bodyLen uint64, g layout.SZ4,
	cb *codec.Codebook, checksums bool, dst vk.BufferRange) error {
	b, s := op.b, op.s
	sideLen := bodyLen - g.SideOffset()
	p, _ := b.sz4DecodePlan(body, g, sideLen, dst, b.wgFor(g.Shift, g.Chunks()))
	var err error
	if p.status, err = s.allocOut(b, 4*layout.StatusWords); err != nil {
		return err
	}
	job := codec.DecodeJob{Codebook: cb, Checksums: checksums}
	return op.recordDecode(p.status, func() error { return b.recordDecode(ctx, s, &job, p, uint32(sideLen)) })
}

// sz4DecodePlan binds a body at body (side section of sideLen bytes) and its output at dst, both caller ranges,
// and returns the side bytes the binding holds (sideLen, or less where the buffer ends first).
func (b *Backend) sz4DecodePlan(body vk.BufferRange, g layout.SZ4, sideLen uint64, dst vk.BufferRange,
	wg uint32) (*tensorPlan, uint64) {
	p := &tensorPlan{g: g, tc: newTensorConsts(g.N, g.Shift), wg: wg}
	C := g.Chunks()
	per := b.segChunks(g.Shift)
	for first := uint64(0); first < C; first += per {
		sg := segment{first: first, count: min(per, C-first)}
		cl, ch := codeRange(g, sg.first, sg.count)
		ll, lh := lowRange(g, sg.first, sg.count)
		vl, vh := valueRange(g, sg.first, sg.count)
		sg.vCodes = bufView(body, cl, ch-cl)
		sg.vLows = bufView(body, g.CodeBytes()+ll, lh-ll)
		sg.vDst = bufView(dst, 2*vl, layout.Align4(2*(vh-vl)))
		p.segs = append(p.segs, sg)
	}
	p.vTable = bufView(body, g.TableOffset(), layout.ChunkEntrySize*C)
	p.vSide = bufView(body, g.SideOffset(), max(sideLen, 4))
	return p, min(sideLen, p.vSide.l.size-p.vSide.base)
}

// Run decodes once; an invalid body gives the reference's error class.
func (op *DecodeOp) Run(ctx context.Context) error {
	if err := op.SubmitWith(nil, nil); err != nil {
		return err
	}
	return op.Finish(ctx)
}

// SubmitWith queues the recorded decode without waiting, after waits and signalling signals (see EncodeOp).
func (op *DecodeOp) SubmitWith(waits, signals []vk.SemaphoreValue) error {
	return op.submitWith(waits, signals)
}

// Finish waits for the submission of SubmitWith; an invalid body gives the reference's error class.
func (op *DecodeOp) Finish(ctx context.Context) error {
	if err := op.finish(ctx); err != nil {
		return err
	}
	op.b.dev.CountReadback(32)
	if op.statusFn != nil {
		return op.statusFn(op.status.bytes(), op.name)
	}
	return statusErr(op.status.bytes(), op.name)
}

// Clamps is the number of indices the debug build of the decoder had to clamp in the last Run (vktune.Params.DebugBounds).
func (op *DecodeOp) Clamps() uint32 { return binary.LittleEndian.Uint32(op.status.bytes()[16:]) }

// submit runs a recorded command buffer and waits for it.
func (b *Backend) submit(ctx context.Context, cmd *vk.Commands) error {
	sub, err := b.dev.Submit(cmd)
	if err != nil {
		return mapVK(err)
	}
	return b.wait(ctx, sub)
}

// wait waits for a submission (after a cancelled ctx, still until it completed, so its buffers can be reused).
func (b *Backend) wait(ctx context.Context, sub *vk.Submission) error {
	if err := sub.Wait(ctx); err != nil {
		if ctx.Err() != nil {
			_ = sub.Wait(context.Background())
			return ctx.Err()
		}
		return mapVK(err)
	}
	return nil
}

// PrepareEncodeFormat is PrepareEncode for any format the backend runs over BF16 values (PrepareEncodeTyped for
// other dtypes); cb is ignored by formats without a codebook. dst must have room for the format's largest body.
func (b *Backend) PrepareEncodeFormat(ctx context.Context, format uint8, src vk.BufferRange, n uint64, shift uint,
	cb *codec.Codebook, checksums bool, dst vk.BufferRange) (*EncodeOp, error) {
	switch format {
	case layout.FormatSplitZip4:
		if cb == nil {
			return nil, invalid("splitzip4 needs a codebook")
		}
		return b.PrepareEncode(ctx, src, n, shift, *cb, checksums, dst)
	case layout.FormatZF12:
		return b.prepareEncodeZF12(ctx, src, n, shift, checksums, dst)
	case layout.FormatAuto:
		return b.prepareEncodeAuto(ctx, layout.DTypeBF16, src, n, shift, cb, checksums, dst)
	case layout.FormatTBE3:
		return b.prepareEncodeTBE3(ctx, src, n, shift, checksums, dst)
	case layout.FormatXW2, layout.FormatXW3, layout.FormatXW4: // they code no BF16: refused, with the reason
		return b.prepareEncodeXW(ctx, format, layout.DTypeBF16, src, n, shift, checksums, dst)
	case layout.FormatHuff:
		return b.prepareEncodeHuff(ctx, src, n, shift, checksums, dst)
	}
	return nil, unsupportedFormat(format)
}

// SupportsResident reports whether PrepareEncodeTyped and PrepareDecodeTyped run a format (device-resident
// operations; PrepareEncodeFormat and PrepareDecodeFormat for its BF16 formats).
func (b *Backend) SupportsResident(format uint8) bool {
	switch format {
	case layout.FormatSplitZip4, layout.FormatZF12, layout.FormatAuto, layout.FormatTBE3,
		layout.FormatXW2, layout.FormatXW3, layout.FormatXW4, layout.FormatHuff:
		return true
	}
	return false
}

// PrepareDecodeFormat is PrepareDecode for any format the backend runs over BF16 values (PrepareDecodeTyped for
// other dtypes); cb is ignored by formats without a codebook.
func (b *Backend) PrepareDecodeFormat(ctx context.Context, format uint8, body vk.BufferRange, bodyLen, n uint64,
	shift uint, cb *codec.Codebook, checksums bool, dst vk.BufferRange) (*DecodeOp, error) {
	switch format {
	case layout.FormatSplitZip4:
		if cb == nil {
			return nil, invalid("splitzip4 needs a codebook")
		}
		return b.PrepareDecode(ctx, body, bodyLen, n, shift, *cb, checksums, dst)
	case layout.FormatZF12:
		return b.prepareDecodeZF12(ctx, body, bodyLen, n, shift, checksums, dst)
	case layout.FormatAuto:
		return b.prepareDecodeAuto(ctx, layout.DTypeBF16, body, bodyLen, n, shift, cb, checksums, dst)
	case layout.FormatTBE3:
		return b.prepareDecodeTBE3(ctx, body, bodyLen, n, shift, checksums, dst)
	case layout.FormatXW2, layout.FormatXW3, layout.FormatXW4:
		return b.prepareDecodeXW(ctx, format, layout.DTypeBF16, body, bodyLen, n, shift, checksums, dst)
	case layout.FormatHuff:
		return b.prepareDecodeHuff(ctx, body, bodyLen, n, shift, checksums, dst)
	}
	return nil, unsupportedFormat(format)
}

func (b *Backend) prepareEncodeZF12(ctx context.Context, src vk.BufferRange, n uint64, shift uint, checksums bool,
	dst vk.BufferRange) (*EncodeOp, error) {
	if err := b.checkZF12(n, shift); err != nil {
		return nil, err
	}
	g := layout.ZF12{N: n, Shift: shift}
	if n == 0 {
		return nil, invalid("empty tensor")
	}
	if err := checkEncodeRanges(src, 2*n, dst, g.MaxBodySize()); err != nil {
		return nil, err
	}
	return b.newEncodeOp(func(op *EncodeOp) error { return op.prepareZF12(ctx, src, g, checksums, dst) })
}

// zf12EncodeViews plans the zf12 encode of g.N values at src into a body at dst (device ranges).
func (b *Backend) zf12EncodeViews(s *session, src vk.BufferRange, g layout.ZF12, dst vk.BufferRange) (*zf12Plan, error) {
	p := &zf12Plan{g: g, tc: newTensorConsts(g.N, g.Shift), wg: b.wgFor(g.Shift, g.Chunks())}
	C := g.Chunks()
	p.nb = (C + 63) / 64
	per := b.segChunks(g.Shift)
	sz := zsz4(g)
	var err error
	for first := uint64(0); first < C; first += per {
		sg := zsegment{first: first, count: min(per, C-first)}
		cl, ch := codeRange(sz, sg.first, sg.count)
		ll, lh := lowRange(sz, sg.first, sg.count)
		hl, hh := headRange(g, sg.first, sg.count)
		vl, vh := valueRange(sz, sg.first, sg.count)
		sg.vSrc = bufView(src, 2*vl, layout.Align4(2*(vh-vl)))
		sg.vCodes = bufView(dst, cl, ch-cl)
		sg.vLows = bufView(dst, g.CodeBytes()+ll, lh-ll)
		sg.vHeads = bufView(dst, g.HeaderOffset()+hl, hh-hl)
		if sg.scratch, err = s.dev.alloc(sg.count << g.Shift / 2); err != nil {
			return nil, err
		}
		p.segs = append(p.segs, sg)
	}
	p.vTable = bufView(dst, g.TableOffset(), layout.ChunkEntrySize*C)
	p.vSide = bufView(dst, g.SideOffset(), max(g.MaxBodySize()-g.SideOffset(), 4))
	p.work, err = s.allocOut(b, 4*(2*p.nb+1))
	return p, err
}

func (op *EncodeOp) prepareZF12(ctx context.Context, src vk.BufferRange, g layout.ZF12, checksums bool,
	dst vk.BufferRange) error {
	b, s := op.b, op.s
	p, err := b.zf12EncodeViews(s, src, g, dst)
	if err != nil {
		return err
	}
	return op.recordPasses(p.work, p.nb, g.SideOffset(), func() error { return b.recordZF12Encode(ctx, s, checksums, p) },
		op.scanPass(p.work, p.nb), func() error { return b.recordZF12Place(ctx, s, checksums, p) })
}

func (b *Backend) prepareDecodeZF12(ctx context.Context, body vk.BufferRange, bodyLen, n uint64, shift uint,
	checksums bool, dst vk.BufferRange) (*DecodeOp, error) {
	if err := b.checkZF12(n, shift); err != nil {
		return nil, err
	}
	g := layout.ZF12{N: n, Shift: shift}
	if n == 0 {
		return nil, invalid("empty tensor")
	}
	if err := checkDecodeRanges(body, bodyLen, g.MinBodySize(), g.MaxBodySize(), dst, n); err != nil {
		return nil, err
	}
	return b.newDecodeOp(func(op *DecodeOp) error { return op.prepareZF12(ctx, body, bodyLen, g, checksums, dst) })
}

func (op *DecodeOp) prepareZF12(ctx context.Context, body vk.BufferRange, bodyLen uint64, g layout.ZF12,
	checksums bool, dst vk.BufferRange) error {
	b, s := op.b, op.s
	p := &zf12Plan{g: g, tc: newTensorConsts(g.N, g.Shift), wg: b.wgFor(g.Shift, g.Chunks())}
	C := g.Chunks()
	per := b.segChunks(g.Shift)
	sz := zsz4(g)
	for first := uint64(0); first < C; first += per {
		sg := zsegment{first: first, count: min(per, C-first)}
		cl, ch := codeRange(sz, sg.first, sg.count)
		ll, lh := lowRange(sz, sg.first, sg.count)
		hl, hh := headRange(g, sg.first, sg.count)
		vl, vh := valueRange(sz, sg.first, sg.count)
		sg.vCodes = bufView(body, cl, ch-cl)
		sg.vLows = bufView(body, g.CodeBytes()+ll, lh-ll)
		sg.vHeads = bufView(body, g.HeaderOffset()+hl, hh-hl)
		sg.vDst = bufView(dst, 2*vl, layout.Align4(2*(vh-vl)))
		p.segs = append(p.segs, sg)
	}
	sideLen := bodyLen - g.SideOffset()
	p.vTable = bufView(body, g.TableOffset(), layout.ChunkEntrySize*C)
	p.vSide = bufView(body, g.SideOffset(), max(sideLen, 4))
	var err error
	if p.status, err = s.allocOut(b, 32); err != nil {
		return err
	}
	return op.recordDecode(p.status, func() error { return b.recordZF12Decode(ctx, s, checksums, p, uint32(sideLen)) })
}
