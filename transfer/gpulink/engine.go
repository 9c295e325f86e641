package gpulink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/vk"
)

var errAborted = errors.New("gpulink: the transfer was aborted")

// released is the value abort sets every semaphore to: beyond any value a run waits for.
const released = 1 << 62

// mover is the link half of the engine: it queues the move of one body from GPU 0 to GPU 1, ordered by the
// semaphores (NCCL on CUDA streams in ncclMover; the tests use a host copy).
type mover interface {
	// move queues: wait encoded ≥ encV on GPU 0 and decoded ≥ decV on GPU 1 (0: no wait), move n bytes from body
	// slot to body slot, then signal sent = v on GPU 0 and received = v on GPU 1.
	move(slot int, n, encV, decV, v uint64) error
	// idle waits until every queued move has completed.
	idle(ctx context.Context) error
}

// buffers are the Vulkan side of what the engine works on: the tensor on GPU 0, its place on GPU 1, the body slots,
// and the four timeline semaphores (encoded and sent on GPU 0, received and decoded on GPU 1).
type buffers struct {
	in0, out1    *vk.Buffer
	body0, body1 []*vk.Buffer
	encoded      *vk.Semaphore // GPU 0, Vulkan → link: body k is complete
	sent         *vk.Semaphore // GPU 0, link → Vulkan: body k has left its slot
	received     *vk.Semaphore // GPU 1, link → Vulkan: body k has arrived
	decoded      *vk.Semaphore // GPU 1, Vulkan → link: body k has been decoded (its slot is free)
}

func (b *buffers) sems() []*vk.Semaphore {
	return []*vk.Semaphore{b.encoded, b.sent, b.received, b.decoded}
}

// vkEngine is runPipeline's engine on two GPUs: vkcodec on each, a mover between them.
type vkEngine struct {
	b0, b1 *vkcodec.Backend
	bufs   buffers
	mv     mover

	size, chunk uint64
	K, S        int
	shift       uint
	cb          codec.Codebook
	checksums   bool

	enc    []*vkcodec.EncodeOp // one per chunk, prepared once
	dec    []*vkcodec.DecodeOp // one per chunk, for the body length it was prepared for
	decLen []uint64
	base   uint64 // semaphore value before this run

	aborted     atomic.Bool
	abortOnce   sync.Once
	stopRelease chan struct{}
	released    sync.WaitGroup
	st          runStats
}

// runStats are one compressed run's host-side and GPU-side times.
type runStats struct {
	bodyBytes      uint64
	encGPU, decGPU time.Duration // sums of the kernels' timestamps
	waitEnc        time.Duration // host blocked for encodes to finish
	waitDec        time.Duration // host blocked for decodes to finish
	enqueue        time.Duration // host time queueing moves (NCCL group calls and stream waits)
	prepare        time.Duration // host time preparing decodes for new body lengths
	prepares       int
}

func pad256(n uint64) uint64 { return (n + 255) &^ 255 }

// slots is how many body buffers a transfer of size bytes in chunks of chunk bytes uses, and their size.
func slotsFor(size, chunk uint64, inflight int, shift uint) (int, uint64) {
	K := int((size + chunk - 1) / chunk)
	return min(inflight, K), pad256(layout.SZ4{N: chunk / 2, Shift: shift}.MaxBodySize())
}

// newVKEngine prepares every chunk's encode (set-up, not timed). bufs must hold: in0 and out1 of at least
// pad256(size) bytes, len(body0) == len(body1) == the slots of slotsFor, each of its size.
func newVKEngine(ctx context.Context, b0, b1 *vkcodec.Backend, bufs buffers, mv mover, size, chunk uint64, shift uint,
	cb codec.Codebook, checksums bool) (e *vkEngine, err error) {
	K := int((size + chunk - 1) / chunk)
	e = &vkEngine{b0: b0, b1: b1, bufs: bufs, mv: mv, size: size, chunk: chunk, K: K, S: len(bufs.body0),
		shift: shift, cb: cb, checksums: checksums, enc: make([]*vkcodec.EncodeOp, K), dec: make([]*vkcodec.DecodeOp, K),
		decLen: make([]uint64, K)}
	if e.S == 0 || len(bufs.body1) != e.S {
		return nil, fmt.Errorf("gpulink: %d and %d body slots", len(bufs.body0), len(bufs.body1))
	}
	for k := 0; k < K; k++ {
		src := vk.BufferRange{Buf: bufs.in0, Offset: uint64(k) * chunk}
		dst := vk.BufferRange{Buf: bufs.body0[k%e.S]}
		if e.enc[k], err = b0.PrepareEncode(ctx, vkcodec.EncodeSpec{
			Format: layout.FormatSplitZip4, Src: src, N: e.values(k), Shift: shift, Codebook: &cb,
			Checksums: checksums, Dst: dst,
		}); err != nil {
			e.close()
			return nil, fmt.Errorf("preparing the encode of chunk %d: %w", k, err)
		}
	}
	return e, nil
}

// values is the number of BF16 values of chunk k.
func (e *vkEngine) values(k int) uint64 {
	lo := uint64(k) * e.chunk
	return (min(lo+e.chunk, e.size) - lo) / 2
}

