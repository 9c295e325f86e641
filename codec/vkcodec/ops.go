package vkcodec

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"time"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/vk"
)

// Device-resident operations: tensors that already live in device buffers (a serving stack's KV blocks, CUDA
// memory imported through cudabridge, benchmark inputs) are encoded and decoded in place. An operation is
// prepared once — plan, bindings, recorded command buffer — and run many times: one queue submission per run,
// no recording, no descriptor update, no allocation, and the only host read-back is the body size (encode) or the
// verdict (decode). One tensor, or several same-size tensors (blocks) side by side in one submission, of any
// format in the registry.
//
// A run's latency is the submission, the device's passes and the wait (Submission.Wait polls the fence before it
// sleeps), so everything else is kept off the device and off the host's path: where the words the host reads
// (encode: the work words; decode: the status words) can live in memory both sides map — unified memory, or
// host-visible device memory of a discrete device — the host resets them before each submission and reads them
// in place after it, and the command buffer holds only the timestamps, barriers and the format's passes. Otherwise
// the command buffer resets them and copies them to host memory after the passes. Timestamps are read only when
// asked for (GPUTime, PassTimes).

// EncodeSpec describes a device-resident encode.
type EncodeSpec struct {
	Format    uint8
	DType     layout.DType    // the values' dtype (zero: BF16)
	N         uint64          // values of the tensor (of each block)
	Shift     uint            // chunks of 2^Shift values (chunked formats)
	Codebook  *codec.Codebook // formats with a codebook (splitzip4, auto over BF16); ignored by the others
	Checksums bool
	// Src holds the values (16-byte aligned offset, align4(N·size) bytes); Dst receives the body (4-byte aligned
	// offset, room for the format's largest body).
	Src, Dst vk.BufferRange
	// Blocks, when set, replaces Src and Dst: same-size tensors encoded side by side in one submission, block i's
	// values at Blocks[i].Src and its body at Blocks[i].Dst (the Dsts must not overlap).
	Blocks []Block
	// Table (one tensor, a format whose chunk table lies where the geometry puts it: codec.Format.Table): each run
	// also copies the body's chunk table to host memory, for EncodeOp.Table. A caller sealing the payload
	// (codec.Codec.AppendPrecodedHead) then reads it without another transfer. Ignored for formats that place no
	// such table.
	Table bool
}

// DecodeSpec describes a device-resident decode. The kernels validate the whole body: the host never reads it.
type DecodeSpec struct {
	Format    uint8
	DType     layout.DType // zero: BF16
	N         uint64
	Shift     uint
	Codebook  *codec.Codebook
	Checksums bool
	// Body holds BodyLen bytes of body (4-byte aligned offset); Dst receives the values (16-byte aligned offset,
	// room for align4(N·size) bytes).
	Body    vk.BufferRange
	BodyLen uint64
	Dst     vk.BufferRange
	// Blocks, when set, replaces Body and Dst: block i's body at Blocks[i].Src (room for the format's largest body)
	// and its values at Blocks[i].Dst (not overlapping). Their lengths are given before each run
	// (DecodeOp.SetBodyLens), for formats whose decoder reads them at run time (SupportsBlockDecode).
	Blocks []Block
}

// Block is one tensor of a block operation: its input and output ranges.
type Block struct{ Src, Dst vk.BufferRange }

// Blocks pairs srcs[i] with dsts[i]; where one list is longer, its extra ranges are paired with none (which
// PrepareEncode and PrepareDecode refuse).
func Blocks(srcs, dsts []vk.BufferRange) []Block {
	out := make([]Block, max(len(srcs), len(dsts)))
	for i := range out {
		if i < len(srcs) {
			out[i].Src = srcs[i]
		}
		if i < len(dsts) {
			out[i].Dst = dsts[i]
		}
	}
	return out
}

// SupportsResident reports whether PrepareEncode and PrepareDecode run format id.
func (b *Backend) SupportsResident(id uint8) bool { return b.SupportsFormat(id) }

// SupportsBlockDecode reports whether PrepareDecode takes Blocks for format id (body lengths given per run).
func (b *Backend) SupportsBlockDecode(id uint8) bool {
	_, ok := gpuCodecs[id].(blockDecoder)
	return ok
}

