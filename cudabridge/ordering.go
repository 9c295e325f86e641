package cudabridge

import (
	"context"

	"github.com/vkzip/vkzip/vk"
)

// GPU-side ordering of a codec's prepared operations. A prepared encode or
// decode runs as one queue submission; to chain CUDA work → encode → CUDA
// work with no host wait, that submission must wait on and signal timeline
// semaphores. An op offers this when it implements AsyncEncodeOp /
// AsyncDecodeOp; otherwise StartEncode/StartDecode fall back to host
// ordering (a host wait on the semaphores, a plain Run, host signals) and
// say so in Ordering. The bridge sees the codec only through these
// interfaces (vkcodec's EncodeOp and DecodeOp satisfy EncodeOp/DecodeOp).

// EncodeOp is a prepared encode: Run executes it and returns the body
// length.
type EncodeOp interface {
	Run(ctx context.Context) (uint64, error)
}

// DecodeOp is a prepared decode: Run executes it and returns its verdict.
type DecodeOp interface {
	Run(ctx context.Context) error
}

// AsyncEncodeOp is what an EncodeOp needs for GPU-side ordering.
type AsyncEncodeOp interface {
	// SubmitWith queues the recorded encode: it starts once every wait
	// semaphore reached its value and signals every signal value when
	// done. It does not block.
	SubmitWith(waits, signals []vk.SemaphoreValue) error
	// Finish waits for the submission on the host and returns the body
	// length (what Run returns).
	Finish(ctx context.Context) (uint64, error)
}

// AsyncDecodeOp is what a DecodeOp needs for GPU-side ordering.
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
	// signalled (an op without SubmitWith/Finish).
	OrderingHost Ordering = "host"
)

// GPUOrdered reports whether ops of the dynamic types of e and d are
// ordered on the GPU by StartEncode/StartDecode (both implement the Async
// interfaces). e and d may be typed nil pointers: only their types count.
func GPUOrdered(e EncodeOp, d DecodeOp) bool {
	_, okE := e.(AsyncEncodeOp)
	_, okD := d.(AsyncDecodeOp)
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
func StartEncode(ctx context.Context, op EncodeOp, waits, signals []vk.SemaphoreValue) (*Run, error) {
	if a, ok := op.(AsyncEncodeOp); ok {
		if err := a.SubmitWith(waits, signals); err != nil {
			return nil, err
		}
		return &Run{ordering: OrderingGPU, finish: a.Finish}, nil
	}
	return hostOrdered(ctx, waits, signals, op.Run), nil
}

// StartDecode is StartEncode for a prepared decode.
func StartDecode(ctx context.Context, op DecodeOp, waits, signals []vk.SemaphoreValue) (*Run, error) {
	if a, ok := op.(AsyncDecodeOp); ok {
		if err := a.SubmitWith(waits, signals); err != nil {
			return nil, err
		}
		return &Run{ordering: OrderingGPU, finish: func(ctx context.Context) (uint64, error) { return 0, a.Finish(ctx) }}, nil
	}
	return hostOrdered(ctx, waits, signals, func(ctx context.Context) (uint64, error) { return 0, op.Run(ctx) }), nil
}
