package main

/*
#cgo CFLAGS: -I${SRCDIR}/include
#include "vkzip.h"
*/
import "C"

import (
	"context"
	"sync"
	"unsafe"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/cudabridge"
)

// CUDA memory through cudabridge. Each call first tries the device path (cudadev.go: one device copy into memory
// shared with Vulkan, the codec on the GPU, no value through host memory); where that path is not available it
// stages through host memory: encode copies the tensor device-to-host once and encodes it in host memory, decode
// decodes and verifies in host memory, then copies host-to-device once, both hops counted in cudabridge's
// HostStagedBytes. notePath records which path each call took.

var cudaState struct {
	mu   sync.Mutex
	drv  *cudabridge.Driver
	ctxs map[int]*cudabridge.Context // primary contexts, retained for the life of the process
}

// cudaContext is the primary context of CUDA device ordinal, the one PyTorch and the CUDA runtime use.
func cudaContext(ordinal int) (*cudabridge.Context, error) {
	cudaState.mu.Lock()
	defer cudaState.mu.Unlock()
	if c := cudaState.ctxs[ordinal]; c != nil {
		return c, nil
	}
	if cudaState.drv == nil {
		d, err := cudabridge.Load()
		if err != nil {
			return nil, err
		}
		cudaState.drv = d
	}
	c, err := cudaState.drv.Open(ordinal)
	if err != nil {
		return nil, err
	}
	if cudaState.ctxs == nil {
		cudaState.ctxs = map[int]*cudabridge.Context{}
	}
	cudaState.ctxs[ordinal] = c
	return c, nil
}

// cudaSync waits for stream's work (0: the whole context's).
func cudaSync(c *cudabridge.Context, stream uint64) error {
	if stream == 0 {
		return c.Synchronize()
	}
	return c.WrapStream(uintptr(stream)).Synchronize()
}

// cudaTensorArgs checks a CUDA tensor's arguments: its dtype and shape, its pointer to nbytes (whole values) and the
// device ordinal.
func cudaTensorArgs(dtype *C.char, shape *C.uint64_t, ndim C.int32_t, ptr C.uint64_t, nbytes C.size_t,
	dev C.int32_t) (layout.DType, []uint64, error) {
	d, dims, err := tensorArgs(dtype, shape, ndim)
	if err != nil {
		return d, dims, err
	}
	if err := cudaArgs(ptr, nbytes, dev); err != nil {
		return d, dims, err
	}
	if uint64(nbytes)%uint64(d.Size()) != 0 {
		return d, dims, invalidf("%d bytes is not a whole number of %s values", uint64(nbytes), dtypeName(d))
	}
	return d, dims, nil
}

// cudaArgs checks a device pointer to n bytes and an ordinal (an empty tensor's pointer may be 0).
func cudaArgs(ptr C.uint64_t, n C.size_t, dev C.int32_t) error {
	if ptr == 0 && n != 0 {
		return invalidf("device pointer is 0")
	}
	if dev < 0 {
		return invalidf("CUDA device %d", int(dev))
	}
	return nil
}

//export vkzipgo_encode_cuda
func vkzipgo_encode_cuda(h C.vkzip_codec, dtype *C.char, ptr C.uint64_t, nbytes C.size_t, shape *C.uint64_t,
	ndim C.int32_t, dev C.int32_t, stream C.uint64_t, out *unsafe.Pointer, outLen *C.size_t) C.int {
	return guard(func() error {
		d, dims, err := cudaTensorArgs(dtype, shape, ndim, ptr, nbytes, dev)
		if err != nil {
			return err
		}
		if out == nil || outLen == nil {
			return invalidf("out or out_len is NULL")
		}
		hd, release, err := acquire(uint64(h))
		if err != nil {
			return err
		}
		defer release()
		return encodeCUDA(hd, d, dims, uint64(ptr), uint64(nbytes), int(dev), uint64(stream), out, outLen)
	})
}

func encodeCUDA(hd *handle, d layout.DType, dims []uint64, ptr, nbytes uint64, dev int, stream uint64,
	out *unsafe.Pointer, outLen *C.size_t) error {
	cc, err := cudaContext(dev)
	if err != nil {
		return err
	}
	ndim := -1
	if dims != nil {
		ndim = len(dims)
	}
	why, err := hd.cuda.shared(hd.c, cc, dev, func() error {
		return toC(d, nbytes, ndim, out, outLen, func(dst []byte) ([]byte, error) {
			return hd.cuda.encode(context.Background(), hd.c, d, dims, ptr, nbytes, stream, dst)
		})
	})
	if err != nil || why == nil {
		return err
	}
	if err := encodeCUDAStaged(hd.c, cc, d, dims, ptr, nbytes, stream, out, outLen); err != nil {
		return err
	}
	notePath(false, "staged: "+why.Error())
	return nil
}

// encodeCUDAStaged copies the tensor to host memory and encodes it there.
func encodeCUDAStaged(c *codec.Codec, cc *cudabridge.Context, d layout.DType, dims []uint64, ptr, nbytes uint64,
	stream uint64, out *unsafe.Pointer, outLen *C.size_t) error {
	if err := cudaSync(cc, stream); err != nil {
		return err
	}
	host := make([]byte, nbytes)
	if nbytes > 0 {
		if err := cc.CopyToHost(host, cudabridge.DevicePtr(ptr)); err != nil {
			return err
		}
	}
	return encodeToC(c, d, host, dims, out, outLen)
}

