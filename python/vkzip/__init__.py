"""vkzip: lossless compression of LLM KV caches (BF16, FP16, FP32, FP8) from Python.

A pure-Python package over libvkzip.so, vkzip's C ABI, through ctypes. numpy is required; PyTorch is optional
and imported only when a torch tensor or device is passed. The payloads are vkzip's container format: a tensor
compressed here is byte for byte what `vkzip encode --kind raw --dtype D -` makes from its bytes, and a file from
save_file is what `vkzip encode` makes from the safetensors file it holds, so `vkzip decode` gives that file back.

    import vkzip
    b = vkzip.compress(kv)                    # numpy array or torch tensor (CPU or CUDA)
    kv2 = vkzip.decompress(b)                 # numpy, of the recorded dtype and shape
    kv3 = vkzip.decompress(b, device="cuda")  # a torch tensor on the GPU
    vkzip.save_file({"k": k, "v": v}, "kv.vkz")
    tensors = vkzip.load_file("kv.vkz", device="cpu")

Errors are vkzip.Error, whose .cls names the error class ("checksum", "corrupt", "truncated", ...).

fork: the Go runtime inside libvkzip.so does not survive fork(). The library is loaded on first use; using it in a
child forked after that raises vkzip.Error with cls "forked" (instead of hanging). Use multiprocessing with the
"spawn" start method, or import and use vkzip only after forking.
"""

import json
import os
import threading

from . import _lib, _safetensors
from ._lib import Error

__all__ = ["Error", "Codec", "compress", "decompress", "info", "save", "load", "save_file", "load_file",
           "calibrate", "compress_bound", "devices", "version", "cuda_counters", "library_path"]

DTYPES = ("bf16", "f16", "f32", "f8_e4m3", "f8_e5m2")  # the coded dtypes; the other safetensors dtypes are stored
_SIZES = _safetensors.SIZES
_INTS = {1: ("u8", "i8"), 2: ("u16", "i16"), 4: ("u32", "i32"), 8: ("u64", "i64")}

_NP_NAMES = {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8", "uint8": "u8", "int16": "i16",
             "uint16": "u16", "int32": "i32", "uint32": "u32", "int64": "i64", "uint64": "u64", "bool": "bool",
             "bfloat16": "bf16", "float8_e4m3fn": "f8_e4m3", "float8_e5m2": "f8_e5m2"}
_TORCH_NAMES = {"torch.bfloat16": "bf16", "torch.float16": "f16", "torch.float32": "f32", "torch.float64": "f64",
                "torch.float8_e4m3fn": "f8_e4m3", "torch.float8_e5m2": "f8_e5m2", "torch.int8": "i8",
                "torch.uint8": "u8", "torch.int16": "i16", "torch.int32": "i32", "torch.int64": "i64",
                "torch.bool": "bool", "torch.uint16": "u16", "torch.uint32": "u32", "torch.uint64": "u64"}
_TORCH_ATTRS = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64",
                "f8_e4m3": "float8_e4m3fn", "f8_e5m2": "float8_e5m2", "i8": "int8", "u8": "uint8",
                "i16": "int16", "i32": "int32", "i64": "int64", "bool": "bool", "u16": "uint16", "u32": "uint32",
                "u64": "uint64"}
_CAI_NAMES = {"<f2": "f16", "<f4": "f32", "<f8": "f64", "|i1": "i8", "|u1": "u8", "<i2": "i16", "<u2": "u16",
              "<i4": "i32", "<u4": "u32", "<i8": "i64", "<u8": "u64", "|b1": "bool", "<V2": "u16", "|V2": "u16",
              "|V1": "u8"}


def _np():
    import numpy
    return numpy


def _torch():
    import torch
    return torch


def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "data_ptr")


def _ml_dtypes():
    try:
        import ml_dtypes
        return ml_dtypes
    except ImportError:
        return None


