"""ctypes binding of libvkzip.so (capi/include/vkzip.h): loading, signatures, statuses and the fork guard."""

import ctypes
import ctypes.util
import os
import threading

ABI_VERSION = 1  # VKZIP_ABI_VERSION this binding was written for

OK = 0
E_INVALID_ARGUMENT = 1
E_BUFFER_TOO_SMALL = 13
E_FORKED = 14
MAX_DIMS = 32


class Error(Exception):
    """An error of the vkzip library.

    cls names its class, one per error class of the codec: "invalid_argument", "format", "version", "truncated",
    "checksum", "corrupt", "noncanonical", "too_large", "unsupported", "no_device", "device_lost", "io",
    "buffer_too_small", "forked", "cuda", "internal". code is the C status (VKZIP_E_*), 0 for errors raised by
    this package before the library was called.
    """

    def __init__(self, cls, message, code=0):
        super().__init__(message)
        self.cls = cls
        self.code = code


class Options(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("backend", ctypes.c_char_p),
        ("device", ctypes.c_char_p),
        ("formats", ctypes.c_char_p),
        ("prefer", ctypes.c_char_p),
        ("codebook", ctypes.c_void_p),
        ("codebook_len", ctypes.c_size_t),
        ("no_checksums", ctypes.c_int32),
        ("chunk_size", ctypes.c_uint32),
    ]


class Info(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("containers", ctypes.c_uint32),
        ("decoded_size", ctypes.c_uint64),
        ("tensors", ctypes.c_uint32),
        ("blobs", ctypes.c_uint32),
        ("checksums", ctypes.c_int32),
        ("dtype", ctypes.c_char * 16),
        ("format", ctypes.c_char * 16),
        ("ndim", ctypes.c_int32),
        ("shape", ctypes.c_uint64 * MAX_DIMS),
    ]


class CudaCounters(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("host_staged_bytes", ctypes.c_uint64),
        ("device_copy_bytes", ctypes.c_uint64),
        ("zero_copy_bytes", ctypes.c_uint64),
        ("shared_calls", ctypes.c_uint64),
        ("staged_calls", ctypes.c_uint64),
        ("last_shared", ctypes.c_int32),
        ("last_path", ctypes.c_char * 128),
    ]


_c_int, _c_size, _vp, _cp = ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p
_u64p = ctypes.POINTER(ctypes.c_uint64)
_sizep = ctypes.POINTER(ctypes.c_size_t)
_vpp = ctypes.POINTER(ctypes.c_void_p)
_cpp = ctypes.POINTER(ctypes.c_char_p)

# name: (restype, argtypes), as declared in vkzip.h.
_SIGNATURES = {
    "vkzip_abi_version": (ctypes.c_uint32, []),
    "vkzip_version": (_cp, []),
    "vkzip_last_error": (_cp, []),
    "vkzip_error_class": (_cp, [_c_int]),
    "vkzip_free": (None, [_vp]),
    "vkzip_devices": (_c_int, [_vpp]),
    "vkzip_open": (_c_int, [ctypes.POINTER(Options), ctypes.POINTER(ctypes.c_uint64)]),
    "vkzip_close": (_c_int, [ctypes.c_uint64]),
    "vkzip_codec_info": (_c_int, [ctypes.c_uint64, _vpp]),
    "vkzip_encode_bound": (_c_size, [_cp, _c_size, ctypes.c_int32]),
    "vkzip_encode": (_c_int, [ctypes.c_uint64, _cp, _vp, _c_size, _u64p, ctypes.c_int32, _vp, _c_size, _sizep]),
    "vkzip_encode_alloc": (_c_int, [ctypes.c_uint64, _cp, _vp, _c_size, _u64p, ctypes.c_int32, _vpp, _sizep]),
    "vkzip_payload_info": (_c_int, [_vp, _c_size, ctypes.POINTER(Info)]),
    "vkzip_decode": (_c_int, [ctypes.c_uint64, _vp, _c_size, _vp, _c_size, _sizep]),
    "vkzip_decode_alloc": (_c_int, [ctypes.c_uint64, _vp, _c_size, _vpp, _sizep]),
    "vkzip_encode_tensorfile": (_c_int, [ctypes.c_uint64, _vp, _c_size, _vpp, _sizep]),
    "vkzip_encode_file": (_c_int, [ctypes.c_uint64, _cp, _cp]),
    "vkzip_decode_file": (_c_int, [ctypes.c_uint64, _cp, _cp]),
    "vkzip_calibrate": (_c_int, [_cp, _vp, _c_size, ctypes.POINTER(ctypes.c_uint8)]),
    "vkzip_encode_cuda": (_c_int, [ctypes.c_uint64, _cp, ctypes.c_uint64, _c_size, _u64p, ctypes.c_int32,
                                   ctypes.c_int32, ctypes.c_uint64, _vpp, _sizep]),
    "vkzip_decode_cuda": (_c_int, [ctypes.c_uint64, _vp, _c_size, ctypes.c_uint64, _c_size, ctypes.c_int32,
                                   ctypes.c_uint64, _sizep]),
    "vkzip_cuda_get_counters": (_c_int, [ctypes.POINTER(CudaCounters)]),
    "vkzip_encode_cuda_to_cuda": (_c_int, [ctypes.c_uint64, _cp, ctypes.c_uint64, _c_size, _u64p, ctypes.c_int32,
                                           ctypes.c_int32, ctypes.c_uint64, ctypes.c_uint64, _c_size, _sizep]),
    "vkzip_encode_cuda_to_cuda_aligned": (_c_int, [ctypes.c_uint64, _cp, ctypes.c_uint64, _c_size, _u64p,
                                                   ctypes.c_int32, ctypes.c_int32, ctypes.c_uint64, ctypes.c_uint64,
                                                   _c_size, _sizep, _sizep]),
    "vkzip_decode_cuda_to_cuda": (_c_int, [ctypes.c_uint64, ctypes.c_uint64, _c_size, ctypes.c_uint64, _c_size,
                                           ctypes.c_int32, ctypes.c_uint64, _sizep]),
    "vkzip_payload_info_cuda": (_c_int, [ctypes.c_uint64, _c_size, ctypes.c_int32, ctypes.c_uint64,
                                         ctypes.POINTER(Info)]),
    "vkzip_cuda_alloc": (_c_int, [ctypes.c_uint64, ctypes.c_int32, _c_size, _u64p]),
    "vkzip_cuda_free": (_c_int, [ctypes.c_uint64, ctypes.c_int32, ctypes.c_uint64]),
}

