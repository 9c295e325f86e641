package gpulink

import (
	"context"
	"fmt"

	"github.com/vkzip/vkzip/cudabridge"
	"github.com/vkzip/vkzip/cudabridge/nccl"
)

// shared is what both APIs see: Vulkan memory and timeline semaphores exported as fds and imported into CUDA.
type shared struct {
	in0, out1                        *cudabridge.SharedBuffer
	body0, body1                     []*cudabridge.SharedBuffer
	encoded, sent, received, decoded *cudabridge.SharedSemaphore
}

// newShared allocates the shared buffers and semaphores on both GPUs of l.
func newShared(l *link, size uint64, slots int, bodySize uint64) (s *shared, err error) {
	s = &shared{}
	defer func() {
		if err != nil {
			s.close()
			s = nil
		}
	}()
	g0, g1 := l.g[0], l.g[1]
	alloc := func(g *gpu, n uint64, what string) (*cudabridge.SharedBuffer, error) {
		b, err := cudabridge.NewSharedBuffer(g.cu, g.vk.VK(), n)
		if err != nil {
			return nil, fmt.Errorf("%s on CUDA device %d: %w", what, g.ordinal, err)
		}
		return b, nil
	}
	if s.in0, err = alloc(g0, pad256(size), "tensor buffer"); err != nil {
		return nil, err
	}
	if s.out1, err = alloc(g1, pad256(size), "tensor buffer"); err != nil {
		return nil, err
	}
	for i := 0; i < slots; i++ {
		b0, err := alloc(g0, bodySize, "body buffer")
		if err != nil {
			return nil, err
		}
		s.body0 = append(s.body0, b0)
		b1, err := alloc(g1, bodySize, "body buffer")
		if err != nil {
			return nil, err
		}
		s.body1 = append(s.body1, b1)
	}
	for _, x := range []struct {
		g   *gpu
		dst **cudabridge.SharedSemaphore
	}{{g0, &s.encoded}, {g0, &s.sent}, {g1, &s.received}, {g1, &s.decoded}} {
		if *x.dst, err = cudabridge.NewSharedSemaphore(x.g.cu, x.g.vk.VK(), 0); err != nil {
			return nil, fmt.Errorf("shared semaphore on CUDA device %d: %w", x.g.ordinal, err)
		}
	}
	return s, nil
}

// vulkan is the Vulkan view of the shared objects.
func (s *shared) vulkan() buffers {
	b := buffers{in0: s.in0.VK, out1: s.out1.VK, encoded: s.encoded.VK, sent: s.sent.VK, received: s.received.VK,
		decoded: s.decoded.VK}
	for i := range s.body0 {
		b.body0 = append(b.body0, s.body0[i].VK)
		b.body1 = append(b.body1, s.body1[i].VK)
	}
	return b
}

// close releases everything; no work of either API may still use it.
func (s *shared) close() {
	if s == nil {
		return
	}
	for _, b := range append(append([]*cudabridge.SharedBuffer{s.in0, s.out1}, s.body0...), s.body1...) {
		if b != nil {
			b.Close()
		}
	}
	for _, x := range []*cudabridge.SharedSemaphore{s.encoded, s.sent, s.received, s.decoded} {
		if x != nil {
			x.Close()
		}
	}
}

// ncclMover moves bodies with one NCCL group per chunk on the two GPUs' CUDA streams, ordered by the shared
// semaphores: GPU 0's stream waits for the encode, GPU 1's for the slot's previous decode; after the transfer they
// signal sent and received.
type ncclMover struct {
	l *link
	s *shared
}

func (m *ncclMover) move(slot int, n, encV, decV, v uint64) error {
	g0, g1 := m.l.g[0], m.l.g[1]
	if err := m.s.encoded.CU.Wait(g0.st, encV); err != nil {
		return err
	}
	if decV > 0 {
		if err := m.s.decoded.CU.Wait(g1.st, decV); err != nil {
			return err
		}
	}
	err := m.l.lib.Group(
		nccl.Send(m.l.comms[0], m.s.body0[slot].Ptr, n, nccl.Uint8, 1, g0.st),
		nccl.Recv(m.l.comms[1], m.s.body1[slot].Ptr, n, nccl.Uint8, 0, g1.st))
	if err != nil {
		return err
	}
	if err := m.s.sent.CU.Signal(g0.st, v); err != nil {
		return err
	}
	return m.s.received.CU.Signal(g1.st, v)
}

func (m *ncclMover) idle(ctx context.Context) error {
	for _, g := range m.l.g {
		if err := syncStream(ctx, g.st); err != nil {
			return err
		}
	}
	return nil
}

// orderOutput makes GPU 1's stream wait for decoded ≥ v: CUDA reads the output only after the last decode.
func (m *ncclMover) orderOutput(v uint64) error {
	return m.s.decoded.CU.Wait(m.l.g[1].st, v)
}