// recorded is what every prepared operation has: a session whose command buffer holds the operation, timestamps
// around it, and the submission in flight between SubmitWith and Finish.
type recorded struct {
	b   *Backend
	s   *session
	qp  *vk.QueryPool
	sub *vk.Submission
	// Timestamps of the last finished run: read from qp on the first GPUTime or PassTimes after its Finish (fresh),
	// into tsBuf; the next submission resets the queries, so unread ones are dropped then.
	fresh bool
	tsBuf []uint64
	ns    []uint64
	gpuNs uint64
	// direct: the words the host reads lie in memory the kernels bind and the host maps (hostWords), so the command
	// buffer neither resets nor copies them.
	direct bool
	words  *vk.Buffer // the operation's own host-visible device memory for them, where it has some
	// hostReset: the host resets the queries before each submission (vk.QueryPool.Reset), not the command buffer.
	hostReset bool
}

// EncodeOp encodes tensors at their sources into bodies at their destinations.
type EncodeOp struct {
	recorded
	work   loc    // host-visible work words of every block, stride apart
	stride uint64 // bytes between blocks' work words
	sh     shape
	blocks int
	// clear (direct): the regions the host zeroes before each run: the work words, and on unified memory the
	// format's zeroed scratch too.
	clear    []loc
	table    loc    // host memory the command buffer copies the chunk table to (EncodeSpec.Table), else empty
	tableOff uint64 // the table's offset in the body
}

// DecodeOp decodes bodies into values.
type DecodeOp struct {
	recorded
	status   loc    // host-visible status words, StatusWords per block: the kernels' own (direct) or their copy
	words    loc    // direct: the kernels' status words, set to statusUp before each run
	st       []byte // a copy of a failed block's status words, for its verdict
	statusFn func(st []byte, name string) error
	sh       shape
	blocks   int
	runtime  bool // block decode: lengths given per run (SetBodyLens)
	// statusUp is the status template each run starts from (reset verdicts; block decodes' side lengths): written
	// into the status words by the host (direct) or uploaded by the command buffer (block decodes otherwise); nil
	// where the command buffer resets the words itself.
	statusUp []byte
	lensSet  bool
}

func tensorOf(format uint8, dt layout.DType, n uint64, shift uint, cb *codec.Codebook, checksums bool,
	blocks int) tensor {
	return tensor{format: format, dt: jobDType(dt), n: n, shift: shift, cb: cb, checksums: checksums,
		together: uint64(blocks)}
}

// prepared checks what every device-resident operation needs of its format and tensor.
func (b *Backend) prepared(t *tensor) (gpuCodec, shape, error) {
	f, err := lookupCodec(t.format)
	if err != nil {
		return nil, shape{}, err
	}
	if t.n == 0 {
		return nil, shape{}, invalid("empty tensor")
	}
	if err := f.check(b, t); err != nil {
		return nil, shape{}, err
	}
	return f, f.shape(t), nil
}

// PrepareEncode records a device-resident encode.
func (b *Backend) PrepareEncode(ctx context.Context, spec EncodeSpec) (*EncodeOp, error) {
	blocks := spec.Blocks
	if len(blocks) == 0 {
		blocks = []Block{{spec.Src, spec.Dst}}
	}
	t := tensorOf(spec.Format, spec.DType, spec.N, spec.Shift, spec.Codebook, spec.Checksums, len(blocks))
	f, sh, err := b.prepared(&t)
	if err != nil {
		return nil, err
	}
	if len(spec.Blocks) == 0 {
		err = checkEncodeRanges(spec.Src, t.valueBytes(), spec.Dst, sh.maxBody)
	} else {
		err = checkBlockRanges(blocks, 16, 4, layout.Align4(t.valueBytes()), sh.maxBody, "source", "destination")
	}
	if err != nil {
		return nil, err
	}
	if spec.Table && len(blocks) > 1 {
		return nil, invalid("EncodeSpec.Table with %d blocks", len(blocks))
	}
	return newOp(b, func(r recorded) *EncodeOp { return &EncodeOp{recorded: r, sh: sh, blocks: len(blocks)} },
		func(op *EncodeOp) error { return op.prepare(ctx, f, &t, blocks, spec.Table) })
}