// prepared counts the codec operations the engine keeps.
func (e *vkEngine) prepared() int {
	n := 0
	for k := range e.enc {
		if e.enc[k] != nil {
			n++
		}
		if e.dec[k] != nil {
			n++
		}
	}
	return n
}

func (e *vkEngine) chunks() int { return e.K }
func (e *vkEngine) slots() int  { return e.S }

func (e *vkEngine) v(i uint64) uint64 { return e.base + i }

func (e *vkEngine) submitEncode(k int, waitSent uint64) error {
	if e.aborted.Load() {
		return errAborted
	}
	var waits []vk.SemaphoreValue
	if waitSent > 0 {
		waits = append(waits, vk.SemaphoreValue{Sem: e.bufs.sent, Value: e.v(waitSent)})
	}
	return e.enc[k].SubmitWith(waits, []vk.SemaphoreValue{{Sem: e.bufs.encoded, Value: e.v(uint64(k) + 1)}})
}

func (e *vkEngine) finishEncode(ctx context.Context, k int) (uint64, error) {
	t := time.Now()
	n, err := e.enc[k].Finish(ctx)
	e.st.waitEnc += time.Since(t)
	e.st.encGPU += e.enc[k].GPUTime()
	e.st.bodyBytes += n
	return n, err
}

func (e *vkEngine) send(k int, n, waitDecoded uint64) error {
	if e.aborted.Load() {
		return errAborted
	}
	t := time.Now()
	defer func() { e.st.enqueue += time.Since(t) }()
	var decV uint64
	if waitDecoded > 0 {
		decV = e.v(waitDecoded)
	}
	return e.mv.move(k%e.S, n, e.v(uint64(k)+1), decV, e.v(uint64(k)+1))
}

// decodeOp returns chunk k's decode for a body of n bytes: the one prepared in an earlier run when the length is
// the same (the data is), else a new one (the push constants hold the length).
func (e *vkEngine) decodeOp(k int, n uint64) (*vkcodec.DecodeOp, error) {
	if e.dec[k] != nil && e.decLen[k] == n {
		return e.dec[k], nil
	}
	if e.dec[k] != nil {
		e.dec[k].Close()
		e.dec[k] = nil
	}
	t := time.Now()
	body := vk.BufferRange{Buf: e.bufs.body1[k%e.S]}
	dst := vk.BufferRange{Buf: e.bufs.out1, Offset: uint64(k) * e.chunk}
	op, err := e.b1.PrepareDecode(context.Background(), vkcodec.DecodeSpec{
		Format: layout.FormatSplitZip4, Body: body, BodyLen: n, N: e.values(k), Shift: e.shift, Codebook: &e.cb,
		Checksums: e.checksums, Dst: dst,
	})
	e.st.prepare += time.Since(t)
	e.st.prepares++
	if err != nil {
		return nil, err
	}
	e.dec[k], e.decLen[k] = op, n
	return op, nil
}

func (e *vkEngine) submitDecode(k int, n uint64) error {
	if e.aborted.Load() {
		return errAborted
	}
	op, err := e.decodeOp(k, n)
	if err != nil {
		return err
	}
	v := e.v(uint64(k) + 1)
	return op.SubmitWith([]vk.SemaphoreValue{{Sem: e.bufs.received, Value: v}},
		[]vk.SemaphoreValue{{Sem: e.bufs.decoded, Value: v}})
}

func (e *vkEngine) finishDecode(ctx context.Context, k int) error {
	t := time.Now()
	err := e.dec[k].Finish(ctx)
	e.st.waitDec += time.Since(t)
	e.st.decGPU += e.dec[k].GPUTime()
	return err
}

// abort signals every semaphore from the host far beyond any value a run uses: queued Vulkan submissions and
// queued moves all go ahead (on whatever the buffers hold) and drain. A signal still queued on a GPU may write its
// own, lower value afterwards, so the release is repeated, with growing values, until close.
func (e *vkEngine) abort() {
	e.abortOnce.Do(func() {
		e.aborted.Store(true)
		e.stopRelease = make(chan struct{})
		e.released.Add(1)
		go func() {
			defer e.released.Done()
			for i := uint64(0); ; i++ {
				for _, s := range e.bufs.sems() {
					s.Signal(released + i)
				}
				select {
				case <-e.stopRelease:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}()
	})
}

// startRun begins a run: semaphore values continue from the previous run's, the stats start at zero.
func (e *vkEngine) startRun() error {
	if e.aborted.Load() {
		return errAborted
	}
	e.st = runStats{}
	return nil
}

// endRun waits until the link is idle and moves the semaphore base past this run.
func (e *vkEngine) endRun(ctx context.Context) error {
	if err := e.mv.idle(ctx); err != nil {
		return err
	}
	e.base += uint64(e.K)
	return nil
}

// close waits for the devices and releases the prepared operations (not the buffers).
func (e *vkEngine) close() {
	if e == nil {
		return
	}
	// After this no abort starts, and one in progress has finished setting stopRelease.
	e.abortOnce.Do(func() {})
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	e.mv.idle(ctx)
	cancel()
	e.b0.VK().WaitIdle()
	e.b1.VK().WaitIdle()
	if e.stopRelease != nil {
		close(e.stopRelease)
		e.released.Wait()
	}
	for _, op := range e.enc {
		if op != nil {
			op.Close()
		}
	}
	for _, op := range e.dec {
		if op != nil {
			op.Close()
		}
	}
}
