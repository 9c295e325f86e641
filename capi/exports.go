package main

/*
#cgo CFLAGS: -I${SRCDIR}/include
#include <stdlib.h>
#include <string.h>
#include "vkzip.h"
#include "shim.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
)

// The Go exports behind shim.c's public functions: vkzipgo_NAME implements vkzip_NAME with the same parameters
// (capi_test.go checks that they match include/vkzip.h). Each runs its body under guard.

const abiVersion = C.VKZIP_ABI_VERSION

// cBytes is the caller's n bytes at p as a slice (nil for none). It must not outlive the call.
func cBytes(p unsafe.Pointer, n C.size_t, what string) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	if p == nil {
		return nil, invalidf("%s is NULL with a length of %d", what, uint64(n))
	}
	if uint64(n) > uint64(maxInt) {
		return nil, statusf(C.VKZIP_E_TOO_LARGE, "%s of %d bytes", what, uint64(n))
	}
	return unsafe.Slice((*byte)(p), int(n)), nil
}

const maxInt = int(^uint(0) >> 1)

// cString is a NUL-terminated C string, or "" for NULL.
func cString(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

// cShape is the caller's shape argument.
func cShape(shape *C.uint64_t, ndim C.int32_t) ([]uint64, error) {
	var dims []uint64
	if shape != nil && ndim > 0 {
		if ndim > 255 {
			return nil, statusf(C.VKZIP_E_UNSUPPORTED, "rank %d (at most 255)", int(ndim))
		}
		dims = unsafe.Slice((*uint64)(unsafe.Pointer(shape)), int(ndim))
	}
	return tensorShape(dims, int(ndim))
}

// cAlloc copies b into malloc'd memory (at least one byte, so that an empty result is not NULL).
func cAlloc(b []byte) unsafe.Pointer {
	p := C.malloc(C.size_t(max(len(b), 1)))
	if p == nil {
		panic("malloc failed")
	}
	if len(b) > 0 {
		copy(unsafe.Slice((*byte)(p), len(b)), b)
	}
	return p
}

// cJSON hands b to C as a malloc'd NUL-terminated string.
func cJSON(b []byte, out **C.char) error {
	if out == nil {
		return invalidf("json_out is NULL")
	}
	*out = (*C.char)(cAlloc(append(b, 0)))
	return nil
}

var (
	versionOnce sync.Once
	versionC    *C.char // C memory, never freed: vkzip_version's static string
)

//export vkzipgo_version
func vkzipgo_version() *C.char {
	versionOnce.Do(func() {
		v := "unknown"
		guard(func() error { v = libVersion(); return nil })
		versionC = C.CString(v)
	})
	return versionC
}

//export vkzipgo_devices
func vkzipgo_devices(jsonOut **C.char) C.int {
	return guard(func() error {
		if jsonOut == nil {
			return invalidf("json_out is NULL")
		}
		b, err := devicesJSON()
		if err != nil {
			return err
		}
		return cJSON(b, jsonOut)
	})
}

//export vkzipgo_open
func vkzipgo_open(opts *C.vkzip_options, out *C.vkzip_codec) C.int {
	return guard(func() error {
		if out == nil {
			return invalidf("out is NULL")
		}
		var o C.vkzip_options
		if opts != nil {
			n := C.size_t(opts.struct_size)
			if n < C.size_t(unsafe.Sizeof(opts.struct_size)) {
				return invalidf("vkzip_options.struct_size is %d: set it to sizeof(vkzip_options) (VKZIP_OPTIONS_INIT)", int(n))
			}
			C.memcpy(unsafe.Pointer(&o), unsafe.Pointer(opts), min(n, C.size_t(unsafe.Sizeof(o))))
		}
		cf := config{backend: cString(o.backend), device: cString(o.device), formats: cString(o.formats),
			noChecksums: o.no_checksums != 0, chunkSize: int(o.chunk_size)}
		if cf.backend == "" {
			cf.backend = "auto"
		}
		if prefer := cString(o.prefer); prefer != "" {
			if cf.formats != "" {
				return invalidf("prefer %q and formats %q both given: prefer picks the formats itself", prefer, cf.formats)
			}
			l, ok := codec.PreferFormats(prefer)
			if !ok {
				return invalidf("prefer %q: want speed, balanced or ratio", prefer)
			}
			cf.formats = l
		}
		if o.codebook != nil || o.codebook_len != 0 {
			cb, err := cBytes(unsafe.Pointer(o.codebook), o.codebook_len, "codebook")
			if err != nil {
				return err
			}
			if len(cb) == 0 {
				return invalidf("codebook of 0 bytes")
			}
			cf.codebook = append([]byte{}, cb...)
		}
		id, err := openHandle(cf)
		if err != nil {
			return err
		}
		*out = C.vkzip_codec(id)
		return nil
	})
}

//export vkzipgo_close
func vkzipgo_close(h C.vkzip_codec) C.int {
	return guard(func() error { return closeHandle(uint64(h)) })
}

//export vkzipgo_codec_info
func vkzipgo_codec_info(h C.vkzip_codec, jsonOut **C.char) C.int {
	return guard(func() error {
		if jsonOut == nil {
			return invalidf("json_out is NULL")
		}
		hd, release, err := acquire(uint64(h))
		if err != nil {
			return err
		}
		defer release()
		b, err := codecJSON(hd)
		if err != nil {
			return err
		}
		return cJSON(b, jsonOut)
	})
}

//export vkzipgo_encode_bound
func vkzipgo_encode_bound(dtype *C.char, nbytes C.size_t, ndim C.int32_t) C.size_t {
	var n uint64
	st := guard(func() error {
		if dtype == nil {
			return invalidf("dtype is NULL")
		}
		d, err := parseDType(C.GoString(dtype))
		if err != nil {
			return err
		}
		n, err = encodeBound(d, uint64(nbytes), int(ndim))
		return err
	})
	if st != C.VKZIP_OK {
		return 0
	}
	return C.size_t(n)
}

// tensorArgs checks the arguments every tensor encode takes.
func tensorArgs(dtype *C.char, shape *C.uint64_t, ndim C.int32_t) (layout.DType, []uint64, error) {
	if dtype == nil {
		return 0, nil, invalidf("dtype is NULL")
	}
	d, err := parseDType(C.GoString(dtype))
	if err != nil {
		return 0, nil, err
	}
	dims, err := cShape(shape, ndim)
	return d, dims, err
}

//export vkzipgo_encode
func vkzipgo_encode(h C.vkzip_codec, dtype *C.char, src unsafe.Pointer, nbytes C.size_t, shape *C.uint64_t,
	ndim C.int32_t, dst unsafe.Pointer, dstCap C.size_t, outLen *C.size_t) C.int {
	return guard(func() error {
		d, dims, err := tensorArgs(dtype, shape, ndim)
		if err != nil {
			return err
		}
		data, err := cBytes(src, nbytes, "src")
		if err != nil {
			return err
		}
		room, err := outBuffer(dst, dstCap, outLen)
		if err != nil {
			return err
		}
		hd, release, err := acquire(uint64(h))
		if err != nil {
			return err
		}
		defer release()
		// The codec appends to room[:0]: it writes the caller's buffer in place as long as the payload fits, and
		// moves to memory of its own only when it does not (then nothing is copied back).
		out, err := encodeTensor(hd.c, d, data, dims, room[:0])
		if err != nil {
			return err
		}
		if len(out) > len(room) || (len(out) > 0 && unsafe.Pointer(&out[0]) != dst) {
			*outLen = C.size_t(len(out))
			return statusf(C.VKZIP_E_BUFFER_TOO_SMALL, "output buffer of %d bytes: the payload is %d (vkzip_encode_bound gives a size that always fits)",
				len(room), len(out))
		}
		*outLen = C.size_t(len(out))
		return nil
	})
}

//export vkzipgo_encode_alloc
func vkzipgo_encode_alloc(h C.vkzip_codec, dtype *C.char, src unsafe.Pointer, nbytes C.size_t, shape *C.uint64_t,
	ndim C.int32_t, out *unsafe.Pointer, outLen *C.size_t) C.int {
	return guard(func() error {
		d, dims, err := tensorArgs(dtype, shape, ndim)
		if err != nil {
			return err
		}
		data, err := cBytes(src, nbytes, "src")
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
		return encodeToC(hd.c, d, data, dims, out, outLen)
	})
}

// encodeToC encodes a tensor into malloc'd memory of the bound's size, encoded in place and shrunk to fit.
func encodeToC(c *codec.Codec, d layout.DType, data []byte, dims []uint64, out *unsafe.Pointer, outLen *C.size_t) error {
	ndim := -1
	if dims != nil {
		ndim = len(dims)
	}
	return toC(d, uint64(len(data)), ndim, out, outLen, func(room []byte) ([]byte, error) {
		return encodeTensor(c, d, data, dims, room)
	})
}

// toC hands the payload of one tensor (nbytes of d, ndim dimensions) that encode appends to room (empty, with
// room for the bound) to C in malloc'd memory.
func toC(d layout.DType, nbytes uint64, ndim int, out *unsafe.Pointer, outLen *C.size_t,
	encode func(room []byte) ([]byte, error)) error {
	bound, err := encodeBound(d, nbytes, ndim)
	if err != nil {
		return err
	}
	if bound > uint64(maxInt) {
		return statusf(C.VKZIP_E_TOO_LARGE, "payload bound of %d bytes", bound)
	}
	p := C.malloc(C.size_t(bound))
	if p == nil {
		return statusf(C.VKZIP_E_TOO_LARGE, "cannot allocate %d bytes", bound)
	}
	room := unsafe.Slice((*byte)(p), int(bound))
	res, err := encode(room[:0])
	if err == nil && (len(res) > len(room) || (len(res) > 0 && unsafe.Pointer(&res[0]) != p)) {
		err = statusf(C.VKZIP_E_INTERNAL, "payload of %d bytes exceeds its bound %d", len(res), bound)
	}
	if err != nil {
		C.free(p)
		return err
	}
	if q := C.realloc(p, C.size_t(max(len(res), 1))); q != nil {
		p = q
	}
	*out, *outLen = p, C.size_t(len(res))
	return nil
}

//export vkzipgo_payload_info
func vkzipgo_payload_info(src unsafe.Pointer, n C.size_t, info *C.vkzip_info) C.int {
	return guard(func() error {
		if err := checkInfoArg(info); err != nil {
			return err
		}
		data, err := cBytes(src, n, "src")
		if err != nil {
			return err
		}
		pi, err := readInfo(data)
		if err != nil {
			return err
		}
		putInfo(info, pi)
		return nil
	})
}

// checkInfoArg checks the caller's vkzip_info.
func checkInfoArg(info *C.vkzip_info) error {
	if info == nil {
		return invalidf("info is NULL")
	}
	if info.struct_size < C.uint32_t(unsafe.Sizeof(*info)) {
		return invalidf("vkzip_info.struct_size is %d: set it to sizeof(vkzip_info) (%d)", int(info.struct_size), unsafe.Sizeof(*info))
	}
	return nil
}

// putInfo fills the caller's vkzip_info (checked by checkInfoArg) from pi.
func putInfo(info *C.vkzip_info, pi payloadInfo) {
	var o C.vkzip_info
	o.struct_size = info.struct_size
	o.containers, o.tensors, o.blobs = C.uint32_t(pi.containers), C.uint32_t(pi.tensors), C.uint32_t(pi.blobs)
	o.decoded_size = C.uint64_t(pi.decoded)
	if pi.checksums {
		o.checksums = 1
	}
	putCString(o.dtype[:], pi.dtype)
	putCString(o.format[:], pi.format)
	o.ndim = C.int32_t(len(pi.shape))
	for i := 0; i < len(pi.shape) && i < len(o.shape); i++ {
		o.shape[i] = C.uint64_t(pi.shape[i])
	}
	*info = o
}

// putCString writes s, NUL-terminated and cut to fit, into a fixed char array.
func putCString(dst []C.char, s string) {
	n := min(len(s), len(dst)-1)
	for i := 0; i < n; i++ {
		dst[i] = C.char(s[i])
	}
	dst[n] = 0
}

//export vkzipgo_decode
func vkzipgo_decode(h C.vkzip_codec, src unsafe.Pointer, n C.size_t, dst unsafe.Pointer, dstCap C.size_t, outLen *C.size_t) C.int {
	return guard(func() error {
		data, err := cBytes(src, n, "src")
		if err != nil {
			return err
		}
		room, err := outBuffer(dst, dstCap, outLen)
		if err != nil {
			return err
		}
		hd, release, err := acquire(uint64(h))
		if err != nil {
			return err
		}
		defer release()
		out, need, err := decodeInto(hd.c, data, room)
		if statusOf(err) == C.VKZIP_E_BUFFER_TOO_SMALL {
			*outLen = C.size_t(need)
		}
		if err != nil {
			return err
		}
		if len(out) > 0 && unsafe.Pointer(&out[0]) != dst {
			return statusf(C.VKZIP_E_INTERNAL, "decoded output left the caller's buffer")
		}
		*outLen = C.size_t(len(out))
		return nil
	})
}

//export vkzipgo_decode_alloc
func vkzipgo_decode_alloc(h C.vkzip_codec, src unsafe.Pointer, n C.size_t, out *unsafe.Pointer, outLen *C.size_t) C.int {
	return allocCall(h, src, n, out, outLen, func(hd *handle, data []byte) error {
		return decodeToC(hd.c, data, out, outLen)
	})
}

// allocCall runs fn for the calls that read n bytes at src and hand back memory the library allocated through out
// and outLen: the arguments checked, the codec handle h held while fn runs.
func allocCall(h C.vkzip_codec, src unsafe.Pointer, n C.size_t, out *unsafe.Pointer, outLen *C.size_t,
	fn func(hd *handle, data []byte) error) C.int {
	return guard(func() error {
		data, err := cBytes(src, n, "src")
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
		return fn(hd, data)
	})
}

// decodeToC decodes a payload into malloc'd memory of its decoded size.
func decodeToC(c *codec.Codec, data []byte, out *unsafe.Pointer, outLen *C.size_t) error {
	pi, err := readInfo(data)
	if err != nil {
		return err
	}
	if pi.decoded > uint64(maxInt) {
		return statusf(C.VKZIP_E_TOO_LARGE, "decoded size %d", pi.decoded)
	}
	p := C.malloc(C.size_t(max(pi.decoded, 1)))
	if p == nil {
		return statusf(C.VKZIP_E_TOO_LARGE, "cannot allocate %d bytes", pi.decoded)
	}
	res, _, err := decodeInto(c, data, unsafe.Slice((*byte)(p), int(pi.decoded)))
	if err != nil {
		C.free(p)
		return err
	}
	*out, *outLen = p, C.size_t(len(res))
	return nil
}

//export vkzipgo_encode_tensorfile
func vkzipgo_encode_tensorfile(h C.vkzip_codec, src unsafe.Pointer, n C.size_t, out *unsafe.Pointer, outLen *C.size_t) C.int {
	return allocCall(h, src, n, out, outLen, func(hd *handle, data []byte) error {
		payload, err := encodeTensorFile(hd.c, data, nil)
		if err != nil {
			return err
		}
		*out, *outLen = cAlloc(payload), C.size_t(len(payload))
		return nil
	})
}

// paths checks the two path arguments of the file functions.
func paths(in, out *C.char) (string, string, error) {
	if in == nil || out == nil {
		return "", "", invalidf("in_path or out_path is NULL")
	}
	i, o := C.GoString(in), C.GoString(out)
	if i == "" || o == "" {
		return "", "", invalidf("empty path")
	}
	return i, o, nil
}

//export vkzipgo_encode_file
func vkzipgo_encode_file(h C.vkzip_codec, inPath, outPath *C.char) C.int {
	return guard(func() error {
		in, out, err := paths(inPath, outPath)
		if err != nil {
			return err
		}
		hd, release, err := acquire(uint64(h))
		if err != nil {
			return err
		}
		defer release()
		return encodeFile(hd.c, in, out)
	})
}

//export vkzipgo_decode_file
func vkzipgo_decode_file(h C.vkzip_codec, inPath, outPath *C.char) C.int {
	return guard(func() error {
		in, out, err := paths(inPath, outPath)
		if err != nil {
			return err
		}
		hd, release, err := acquire(uint64(h))
		if err != nil {
			return err
		}
		defer release()
		return decodeFile(hd.c, in, out)
	})
}

//export vkzipgo_calibrate
func vkzipgo_calibrate(dtype *C.char, src unsafe.Pointer, n C.size_t, codebook *C.uint8_t) C.int {
	return guard(func() error {
		if dtype == nil || codebook == nil {
			return invalidf("dtype or codebook is NULL")
		}
		d, err := parseDType(C.GoString(dtype))
		if err != nil {
			return err
		}
		data, err := cBytes(src, n, "src")
		if err != nil {
			return err
		}
		cb, err := calibrate(d, data)
		if err != nil {
			return err
		}
		copy(unsafe.Slice((*byte)(unsafe.Pointer(codebook)), len(cb)), cb[:])
		return nil
	})
}

// outBuffer is the caller's output buffer of a call that reports its length through outLen: dst may be NULL only
// with a capacity of 0 (the call then answers VKZIP_E_BUFFER_TOO_SMALL with the size it needs).
func outBuffer(dst unsafe.Pointer, dstCap C.size_t, outLen *C.size_t) ([]byte, error) {
	if outLen == nil {
		return nil, invalidf("out_len is NULL")
	}
	if dst == nil && dstCap != 0 {
		return nil, invalidf("dst is NULL with a capacity of %d", uint64(dstCap))
	}
	return cBytes(dst, dstCap, "dst")
}