func (op *EncodeOp) prepare(ctx context.Context, f gpuCodec, t *tensor, blocks []Block, table bool) error {
	b, s := op.b, op.s
	var tab func(cmd *vk.Commands)
	if table {
		var err error
		if tab, err = op.tableCopy(t, blocks[0].Dst); err != nil {
			return err
		}
	}
	op.stride = alignRegion(op.sh.workBytes)
	work, err := op.hostWords(op.stride*uint64(len(blocks)), len(blocks))
	if err != nil {
		return err
	}
	op.work = work.host
	plans := make([]*plan, len(blocks))
	var zero []loc
	for i, blk := range blocks {
		w := loc{buf: work.dev.buf, off: work.dev.off + uint64(i)*op.stride, size: op.sh.workBytes}
		r := &regions{b: b, s: s, encode: true, vals: blk.Src, body: blk.Dst, work: staged{dev: w, host: w}}
		if plans[i], err = f.encode(b, t, r); err == nil {
			err = r.err
		}
		if err != nil {
			return err
		}
		zero = append(zero, r.zero...)
	}
	if !op.direct {
		return op.recordTimed(ctx, plans, work, func(cmd *vk.Commands) { zeroRegions(cmd, work.dev, zero) }, tab)
	}
	op.clear = append(op.clear, work.dev)
	if b.unified {
		op.clear = append(op.clear, zero...)
		zero = nil
	}
	return op.recordTimed(ctx, plans, work, func(cmd *vk.Commands) {
		for _, z := range zero {
			cmd.FillBuffer(z.buf, z.off, z.size, 0)
		}
	}, tab)
}

// tableCopy allocates host memory for the chunk table of t's body at body and returns the command that copies it
// there after the passes; nil for a format that places no table by the geometry.
func (op *EncodeOp) tableCopy(t *tensor, body vk.BufferRange) (func(cmd *vk.Commands), error) {
	f, ok := codec.LookupFormat(t.format)
	if !ok || f.Table == nil {
		return nil, nil
	}
	off, entries, ok := f.Table(t.dt, t.n, t.shift)
	size := entries * layout.ChunkEntrySize
	if !ok || size == 0 || off+size > op.sh.maxBody {
		return nil, nil
	}
	var err error
	if op.b.unified {
		op.table, err = op.s.dev.alloc(size)
	} else {
		op.table, err = op.s.down.alloc(size)
	}
	if err != nil {
		return nil, err
	}
	op.table.size, op.tableOff = size, off
	return func(cmd *vk.Commands) { cmd.CopyBuffer(op.table.buf, op.table.off, body.Buf, body.Offset+off, size) }, nil
}

// Table is the chunk table the last run wrote into the body (EncodeSpec.Table) and its offset in the body; nil where
// the operation copies none. The bytes are the operation's: valid until its next run.
func (op *EncodeOp) Table() (table []byte, off uint64) {
	if op.table.buf == nil {
		return nil, 0
	}
	return op.table.bytes(), op.tableOff
}

// Test hooks: noMappedWords makes operations on discrete devices keep their read-back words in device-only memory,
// as on a device without host-visible device memory; noHostQueryReset makes them reset their queries in the command
// buffer, as on a device without host query reset.
var noMappedWords, noHostQueryReset bool

// hostWords allocates size bytes of the words the host reads after each run, for an operation over blocks tensors.
// They are direct (r.direct) where the kernels can bind memory the host maps and reads cheaply: always on unified
// memory; on a discrete device for one tensor (a few words, each an uncached read across the bus), in host-visible
// device memory of the operation's own when the device has some. Otherwise the session's device memory, with a
// host-memory copy the command buffer fills.
func (r *recorded) hostWords(size uint64, blocks int) (staged, error) {
	b := r.b
	if !b.unified && blocks == 1 && !noMappedWords {
		size = max((size+15)&^15, 16)
		if buf, err := b.dev.NewBuffer(size, vk.DeviceLocalHostVisible); err == nil {
			r.words, r.direct = buf, true
			l := loc{buf: buf, size: size}
			return staged{dev: l, host: l}, nil
		}
	}
	st, err := r.s.allocOut(b, size)
	r.direct = err == nil && b.unified
	return st, err
}

// idle refuses a submission while the last one is unfinished: the host may write the operation's words then.
func (r *recorded) idle() error {
	if r.sub != nil {
		return invalid("operation submitted twice without Finish")
	}
	if r.s.cmd.Pending() {
		return vk.ErrBusy
	}
	return nil
}

