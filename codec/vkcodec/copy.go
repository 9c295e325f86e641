package vkcodec

import (
	"context"

	"github.com/vkzip/vkzip/vk"
)

// CopyOp copies bytes between device buffers with the 16-byte copy kernel: the bandwidth roofline the codec is
// measured against in the same run (a transfer-queue vkCmdCopyBuffer is much slower on some GPUs and would flatter
// the codec).
type CopyOp struct{ recorded }

// PrepareCopy records a copy of n bytes (a multiple of 16, 16-byte aligned offsets) from src to dst.
func (b *Backend) PrepareCopy(src, dst vk.BufferRange, n uint64) (*CopyOp, error) {
	if n%16 != 0 || src.Offset%16 != 0 || dst.Offset%16 != 0 || n/16 > 1<<32-1 {
		return nil, invalid("copy of %d bytes: sizes and offsets must be multiples of 16", n)
	}
	if err := within(src, 0, n, "copy source"); err != nil {
		return nil, err
	}
	if err := within(dst, 0, n, "copy destination"); err != nil {
		return nil, err
	}
	s, err := b.opSession()
	if err != nil {
		return nil, err
	}
	op := &CopyOp{recorded{b: b, s: s}}
	fail := func(err error) (*CopyOp, error) { op.Close(); return nil, err }
	pipe, err := b.pipeline("copy", uint32(b.o.WorkGroup), 0)
	if err != nil {
		return fail(err)
	}
	bd, err := s.bind(b, pipe, bufView(src, 0, n).l, bufView(dst, 0, n).l)
	if err != nil {
		return fail(err)
	}
	if err := op.beginTimed(2); err != nil {
		return fail(err)
	}
	cmd := s.cmd
	var pw pushWriter
	groups := min(uint64(b.groups)*4, (n/16+uint64(b.o.WorkGroup)-1)/uint64(b.o.WorkGroup))
	// Offsets are folded into the bindings: aligned to 256 they start exactly at the data only when the caller's
	// offsets are; keep it simple and demand that.
	if src.Offset%regionAlign != 0 || dst.Offset%regionAlign != 0 {
		return fail(invalid("copy offsets must be multiples of %d", regionAlign))
	}
	cmd.Dispatch(pipe, bd, pw.u32(uint32(n/16)).b, uint32(max(groups, 1)), 1, 1)
	cmd.Barrier()
	cmd.Timestamp(op.qp, 1)
	if err := cmd.End(); err != nil {
		return fail(err)
	}
	return op, nil
}

// Run copies once.
func (op *CopyOp) Run(ctx context.Context) error {
	if err := op.submitWith(nil, nil); err != nil {
		return err
	}
	return op.finish(ctx)
}