_lock = threading.Lock()
_lib = None
_pid = None  # the process that loaded the library


def _candidates():
    env = os.environ.get("VKZIP_LIB")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    out = [os.path.join(here, "libvkzip.so"),
           os.path.join(os.path.dirname(os.path.dirname(here)), "bin", "libvkzip.so")]
    found = ctypes.util.find_library("vkzip")
    if found:
        out.append(found)
    return out


def library_path():
    """The path of the loaded library (loading it if needed)."""
    lib()
    return _lib._name


def lib():
    """The loaded library. It is loaded on first use: $VKZIP_LIB, else libvkzip.so beside this package, else the
    repository's bin/libvkzip.so, else the dynamic loader's search path. Raises Error("forked") in a child forked
    after the load, where the Go runtime inside the library cannot run."""
    global _lib, _pid
    if _lib is not None:
        if os.getpid() != _pid:
            raise Error("forked", "vkzip: libvkzip was loaded before this process forked (pid %d, now %d): the Go "
                        "runtime inside it does not survive fork(); use multiprocessing's 'spawn' start method, "
                        "or import vkzip only after forking" % (_pid, os.getpid()), E_FORKED)
        return _lib
    with _lock:
        if _lib is None:
            errors = []
            for path in _candidates():
                if os.sep in path and not os.path.exists(path):
                    errors.append("%s: not found" % path)
                    continue
                try:
                    handle = ctypes.CDLL(path)
                except OSError as e:
                    errors.append(str(e))
                    continue
                for name, (res, args) in _SIGNATURES.items():
                    fn = getattr(handle, name)
                    fn.restype, fn.argtypes = res, args
                abi = handle.vkzip_abi_version()
                if abi != ABI_VERSION:
                    errors.append("%s: ABI version %d, this package needs %d" % (path, abi, ABI_VERSION))
                    continue
                _pid = os.getpid()
                _lib = handle
                break
            if _lib is None:
                raise Error("unsupported", "vkzip: cannot load libvkzip.so (build it with `make python`, or set "
                            "VKZIP_LIB): " + "; ".join(errors))
    return lib()


def check(status):
    """Raises Error for a failed call's status, with this thread's message."""
    if status != OK:
        raise error(status)


def error(status):
    l = _lib
    cls = l.vkzip_error_class(status).decode()
    msg = (l.vkzip_last_error() or b"").decode("utf-8", "replace") or "vkzip: " + cls
    return Error(cls, msg, status)


def take(ptr, n):
    """The n bytes at a library-allocated pointer, as bytes; the pointer is freed."""
    try:
        return ctypes.string_at(ptr, n) if n else b""
    finally:
        _lib.vkzip_free(ptr)


def take_string(ptr):
    try:
        return ctypes.string_at(ptr).decode()
    finally:
        _lib.vkzip_free(ptr)
