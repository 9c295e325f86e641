package gpulink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/synth"
)

// A simulated pair of GPUs for the pipeline's scheduling logic: in-order queues (goroutines) for the two Vulkan
// queues and the two CUDA streams, timeline semaphores in host memory, the real CPU codec for the bodies (so their
// lengths vary as on a GPU) and a rendezvous for the send/receive pair. It is not NCCL and not a GPU: it checks the
// schedule — slots reused only after their content was consumed, every wait queued after what signals it, values
// increasing — and delivers the bytes, so a wrong schedule shows up as a violation or a corrupt output.

const never = ^uint64(0) >> 1

type fakeSem struct {
	name string
	mu   sync.Mutex
	cond *sync.Cond
	v    uint64
	f    *fake
}

func newSem(f *fake, name string) *fakeSem {
	s := &fakeSem{name: name, f: f}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *fakeSem) signal(v uint64) {
	s.mu.Lock()
	if v <= s.v && s.v != never {
		s.f.violate("%s signalled %d after %d: timeline values must increase", s.name, v, s.v)
	}
	if v > s.v {
		s.v = v
	}
	s.cond.Broadcast()
	s.mu.Unlock()
}

func (s *fakeSem) wait(v uint64) {
	s.mu.Lock()
	for s.v < v {
		s.cond.Wait()
	}
	s.mu.Unlock()
}

func (s *fakeSem) value() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.v
}

// queue runs its work in order on one goroutine, as a GPU queue or stream does.
type queue struct{ ch chan func() }

func newQueue(wg *sync.WaitGroup) *queue {
	q := &queue{ch: make(chan func(), 1024)}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for f := range q.ch {
			f()
		}
	}()
	return q
}

type fake struct {
	t         *testing.T
	data, out []byte
	chunk     int
	K, S      int
	shift     uint
	cb        codec.Codebook
	cpu       *codec.CPUBackend
	rng       *rand.Rand
	rngMu     sync.Mutex
	maxDelay  time.Duration
	sendDelay time.Duration

	vk0, vk1, st0, st1 *queue
	wg                 sync.WaitGroup
	closeQueues        sync.Once

	encoded, sent, received, decoded *fakeSem
	body0, body1                     [][]byte
	// Each slot's buffer is locked while one operation touches it: the GPU memory model has no data races to
	// report, only torn or stale content, which the checks and the output comparison see.
	lock0, lock1 []sync.Mutex

	vmu         sync.Mutex
	violations  []string
	mu          sync.Mutex
	bodyLen     []uint64
	encQueued   []bool // host-side bookkeeping: what has been queued
	sendQueued  []bool
	decQueued   []bool
	sentDone    []bool // GPU-side: what has completed
	decDone     []bool
	encCh       []chan error
	decCh       []chan error
	outstanding atomic.Int64 // queued operations not yet finished by the host
	aborted     atomic.Bool

	// Faults.
	encErrAt, corruptAt int
	gate                chan struct{} // when set, every send waits for it
}

func newFake(t *testing.T, size, chunk, slots int, seed uint64) *fake {
	data := synth.KVLike(size/2, seed)
	if size%2 == 1 {
		data = append(data, 0x5a)
	}
	K := (size + chunk - 1) / chunk
	f := &fake{t: t, data: data, out: make([]byte, len(data)), chunk: chunk, K: K, S: slots,
		shift: 10, cb: synth.KVCodebook(), cpu: codec.NewCPUBackend(1), rng: rand.New(rand.NewPCG(seed, 7)),
		maxDelay: 300 * time.Microsecond, encErrAt: -1, corruptAt: -1,
		bodyLen: make([]uint64, K), encQueued: make([]bool, K), sendQueued: make([]bool, K), decQueued: make([]bool, K),
		sentDone: make([]bool, K), decDone: make([]bool, K), encCh: make([]chan error, K), decCh: make([]chan error, K)}
	for i := range f.out {
		f.out[i] = 0xEE
	}
	f.vk0, f.vk1, f.st0, f.st1 = newQueue(&f.wg), newQueue(&f.wg), newQueue(&f.wg), newQueue(&f.wg)
	f.encoded, f.sent = newSem(f, "encoded"), newSem(f, "sent")
	f.received, f.decoded = newSem(f, "received"), newSem(f, "decoded")
	maxBody := int(layout.SZ4{N: uint64(chunk / 2), Shift: f.shift}.MaxBodySize())
	for i := 0; i < slots; i++ {
		f.body0 = append(f.body0, make([]byte, maxBody))
		f.body1 = append(f.body1, make([]byte, maxBody))
	}
	f.lock0, f.lock1 = make([]sync.Mutex, slots), make([]sync.Mutex, slots)
	return f
}

