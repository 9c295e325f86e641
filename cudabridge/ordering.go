package cudabridge

import (
	"context"

	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/vk"
)

// GPU-side ordering of vkcodec operations. A prepared EncodeOp/DecodeOp
// runs as one queue submission; to chain CUDA work → encode → CUDA work
// with no host wait, that submission must wait on and signal timeline
// semaphores. vkcodec's ops offer this when they implement AsyncEncodeOp /
// AsyncDecodeOp; until then StartEncode/StartDecode fall back to host
// ordering (a host wait on the semaphores, a plain Run, host signals) and
// say so in Ordering.

// AsyncEncodeOp is what *vkcodec.EncodeOp needs for GPU-side ordering.
type AsyncEncodeOp interface {
	// SubmitWith queues the recorded encode: it starts once every wait
	// semaphore reached its value and signals every signal value when
	// done. It does not block.
	SubmitWith(waits, signals []vk.SemaphoreValue) error
	// Finish waits for the submission on the host and returns the body
	// length (what Run returns).
	Finish(ctx context.Context) (uint64, error)
}

// AsyncDecodeOp is what *vkcodec.DecodeOp needs for GPU-side ordering.
type AsyncDecodeOp interface {
	SubmitWith(waits, signals []vk.SemaphoreValue) error
	// Finish waits for the submission and returns Run's verdict.
	Finish(ctx context.Context) error
}

// Ordering says how a run was ordered against its semaphores.
type Ordering string

const (
	// OrderingGPU: the Vulkan submission itself waited and signalled.
	OrderingGPU Ordering = "gpu"
	// OrderingHost: the host waited for the semaphores, ran the op and
	// signalled (vkcodec without SubmitWith/Finish).
	OrderingHost Ordering = "host"
)

// GPUOrdering reports whether this build's vkcodec supports GPU ordering.
func GPUOrdering() bool {
	var e *vkcodec.EncodeOp
	var d *vkcodec.DecodeOp
	_, okE := any(e).(AsyncEncodeOp)
	_, okD := any(d).(AsyncDecodeOp)
	return okE && okD
}

// Run is an encode or decode in flight.
type Run struct {
	ordering Ordering
	finish   func(ctx context.Context) (uint64, error)
	done     chan struct{} // host fallback: closed when the goroutine is done
	n        uint64
	err      error
}

// Ordering is how this run is ordered.
func (r *Run) Ordering() Ordering { return r.ordering }

// Wait waits for the run and returns the body length (encode) or 0.
func (r *Run) Wait(ctx context.Context) (uint64, error) {
	if r.finish != nil {
		return r.finish(ctx)
	}
	select {
	case <-r.done:
		return r.n, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// hostOrdered runs op on a goroutine after host waits, then signals.
func hostOrdered(ctx context.Context, waits, signals []vk.SemaphoreValue, op func(context.Context) (uint64, error)) *Run {
	r := &Run{ordering: OrderingHost, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for _, w := range waits {
			if r.err = w.Sem.Wait(ctx, w.Value); r.err != nil {
				return
			}
		}
		if r.n, r.err = op(ctx); r.err != nil {
			return
		}
		for _, s := range signals {
			if r.err = s.Sem.Signal(s.Value); r.err != nil {
				return
			}
		}
	}()
	return r
}

// StartEncode runs a prepared encode after waits and signals signals when
// it completed. With GPU ordering it only queues the submission; in the
// host fallback ctx bounds the host waits.
func StartEncode(ctx context.Context, op *vkcodec.EncodeOp, waits, signals []vk.SemaphoreValue) (*Run, error) {
	if a, ok := any(op).(AsyncEncodeOp); ok {
		if err := a.SubmitWith(waits, signals); err != nil {
			return nil, err
		}
		return &Run{ordering: OrderingGPU, finish: a.Finish}, nil
	}
	return hostOrdered(ctx, waits, signals, op.Run), nil
}

// StartDecode is StartEncode for a prepared decode.
func StartDecode(ctx context.Context, op *vkcodec.DecodeOp, waits, signals []vk.SemaphoreValue) (*Run, error) {
	if a, ok := any(op).(AsyncDecodeOp); ok {
		if err := a.SubmitWith(waits, signals); err != nil {
			return nil, err
		}
		return &Run{ordering: OrderingGPU, finish: func(ctx context.Context) (uint64, error) { return 0, a.Finish(ctx) }}, nil
	}
	return hostOrdered(ctx, waits, signals, func(ctx context.Context) (uint64, error) { return 0, op.Run(ctx) }), nil
}
