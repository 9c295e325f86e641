//go:build cgo

package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/cudabridge"
	"github.com/vkzip/vkzip/vk"
)

// The device path of CUDA tensors. A CUDA tensor (cudaMalloc memory, PyTorch's caching allocator) cannot be
// imported into Vulkan, so it is copied once, device to device, into a buffer shared by both APIs (Vulkan memory
// exported and imported into CUDA: cudabridge.NewSharedBuffer), where the Vulkan codec encodes it in place; a decode
// writes the shared buffer and the same one copy moves the values into the caller's memory. The copy is counted in
// the bridge's DeviceCopyBytes, the in-place codec traffic in ZeroCopyBytes, and no value crosses host memory
// (HostStagedBytes does not move). Where memory cannot be shared (no Vulkan device on that GPU, no external memory)
// or the tensor is one the device does not code, the call stages through host memory instead, and the counters say
// which path ran.

// devMaxBytes bounds the values one handle's shared buffer holds (grow-only up to it); larger tensors stage through
// host memory. 2 GiB keeps a BF16 tensor's value count within the histogram kernel's 32-bit counts.
const devMaxBytes = 2 << 30

// cudaDev is a codec handle's device path for one CUDA device: the Vulkan backend on that GPU (the codec's own when
// it runs there, else one opened for it), the shared values buffer, the semaphore CUDA signals when the values are
// in place, and the stream of calls that pass stream 0. Everything is kept for the calls that follow and closed by
// vkzip_close. Calls on one handle take turns on it.
type cudaDev struct {
	mu       sync.Mutex
	ordinal  int
	cc       *cudabridge.Context
	vb       *vkcodec.Backend
	ownVB    bool
	dc       devCodec
	vals     *cudabridge.SharedBuffer
	body     *cudabridge.SharedBuffer            // bodies of payloads in CUDA memory (cudapayload.go)
	allocs   map[uint64]*cudabridge.SharedBuffer // vkzip_cuda_alloc's, by CUDA address
	headLens map[headKey]int                     // header lengths last written (cudapayload.go)
	st       *cudabridge.Stream
	broken   string // why this device cannot share memory (sticky): every call stages
	started  bool
}

// setup readies the device path for CUDA device cc (the handle's codec c): a stagedReason when memory cannot be
// shared there.
func (cd *cudaDev) setup(c *codec.Codec, cc *cudabridge.Context, ordinal int) error {
	if cd.started && cd.ordinal != ordinal {
		if len(cd.allocs) > 0 { // its memory stays until vkzip_cuda_free or vkzip_close
			return &stagedReason{fmt.Sprintf("the handle's device path holds %d allocations on CUDA device %d",
				len(cd.allocs), cd.ordinal)}
		}
		cd.close() // one device per handle at a time: a call on another device starts over
	}
	if cd.started {
		if cd.broken != "" {
			return &stagedReason{cd.broken}
		}
		return nil
	}
	cd.started, cd.ordinal, cd.cc = true, ordinal, cc
	if err := cd.open(c); err != nil {
		cd.broken = err.Error()
		cd.release()
		return &stagedReason{cd.broken}
	}
	return nil
}

// open finds the Vulkan device that is the CUDA device's GPU and checks that memory is shared with CUDA there.
func (cd *cudaDev) open(c *codec.Codec) error {
	uuid := cd.cc.Info().UUID
	if vb, ok := c.Backend().(*vkcodec.Backend); ok && vb.Info().UUID == uuid {
		cd.vb = vb
	} else {
		devs, err := vkcodec.Devices()
		if err != nil {
			return fmt.Errorf("no Vulkan: %v", err)
		}
		idx := -1
		for _, d := range devs {
			if d.UUID == uuid && d.Usable {
				idx = d.Index
			}
		}
		if idx < 0 {
			return fmt.Errorf("no usable Vulkan device is CUDA device %d (%s)", cd.ordinal, cudabridge.FormatUUID(uuid))
		}
		vb, err := vkcodec.Open(vkcodec.Options{Device: strconv.Itoa(idx)})
		if err != nil {
			return fmt.Errorf("opening Vulkan device %d: %v", idx, err)
		}
		cd.vb, cd.ownVB = vb, true
	}
	cd.dc.vb = cd.vb
	// A first shared buffer proves that memory is shared between the APIs on this GPU.
	if err := cd.ensureVals(1); err != nil {
		return fmt.Errorf("Vulkan memory cannot be shared with CUDA on %s: %v", cd.vb.Device(), err)
	}
	var err error
	if cd.st, err = cd.cc.NewStream(); err != nil {
		return err
	}
	return nil
}

