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
	"github.com/vkzip/vkzip/cudabridge"
	"github.com/vkzip/vkzip/cudabridge/nccl"
	"github.com/vkzip/vkzip/vk"
)

var errAborted = errors.New("gpulink: the transfer was aborted")

// released is the value abort sets every semaphore to: beyond any value a run waits for.
const released = 1 << 62

// ncclEngine is the engine of runPipeline on two real GPUs: vkcodec on each, NCCL between them, and the buffers and
// semaphores they share through cudabridge.
type ncclEngine struct {
	l      *link
	in0    *cudabridge.SharedBuffer // the tensor on GPU 0
	out1   *cudabridge.SharedBuffer // where it arrives on GPU 1
	body0  []*cudabridge.SharedBuffer
	body1  []*cudabridge.SharedBuffer
	sems   []*cudabridge.SharedSemaphore
	encSem *cudabridge.SharedSemaphore // GPU 0, Vulkan → CUDA: body k is complete
	sentS  *cudabridge.SharedSemaphore // GPU 0, CUDA → Vulkan: body k has left its slot
	recvS  *cudabridge.SharedSemaphore // GPU 1, CUDA → Vulkan: body k has arrived
	decS   *cudabridge.SharedSemaphore // GPU 1, Vulkan → CUDA: body k has been decoded (its slot is free)

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
	enqueue        time.Duration // host time in the NCCL group calls and stream waits
	prepare        time.Duration // host time preparing decodes for new body lengths
	prepares       int
}

func pad256(n uint64) uint64 { return (n + 255) &^ 255 }

// newEngine allocates the shared buffers and semaphores and prepares every chunk's encode (set-up, not timed).
func newEngine(ctx context.Context, l *link, size, chunk uint64, slots int, shift uint, cb codec.Codebook,
	checksums bool) (e *ncclEngine, err error) {
	K := int((size + chunk - 1) / chunk)
	e = &ncclEngine{l: l, size: size, chunk: chunk, K: K, S: min(slots, K), shift: shift, cb: cb, checksums: checksums,
		enc: make([]*vkcodec.EncodeOp, K), dec: make([]*vkcodec.DecodeOp, K), decLen: make([]uint64, K)}
	defer func() {
		if err != nil {
			e.close()
			e = nil
		}
	}()
	g0, g1 := l.g[0], l.g[1]
	shared := func(g *gpu, n uint64) (*cudabridge.SharedBuffer, error) {
		return cudabridge.NewSharedBuffer(g.cu, g.vk.VK(), pad256(n))
	}
	if e.in0, err = shared(g0, size); err != nil {
		return nil, fmt.Errorf("tensor buffer on GPU 0: %w", err)
	}
	if e.out1, err = shared(g1, size); err != nil {
		return nil, fmt.Errorf("tensor buffer on GPU 1: %w", err)
	}
	maxBody := layout.SZ4{N: chunk / 2, Shift: shift}.MaxBodySize()
	for i := 0; i < e.S; i++ {
		b0, err := shared(g0, maxBody)
		if err != nil {
			return nil, fmt.Errorf("body buffer on GPU 0: %w", err)
		}
		e.body0 = append(e.body0, b0)
		b1, err := shared(g1, maxBody)
		if err != nil {
			return nil, fmt.Errorf("body buffer on GPU 1: %w", err)
		}
		e.body1 = append(e.body1, b1)
	}
	for _, s := range []struct {
		g   *gpu
		dst **cudabridge.SharedSemaphore
	}{{g0, &e.encSem}, {g0, &e.sentS}, {g1, &e.recvS}, {g1, &e.decS}} {
		sem, err := cudabridge.NewSharedSemaphore(s.g.cu, s.g.vk.VK(), 0)
		if err != nil {
			return nil, fmt.Errorf("shared semaphore: %w", err)
		}
		*s.dst = sem
		e.sems = append(e.sems, sem)
	}
	for k := 0; k < K; k++ {
		src := vk.BufferRange{Buf: e.in0.VK, Offset: uint64(k) * chunk}
		dst := vk.BufferRange{Buf: e.body0[k%e.S].VK}
		if e.enc[k], err = g0.vk.PrepareEncode(ctx, src, e.values(k), shift, cb, checksums, dst); err != nil {
			return nil, fmt.Errorf("preparing the encode of chunk %d: %w", k, err)
		}
	}
	return e, nil
}

// values is the number of BF16 values of chunk k.
func (e *ncclEngine) values(k int) uint64 {
	lo := uint64(k) * e.chunk
	return (min(lo+e.chunk, e.size) - lo) / 2
}

func (e *ncclEngine) chunks() int { return e.K }
func (e *ncclEngine) slots() int  { return e.S }

func (e *ncclEngine) v(i uint64) uint64 { return e.base + i }

func (e *ncclEngine) submitEncode(k int, waitSent uint64) error {
	if e.aborted.Load() {
		return errAborted
	}
	var waits []vk.SemaphoreValue
	if waitSent > 0 {
		waits = append(waits, e.sentS.At(e.v(waitSent)))
	}
	return e.enc[k].SubmitWith(waits, []vk.SemaphoreValue{e.encSem.At(e.v(uint64(k) + 1))})
}