// recordTimed records a prepared operation's command buffer: setup, then the plans' passes, each after a barrier,
// with a timestamp before the first and after each (one span for plans timed so), and the read-back of out (none
// when r.direct: the host reads out in place) and after's copies (nil: none).
func (r *recorded) recordTimed(ctx context.Context, plans []*plan, out staged, setup, after func(cmd *vk.Commands)) error {
	passes, oneSpan := 0, false
	for _, p := range plans {
		passes, oneSpan = max(passes, len(p.passes)), oneSpan || p.oneSpan
	}
	n := uint32(passes)
	if oneSpan {
		n = 1
	}
	if err := r.beginTimed(n + 1); err != nil {
		return err
	}
	cmd := r.s.cmd
	setup(cmd)
	between := func(k int) { cmd.Timestamp(r.qp, uint32(k)) }
	if oneSpan {
		between = nil
	}
	if err := recordPlans(&recorder{ctx: ctx, b: r.b, s: r.s}, plans, between); err != nil {
		return err
	}
	cmd.Timestamp(r.qp, n)
	if !r.direct {
		r.b.copyDown(cmd, out)
	}
	if after != nil {
		after(cmd)
	}
	cmd.BarrierToHost()
	return cmd.End()
}

// beginTimed opens a prepared operation's command buffer with a pool of n timestamp queries: query 0 is written
// here, the others by the caller between and after the passes it records. Where the device resets queries from the
// host, each submission does so (submitWith) and the command buffer does not.
func (r *recorded) beginTimed(n uint32) error {
	var err error
	if r.qp, err = r.b.dev.NewQueryPool(n); err != nil {
		return err
	}
	r.tsBuf = make([]uint64, n)
	r.hostReset = r.b.dev.Features().HostQueryReset && !noHostQueryReset
	cmd := r.s.cmd
	if err := cmd.Begin(); err != nil {
		return err
	}
	if !r.hostReset {
		cmd.ResetQueries(r.qp, 0, n)
	}
	cmd.Timestamp(r.qp, 0)
	return nil
}

// Blocks is the number of tensors the operation encodes.
func (op *EncodeOp) Blocks() int { return op.blocks }

// Run encodes once and returns the body's length in bytes (the first block's; BlockSizes gives every block's).
func (op *EncodeOp) Run(ctx context.Context) (uint64, error) {
	if err := op.SubmitWith(nil, nil); err != nil {
		return 0, err
	}
	return op.Finish(ctx)
}

// SubmitWith queues the recorded encode without waiting, after waits and signalling signals; Finish must follow
// before the next Run or SubmitWith.
func (op *EncodeOp) SubmitWith(waits, signals []vk.SemaphoreValue) error {
	if len(op.clear) > 0 {
		if err := op.idle(); err != nil {
			return err
		}
		for _, z := range op.clear {
			clear(z.bytes())
		}
	}
	return op.submitWith(waits, signals)
}

// Finish waits for the submission of SubmitWith and returns the (first block's) body length in bytes.
func (op *EncodeOp) Finish(ctx context.Context) (uint64, error) {
	if err := op.finish(ctx); err != nil {
		return 0, err
	}
	op.b.dev.CountReadback(4*uint64(op.blocks) + op.table.size)
	return op.size(0)
}

func (op *EncodeOp) size(i int) (uint64, error) {
	return bodyEnd(op.work.bytes()[uint64(i)*op.stride:], op.sh, "resident")
}

// BlockSizes writes each block's body length of the last run to sizes (len ≥ Blocks()).
func (op *EncodeOp) BlockSizes(sizes []uint64) error {
	if len(sizes) < op.blocks {
		return invalid("sizes holds %d entries for %d blocks", len(sizes), op.blocks)
	}
	for i := range op.blocks {
		var err error
		if sizes[i], err = op.size(i); err != nil {
			return err
		}
	}
	return nil
}

// PassTimes is the device time of each pass in the last Run: the chunk kernel (dense pieces, escapes), the prefix
// sum of the side sizes (formats whose placement does not sum them itself), the placement. Nil before a Run, and
// for operations timed as one span.
func (op *EncodeOp) PassTimes() []time.Duration {
	op.times()
	var t []time.Duration
	for i := 1; i < len(op.ns) && len(op.ns) > 2; i++ {
		t = append(t, time.Duration(op.ns[i]-op.ns[i-1]))
	}
	return t
}