// ensureVals makes the shared values buffer hold at least n bytes (grow-only, at most devMaxBytes).
func (cd *cudaDev) ensureVals(n uint64) error { return cd.growShared(&cd.vals, n) }

// growShared makes the shared buffer *b hold at least n bytes (grow-only, growSize); a new buffer first drops the
// cached operations bound to the old one.
func (cd *cudaDev) growShared(b **cudabridge.SharedBuffer, n uint64) error {
	if *b != nil && (*b).Size >= n {
		return nil
	}
	cd.dc.flushOps()
	if *b != nil {
		(*b).Close()
		*b = nil
	}
	s, err := cudabridge.NewSharedBuffer(cd.cc, cd.vb.VK(), growSize(n))
	if err != nil {
		return err
	}
	*b = s
	return nil
}

// stream is the stream a call's copies go on: the caller's, or for stream 0 the handle's own after the whole
// context's work (the header's contract for 0).
func (cd *cudaDev) stream(stream uint64) (*cudabridge.Stream, error) {
	if stream != 0 {
		return cd.cc.WrapStream(uintptr(stream)), nil
	}
	return cd.st, cd.cc.Synchronize()
}

// encode encodes nbytes of d at CUDA address ptr (shape dims) on the device path and appends the payload to dst.
func (cd *cudaDev) encode(ctx context.Context, c *codec.Codec, d layout.DType, dims []uint64, ptr, nbytes,
	stream uint64, dst []byte) ([]byte, error) {
	n, err := checkDevTensor(d, dims, nbytes)
	if err != nil {
		return dst, err
	}
	p, err := cd.dc.plan(c, d, n)
	if err != nil {
		return dst, err
	}
	st, err := cd.stream(stream)
	if err != nil {
		return dst, err
	}
	vals, err := cd.source(st, ptr, nbytes)
	if err != nil {
		return dst, err
	}
	out, err := cd.dc.encode(ctx, c, vals, d, dims, n, p, dst)
	if err != nil {
		return dst, err
	}
	cudabridge.CountZeroCopy(nbytes)
	return out, nil
}

// decode decodes src (one container, one coded tensor) on the device path into CUDA memory at ptr (dstCap bytes),
// after the caller's work on stream and before it returns; the decoded length.
func (cd *cudaDev) decode(ctx context.Context, src []byte, ptr, dstCap, stream uint64) (uint64, error) {
	pl, err := cd.dc.parsePayload(src)
	if err != nil {
		return 0, err
	}
	n := pl.rec.RawSize()
	if n > dstCap {
		return 0, invalidf("device buffer of %d bytes: the payload decodes to %d", dstCap, n)
	}
	if n > devMaxBytes {
		return 0, staged("a tensor of %d bytes exceeds the shared buffer's bound of %d", n, uint64(devMaxBytes))
	}
	st, err := cd.stream(stream)
	if err != nil {
		return 0, err
	}
	vals, inPlace, err := cd.dest(st, ptr, n)
	if err != nil {
		return 0, err
	}
	// Outside the handle's allocations the caller's memory is written only once the whole body verified.
	if err := cd.dc.decode(ctx, pl, src, vals); err != nil {
		return 0, err
	}
	return n, cd.deliver(st, ptr, n, inPlace)
}