//export vkzipgo_decode_cuda
func vkzipgo_decode_cuda(h C.vkzip_codec, src unsafe.Pointer, n C.size_t, ptr C.uint64_t, dstCap C.size_t,
	dev C.int32_t, stream C.uint64_t, outLen *C.size_t) C.int {
	return guard(func() error {
		data, err := cBytes(src, n, "src")
		if err != nil {
			return err
		}
		if err := cudaArgs(ptr, dstCap, dev); err != nil {
			return err
		}
		if outLen == nil {
			return invalidf("out_len is NULL")
		}
		hd, release, err := acquire(uint64(h))
		if err != nil {
			return err
		}
		defer release()
		pi, err := readInfo(data)
		if err != nil {
			return err
		}
		if pi.decoded > uint64(dstCap) {
			*outLen = C.size_t(pi.decoded)
			return statusf(C.VKZIP_E_BUFFER_TOO_SMALL, "device buffer of %d bytes: the payload decodes to %d", uint64(dstCap), pi.decoded)
		}
		cc, err := cudaContext(int(dev))
		if err != nil {
			return err
		}
		var got uint64
		why, err := hd.cuda.shared(hd.c, cc, int(dev), func() (err error) {
			got, err = hd.cuda.decode(context.Background(), data, uint64(ptr), uint64(dstCap), uint64(stream))
			return err
		})
		if err != nil {
			return err
		}
		if why == nil {
			*outLen = C.size_t(got)
			return nil
		}
		got, err = decodeCUDAStaged(hd.c, cc, data, uint64(ptr), pi.decoded, uint64(stream))
		if err != nil {
			return err
		}
		notePath(false, "staged: "+why.Error())
		*outLen = C.size_t(got)
		return nil
	})
}

// decodeCUDAStaged decodes and verifies a host payload (decoding to size bytes) in host memory and copies the values
// host-to-device to ptr after stream's work; the decoded length.
func decodeCUDAStaged(c *codec.Codec, cc *cudabridge.Context, data []byte, ptr, size, stream uint64) (uint64, error) {
	host, _, err := decodeInto(c, data, make([]byte, 0, size))
	if err != nil {
		return 0, err
	}
	if err := cudaSync(cc, stream); err != nil {
		return 0, err
	}
	if len(host) > 0 {
		if err := cc.CopyFromHost(cudabridge.DevicePtr(ptr), host); err != nil {
			return 0, err
		}
	}
	// cuMemcpyHtoD from pageable memory may return before the DMA lands: wait for it, so the data is in place for
	// work on any stream once this call returns.
	return uint64(len(host)), cc.Synchronize()
}

//export vkzipgo_cuda_get_counters
func vkzipgo_cuda_get_counters(out *C.vkzip_cuda_counters) C.int {
	return guard(func() error {
		if out == nil {
			return invalidf("out is NULL")
		}
		// Callers built against an older header pass the struct as it was then: fill the fields that fit.
		size := uintptr(out.struct_size)
		if size < unsafe.Offsetof(out.shared_calls) {
			return invalidf("vkzip_cuda_counters.struct_size is %d: set it to sizeof(vkzip_cuda_counters)", int(out.struct_size))
		}
		var v C.vkzip_cuda_counters
		v.struct_size = out.struct_size
		k := cudabridge.ReadCounters()
		v.host_staged_bytes = C.uint64_t(k.HostStagedBytes)
		v.device_copy_bytes = C.uint64_t(k.DeviceCopyBytes)
		v.zero_copy_bytes = C.uint64_t(k.ZeroCopyBytes)
		v.shared_calls = C.uint64_t(cudaPaths.shared.Load())
		v.staged_calls = C.uint64_t(cudaPaths.staged.Load())
		if cudaPaths.lastShared.Load() {
			v.last_shared = 1
		}
		if p := cudaPaths.last.Load(); p != nil {
			b := unsafe.Slice((*byte)(unsafe.Pointer(&v.last_path[0])), len(v.last_path))
			copy(b[:len(b)-1], *p) // NUL-terminated: v is zeroed, and the copy leaves the last byte
		}
		n := min(size, unsafe.Sizeof(v))
		copy(unsafe.Slice((*byte)(unsafe.Pointer(out)), n), unsafe.Slice((*byte)(unsafe.Pointer(&v)), n))
		return nil
	})
}

// shared runs op on the shared path (the codec on the Vulkan device that is this CUDA device, through memory both
// APIs map) and notes it in the counters. why is non-nil, with err nil, when that path is not available for this
// call (no such device, no external memory, a tensor it does not take): the caller then stages through the host.
func (cd *cudaDev) shared(c *codec.Codec, cc *cudabridge.Context, dev int, op func() error) (why, err error) {
	return cd.run(c, cc, dev, true, op)
}

// run is shared; note false leaves the counters alone (calls that code nothing: allocations).
func (cd *cudaDev) run(c *codec.Codec, cc *cudabridge.Context, dev int, note bool, op func() error) (why, err error) {
	cd.mu.Lock()
	defer cd.mu.Unlock()
	if why = cd.setup(c, cc, dev); why != nil {
		return why, nil
	}
	if err = op(); isStaged(err) {
		return err, nil
	}
	if err == nil && note {
		notePath(true, "shared: "+cd.vb.Device())
	}
	return nil, err
}