// PrepareDecode records a device-resident decode.
func (b *Backend) PrepareDecode(ctx context.Context, spec DecodeSpec) (*DecodeOp, error) {
	blocks := spec.Blocks
	if len(blocks) == 0 {
		blocks = []Block{{spec.Body, spec.Dst}}
	}
	t := tensorOf(spec.Format, spec.DType, spec.N, spec.Shift, spec.Codebook, spec.Checksums, len(blocks))
	t.bodyLen = spec.BodyLen
	f, sh, err := b.prepared(&t)
	if err != nil {
		return nil, err
	}
	if len(spec.Blocks) == 0 {
		err = checkDecodeInto(spec.Body, spec.BodyLen, sh.minBody, sh.maxBody, spec.Dst, t.valueBytes())
	} else if !b.SupportsBlockDecode(spec.Format) {
		err = &codec.Error{Class: codec.ErrUnsupported, Chunk: -1,
			Detail: "vulkan backend: no block decode of " + codec.FormatName(spec.Format)}
	} else {
		t.runtimeSide, t.bodyLen = true, sh.maxBody
		err = checkBlockRanges(blocks, 4, 16, sh.maxBody, layout.Align4(t.valueBytes()), "body", "destination")
	}
	if err != nil {
		return nil, err
	}
	return newOp(b, func(r recorded) *DecodeOp { return &DecodeOp{recorded: r, sh: sh, blocks: len(blocks)} },
		func(op *DecodeOp) error { return op.prepare(ctx, f, &t, blocks, len(spec.Blocks) > 0) })
}

func (op *DecodeOp) prepare(ctx context.Context, f gpuCodec, t *tensor, blocks []Block, runtime bool) error {
	b, s := op.b, op.s
	size := 4 * layout.StatusWords * uint64(len(blocks))
	op.runtime = runtime
	status, err := op.hostWords(size, len(blocks))
	if err != nil {
		return err
	}
	op.status, op.st = status.host, make([]byte, 4*layout.StatusWords)
	// The status words start each run as statusUp (direct: written by the host; block decodes otherwise: uploaded
	// from staging) or as resetStatus leaves them (single decodes otherwise).
	var up staged
	switch {
	case op.direct:
		op.words = status.dev
		op.statusUp = make([]byte, size)
		for i := range blocks {
			resetWords(op.statusUp[4*layout.StatusWords*i:])
		}
	case runtime:
		up.dev = status.dev
		if up.host, err = s.up.alloc(size); err != nil {
			return err
		}
		op.statusUp = up.host.bytes()
	}
	plans := make([]*plan, len(blocks))
	for i, blk := range blocks {
		r := &regions{b: b, s: s, vals: blk.Dst, body: blk.Src, status: status.dev,
			statusBase: uint32(i * layout.StatusWords)}
		if plans[i], err = f.decode(b, t, r); err == nil {
			err = r.err
		}
		if err != nil {
			return err
		}
	}
	op.statusFn = plans[0].statusFn
	return op.recordTimed(ctx, plans, status, func(cmd *vk.Commands) {
		switch {
		case op.direct:
		case runtime:
			b.copyUp(cmd, up)
		default:
			resetStatus(cmd, status.dev)
		}
	}, nil)
}

// resetWords writes a reset status block into w: flags zero, and the lowest failing chunk of each class (words 1-3,
// see statusErr) all ones, so that the kernels' minimum finds the first (resetStatus's values).
func resetWords(w []byte) {
	for k := range layout.StatusWords {
		v := uint32(0)
		if k >= 1 && k <= 3 {
			v = 0xFFFFFFFF
		}
		binary.LittleEndian.PutUint32(w[4*k:], v)
	}
}

// Blocks is the number of bodies the operation decodes.
func (op *DecodeOp) Blocks() int { return op.blocks }

