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

// newEncodeOp takes a session and lets record fill the operation; a failed preparation releases what it took.
func (b *Backend) newEncodeOp(record func(op *EncodeOp) error) (*EncodeOp, error) {
	s, err := b.opSession()
	if err != nil {
		return nil, err
	}
	op := &EncodeOp{recorded: recorded{b: b, s: s}}
	if err := record(op); err != nil {
		op.Close()
		return nil, err
	}
	return op, nil
}

// newDecodeOp is newEncodeOp for decodes.
func (b *Backend) newDecodeOp(record func(op *DecodeOp) error) (*DecodeOp, error) {
	s, err := b.opSession()
	if err != nil {
		return nil, err
	}
	op := &DecodeOp{recorded: recorded{b: b, s: s}}
	if err := record(op); err != nil {
		op.Close()
		return nil, err
	}
	return op, nil
}

// recordPasses records an encode of the chunked formats: work zeroed, then the chunk kernel (dense streams, side
// sizes), sz4_scan's prefix sum over work and the placement of the side pieces, a timestamp after each (PassTimes),
// and the read-back of work, whose word 2·nb is the side total that Finish adds to sideOff.
func (op *EncodeOp) recordPasses(work staged, nb, sideOff uint64, kernel, place func() error) error {
	b, s := op.b, op.s
	op.total, op.nb, op.sideOff = work.host, nb, sideOff
	if err := op.beginTimed(4); err != nil {
		return err
	}
	cmd := s.cmd
	cmd.FillBuffer(work.dev.buf, work.dev.off, work.dev.size, 0)
	scan := func() error { return b.recordScan(s, &tensorPlan{work: work, nb: nb}) }
	for i, pass := range []func() error{kernel, scan, place} {
		cmd.Barrier()
		if i > 0 {
			cmd.Timestamp(op.qp, uint32(i))
		}
		if err := pass(); err != nil {
			return err
		}
	}
	cmd.Barrier()
	cmd.Timestamp(op.qp, 3)
	b.copyDown(cmd, work)
	cmd.BarrierToHost()
	return cmd.End()
}

// recordDecode records a decode: the status words reset, the kernels (which report into status), a timestamp, and
// the read-back of the verdict.
func (op *DecodeOp) recordDecode(status staged, kernels func() error) error {
	b, s := op.b, op.s
	op.status = status.host
	if err := op.beginTimed(2); err != nil {
		return err
	}
	cmd := s.cmd
	resetStatus(cmd, status.dev)
	cmd.Barrier()
	if err := kernels(); err != nil {
		return err
	}
	cmd.Barrier()
	cmd.Timestamp(op.qp, 1)
	b.copyDown(cmd, status)
	cmd.BarrierToHost()
	return cmd.End()
}
