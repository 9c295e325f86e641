package vkcodec

import (
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/vk"
)

// Steps every prepared operation shares (ops.go): the checks of the caller's ranges, the session and the Close on a
// failed preparation, and the recorded shape of an encode (three timed passes, the side total read back) and of a
// decode (status reset, the kernels, the status read back). Each format only binds its streams and records its
// kernels.

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

// checkDecodeInto is checkDecodeRanges for a destination of dstBytes bytes (values of any size).
func checkDecodeInto(body vk.BufferRange, bodyLen, lo, hi uint64, dst vk.BufferRange, dstBytes uint64) error {
	if err := checkBodyRange(body, bodyLen, lo, hi, dst); err != nil {
		return err
	}
	return within(dst, 0, layout.Align4(dstBytes), "destination")
}

// newOp takes a session, wraps it as an operation and lets record fill it; a failed preparation releases what it
// took.
func newOp[O interface{ Close() }](b *Backend, wrap func(recorded) O, record func(O) error) (O, error) {
	var none O
	s, err := b.opSession()
	if err != nil {
		return none, err
	}
	op := wrap(recorded{b: b, s: s})
	if err := record(op); err != nil {
		op.Close()
		return none, err
	}
	return op, nil
}

func (b *Backend) newEncodeOp(record func(op *EncodeOp) error) (*EncodeOp, error) {
	return newOp(b, func(r recorded) *EncodeOp { return &EncodeOp{recorded: r} }, record)
}

func (b *Backend) newDecodeOp(record func(op *DecodeOp) error) (*DecodeOp, error) {
	return newOp(b, func(r recorded) *DecodeOp { return &DecodeOp{recorded: r} }, record)
}

// recordPasses records an encode of the chunked formats: work zeroed, then the passes — the chunk kernel (dense
// streams, side sizes), for most formats scanPass's prefix sum over work, the placement of the side pieces —
// (timestamps between them give PassTimes), and the read-back of work, whose word 2·nb is the side total that Finish
// adds to sideOff (the scan's, or for SplitZip-4, whose placement sums the side sizes itself, the placement's).
func (op *EncodeOp) recordPasses(work staged, nb, sideOff uint64, passes ...func() error) error {
	op.total, op.nb, op.sideOff = work.host, nb, sideOff
	return op.recordTimed(work, func(cmd *vk.Commands) { cmd.FillBuffer(work.dev.buf, work.dev.off, work.dev.size, 0) },
		passes...)
}

// scanPass is sz4_scan's prefix sum of the side sizes over work (Backend.scanPass for a prepared operation).
func (op *EncodeOp) scanPass(work staged, nb uint64) func() error {
	return func() error { return op.b.recordScan(op.s, &tensorPlan{work: work, nb: nb}) }
}

// recordDecode records a decode: the status words reset, the kernels (which report into status), and the read-back
// of the verdict.
func (op *DecodeOp) recordDecode(status staged, kernels func() error) error {
	op.status = status.host
	return op.recordTimed(status, func(cmd *vk.Commands) { resetStatus(cmd, status.dev) }, kernels)
}

// recordTimed records a prepared operation's command buffer: setup, then the passes, each after a barrier, with a
// timestamp before the first and after each (GPUTime spans them all), and the read-back of out.
func (r *recorded) recordTimed(out staged, setup func(cmd *vk.Commands), passes ...func() error) error {
	n := uint32(len(passes))
	if err := r.beginTimed(n + 1); err != nil {
		return err
	}
	cmd := r.s.cmd
	setup(cmd)
	for i, pass := range passes {
		cmd.Barrier()
		if i > 0 {
			cmd.Timestamp(r.qp, uint32(i))
		}
		if err := pass(); err != nil {
			return err
		}
	}
	cmd.Barrier()
	cmd.Timestamp(r.qp, n)
	r.b.copyDown(cmd, out)
	cmd.BarrierToHost()
	return cmd.End()
}
