package main

/*
#cgo CFLAGS: -I${SRCDIR}/include
#include "vkzip.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/cudabridge"
)

// CUDA memory through cudabridge. Encode copies the tensor device-to-host once and encodes it in host memory;
// decode decodes and verifies in host memory, then copies host-to-device once: both hops are counted in
// cudabridge's HostStagedBytes. A path without host staging needs the codec to run on buffers shared with CUDA
// (cudabridge's EncodeOp/DecodeOp over a prepared Vulkan encode), which this ABI does not reach yet.

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
		d, dims, err := tensorArgs(dtype, shape, ndim)
		if err != nil {
			return err
		}
		if err := cudaArgs(ptr, nbytes, dev); err != nil {
			return err
		}
		if out == nil || outLen == nil {
			return invalidf("out or out_len is NULL")
		}
		if uint64(nbytes)%uint64(d.Size()) != 0 {
			return invalidf("%d bytes is not a whole number of %s values", uint64(nbytes), dtypeName(d))
		}
		hd, release, err := acquire(uint64(h))
		if err != nil {
			return err
		}
		defer release()
		return encodeCUDA(hd.c, d, dims, uint64(ptr), uint64(nbytes), int(dev), uint64(stream), out, outLen)
	})
}

func encodeCUDA(c *codec.Codec, d layout.DType, dims []uint64, ptr, nbytes uint64, dev int, stream uint64,
	out *unsafe.Pointer, outLen *C.size_t) error {
	cc, err := cudaContext(dev)
	if err != nil {
		return err
	}
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
		host, _, err := decodeInto(hd.c, data, make([]byte, 0, pi.decoded))
		if err != nil {
			return err
		}
		if err := cudaSync(cc, uint64(stream)); err != nil {
			return err
		}
		if len(host) > 0 {
			if err := cc.CopyFromHost(cudabridge.DevicePtr(ptr), host); err != nil {
				return err
			}
		}
		// cuMemcpyHtoD from pageable memory may return before the DMA lands: wait for it, so the data is in
		// place for work on any stream once this call returns.
		if err := cc.Synchronize(); err != nil {
			return err
		}
		*outLen = C.size_t(len(host))
		return nil
	})
}

//export vkzipgo_cuda_get_counters
func vkzipgo_cuda_get_counters(out *C.vkzip_cuda_counters) C.int {
	return guard(func() error {
		if out == nil {
			return invalidf("out is NULL")
		}
		if out.struct_size < C.uint32_t(unsafe.Sizeof(*out)) {
			return invalidf("vkzip_cuda_counters.struct_size is %d: set it to sizeof(vkzip_cuda_counters)", int(out.struct_size))
		}
		k := cudabridge.ReadCounters()
		out.host_staged_bytes = C.uint64_t(k.HostStagedBytes)
		out.device_copy_bytes = C.uint64_t(k.DeviceCopyBytes)
		out.zero_copy_bytes = C.uint64_t(k.ZeroCopyBytes)
		return nil
	})
}