func (f *fake) close() {
	f.abort()
	f.drain()
}

// drain waits for every operation queued on the simulated GPU queues to finish, as a device idle does. The
// engine's run returns once its last decode completed; a send queue may still be signalling its semaphore then.
func (f *fake) drain() {
	f.closeQueues.Do(func() {
		for _, q := range []*queue{f.vk0, f.vk1, f.st0, f.st1} {
			close(q.ch)
		}
	})
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		f.t.Error("the simulated queues did not drain")
	}
}

// violate records a broken rule; it takes its own lock, so callers may hold f.mu.
func (f *fake) violate(format string, args ...any) {
	f.vmu.Lock()
	f.violations = append(f.violations, fmt.Sprintf(format, args...))
	f.vmu.Unlock()
}

func (f *fake) violationList() []string {
	f.vmu.Lock()
	defer f.vmu.Unlock()
	return append([]string(nil), f.violations...)
}

func (f *fake) delay(scale time.Duration) {
	f.rngMu.Lock()
	d := time.Duration(f.rng.Int64N(int64(scale) + 1))
	f.rngMu.Unlock()
	time.Sleep(d)
}

func (f *fake) span(k int) (int, int) { return k * f.chunk, min((k+1)*f.chunk, len(f.data)) }

func (f *fake) chunks() int { return f.K }
func (f *fake) slots() int  { return f.S }

func (f *fake) submitEncode(k int, waitSent uint64) error {
	if f.aborted.Load() {
		return errors.New("aborted")
	}
	f.mu.Lock()
	if f.encQueued[k] {
		f.violate("encode %d queued twice", k)
	}
	if waitSent > 0 && !f.sendQueued[waitSent-1] {
		f.violate("encode %d waits for sent ≥ %d before that send was queued", k, waitSent)
	}
	f.encQueued[k] = true
	f.encCh[k] = make(chan error, 1)
	f.mu.Unlock()
	f.outstanding.Add(1)
	slot := k % f.S
	f.vk0.ch <- func() {
		f.sent.wait(waitSent)
		f.delay(f.maxDelay)
		f.mu.Lock()
		if k >= f.S && !f.sentDone[k-f.S] && !f.aborted.Load() {
			f.violate("encode %d overwrites slot %d on GPU 0 before chunk %d was sent", k, slot, k-f.S)
		}
		f.mu.Unlock()
		lo, hi := f.span(k)
		n := uint64((hi - lo) / 2)
		var err error
		switch {
		case f.aborted.Load(): // released by abort: the work is discarded
		case k == f.encErrAt:
			err = errors.New("injected encode failure")
		default:
			job := []codec.EncodeJob{{Format: layout.FormatSplitZip4, Src: f.data[lo : lo+2*int(n)], N: n, Shift: f.shift,
				Codebook: &f.cb, Checksums: true, Dst: f.body0[slot]}}
			f.lock0[slot].Lock()
			err = f.cpu.Encode(context.Background(), job)
			f.lock0[slot].Unlock()
			if err == nil {
				f.mu.Lock()
				f.bodyLen[k] = uint64(len(job[0].Out))
				f.mu.Unlock()
			}
		}
		f.encoded.signal(uint64(k + 1))
		f.encCh[k] <- err
	}
	return nil
}

func (f *fake) finishEncode(ctx context.Context, k int) (uint64, error) {
	defer f.outstanding.Add(-1)
	select {
	case err := <-f.encCh[k]:
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.bodyLen[k], err
	case <-ctx.Done():
		// A real Finish still waits for the GPU; so does this one once abort has released it.
		err := <-f.encCh[k]
		if err == nil {
			err = ctx.Err()
		}
		return 0, err
	}
}