def numpy_dtype(name):
    """The numpy dtype decompress gives for a vkzip dtype name: ml_dtypes' bfloat16 and float8 types when
    ml_dtypes is installed, else the unsigned integers of the same size holding the bit patterns."""
    np = _np()
    if name in ("bf16", "f8_e4m3", "f8_e5m2"):
        ml = _ml_dtypes()
        if ml is not None:
            return np.dtype({"bf16": ml.bfloat16, "f8_e4m3": ml.float8_e4m3fn, "f8_e5m2": ml.float8_e5m2}[name])
        return np.dtype(np.uint16 if name == "bf16" else np.uint8)
    if name == "bool":
        return np.dtype(np.bool_)
    return np.dtype({"f16": "<f2", "f32": "<f4", "f64": "<f8", "i8": "i1", "u8": "u1", "i16": "<i2", "u16": "<u2",
                     "i32": "<i4", "u32": "<u4", "i64": "<i8", "u64": "<u8"}[name])


def _torch_dtype(name):
    return getattr(_torch(), _TORCH_ATTRS[name])


def _norm_dtype(dtype):
    if dtype is None:
        return None
    name = str(dtype).lower()
    name = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "f8_e4m3fn": "f8_e4m3"}.get(name, name)
    if name not in _SIZES:
        raise Error("invalid_argument", "vkzip: unknown dtype %r (want one of %s, or another safetensors dtype)"
                    % (dtype, ", ".join(DTYPES)), _lib.E_INVALID_ARGUMENT)
    return name


def _pick(have, itemsize, forced):
    """The dtype to record: forced (dtype=) when given, which must have the element size of the data (a bit
    pattern reinterpreted, e.g. uint16 holding BF16), else the data's own."""
    if forced is not None:
        if _SIZES[forced] != itemsize:
            raise Error("invalid_argument", "vkzip: dtype=%r has %d-byte elements, the data %d-byte ones (%s)"
                        % (forced, _SIZES[forced], itemsize, have), _lib.E_INVALID_ARGUMENT)
        return forced
    if have is None:
        raise Error("unsupported", "vkzip: data of this type has no vkzip dtype: pass dtype=", 9)
    return have


class _Src:
    """A tensor's memory as the C API takes it."""

    def __init__(self, dtype, ptr, nbytes, shape, keep, cuda=None):
        self.dtype, self.ptr, self.nbytes, self.shape, self.keep, self.cuda = dtype, ptr, nbytes, shape, keep, cuda


def _source(x, dtype=None):
    forced = _norm_dtype(dtype)
    if _is_torch(x):
        t = x.detach()
        if not t.is_contiguous():
            t = t.contiguous()
        name = _pick(_TORCH_NAMES.get(str(t.dtype)), t.element_size(), forced)
        cuda = None
        if t.is_cuda:
            torch = _torch()
            cuda = (t.device.index if t.device.index is not None else torch.cuda.current_device(),
                    torch.cuda.current_stream(t.device).cuda_stream)
        return _Src(name, t.data_ptr(), t.numel() * t.element_size(), tuple(t.shape), t, cuda)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        if cai.get("strides") is not None:
            raise Error("invalid_argument", "vkzip: a strided CUDA array: make it contiguous first", 1)
        n = 1
        for d in cai["shape"]:
            n *= d
        size = int(cai["typestr"][2:])
        name = _pick(_CAI_NAMES.get(cai["typestr"]), size, forced)
        dev = getattr(getattr(x, "device", None), "id", 0)
        stream = cai.get("stream") or 0
        return _Src(name, cai["data"][0], n * size, tuple(cai["shape"]), x, (dev, stream if stream > 2 else 0))
    np = _np()
    if isinstance(x, np.ndarray):
        a = np.ascontiguousarray(x).reshape(x.shape)  # ascontiguousarray makes 0-d arrays 1-d
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("<"))
        name = _pick(_NP_NAMES.get(a.dtype.name), a.dtype.itemsize, forced)
        return _Src(name, a.ctypes.data, a.nbytes, a.shape, a)
    if isinstance(x, (bytes, bytearray, memoryview)):
        if forced is None:
            raise Error("invalid_argument", "vkzip: raw bytes need dtype=", _lib.E_INVALID_ARGUMENT)
        a = np.frombuffer(x, dtype=np.uint8)
        if a.nbytes % _SIZES[forced]:
            raise Error("invalid_argument", "vkzip: %d bytes is not a whole number of %s values"
                        % (a.nbytes, forced), _lib.E_INVALID_ARGUMENT)
        return _Src(forced, a.ctypes.data, a.nbytes, None, a)
    raise Error("invalid_argument", "vkzip: cannot compress a %s (want a numpy array, a torch tensor, an object "
                "with __cuda_array_interface__, or bytes with dtype=)" % type(x).__name__, _lib.E_INVALID_ARGUMENT)