// SetBodyLens gives a block decode the bodies' lengths for the runs that follow: bodyLens[i] is block i's.
func (op *DecodeOp) SetBodyLens(bodyLens []uint64) error {
	if !op.runtime {
		return invalid("body lengths for an operation without blocks")
	}
	if len(bodyLens) != op.blocks {
		return invalid("%d body lengths for %d blocks", len(bodyLens), op.blocks)
	}
	if op.sub != nil {
		return invalid("body lengths changed while a run is in flight")
	}
	sh := op.sh
	for i, l := range bodyLens {
		if l < sh.minBody || l > sh.maxBody || l%4 != 0 {
			return &codec.Error{Class: codec.ErrCorrupt, Tensor: blockName(i), Chunk: -1,
				Detail: fmt.Sprintf("body of %d bytes outside [%d, %d]", l, sh.minBody, sh.maxBody)}
		}
	}
	for i, l := range bodyLens {
		w := op.statusUp[4*layout.StatusWords*i:]
		resetWords(w)
		binary.LittleEndian.PutUint32(w[4*layout.StatusSideLen:], uint32(l-sh.sideOff))
	}
	op.lensSet = true
	return nil
}

// Run decodes once; an invalid body gives the reference's error class (of the lowest-numbered invalid block).
func (op *DecodeOp) Run(ctx context.Context) error {
	if err := op.SubmitWith(nil, nil); err != nil {
		return err
	}
	return op.Finish(ctx)
}

// SubmitWith queues the recorded decode without waiting, after waits and signalling signals (see EncodeOp).
func (op *DecodeOp) SubmitWith(waits, signals []vk.SemaphoreValue) error {
	if op.runtime && !op.lensSet {
		return invalid("block decode run before SetBodyLens")
	}
	if op.direct {
		if err := op.idle(); err != nil {
			return err
		}
		copy(op.words.bytes(), op.statusUp)
	}
	return op.submitWith(waits, signals)
}

// Finish waits for the submission of SubmitWith; an invalid body gives the reference's error class.
func (op *DecodeOp) Finish(ctx context.Context) error {
	if err := op.finish(ctx); err != nil {
		return err
	}
	// Each block's flags word first: every verdict (statusErr and the formats' statusFn) is valid without a flag
	// set, so a valid run reads one word per block (each an uncached read where the words are device memory) and
	// formats no block name. A block with a flag set gets its verdict from a copy of its words.
	st := op.status.bytes()
	op.b.dev.CountReadback(4 * layout.StatusWords * uint64(op.blocks))
	for i := range op.blocks {
		w := st[4*layout.StatusWords*i : 4*layout.StatusWords*(i+1)]
		if binary.LittleEndian.Uint32(w) == 0 {
			continue
		}
		copy(op.st, w)
		name := ""
		if op.runtime {
			name = blockName(i)
		}
		if err := verdict(op.statusFn, op.st, name); err != nil {
			return err
		}
	}
	return nil
}

func blockName(i int) string { return fmt.Sprintf("block %d", i) }

// Clamps is the number of indices the debug build of the decoder had to clamp in the last Run
// (vktune.Params.DebugBounds).
func (op *DecodeOp) Clamps() uint32 { return binary.LittleEndian.Uint32(op.status.bytes()[16:]) }

// submitWith queues the recorded commands without waiting: they start once every wait semaphore reached its value
// and signal every signal value when done (GPU-side ordering with other APIs, e.g. CUDA through cudabridge).
func (r *recorded) submitWith(waits, signals []vk.SemaphoreValue) error {
	if r.sub != nil {
		return invalid("operation submitted twice without Finish")
	}
	r.fresh, r.ns, r.gpuNs = false, nil, 0 // the submission resets the queries
	if r.hostReset {
		if err := r.idle(); err != nil {
			return err
		}
		if err := r.qp.Reset(0, r.qp.Count()); err != nil {
			return mapVK(err)
		}
	}
	sub, err := r.b.dev.SubmitWith(r.s.cmd, waits, signals)
	if err != nil {
		return mapVK(err)
	}
	r.sub = sub
	return nil
}

// finish waits for the submission; its timestamps are read when asked for (times).
func (r *recorded) finish(ctx context.Context) error {
	sub := r.sub
	if sub == nil {
		return invalid("Finish without SubmitWith")
	}
	r.sub = nil
	if err := r.b.wait(ctx, sub); err != nil {
		return err
	}
	r.fresh = true
	return nil
}

// times reads the timestamps of the last finished run, once (first to last is the GPU time).
func (r *recorded) times() {
	if !r.fresh {
		return
	}
	r.fresh = false
	if err := r.qp.NanosInto(r.tsBuf, 0); err == nil && len(r.tsBuf) > 1 && r.tsBuf[len(r.tsBuf)-1] >= r.tsBuf[0] {
		r.ns, r.gpuNs = r.tsBuf, r.tsBuf[len(r.tsBuf)-1]-r.tsBuf[0]
	}
}

