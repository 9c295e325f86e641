package vkcodec

import (
	"context"

	"github.com/vkzip/vkzip/shaders"
	"github.com/vkzip/vkzip/vk"
)

// CopyOp copies bytes between device buffers with the 16-byte copy kernel: the bandwidth roofline the codec is
// measured against in the same run (a transfer-queue vkCmdCopyBuffer is much slower on some GPUs and would flatter
// the codec).
type CopyOp struct{ recorded }

// CopyShape is a profiling variant of the copy kernel: each unit reads Reads and writes Writes 16-byte vectors, one
// stream per vector or (Contiguous) consecutive vectors of one stream, so that a codec's mix of reads and writes can
// be timed with none of its work (vkzip bench --copy-shape). The zero value is the roofline's copy.
type CopyShape struct {
	Reads, Writes int
	Contiguous    bool
	Unroll        int // units each thread loads before it stores them (0: 1)
}

func (s CopyShape) norm() CopyShape {
	if s.Reads <= 0 || s.Writes <= 0 {
		return CopyShape{Reads: 1, Writes: 1}
	}
	return s
}

// Traffic is the bytes a copy of this shape over n bytes reads and writes: units of max(Reads, Writes) vectors fit
// n bytes on the larger side.
func (s CopyShape) Traffic(n uint64) uint64 {
	s = s.norm()
	return n / 16 / uint64(max(s.Reads, s.Writes)) * 16 * uint64(s.Reads+s.Writes)
}

// PrepareCopy records a copy of n bytes (a multiple of 16, 16-byte aligned offsets) from src to dst.
func (b *Backend) PrepareCopy(src, dst vk.BufferRange, n uint64) (*CopyOp, error) {
	return b.PrepareCopyShaped(src, dst, n, CopyShape{})
}

// PrepareCopyShaped records a copy of the given shape within n bytes of src and of dst.
func (b *Backend) PrepareCopyShaped(src, dst vk.BufferRange, n uint64, shape CopyShape) (*CopyOp, error) {
	shape = shape.norm()
	if shape.Reads > 8 || shape.Writes > 8 || shape.Unroll < 0 || shape.Unroll > 8 {
		return nil, invalid("copy shape %+v: at most 8 vectors a side and 8 units per invocation", shape)
	}
	if n%16 != 0 || src.Offset%16 != 0 || dst.Offset%16 != 0 || n/16 > 1<<32-1 {
		return nil, invalid("copy of %d bytes: sizes and offsets must be multiples of 16", n)
	}
	if err := within(src, 0, n, "copy source"); err != nil {
		return nil, err
	}
	if err := within(dst, 0, n, "copy destination"); err != nil {
		return nil, err
	}
	units := n / 16 / uint64(max(shape.Reads, shape.Writes))
	// Offsets are folded into the bindings: aligned to 256 they start exactly at the data only when the caller's
	// offsets are; keep it simple and demand that.
	if src.Offset%regionAlign != 0 || dst.Offset%regionAlign != 0 {
		return nil, invalid("copy offsets must be multiples of %d", regionAlign)
	}
	kk := keyOf(kCopy, uint32(b.t.WorkGroup)).with("R", uint32(shape.Reads)).with("W", uint32(shape.Writes)).
		with("CONTIGUOUS", b2u(shape.Contiguous)).with("U", uint32(max(shape.Unroll, 1)))
	groups := min(uint64(b.groups)*4, (units+uint64(b.t.WorkGroup)-1)/uint64(b.t.WorkGroup))
	return newOp(b, func(r recorded) *CopyOp { return &CopyOp{r} }, func(op *CopyOp) error {
		if err := op.beginTimed(2); err != nil {
			return err
		}
		pc := shaders.CopyPush{Count: uint32(units)}
		rec := &recorder{ctx: context.Background(), b: b, s: op.s}
		if err := rec.dispatch(kk, shaders.PushBytes(&pc), uint32(max(groups, 1)), bufView(src, 0, n).l,
			bufView(dst, 0, n).l); err != nil {
			return err
		}
		op.s.cmd.Barrier()
		op.s.cmd.Timestamp(op.qp, 1)
		return op.s.cmd.End()
	})
}

// Run copies once.
func (op *CopyOp) Run(ctx context.Context) error {
	if err := op.submitWith(nil, nil); err != nil {
		return err
	}
	return op.finish(ctx)
}
