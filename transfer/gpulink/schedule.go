package gpulink

import (
	"context"
	"fmt"
	"time"
)

// engine is the two GPUs and the link between them, as the pipeline drives them. Chunk k uses body slot k % slots()
// on both GPUs. Semaphore values are numbered per run: chunk k's are k+1 (the engine adds the base of its run), and
// a wait for 0 is no wait. Every call but the finishes only queues work; the finishes block on the host.
type engine interface {
	chunks() int
	slots() int
	// submitEncode queues the encode of chunk k on GPU 0 into its slot's body buffer, to start once the slot's
	// previous body has left (sent ≥ waitSent); it signals encoded = k+1 when done.
	submitEncode(k int, waitSent uint64) error
	// finishEncode waits for chunk k's encode and returns its body length in bytes.
	finishEncode(ctx context.Context, k int) (uint64, error)
	// send queues the transfer of chunk k's n body bytes: GPU 0's stream waits encoded ≥ k+1, GPU 1's stream waits
	// decoded ≥ waitDecoded (its slot's previous body has been decoded), then one NCCL group sends and receives, and
	// the streams signal sent = k+1 (GPU 0) and received = k+1 (GPU 1).
	send(k int, n, waitDecoded uint64) error
	// submitDecode queues the decode of chunk k's n body bytes on GPU 1 into its place in the output, to start once
	// received ≥ k+1; it signals decoded = k+1 when done.
	submitDecode(k int, n uint64) error
	// finishDecode waits for chunk k's decode and returns its verdict.
	finishDecode(ctx context.Context, k int) error
	// abort releases every wait queued on either GPU (the semaphores jump far ahead), so that queued work drains.
	// Safe to call more than once and from another goroutine; the engine is unusable afterwards.
	abort()
}

// drainTimeout bounds the wait for queued work after a failure (the work has been released by abort).
var drainTimeout = 30 * time.Second

// runPipeline moves every chunk through encode → send → decode with slots() chunks in flight:
//
//	GPU 0 (Vulkan):  encode k+1 … k+S-1 queued behind encode k; encode k+S waits for sent ≥ k+1
//	link (NCCL):     send/recv k after encoded ≥ k+1 and decoded ≥ k+1-S (slot free on GPU 1)
//	GPU 1 (Vulkan):  decode k after received ≥ k+1
//
// so the encode of later chunks, the transfer of chunk k and the decode of earlier chunks overlap, and a slot's
// body buffer on either GPU is rewritten only after the GPU-side signal that its previous content was consumed. The
// host waits only for what it must know: each body's length (the receive is posted with it) and each decode's
// verdict; it waits for the decode of chunk k-S before it posts the transfer of chunk k, so NCCL's kernels never
// spin on a receive held back by a busy slot. Every wait is queued after the work that signals it, so there is no
// cycle. On failure (or when ctx ends) the engine is aborted and everything queued is finished before returning.
func runPipeline(ctx context.Context, e engine) (err error) {
	K, S := e.chunks(), e.slots()
	if K <= 0 || S <= 0 {
		return fmt.Errorf("gpulink: pipeline of %d chunks with %d slots", K, S)
	}
	var encSub, encFin, decSub, decFin int // operations [0, sub) queued, [0, fin) finished
	stop := context.AfterFunc(ctx, e.abort)
	defer func() {
		stop()
		if err == nil {
			return
		}
		e.abort()
		dctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
		defer cancel()
		for ; encFin < encSub; encFin++ {
			e.finishEncode(dctx, encFin)
		}
		for ; decFin < decSub; decFin++ {
			e.finishDecode(dctx, decFin)
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
	}()
	for ; encSub < min(S, K); encSub++ {
		if err := e.submitEncode(encSub, 0); err != nil {
			return fmt.Errorf("queueing the encode of chunk %d: %w", encSub, err)
		}
	}
	for k := 0; k < K; k++ {
		n, err := e.finishEncode(ctx, k)
		encFin++
		if err != nil {
			return fmt.Errorf("encode of chunk %d: %w", k, err)
		}
		var waitDecoded uint64
		if k >= S {
			err := e.finishDecode(ctx, k-S)
			decFin++
			if err != nil {
				return fmt.Errorf("decode of chunk %d: %w", k-S, err)
			}
			waitDecoded = uint64(k - S + 1)
		}
		if err := e.send(k, n, waitDecoded); err != nil {
			return fmt.Errorf("sending chunk %d: %w", k, err)
		}
		if err := e.submitDecode(k, n); err != nil {
			return fmt.Errorf("queueing the decode of chunk %d: %w", k, err)
		}
		decSub++
		if encSub < K {
			// encSub == k+S: its slot is chunk k's, free once chunk k has been sent.
			if err := e.submitEncode(encSub, uint64(k+1)); err != nil {
				return fmt.Errorf("queueing the encode of chunk %d: %w", encSub, err)
			}
			encSub++
		}
	}
	for decFin < K {
		k := decFin
		err := e.finishDecode(ctx, k)
		decFin++
		if err != nil {
			return fmt.Errorf("decode of chunk %d: %w", k, err)
		}
	}
	return nil
}