func (f *fake) send(k int, n, waitDecoded uint64) error {
	if f.aborted.Load() {
		return errors.New("aborted")
	}
	f.mu.Lock()
	if !f.encQueued[k] {
		f.violate("send %d before its encode was queued", k)
	}
	if waitDecoded > 0 && !f.decQueued[waitDecoded-1] {
		f.violate("send %d waits for decoded ≥ %d before that decode was queued", k, waitDecoded)
	}
	if f.bodyLen[k] != n {
		f.violate("send %d of %d bytes, body has %d", k, n, f.bodyLen[k])
	}
	f.sendQueued[k] = true
	f.mu.Unlock()
	slot := k % f.S
	ready, copied := make(chan struct{}), make(chan struct{})
	gate := f.gate
	f.st0.ch <- func() {
		f.encoded.wait(uint64(k + 1))
		close(ready)
		<-copied
		f.mu.Lock()
		f.sentDone[k] = true
		f.mu.Unlock()
		f.sent.signal(uint64(k + 1))
	}
	f.st1.ch <- func() {
		f.decoded.wait(waitDecoded)
		<-ready
		if gate != nil {
			<-gate
		}
		f.delay(f.maxDelay)
		f.mu.Lock()
		if k >= f.S && !f.decDone[k-f.S] && !f.aborted.Load() {
			f.violate("receive %d overwrites slot %d on GPU 1 before chunk %d was decoded", k, slot, k-f.S)
		}
		f.mu.Unlock()
		// The copy spans a delay: a body changed meanwhile arrives torn.
		half := n / 2
		cp := func(lo, hi uint64) {
			if f.aborted.Load() {
				return
			}
			f.lock0[slot].Lock()
			f.lock1[slot].Lock()
			copy(f.body1[slot][lo:hi], f.body0[slot][lo:hi])
			if k == f.corruptAt && lo <= n/3 && n/3 < hi {
				f.body1[slot][n/3] ^= 0x10
			}
			f.lock1[slot].Unlock()
			f.lock0[slot].Unlock()
		}
		cp(0, half)
		time.Sleep(f.sendDelay)
		cp(half, n)
		close(copied)
		f.received.signal(uint64(k + 1))
	}
	return nil
}

func (f *fake) submitDecode(k int, n uint64) error {
	if f.aborted.Load() {
		return errors.New("aborted")
	}
	f.mu.Lock()
	if !f.sendQueued[k] {
		f.violate("decode %d queued before its send", k)
	}
	f.decQueued[k] = true
	f.decCh[k] = make(chan error, 1)
	f.mu.Unlock()
	f.outstanding.Add(1)
	slot := k % f.S
	f.vk1.ch <- func() {
		f.received.wait(uint64(k + 1))
		f.delay(f.maxDelay)
		lo, hi := f.span(k)
		nv := uint64((hi - lo) / 2)
		job := []codec.DecodeJob{{Name: fmt.Sprint("chunk ", k), Format: layout.FormatSplitZip4, Body: f.body1[slot][:n], N: nv,
			Shift: f.shift, Codebook: &f.cb, Checksums: true, Dst: f.out[lo : lo+2*int(nv)]}}
		var err error
		if !f.aborted.Load() {
			f.lock1[slot].Lock()
			err = f.cpu.Decode(context.Background(), job)
			f.lock1[slot].Unlock()
			if err == nil {
				err = job[0].Err
			}
		}
		if hi-lo > 2*int(nv) { // an odd trailing byte travels with the last chunk's slot, as raw data
			f.out[hi-1] = f.data[hi-1]
		}
		f.mu.Lock()
		f.decDone[k] = true
		f.mu.Unlock()
		f.decoded.signal(uint64(k + 1))
		f.decCh[k] <- err
	}
	return nil
}

func (f *fake) finishDecode(ctx context.Context, k int) error {
	defer f.outstanding.Add(-1)
	select {
	case err := <-f.decCh[k]:
		return err
	case <-ctx.Done():
		err := <-f.decCh[k]
		if err == nil {
			err = ctx.Err()
		}
		return err
	}
}

func (f *fake) abort() {
	if f.aborted.Swap(true) {
		return
	}
	for _, s := range []*fakeSem{f.encoded, f.sent, f.received, f.decoded} {
		s.signal(never)
	}
}

func (f *fake) check(t *testing.T) {
	t.Helper()
	for _, v := range f.violationList() {
		t.Error(v)
	}
	if n := f.outstanding.Load(); n != 0 {
		t.Errorf("%d queued operations were never finished", n)
	}
}