// source readies the n bytes at CUDA address ptr for an encode, once st's work is done (a host wait: every call
// returns only after its Vulkan work, so ordering the APIs on the device would gain nothing, and on an H100 a
// Vulkan submission that waits for a CUDA-signalled semaphore took ~35 µs longer): in place where they lie in one
// of the handle's allocations (zero_copy_bytes), else copied once, device to device, into the shared values buffer
// (device_copy_bytes).
func (cd *cudaDev) source(st *cudabridge.Stream, ptr, n uint64) (vk.BufferRange, error) {
	vals, ok := cd.inAlloc(ptr, n, false)
	if !ok {
		if err := cd.ensureVals(pad256(n)); err != nil {
			return vals, staged("no shared buffer of %d bytes: %v", pad256(n), err)
		}
		vals = cd.vals.Range()
		if err := cd.cc.CopyAsync(st, cd.vals.Ptr, cudabridge.DevicePtr(ptr), n); err != nil {
			return vals, err
		}
	}
	return vals, st.Synchronize()
}

// dest is where a decode of n bytes for CUDA address ptr writes: in place where ptr lies in one of the handle's
// allocations (after st's work, which may still read the old contents), else the shared values buffer.
func (cd *cudaDev) dest(st *cudabridge.Stream, ptr, n uint64) (vk.BufferRange, bool, error) {
	if r, ok := cd.inAlloc(ptr, n, true); ok {
		return r, true, st.Synchronize()
	}
	if err := cd.ensureVals(pad256(n)); err != nil {
		return vk.BufferRange{}, false, staged("no shared buffer of %d bytes: %v", pad256(n), err)
	}
	return cd.vals.Range(), false, nil
}

// deliver moves n decoded bytes to ptr (one device copy on st, unless they were decoded in place) and waits, so
// they are in place for work on any stream once the call returns and the shared buffer is free for the next call.
func (cd *cudaDev) deliver(st *cudabridge.Stream, ptr, n uint64, inPlace bool) error {
	cudabridge.CountZeroCopy(n)
	if inPlace {
		return nil
	}
	if err := cd.cc.CopyAsync(st, cudabridge.DevicePtr(ptr), cd.vals.Ptr, n); err != nil {
		return err
	}
	return st.Synchronize()
}

// release closes what open made (not the codec's own backend).
func (cd *cudaDev) release() {
	if cd.st != nil {
		cd.st.Synchronize()
		cd.st.Close()
		cd.st = nil
	}
	if cd.vb != nil {
		cd.vb.VK().WaitIdle()
	}
	cd.dc.close()
	for _, b := range []**cudabridge.SharedBuffer{&cd.vals, &cd.body} {
		if *b != nil {
			(*b).Close()
			*b = nil
		}
	}
	for p, a := range cd.allocs {
		a.Close()
		delete(cd.allocs, p)
	}
	if cd.ownVB && cd.vb != nil {
		cd.vb.Close()
	}
	cd.vb, cd.ownVB, cd.dc = nil, false, devCodec{}
}

// close releases everything; a later call starts over.
func (cd *cudaDev) close() {
	cd.release()
	cd.started, cd.broken, cd.cc = false, "", nil
}

func pad256(n uint64) uint64 { return (n + 255) &^ 255 }

// Which path the process's CUDA calls took: counts, and the last call's path in words.
var cudaPaths struct {
	shared, staged atomic.Uint64
	lastShared     atomic.Bool
	last           atomic.Pointer[string]
}

func notePath(shared bool, how string) {
	if shared {
		cudaPaths.shared.Add(1)
	} else {
		cudaPaths.staged.Add(1)
	}
	cudaPaths.lastShared.Store(shared)
	cudaPaths.last.Store(&how)
}

// isStaged reports whether err asks for the host-staged path.
func isStaged(err error) bool {
	var s *stagedReason
	return errors.As(err, &s)
}