def _buffer(b):
    """A bytes-like payload as (pointer, length, keep-alive)."""
    np = _np()
    if _is_torch(b) or not isinstance(b, (bytes, bytearray, memoryview, np.ndarray)):
        raise Error("invalid_argument", "vkzip: a payload is bytes-like, not %s" % type(b).__name__, 1)
    if isinstance(b, np.ndarray):
        a = np.ascontiguousarray(b).reshape(-1).view(np.uint8)
    else:
        a = np.frombuffer(b, dtype=np.uint8)
    return a.ctypes.data, a.nbytes, a


def _shape_args(shape):
    import ctypes
    if shape is None:
        return None, -1
    arr = (ctypes.c_uint64 * max(len(shape), 1))(*shape)
    return arr, len(shape)


def _info(ptr, n):
    import ctypes
    l = _lib.lib()
    inf = _lib.Info()
    inf.struct_size = ctypes.sizeof(inf)
    _lib.check(l.vkzip_payload_info(ptr, n, ctypes.byref(inf)))
    return inf


def info(payload):
    """What a payload's headers say: dtype, shape and format of its first tensor, its counts and decoded size. The
    bodies are not checked (decompress checks them)."""
    ptr, n, keep = _buffer(payload)
    inf = _info(ptr, n)
    nd = inf.ndim
    return {"dtype": inf.dtype.decode(), "shape": tuple(inf.shape[:min(nd, _lib.MAX_DIMS)]), "ndim": nd,
            "format": inf.format.decode(), "decoded_size": inf.decoded_size, "tensors": inf.tensors,
            "blobs": inf.blobs, "containers": inf.containers, "checksums": bool(inf.checksums)}