func runWithTimeout(t *testing.T, ctx context.Context, e engine) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- runPipeline(ctx, e) }()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("the pipeline hung (deadlock)")
		return nil
	}
}

func TestPipelineDelivers(t *testing.T) {
	for _, c := range []struct{ size, chunk, slots int }{
		{256 << 10, 32 << 10, 1},
		{256 << 10, 32 << 10, 2},
		{256<<10 + 2050, 32 << 10, 3}, // a short last chunk
		{256 << 10, 32 << 10, 4},
		{96 << 10, 32 << 10, 4}, // fewer chunks than slots
		{64 << 10, 64 << 10, 2}, // one chunk
		{1 << 20, 16 << 10, 5},  // many chunks
	} {
		t.Run(fmt.Sprintf("%d/%d/%d", c.size, c.chunk, c.slots), func(t *testing.T) {
			f := newFake(t, c.size, c.chunk, c.slots, uint64(c.size+c.slots))
			defer f.close()
			if err := runWithTimeout(t, context.Background(), f); err != nil {
				t.Fatal(err)
			}
			f.check(t)
			if !bytes.Equal(f.out, f.data[:len(f.out)]) {
				t.Error("output differs from the input")
			}
			f.drain()
			for _, s := range []*fakeSem{f.encoded, f.sent, f.received, f.decoded} {
				if v := s.value(); v != uint64(f.K) {
					t.Errorf("%s ends at %d, want %d", s.name, v, f.K)
				}
			}
		})
	}
}

// dropWaits is a wrong schedule: the same calls without the slot waits. The simulation must catch it.
type dropWaits struct{ *fake }

func (d dropWaits) submitEncode(k int, waitSent uint64) error { return d.fake.submitEncode(k, 0) }
func (d dropWaits) send(k int, n, waitDecoded uint64) error   { return d.fake.send(k, n, 0) }

func TestSimulationCatchesMissingWaits(t *testing.T) {
	f := newFake(t, 256<<10, 32<<10, 2, 3)
	defer f.close()
	f.sendDelay = 3 * time.Millisecond // transfers slower than encodes: a slot would be rewritten mid-send
	runWithTimeout(t, context.Background(), dropWaits{f})
	v := f.violationList()
	if len(v) == 0 && bytes.Equal(f.out, f.data) {
		t.Fatal("a schedule without slot waits went unnoticed")
	}
	t.Logf("%d violations, first: %v", len(v), v[:min(len(v), 1)])
}

func TestPipelineCorruptBody(t *testing.T) {
	f := newFake(t, 256<<10, 32<<10, 3, 5)
	defer f.close()
	f.corruptAt = 4
	err := runWithTimeout(t, context.Background(), f)
	if err == nil || !errors.Is(err, codec.ErrChecksum) && !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("a corrupted body: %v, want a codec checksum or corruption error", err)
	}
	if !bytes.Contains([]byte(err.Error()), []byte("decode of chunk 4")) {
		t.Errorf("error does not name the chunk: %v", err)
	}
	f.check(t)
}

func TestPipelineEncodeError(t *testing.T) {
	f := newFake(t, 256<<10, 32<<10, 3, 6)
	defer f.close()
	f.encErrAt = 5
	err := runWithTimeout(t, context.Background(), f)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("encode of chunk 5: injected encode failure")) {
		t.Fatalf("an encode failure: %v", err)
	}
	f.check(t)
}

// TestPipelineCancel: a transfer that never completes (the receive is held) ends when ctx does, and everything
// queued is drained.
func TestPipelineCancel(t *testing.T) {
	f := newFake(t, 256<<10, 32<<10, 2, 8)
	defer f.close()
	f.gate = make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	go func() { // released only later: the abort must not depend on it
		time.Sleep(500 * time.Millisecond)
		close(f.gate)
	}()
	start := time.Now()
	err := runWithTimeout(t, ctx, f)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled pipeline: %v", err)
	}
	if !f.aborted.Load() {
		t.Error("the engine was not aborted")
	}
	t.Logf("returned after %v", time.Since(start))
	f.check(t)
}

func TestPipelineRefusesEmpty(t *testing.T) {
	f := newFake(t, 64<<10, 32<<10, 2, 1)
	defer f.close()
	f.S = 0
	if err := runPipeline(context.Background(), f); err == nil {
		t.Error("a pipeline with no slots ran")
	}
}