// GPUTime is the device time of the last finished run, from timestamps around all of it (zero once the next run is
// submitted, or where the device gave none).
func (r *recorded) GPUTime() time.Duration {
	r.times()
	return time.Duration(r.gpuNs)
}

// Close releases the operation's resources (not the caller's buffers), after the run in flight if there is one.
func (r *recorded) Close() {
	if r.sub != nil {
		_ = r.b.wait(context.Background(), r.sub)
		r.sub = nil
	}
	if r.qp != nil {
		r.qp.Close()
		r.qp = nil
	}
	if r.words != nil {
		r.words.Close()
		r.words = nil
	}
	if r.s != nil {
		r.b.putSession(r.s)
		r.s = nil
	}
}

// newOp takes a session, wraps it as an operation and lets record fill it; a failed preparation releases what it
// took.
func newOp[O interface{ Close() }](b *Backend, wrap func(recorded) O, record func(O) error) (O, error) {
	var none O
	s, err := b.getSession()
	if err != nil {
		return none, err
	}
	s.reset()
	op := wrap(recorded{b: b, s: s})
	if err := record(op); err != nil {
		op.Close()
		return none, err
	}
	return op, nil
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

// checkEncodeRanges refuses what a prepared encode could not bind safely: misaligned offsets (16 bytes for values,
// 4 for a body), a source range without srcBytes (rounded up to whole words) or a destination without maxBody bytes.
func checkEncodeRanges(src vk.BufferRange, srcBytes uint64, dst vk.BufferRange, maxBody uint64) error {
	if src.Offset%16 != 0 || dst.Offset%4 != 0 {
		return invalid("source offset must be a multiple of 16 and destination offset of 4")
	}
	if err := within(src, 0, layout.Align4(srcBytes), "source"); err != nil {
		return err
	}
	return within(dst, 0, maxBody, "destination")
}

// checkDecodeInto refuses what a prepared decode could not bind safely (the kernels read the body and write the
// values in place, without robustBufferAccess): a body length outside [lo, hi] or not whole words, misaligned
// offsets, or ranges past their buffers (the destination holds dstBytes, rounded up to whole words).
func checkDecodeInto(body vk.BufferRange, bodyLen, lo, hi uint64, dst vk.BufferRange, dstBytes uint64) error {
	if bodyLen < lo || bodyLen > hi || bodyLen%4 != 0 {
		return &codec.Error{Class: codec.ErrCorrupt, Chunk: -1,
			Detail: fmt.Sprintf("body of %d bytes outside [%d, %d]", bodyLen, lo, hi)}
	}
	if body.Offset%4 != 0 || dst.Offset%16 != 0 {
		return invalid("body offset must be a multiple of 4 and destination offset of 16")
	}
	if err := within(body, 0, bodyLen, "body"); err != nil {
		return err
	}
	return within(dst, 0, layout.Align4(dstBytes), "destination")
}

// checkBlockRanges refuses block sets the kernels could not run safely: misaligned or out-of-buffer ranges, and
// outputs that overlap each other (two blocks writing the same bytes would race).
func checkBlockRanges(blocks []Block, inAlign, outAlign, inBytes, outBytes uint64, inWhat, outWhat string) error {
	type span struct {
		lo, hi uint64
		i      int
	}
	spans := map[*vk.Buffer][]span{} // output ranges per buffer
	for i, blk := range blocks {
		if blk.Src.Offset%inAlign != 0 || blk.Dst.Offset%outAlign != 0 {
			return invalid("block %d: %s offset must be a multiple of %d and %s offset of %d", i, inWhat, inAlign,
				outWhat, outAlign)
		}
		if err := within(blk.Src, 0, inBytes, fmt.Sprintf("block %d %s", i, inWhat)); err != nil {
			return err
		}
		if err := within(blk.Dst, 0, outBytes, fmt.Sprintf("block %d %s", i, outWhat)); err != nil {
			return err
		}
		spans[blk.Dst.Buf] = append(spans[blk.Dst.Buf], span{blk.Dst.Offset, blk.Dst.Offset + outBytes, i})
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