class Codec:
    """An open codec: a backend with its options. Safe to share between threads.

    backend: "auto" (a usable GPU, else the Go CPU backend), "cpu" or "vulkan"; backend_device: a device selector
    for GPU backends (`vkzip devices`); format: a format list as `vkzip encode --format` ("tbe3,xw3"); prefer:
    "speed", "balanced" or "ratio" as `vkzip encode --prefer` (not with format); codebook: 16 exponent bytes
    (calibrate) or the JSON of `vkzip calibrate -o`; checksums: False leaves chunk checksums out; chunk_size:
    values per chunk (a power of two, 1024..65536; 0: the format's default).
    """

    def __init__(self, backend="auto", backend_device=None, format=None, prefer=None, codebook=None,
                 checksums=True, chunk_size=0):
        import ctypes
        l = _lib.lib()
        o = _lib.Options()
        o.struct_size = ctypes.sizeof(o)
        enc = lambda s: None if s is None else str(s).encode()
        o.backend, o.device, o.formats, o.prefer = enc(backend), enc(backend_device), enc(format), enc(prefer)
        if codebook is not None:
            cb = bytes(codebook if not isinstance(codebook, str) else codebook.encode())
            self._cb = ctypes.create_string_buffer(cb, len(cb))
            o.codebook, o.codebook_len = ctypes.cast(self._cb, ctypes.c_void_p), len(cb)
        o.no_checksums = 0 if checksums else 1
        o.chunk_size = chunk_size
        h = ctypes.c_uint64(0)
        _lib.check(l.vkzip_open(ctypes.byref(o), ctypes.byref(h)))
        self._h = h.value
        self._closed = False
        self._live = 0  # cuda_empty allocations not yet freed

    @property
    def handle(self):
        if self._closed:
            raise Error("invalid_argument", "vkzip: codec closed", _lib.E_INVALID_ARGUMENT)
        return self._h

    def close(self):
        """Closes the codec; with tensors from cuda_empty alive, once the last of them is freed."""
        if not self._closed:
            self._closed = True
            if self._live == 0:
                _lib.check(_lib.lib().vkzip_close(self._h))

    def _freed(self, dev, ptr):
        """A cuda_empty allocation's last tensor is gone: free it, and close a codec whose close() waited."""
        self._live -= 1
        l = _lib.lib()
        _lib.check(l.vkzip_cuda_free(self._h, dev, ptr))
        if self._closed and self._live == 0:
            _lib.check(l.vkzip_close(self._h))

    def __del__(self):
        # A codec dropped without close() releases its backend here; never raises (interpreter shutdown, a child
        # after fork where the library cannot be called).
        try:
            if not self._closed and _lib._pid == os.getpid():
                self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def describe(self):
        """The backend, device, formats and checksums of this codec, as a dict."""
        import ctypes
        p = ctypes.c_void_p()
        _lib.check(_lib.lib().vkzip_codec_info(self.handle, ctypes.byref(p)))
        return json.loads(_lib.take_string(p))

    def compress(self, x, dtype=None, device=None, out=None):
        """The payload of one tensor: a numpy array, a torch tensor (CPU or CUDA), an object with
        __cuda_array_interface__, or bytes with dtype=. dtype= names the dtype to record ("bf16", "f16", "f32",
        "f8_e4m3", "f8_e5m2", ...): needed for bit patterns held in integers (BF16 in uint16) and raw bytes.

        The payload is bytes, unless device= ("cuda", "cuda:1", a torch.device) or out= (a contiguous uint8 CUDA
        tensor with room for it) asks for it in CUDA memory: then x is a CUDA tensor on that device and the result
        is a uint8 CUDA tensor (a view of out when given, starting up to 15 bytes in: the codec puts the body
        16-byte aligned where it can), the same bytes; no value crosses host memory."""
        import ctypes
        l = _lib.lib()
        s = _source(x, dtype)
        shape, ndim = _shape_args(s.shape)
        if device is not None or out is not None:
            return self._compress_to_cuda(s, shape, ndim, device, out)
        p, n = ctypes.c_void_p(), ctypes.c_size_t()
        if s.cuda is not None:
            st = l.vkzip_encode_cuda(self.handle, s.dtype.encode(), s.ptr, s.nbytes, shape, ndim, s.cuda[0],
                                     s.cuda[1], ctypes.byref(p), ctypes.byref(n))
        else:
            st = l.vkzip_encode_alloc(self.handle, s.dtype.encode(), s.ptr, s.nbytes, shape, ndim, ctypes.byref(p),
                                      ctypes.byref(n))
        _lib.check(st)
        return _lib.take(p, n.value)

    def decompress(self, payload, out=None, device=None):
        """The tensor of a payload from compress, of the dtype and shape it records. Into out (a numpy array or a
        torch tensor, CPU or CUDA, of that many elements, of that dtype or an integer type of its size) when given;
        else a torch tensor on device when given ("cpu", "cuda", "cuda:1", a torch.device); else a numpy array
        (BF16 and FP8 as ml_dtypes types when installed, else as uint16 / uint8 bit patterns). A payload in CUDA
        memory (a uint8 CUDA tensor, from compress(..., device=)) decodes into a CUDA tensor, on its device unless
        out or device says otherwise."""
        if _is_torch(payload) and payload.is_cuda:
            return self._decompress_cuda(payload, out, device)
        ptr, n, keep = _buffer(payload)
        inf = _info(ptr, n)
        if inf.tensors != 1 or inf.blobs != 0:
            raise Error("invalid_argument", "vkzip: the payload holds %d tensors and %d header blobs: a file (use "
                        "vkzip.load)" % (inf.tensors, inf.blobs), _lib.E_INVALID_ARGUMENT)
        dtype, shape = _tensor_of(inf)
        if out is None:
            if device is None:
                out = _np().empty(shape, dtype=numpy_dtype(dtype))
            else:
                out = _torch().empty(shape, dtype=_torch_dtype(dtype), device=device)
        dst = _dest(out, dtype, inf.decoded_size)
        self._decode_into(ptr, n, dst)
        return out

    def _compress_to_cuda(self, s, shape, ndim, device, out):
        import ctypes
        torch = _torch()
        if s.cuda is None or torch is None:
            raise Error("invalid_argument", "vkzip: a payload in CUDA memory is made from a CUDA tensor", 1)
        want = torch.device(device) if device is not None else None
        if want is not None and (want.type != "cuda" or
                                 (want.index if want.index is not None else torch.cuda.current_device()) != s.cuda[0]):
            raise Error("invalid_argument", "vkzip: device=%s, the tensor is on cuda:%d" % (device, s.cuda[0]), 1)
        l = _lib.lib()
        if out is None:
            bound = l.vkzip_encode_bound(s.dtype.encode(), s.nbytes, ndim)
            out = torch.empty(bound, dtype=torch.uint8, device=torch.device("cuda", s.cuda[0]))
        elif not (_is_torch(out) and out.is_cuda and out.dtype == torch.uint8 and out.is_contiguous()
                  and out.device.index == s.cuda[0]):
            raise Error("invalid_argument", "vkzip: out must be a contiguous uint8 tensor on cuda:%d" % s.cuda[0], 1)
        off, n = ctypes.c_size_t(), ctypes.c_size_t()
        _lib.check(l.vkzip_encode_cuda_to_cuda_aligned(self.handle, s.dtype.encode(), s.ptr, s.nbytes, shape, ndim,
                                                       s.cuda[0], s.cuda[1], out.data_ptr(), out.numel(),
                                                       ctypes.byref(off), ctypes.byref(n)))
        return out.view(-1)[off.value:off.value + n.value]

    def _decompress_cuda(self, payload, out, device):
        import ctypes
        torch = _torch()
        p = payload.detach()
        if p.dtype != torch.uint8 or not p.is_contiguous():
            raise Error("invalid_argument", "vkzip: a payload in CUDA memory is a contiguous uint8 tensor", 1)
        dev = p.device.index if p.device.index is not None else torch.cuda.current_device()
        stream = torch.cuda.current_stream(p.device).cuda_stream
        l = _lib.lib()
        inf = _lib.Info()
        inf.struct_size = ctypes.sizeof(inf)
        _lib.check(l.vkzip_payload_info_cuda(p.data_ptr(), p.numel(), dev, stream, ctypes.byref(inf)))
        if inf.tensors != 1 or inf.blobs != 0:
            raise Error("invalid_argument", "vkzip: the payload holds %d tensors and %d header blobs: a file (use "
                        "vkzip.load)" % (inf.tensors, inf.blobs), _lib.E_INVALID_ARGUMENT)
        dtype, shape = _tensor_of(inf)
        if out is None:
            out = torch.empty(shape, dtype=_torch_dtype(dtype), device=device if device is not None else p.device)
        dst = _dest(out, dtype, inf.decoded_size)
        if dst.cuda is None or dst.cuda[0] != dev:
            # Another device or host memory: through a host payload.
            return self.decompress(p.cpu().numpy(), out=out)
        got = ctypes.c_size_t()
        _lib.check(l.vkzip_decode_cuda_to_cuda(self.handle, p.data_ptr(), p.numel(), dst.ptr, dst.nbytes, dev,
                                               dst.cuda[1], ctypes.byref(got)))
        if got.value != dst.nbytes:
            raise Error("corrupt", "vkzip: decoded %d bytes, expected %d" % (got.value, dst.nbytes), 6)
        return out

    def cuda_empty(self, shape, dtype, device=None):
        """An uninitialised torch tensor on a CUDA device ("cuda", "cuda:1", a torch.device; None: the current
        one) in memory this codec shares with its Vulkan device: compress and decompress work on it in place, with
        no copy (vkzip_cuda_alloc in vkzip.h; a tensor there, or a view of it at a 256-byte aligned offset, is coded
        without moving its values). A decompress into it writes it while verifying: a damaged payload leaves it
        unspecified. The memory is freed when the last tensor over it is; the codec stays open until then, even
        after close(). vkzip.Error (cls "unsupported") where that GPU cannot share memory with Vulkan."""
        import ctypes
        torch = _torch()
        if torch is None:
            raise Error("unsupported", "vkzip: cuda_empty needs torch", 9)
        name = dtype if isinstance(dtype, str) else _TORCH_NAMES.get(str(dtype))
        name = _norm_dtype(name)
        if name is None:
            raise Error("invalid_argument", "vkzip: cuda_empty of dtype %r" % (dtype,), 1)
        shape = tuple(int(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        n = _SIZES[name]
        for d in shape:
            n *= d
        dev = torch.device(device if device is not None else "cuda")
        idx = dev.index if dev.index is not None else torch.cuda.current_device()
        ptr = ctypes.c_uint64()
        _lib.check(_lib.lib().vkzip_cuda_alloc(self.handle, idx, n, ctypes.byref(ptr)))
        mem = _CudaMemory(self, idx, ptr.value, n)
        raw = torch.as_tensor(mem, device=torch.device("cuda", idx))
        return raw.view(_torch_dtype(name)).view(shape)

    def _decode_into(self, ptr, n, dst):
        import ctypes
        l = _lib.lib()
        got = ctypes.c_size_t()
        if dst.cuda is not None:
            st = l.vkzip_decode_cuda(self.handle, ptr, n, dst.ptr, dst.nbytes, dst.cuda[0], dst.cuda[1],
                                     ctypes.byref(got))
        else:
            st = l.vkzip_decode(self.handle, ptr, n, dst.ptr, dst.nbytes, ctypes.byref(got))
        _lib.check(st)
        if got.value != dst.nbytes:
            raise Error("corrupt", "vkzip: decoded %d bytes, expected %d" % (got.value, dst.nbytes), 6)

    def save(self, tensors, metadata=None, dtypes=None):
        """The payload of a safetensors file holding tensors (a dict of name to numpy array or torch tensor),
        laid out as python/README.md describes: `vkzip decode` of it gives that file. dtypes maps names to the
        dtype to record for arrays holding bit patterns (a uint16 array of BF16 values: {"k": "bf16"})."""
        import ctypes
        dtypes = dtypes or {}
        unknown = set(dtypes) - set(tensors)
        if unknown:
            raise Error("invalid_argument", "vkzip: dtypes names tensors that are not there: %s"
                        % ", ".join(sorted(unknown)), _lib.E_INVALID_ARGUMENT)
        entries, keep = [], []
        for name, x in tensors.items():
            s = _source(x, dtypes.get(name))
            if s.cuda is not None:
                s = _source(x.detach().cpu(), dtypes.get(name))
            keep.append(s)
            data = (ctypes.c_char * s.nbytes).from_address(s.ptr) if s.nbytes else b""
            entries.append((name, s.dtype, s.shape if s.shape is not None else (s.nbytes // _SIZES[s.dtype],), data))
        try:
            st = _safetensors.serialize(entries, metadata)
        except ValueError as e:
            raise Error("invalid_argument", "vkzip: %s" % e, _lib.E_INVALID_ARGUMENT)
        return self.encode_tensorfile(st)

    def encode_tensorfile(self, data):
        """The payload of a safetensors or .npy file held in memory: what `vkzip encode` writes for it."""
        import ctypes
        ptr, n, keep = _buffer(data)
        p, m = ctypes.c_void_p(), ctypes.c_size_t()
        _lib.check(_lib.lib().vkzip_encode_tensorfile(self.handle, ptr, n, ctypes.byref(p), ctypes.byref(m)))
        return _lib.take(p, m.value)

    def decode_bytes(self, payload):
        """A whole payload decoded (a file byte for byte, a tensor's bytes), as a writable numpy uint8 array."""
        np = _np()
        ptr, n, keep = _buffer(payload)
        inf = _info(ptr, n)
        out = np.empty(inf.decoded_size, dtype=np.uint8)
        self._decode_into(ptr, n, _Src("u8", out.ctypes.data, out.nbytes, None, out))
        return out

    def load(self, payload, device=None, with_dtypes=False):
        """The tensors of a payload from save (a dict in data order): numpy arrays, or torch tensors on device
        when given. with_dtypes: return (tensors, {name: dtype name}) instead, for numpy arrays whose dtype
        cannot say it (BF16 and FP8 without ml_dtypes)."""
        raw = self.decode_bytes(payload)
        try:
            _, items = _safetensors.parse(raw)
        except (ValueError, KeyError, TypeError) as e:
            raise Error("invalid_argument", "vkzip: the payload does not hold a safetensors file: %s" % e, 1)
        out = {}
        for name, dtype, shape, begin, end in items:
            piece = raw[begin:end]
            if device is None:
                out[name] = piece.view(numpy_dtype(dtype)).reshape(shape)
            else:
                torch = _torch()
                ints = {1: "u1", 2: "<i2", 4: "<i4", 8: "<i8"}[_SIZES[dtype]]
                t = torch.from_numpy(piece.view(ints)).view(_torch_dtype(dtype)).reshape(shape)
                out[name] = t.to(device)
        if with_dtypes:
            return out, {name: dtype for name, dtype, _, _, _ in items}
        return out

    def save_file(self, tensors, path, metadata=None, dtypes=None):
        """save(), written to path: it appears only once complete, replacing any file there."""
        data = self.save(tensors, metadata, dtypes)
        tmp = "%s.%d.tmp" % (path, os.getpid())
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)

    def load_file(self, path, device=None, with_dtypes=False):
        """load() of the payload in file path."""
        with open(path, "rb") as f:
            return self.load(f.read(), device, with_dtypes)

    def encode_file(self, src, dst):
        """Encodes the safetensors or .npy file src into dst, as `vkzip encode -f -o dst src`."""
        _lib.check(_lib.lib().vkzip_encode_file(self.handle, os.fsencode(src), os.fsencode(dst)))

    def decode_file(self, src, dst):
        """Decodes the payload file src into dst, as `vkzip decode -f -o dst src`."""
        _lib.check(_lib.lib().vkzip_decode_file(self.handle, os.fsencode(src), os.fsencode(dst)))


class _CudaMemory:
    """One vkzip_cuda_alloc allocation, exposed through __cuda_array_interface__; torch keeps it alive while any
    tensor over it lives, and its finalizer frees it."""

    def __init__(self, codec, dev, ptr, nbytes):
        self.codec, self.dev, self.ptr = codec, dev, ptr
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 3,
                                         "strides": None}
        codec._live += 1

    def __del__(self):
        try:
            if _lib._pid == os.getpid():
                self.codec._freed(self.dev, self.ptr)
        except Exception:
            pass


def _tensor_of(inf):
    """The dtype name and shape of a payload's tensor (vkzip_info)."""
    if inf.ndim > _lib.MAX_DIMS:
        raise Error("unsupported", "vkzip: a tensor of rank %d" % inf.ndim, 9)
    dtype, shape = inf.dtype.decode(), tuple(inf.shape[:inf.ndim])
    if dtype not in _SIZES:
        raise Error("unsupported", "vkzip: the payload's tensor has dtype %s" % dtype, 9)
    return dtype, shape


def _dest(out, dtype, nbytes):
    """The memory of an output tensor, checked against the payload's dtype and size."""
    if _is_torch(out):
        if not out.is_contiguous():
            raise Error("invalid_argument", "vkzip: out is not contiguous", 1)
        have, size = _TORCH_NAMES.get(str(out.dtype)), out.element_size()
        d = _Src(have, out.data_ptr(), out.numel() * size, tuple(out.shape), out)
        if out.is_cuda:
            torch = _torch()
            d.cuda = (out.device.index if out.device.index is not None else torch.cuda.current_device(),
                      torch.cuda.current_stream(out.device).cuda_stream)
    else:
        np = _np()
        if not isinstance(out, np.ndarray) or not out.flags.c_contiguous or not out.flags.writeable:
            raise Error("invalid_argument", "vkzip: out must be a writable C-contiguous numpy array or a torch tensor",
                        1)
        have, size = _NP_NAMES.get(out.dtype.name), out.dtype.itemsize
        d = _Src(have, out.ctypes.data, out.nbytes, out.shape, out)
    if have != dtype and not (have in _INTS.get(size, ()) and size == _SIZES[dtype]):
        raise Error("invalid_argument", "vkzip: out has dtype %s, the payload holds %s" % (have, dtype), 1)
    if d.nbytes != nbytes:
        raise Error("invalid_argument", "vkzip: out holds %d bytes, the payload decodes to %d" % (d.nbytes, nbytes),
                    1)
    return d


_codecs = {}
_codecs_lock = threading.Lock()


def _codec(backend=None, backend_device=None, format=None, prefer=None, codebook=None, checksums=True,
           chunk_size=0):
    """A codec for these options, opened once and shared. backend None: $VKZIP_BACKEND, else "auto"."""
    if backend is None:
        backend = os.environ.get("VKZIP_BACKEND", "auto")
    if isinstance(codebook, str):
        codebook = codebook.encode()
    key = (backend, backend_device, format, prefer, bytes(codebook) if codebook is not None else None,
           bool(checksums), chunk_size)
    _lib.lib()  # refuse use after fork before touching cached handles
    with _codecs_lock:
        c = _codecs.get(key)
        if c is None:
            c = Codec(backend, backend_device, format, prefer, codebook, checksums, chunk_size)
            _codecs[key] = c
        return c


def compress(x, prefer=None, format=None, dtype=None, device=None, out=None, **options):
    """Codec.compress with a shared codec of these options (backend=, backend_device=, codebook=, checksums=,
    chunk_size=; see Codec)."""
    return _codec(format=format, prefer=prefer, **options).compress(x, dtype, device, out)


def decompress(payload, out=None, device=None, **options):
    """Codec.decompress with a shared codec (backend=, backend_device=)."""
    return _codec(**options).decompress(payload, out, device)


def save(tensors, metadata=None, dtypes=None, **options):
    """Codec.save with a shared codec of these options (format=, prefer=, backend=, ...)."""
    return _codec(**options).save(tensors, metadata, dtypes)


def load(payload, device=None, with_dtypes=False, **options):
    """Codec.load with a shared codec."""
    return _codec(**options).load(payload, device, with_dtypes)


def save_file(tensors, path, metadata=None, dtypes=None, **options):
    """Like safetensors.torch.save_file: tensors (name -> numpy array or torch tensor) into a vkzip file at path,
    a compressed safetensors file that `vkzip decode` turns back into it. dtypes: see Codec.save."""
    _codec(**options).save_file(tensors, path, metadata, dtypes)


def load_file(path, device=None, with_dtypes=False, **options):
    """Like safetensors.torch.load_file: the tensors of a file from save_file, as numpy arrays (device None) or
    torch tensors on device. with_dtypes: see Codec.load."""
    return _codec(**options).load_file(path, device, with_dtypes)


def calibrate(x, dtype=None):
    """A SplitZip-4 codebook (16 bytes) for BF16 data like x, as `vkzip calibrate` picks it; pass it as codebook=."""
    import ctypes
    s = _source(x, dtype)
    if s.cuda is not None:
        s = _source(x.detach().cpu(), dtype)
    cb = (ctypes.c_uint8 * 16)()
    _lib.check(_lib.lib().vkzip_calibrate(s.dtype.encode(), s.ptr, s.nbytes, cb))
    return bytes(cb)


def compress_bound(x, dtype=None):
    """The largest payload compress makes of x (as vkzip_encode_bound): the size of an out= buffer that always fits."""
    s = _source(x, dtype)
    _, ndim = _shape_args(s.shape)
    return _lib.lib().vkzip_encode_bound(s.dtype.encode(), s.nbytes, ndim)


def devices():
    """The backends and Vulkan devices, as a dict."""
    import ctypes
    p = ctypes.c_void_p()
    _lib.check(_lib.lib().vkzip_devices(ctypes.byref(p)))
    return json.loads(_lib.take_string(p))


def version():
    """The library's version string."""
    return _lib.lib().vkzip_version().decode()


def cuda_counters():
    """How the process's CUDA tensors moved (vkzip_cuda_counters in vkzip.h): the byte counters host_staged_bytes
    (values through host memory), device_copy_bytes (device-to-device copies into and out of memory shared with
    Vulkan) and zero_copy_bytes (the codec's work in place there); shared_calls and staged_calls, the CUDA encodes
    and decodes that took the shared path or staged through host memory; shared, whether the last one took the
    shared path, and last_path, that call's path in words ("shared: <device>" or "staged: <why>")."""
    import ctypes
    k = _lib.CudaCounters()
    k.struct_size = ctypes.sizeof(k)
    _lib.check(_lib.lib().vkzip_cuda_get_counters(ctypes.byref(k)))
    return {"host_staged_bytes": k.host_staged_bytes, "device_copy_bytes": k.device_copy_bytes,
            "zero_copy_bytes": k.zero_copy_bytes, "shared_calls": k.shared_calls, "staged_calls": k.staged_calls,
            "shared": bool(k.last_shared), "last_path": k.last_path.decode(errors="replace")}


def library_path():
    """The path of the loaded libvkzip.so."""
    return _lib.library_path()
