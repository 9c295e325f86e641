package gpulink

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/synth"
	"github.com/vkzip/vkzip/vk"
	"github.com/vkzip/vkzip/vk/vktest"
)

// The Vulkan half of the engine (the real vkcodec operations, buffer ranges, timeline values across runs, decode
// reuse) on two Vulkan devices — lavapipe here — with the link replaced by a host copy between mapped buffers:
// hostMover waits for the semaphores on the host, copies the body and signals, where ncclMover queues the same on
// CUDA streams around an NCCL group.

type hostMover struct {
	bufs      buffers
	q         chan func()
	pending   sync.WaitGroup
	done      sync.WaitGroup
	moves     int
	corruptAt int // the move (counted from 0) whose body gets a flipped byte; -1 for none
}

func newHostMover(bufs buffers) *hostMover {
	m := &hostMover{bufs: bufs, q: make(chan func(), 256), corruptAt: -1}
	m.done.Add(1)
	go func() {
		defer m.done.Done()
		for f := range m.q {
			f()
		}
	}()
	return m
}

func mapped(t *testing.T, b *vk.Buffer) []byte {
	p, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// signal raises s to v unless it is there already (after an abort it is far ahead).
func signal(s *vk.Semaphore, v uint64) {
	if cur, err := s.Value(); err == nil && cur < v {
		s.Signal(v)
	}
}

func (m *hostMover) move(slot int, n, encV, decV, v uint64) error {
	corrupt := m.moves == m.corruptAt
	m.moves++
	m.pending.Add(1)
	m.q <- func() {
		defer m.pending.Done()
		ctx := context.Background()
		m.bufs.encoded.Wait(ctx, encV)
		if decV > 0 {
			m.bufs.decoded.Wait(ctx, decV)
		}
		src, _ := m.bufs.body0[slot].Bytes()
		dst, _ := m.bufs.body1[slot].Bytes()
		copy(dst[:n], src[:n])
		if corrupt {
			dst[n/2] ^= 0x40
		}
		signal(m.bufs.sent, v)
		signal(m.bufs.received, v)
	}
	return nil
}

func (m *hostMover) idle(ctx context.Context) error {
	done := make(chan struct{})
	go func() { m.pending.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *hostMover) close() {
	close(m.q)
	m.done.Wait()
}

type vkRig struct {
	b0, b1 *vkcodec.Backend
	bufs   buffers
	mv     *hostMover
	e      *vkEngine
	data   []byte
}

func newVKRig(t *testing.T, size, chunk, inflight int, shift uint) *vkRig {
	t.Helper()
	var bs [2]*vkcodec.Backend
	for i := range bs {
		b, err := vkcodec.Open(vkcodec.Options{})
		if err != nil {
			vktest.Unavailable(t, "vulkan backend: %v", err)
		}
		bs[i] = b
		t.Cleanup(func() { b.Close() })
	}
	r := &vkRig{b0: bs[0], b1: bs[1], data: synth.KVLike(size/2, uint64(size))}
	buf := func(b *vkcodec.Backend, n uint64) *vk.Buffer {
		x, err := b.VK().NewBuffer(n, vk.HostVisible)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		return x
	}
	sem := func(b *vkcodec.Backend) *vk.Semaphore {
		s, err := b.VK().NewTimelineSemaphore(0)
		if err != nil {
			vktest.Unavailable(t, "timeline semaphores: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	slots, bodySize := slotsFor(uint64(size), uint64(chunk), inflight, shift)
	r.bufs = buffers{in0: buf(r.b0, pad256(uint64(size))), out1: buf(r.b1, pad256(uint64(size))),
		encoded: sem(r.b0), sent: sem(r.b0), received: sem(r.b1), decoded: sem(r.b1)}
	for i := 0; i < slots; i++ {
		r.bufs.body0 = append(r.bufs.body0, buf(r.b0, bodySize))
		r.bufs.body1 = append(r.bufs.body1, buf(r.b1, bodySize))
	}
	copy(mapped(t, r.bufs.in0), r.data)
	r.mv = newHostMover(r.bufs)
	e, err := newVKEngine(context.Background(), r.b0, r.b1, r.bufs, r.mv, uint64(size), uint64(chunk), shift,
		synth.KVCodebook(), true)
	if err != nil {
		t.Fatal(err)
	}
	r.e = e
	t.Cleanup(func() { // before the buffers and backends (cleanups run last first)
		e.close()
		r.mv.close()
	})
	return r
}

// run is compressedRun with the host mover: one pipeline run, then the output compared with the input.
func (r *vkRig) run(t *testing.T) (Run, error) {
	t.Helper()
	if err := r.e.startRun(); err != nil {
		return Run{}, err
	}
	out := mapped(t, r.bufs.out1)
	for i := range out {
		out[i] = 0xA5
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t0 := time.Now()
	if err := runPipeline(ctx, r.e); err != nil {
		return Run{}, err
	}
	d := time.Since(t0)
	if err := r.e.endRun(ctx); err != nil {
		return Run{}, err
	}
	return r.e.st.run(r.e.size, d, bytes.Equal(out[:len(r.data)], r.data)), nil
}

func TestVulkanHalf(t *testing.T) {
	const chunk = 96 << 10
	size := 5*chunk + 4098 // a short last chunk, with an odd number of 4-byte words
	r := newVKRig(t, size, chunk, 3, 10)
	var bodies int64
	for i := 0; i < 3; i++ {
		run, err := r.run(t)
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if !run.BitExact {
			t.Fatalf("run %d: output differs from the input", i+1)
		}
		wantPrepares := 0
		if i == 0 {
			wantPrepares = r.e.K // the first run prepares every decode; later runs reuse them
		}
		if run.DecodePrepares != wantPrepares {
			t.Errorf("run %d prepared %d decodes, want %d", i+1, run.DecodePrepares, wantPrepares)
		}
		if i > 0 && run.BodyBytes != bodies {
			t.Errorf("run %d sent %d body bytes, the first %d", i+1, run.BodyBytes, bodies)
		}
		bodies = run.BodyBytes
		t.Logf("run %d: %d chunks, %d body bytes (ratio %.3f), %.1f ms", i+1, r.e.K, run.BodyBytes,
			float64(size)/float64(run.BodyBytes), run.Seconds*1e3)
	}
	if r.e.K != 6 || r.e.S != 3 || r.e.prepared() != 12 {
		t.Errorf("%d chunks, %d slots, %d prepared operations", r.e.K, r.e.S, r.e.prepared())
	}
	for _, s := range r.bufs.sems() {
		if v, _ := s.Value(); v != 3*uint64(r.e.K) {
			t.Errorf("a semaphore ends at %d, want %d", v, 3*r.e.K)
		}
	}
}

// A body damaged on the way fails its decode with the codec's class, the engine is aborted and drained, and no
// further run starts.
func TestVulkanHalfCorruptBody(t *testing.T) {
	const chunk = 64 << 10
	r := newVKRig(t, 6*chunk, chunk, 2, 10)
	if run, err := r.run(t); err != nil || !run.BitExact {
		t.Fatalf("clean run: %v, %+v", err, run)
	}
	r.mv.corruptAt = r.mv.moves + 3
	_, err := r.run(t)
	if !errors.Is(err, codec.ErrChecksum) && !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("corrupted body: %v", err)
	}
	if _, err := r.run(t); !errors.Is(err, errAborted) {
		t.Errorf("a run after the failure: %v", err)
	}
}