func (e *ncclEngine) finishEncode(ctx context.Context, k int) (uint64, error) {
	t := time.Now()
	n, err := e.enc[k].Finish(ctx)
	e.st.waitEnc += time.Since(t)
	e.st.encGPU += e.enc[k].GPUTime()
	e.st.bodyBytes += n
	return n, err
}

func (e *ncclEngine) send(k int, n, waitDecoded uint64) error {
	if e.aborted.Load() {
		return errAborted
	}
	t := time.Now()
	defer func() { e.st.enqueue += time.Since(t) }()
	g0, g1, slot := e.l.g[0], e.l.g[1], k%e.S
	if err := e.encSem.CU.Wait(g0.st, e.v(uint64(k)+1)); err != nil {
		return err
	}
	if waitDecoded > 0 {
		if err := e.decS.CU.Wait(g1.st, e.v(waitDecoded)); err != nil {
			return err
		}
	}
	err := e.l.lib.Group(
		nccl.Send(e.l.comms[0], e.body0[slot].Ptr, n, nccl.Uint8, 1, g0.st),
		nccl.Recv(e.l.comms[1], e.body1[slot].Ptr, n, nccl.Uint8, 0, g1.st))
	if err != nil {
		return err
	}
	if err := e.sentS.CU.Signal(g0.st, e.v(uint64(k)+1)); err != nil {
		return err
	}
	return e.recvS.CU.Signal(g1.st, e.v(uint64(k)+1))
}

// decodeOp returns chunk k's decode for a body of n bytes: the one prepared in an earlier run when the length is
// the same (the data is), else a new one (the push constants hold the length).
func (e *ncclEngine) decodeOp(k int, n uint64) (*vkcodec.DecodeOp, error) {
	if e.dec[k] != nil && e.decLen[k] == n {
		return e.dec[k], nil
	}
	if e.dec[k] != nil {
		e.dec[k].Close()
		e.dec[k] = nil
	}
	t := time.Now()
	body := vk.BufferRange{Buf: e.body1[k%e.S].VK}
	dst := vk.BufferRange{Buf: e.out1.VK, Offset: uint64(k) * e.chunk}
	op, err := e.l.g[1].vk.PrepareDecode(context.Background(), body, n, e.values(k), e.shift, e.cb, e.checksums, dst)
	e.st.prepare += time.Since(t)
	e.st.prepares++
	if err != nil {
		return nil, err
	}
	e.dec[k], e.decLen[k] = op, n
	return op, nil
}

func (e *ncclEngine) submitDecode(k int, n uint64) error {
	if e.aborted.Load() {
		return errAborted
	}
	op, err := e.decodeOp(k, n)
	if err != nil {
		return err
	}
	return op.SubmitWith([]vk.SemaphoreValue{e.recvS.At(e.v(uint64(k) + 1))},
		[]vk.SemaphoreValue{e.decS.At(e.v(uint64(k) + 1))})
}

func (e *ncclEngine) finishDecode(ctx context.Context, k int) error {
	t := time.Now()
	err := e.dec[k].Finish(ctx)
	e.st.waitDec += time.Since(t)
	e.st.decGPU += e.dec[k].GPUTime()
	return err
}

// abort signals every semaphore from the host far beyond any value a run uses: queued Vulkan submissions and CUDA
// stream waits all go ahead (on whatever the buffers hold) and drain. A signal still queued on a GPU may write its
// own, lower value afterwards, so the release is repeated, with growing values, until close.
func (e *ncclEngine) abort() {
	e.abortOnce.Do(func() {
		e.aborted.Store(true)
		e.stopRelease = make(chan struct{})
		e.released.Add(1)
		go func() {
			defer e.released.Done()
			for i := uint64(0); ; i++ {
				for _, s := range e.sems {
					s.VK.Signal(released + i)
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
func (e *ncclEngine) startRun() error {
	if e.aborted.Load() {
		return errAborted
	}
	e.st = runStats{}
	return nil
}

// endRun waits until both streams are idle and moves the semaphore base past this run.
func (e *ncclEngine) endRun(ctx context.Context) error {
	for _, g := range e.l.g {
		if err := syncStream(ctx, g.st); err != nil {
			return err
		}
	}
	e.base += uint64(e.K)
	return nil
}

// orderOutput makes GPU 1's stream wait until the last decode of the run wrote the output (before a CUDA read).
func (e *ncclEngine) orderOutput() error {
	return e.decS.CU.Wait(e.l.g[1].st, e.v(uint64(e.K)))
}

func (e *ncclEngine) close() {
	if e == nil {
		return
	}
	// After this no abort starts, and one in progress has finished setting stopRelease.
	e.abortOnce.Do(func() {})
	defer func() {
		if e.stopRelease != nil {
			close(e.stopRelease)
			e.released.Wait()
		}
		for _, s := range e.sems {
			s.Close()
		}
	}()
	for _, g := range e.l.g {
		if g.st != nil {
			g.st.Synchronize()
		}
		if g.vk != nil {
			g.vk.VK().WaitIdle()
		}
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
	for _, b := range append(append([]*cudabridge.SharedBuffer{e.in0, e.out1}, e.body0...), e.body1...) {
		if b != nil {
			b.Close()
		}
	}
}
