package vkcodec

import (
	"context"
	"encoding/binary"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/shaders"
	"github.com/vkzip/vkzip/vk"
)

// MaxExpHistValues bounds one histogram: the kernel's value count and its counts are 32-bit.
const MaxExpHistValues = 1<<32 - 1

// ExpHistOp counts the exponents of BF16 values in a device buffer (shaders/exphist.comp): the counts
// codec.ExpHistogram gives on the host, from which codec.CodebookFromHistogram picks a per-encode codebook, so a
// tensor in device memory is calibrated without its values crossing to the host. Only the 256 counts come back.
// Each run zeroes the counts on the device before it counts.
type ExpHistOp struct {
	recorded
	hist staged // 256 32-bit counts
}

// histBins is the size in bytes of the kernel's counts.
const histBins = 4 * 256

// PrepareExpHist records the histogram of the n BF16 values at src (a 4-byte aligned offset; the range holds 2n
// bytes rounded up to a word, which the kernel reads and no further).
func (b *Backend) PrepareExpHist(ctx context.Context, src vk.BufferRange, n uint64) (*ExpHistOp, error) {
	if n == 0 || n > MaxExpHistValues {
		return nil, invalid("histogram of %d values: between 1 and %d", n, uint64(MaxExpHistValues))
	}
	if src.Offset%4 != 0 {
		return nil, invalid("histogram source offset %d is not a multiple of 4", src.Offset)
	}
	bytes := layout.Align4(2 * n)
	if err := within(src, 0, bytes, "histogram source"); err != nil {
		return nil, err
	}
	v := bufView(src, 0, bytes)
	if v.l.size > b.slabMax {
		return nil, errTooBig(v.l.size, b.slabMax)
	}
	wg := uint32(b.t.WorkGroup)
	groups := max(b.gridOf((n/2+uint64(wg)-1)/uint64(wg)), 1)
	pc := &shaders.ExpHistPush{N: uint32(n), SrcBase: v.words()}
	return newOp(b, func(r recorded) *ExpHistOp { return &ExpHistOp{recorded: r} }, func(op *ExpHistOp) error {
		var err error
		if op.hist, err = op.s.allocOut(b, histBins); err != nil {
			return err
		}
		bins := op.hist.dev
		p := &plan{oneSpan: true, passes: []func(*recorder) error{func(rec *recorder) error {
			return rec.dispatch(keyOf(kExpHist, wg), shaders.PushBytes(pc), groups, v.l, bins)
		}}}
		return op.recordTimed(ctx, []*plan{p}, op.hist, func(cmd *vk.Commands) {
			cmd.FillBuffer(bins.buf, bins.off, bins.size, 0)
		}, nil)
	})
}

// Run counts once.
func (op *ExpHistOp) Run(ctx context.Context) (codec.ExpHistogram, error) {
	if err := op.SubmitWith(nil, nil); err != nil {
		return codec.ExpHistogram{}, err
	}
	return op.Finish(ctx)
}

// SubmitWith queues the recorded histogram without waiting, after waits and signalling signals; Finish must follow
// before the next Run or SubmitWith.
func (op *ExpHistOp) SubmitWith(waits, signals []vk.SemaphoreValue) error {
	return op.submitWith(waits, signals)
}

// Finish waits for the submission of SubmitWith and returns the counts.
func (op *ExpHistOp) Finish(ctx context.Context) (codec.ExpHistogram, error) {
	var h codec.ExpHistogram
	if err := op.finish(ctx); err != nil {
		return h, err
	}
	op.b.dev.CountReadback(histBins)
	w := op.hist.host.bytes()
	for e := range h {
		h[e] = uint64(binary.LittleEndian.Uint32(w[4*e:]))
	}
	return h, nil
}
