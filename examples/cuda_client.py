#!/usr/bin/env python3
"""vkzip CUDA bridge client test (the H200 test of docs/CUDA.md).

Starts the Go server (examples/cudaserve, or a vkzip verb wired to
cudavk.ListenSelfTest in examples/cudavk), receives its Vulkan-exported buffers and timeline
semaphores over a Unix socket (SCM_RIGHTS + the versioned handshake), imports
them into CUDA with the driver API (ctypes on libcuda.so.1: no CUDA toolkit,
no cuda-python needed), and runs three rounds:

  zero-copy  torch enqueues a long GPU op (torch.cuda._sleep), then writes a
             KV tensor straight into the shared src buffer, signals the
             "ready" semaphore from its stream and waits on "done" -- all
             without any host synchronisation. vkzip encodes src (its queue
             submission waits on "ready"), decodes into the shared dst and
             signals "done"; torch compares dst with the tensor bit for bit.
             Bytes staged through host memory must be 0 on both sides.
  copy       the tensor lives in ordinary PyTorch (caching allocator) memory,
             which Vulkan cannot import: one counted cuMemcpyDtoDAsync into
             src, then the same chain. Host bytes 0, device-copy bytes > 0.
  host       the host-staged path (vkzip bench --source host): tensor ->
             host -> socket -> vkzip upload -> encode/decode -> download ->
             socket -> host -> GPU. Host bytes > 0.

Usage on the GPU machine (binaries built elsewhere, carried in .devbin):

  python3 examples/cuda_client.py --server .devbin/cudaserve [--values 16777216]

Exit status 0 when every check passed; a JSON summary goes to stdout (and to
--json-out). --mode local runs the same protocol without CUDA against a
lavapipe server started with --probe (the repository's tests do this).
"""

import argparse
import array
import ctypes
import faulthandler
import json
import mmap
import os
import shlex
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib

MAGIC = b"VKZB"
VERSION = 1
KIND_HANDSHAKE, KIND_CONTROL, KIND_DATA = 1, 2, 3
HDR = struct.Struct("<4sHHII")
MAX_FDS = 16
MAX_JSON = 1 << 20


def log(*a):
    print("cuda_client:", *a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- protocol


class ProtocolError(Exception):
    pass


class Conn:
    """Frames over a Unix stream socket, fds as SCM_RIGHTS (cudabridge/fdpass.go)."""

    def __init__(self, sock):
        self.s = sock

    def send(self, kind, payload, fds=()):
        frame = HDR.pack(MAGIC, VERSION, kind, len(payload), zlib.crc32(payload) & 0xFFFFFFFF) + payload
        if fds:
            n = self.s.sendmsg([frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        else:
            n = self.s.send(frame)
        if n < len(frame):
            self.s.sendall(frame[n:])

    def send_control(self, obj):
        self.send(KIND_CONTROL, json.dumps(obj).encode())

    def _recv_exact(self, n, fds):
        buf = bytearray()
        while len(buf) < n:
            data, anc, flags, _ = self.s.recvmsg(min(n - len(buf), 1 << 24), socket.CMSG_SPACE(MAX_FDS * 4))
            for level, typ, cdata in anc:
                if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                    a = array.array("i")
                    a.frombytes(cdata[: len(cdata) - len(cdata) % a.itemsize])
                    fds.extend(a)
            if flags & socket.MSG_CTRUNC:
                raise ProtocolError("control data truncated")
            if not data:
                raise EOFError("server closed the connection")
            buf += data
        return bytes(buf)

    def recv(self, max_data=1 << 31):
        fds = []
        try:
            magic, ver, kind, length, crc = HDR.unpack(self._recv_exact(HDR.size, fds))
            if magic != MAGIC:
                raise ProtocolError("bad magic %r" % magic)
            if ver != VERSION:
                raise ProtocolError("protocol version %d (client speaks %d)" % (ver, VERSION))
            limit = max_data if kind == KIND_DATA else MAX_JSON
            if kind not in (KIND_HANDSHAKE, KIND_CONTROL, KIND_DATA) or length > limit:
                raise ProtocolError("frame kind %d of %d bytes" % (kind, length))
            payload = self._recv_exact(length, fds) if length else b""
            if zlib.crc32(payload) & 0xFFFFFFFF != crc:
                raise ProtocolError("payload CRC mismatch")
            return kind, payload, fds
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise

    def recv_control(self):
        kind, payload, fds = self.recv()
        for fd in fds:
            os.close(fd)
        if kind != KIND_CONTROL:
            raise ProtocolError("expected a control message, got kind %d" % kind)
        msg = json.loads(payload)
        if msg.get("op") == "error":
            raise RuntimeError("server error: %s" % msg.get("error"))
        return msg

    def recv_data(self, max_data):
        kind, payload, fds = self.recv(max_data)
        if kind != KIND_DATA or fds:
            raise ProtocolError("expected a data frame")
        return payload


DTYPE_SIZE = {"bf16": 2, "f16": 2, "f32": 4, "u8": 1, "i32": 4}


def validate_handshake(h, nfds):
    """The checks of Handshake.Validate (cudabridge/handshake.go)."""
    bufs, sems = h.get("buffers") or [], h.get("semaphores") or []
    if len(bufs) + len(sems) != nfds:
        raise ProtocolError("%d buffers+semaphores but %d fds" % (len(bufs) + len(sems), nfds))
    if len(h.get("device_uuid", "")) != 32:
        raise ProtocolError("bad device_uuid")
    seen = set()
    for x in bufs + sems:
        if not 0 <= x["fd"] < nfds or x["fd"] in seen:
            raise ProtocolError("bad fd index in %r" % x)
        seen.add(x["fd"])
    for b in bufs:
        n = DTYPE_SIZE[b["dtype"]]
        for d in b["shape"]:
            n *= d
        if n != b["size"] or b["offset"] % 16 or b["offset"] + b["size"] > b["alloc_size"]:
            raise ProtocolError("inconsistent buffer %r" % b)
        if b["handle"] not in ("vulkan_opaque_fd", "cuda_vmm_fd"):
            raise ProtocolError("unknown handle type %r" % b["handle"])
    for s in sems:
        if s["type"] not in ("timeline", "binary"):
            raise ProtocolError("unknown semaphore type %r" % s["type"])


# ---------------------------------------------------------------- CUDA (ctypes)


class CUDAError(RuntimeError):
    pass


class _Win32(ctypes.Structure):
    _fields_ = [("handle", ctypes.c_void_p), ("name", ctypes.c_void_p)]


class _MemHandle(ctypes.Union):
    _fields_ = [("fd", ctypes.c_int), ("win32", _Win32), ("nvSciBufObject", ctypes.c_void_p)]


class ExtMemHandleDesc(ctypes.Structure):  # CUDA_EXTERNAL_MEMORY_HANDLE_DESC
    _fields_ = [("type", ctypes.c_int), ("handle", _MemHandle), ("size", ctypes.c_ulonglong),
                ("flags", ctypes.c_uint), ("reserved", ctypes.c_uint * 16)]


class ExtMemBufferDesc(ctypes.Structure):  # CUDA_EXTERNAL_MEMORY_BUFFER_DESC
    _fields_ = [("offset", ctypes.c_ulonglong), ("size", ctypes.c_ulonglong), ("flags", ctypes.c_uint),
                ("reserved", ctypes.c_uint * 16)]


class _SemHandle(ctypes.Union):
    _fields_ = [("fd", ctypes.c_int), ("win32", _Win32), ("nvSciSyncObj", ctypes.c_void_p)]


class ExtSemHandleDesc(ctypes.Structure):  # CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC
    _fields_ = [("type", ctypes.c_int), ("handle", _SemHandle), ("flags", ctypes.c_uint),
                ("reserved", ctypes.c_uint * 16)]


class _Fence(ctypes.Structure):
    _fields_ = [("value", ctypes.c_ulonglong)]


class _NvSciSync(ctypes.Union):
    _fields_ = [("fence", ctypes.c_void_p), ("reserved", ctypes.c_ulonglong)]


class _KeyedMutexSignal(ctypes.Structure):
    _fields_ = [("key", ctypes.c_ulonglong)]


class _KeyedMutexWait(ctypes.Structure):
    _fields_ = [("key", ctypes.c_ulonglong), ("timeoutMs", ctypes.c_uint)]


class _SignalInner(ctypes.Structure):
    _fields_ = [("fence", _Fence), ("nvSciSync", _NvSciSync), ("keyedMutex", _KeyedMutexSignal),
                ("reserved", ctypes.c_uint * 12)]


class _WaitInner(ctypes.Structure):
    _fields_ = [("fence", _Fence), ("nvSciSync", _NvSciSync), ("keyedMutex", _KeyedMutexWait),
                ("reserved", ctypes.c_uint * 10)]


class ExtSemSignalParams(ctypes.Structure):  # CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS
    _fields_ = [("params", _SignalInner), ("flags", ctypes.c_uint), ("reserved", ctypes.c_uint * 16)]


class ExtSemWaitParams(ctypes.Structure):  # CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS
    _fields_ = [("params", _WaitInner), ("flags", ctypes.c_uint), ("reserved", ctypes.c_uint * 16)]


# The layouts cudabridge/cub.h asserts, checked here too.
assert ctypes.sizeof(ExtMemHandleDesc) == 104 and ExtMemHandleDesc.size.offset == 24 and ExtMemHandleDesc.flags.offset == 32
assert ctypes.sizeof(ExtMemBufferDesc) == 88
assert ctypes.sizeof(ExtSemHandleDesc) == 96 and ExtSemHandleDesc.flags.offset == 24
assert ctypes.sizeof(ExtSemSignalParams) == 144 and ExtSemSignalParams.flags.offset == 72
assert ctypes.sizeof(ExtSemWaitParams) == 144 and ExtSemWaitParams.flags.offset == 72

CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD = 1
CUDA_EXTERNAL_MEMORY_DEDICATED = 1
CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD = 1
CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD = 9


class CUDA:
    """The few driver entry points the client needs, through ctypes."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        P, I, U, ULL, SZ = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_ulonglong, ctypes.c_size_t
        self._f = {}
        sig = {
            "cuInit": [U],
            "cuGetErrorName": [I, ctypes.POINTER(ctypes.c_char_p)],
            "cuDriverGetVersion": [ctypes.POINTER(I)],
            "cuDeviceGetCount": [ctypes.POINTER(I)],
            "cuDeviceGet": [ctypes.POINTER(I), I],
            "cuDeviceGetUuid": [ctypes.c_char_p, I],
            "cuDeviceGetName": [ctypes.c_char_p, I, I],
            "cuDeviceGetAttribute": [ctypes.POINTER(I), I, I],
            "cuDevicePrimaryCtxRetain": [ctypes.POINTER(P), I],
            "cuDevicePrimaryCtxRelease_v2": [I],
            "cuCtxSetCurrent": [P],
            "cuImportExternalMemory": [ctypes.POINTER(P), ctypes.POINTER(ExtMemHandleDesc)],
            "cuExternalMemoryGetMappedBuffer": [ctypes.POINTER(ULL), P, ctypes.POINTER(ExtMemBufferDesc)],
            "cuDestroyExternalMemory": [P],
            "cuMemFree_v2": [ULL],
            "cuImportExternalSemaphore": [ctypes.POINTER(P), ctypes.POINTER(ExtSemHandleDesc)],
            "cuSignalExternalSemaphoresAsync": [ctypes.POINTER(P), ctypes.POINTER(ExtSemSignalParams), U, P],
            "cuWaitExternalSemaphoresAsync": [ctypes.POINTER(P), ctypes.POINTER(ExtSemWaitParams), U, P],
            "cuDestroyExternalSemaphore": [P],
            "cuMemcpyDtoDAsync_v2": [ULL, ULL, SZ, P],
        }
        for name, args in sig.items():
            f = getattr(self.lib, name)
            f.restype, f.argtypes = I, args
            self._f[name] = f
        self.call("cuInit", 0)
        v = I()
        self.call("cuDriverGetVersion", ctypes.byref(v))
        self.version = v.value

    def call(self, name, *args):
        r = self._f[name](*args)
        if r != 0:
            s = ctypes.c_char_p()
            self._f["cuGetErrorName"](r, ctypes.byref(s))
            raise CUDAError("%s: %s (%d)" % (name, (s.value or b"?").decode(), r))

    def devices(self):
        n = ctypes.c_int()
        self.call("cuDeviceGetCount", ctypes.byref(n))
        out = []
        for i in range(n.value):
            d = ctypes.c_int()
            self.call("cuDeviceGet", ctypes.byref(d), i)
            u = ctypes.create_string_buffer(16)
            self.call("cuDeviceGetUuid", u, d.value)
            name = ctypes.create_string_buffer(256)
            self.call("cuDeviceGetName", name, 255, d.value)
            tl = ctypes.c_int()
            self.call("cuDeviceGetAttribute", ctypes.byref(tl), 114, d.value)  # TIMELINE_SEMAPHORE_INTEROP_SUPPORTED
            out.append({"ordinal": i, "dev": d.value, "uuid": u.raw.hex(), "name": name.value.decode(),
                        "timeline_interop": bool(tl.value)})
        return out

    def open(self, dev):
        ctx = ctypes.c_void_p()
        self.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        self.call("cuCtxSetCurrent", ctx)
        return ctx

    def import_memory(self, fd, alloc_size, dedicated):
        d = ExtMemHandleDesc()
        d.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD
        d.handle.fd = fd
        d.size = alloc_size
        d.flags = CUDA_EXTERNAL_MEMORY_DEDICATED if dedicated else 0
        m = ctypes.c_void_p()
        self.call("cuImportExternalMemory", ctypes.byref(m), ctypes.byref(d))  # CUDA owns fd from here
        return m

    def map_buffer(self, mem, offset, size):
        d = ExtMemBufferDesc()
        d.offset, d.size = offset, size
        p = ctypes.c_ulonglong()
        self.call("cuExternalMemoryGetMappedBuffer", ctypes.byref(p), mem, ctypes.byref(d))
        return p.value

    def import_semaphore(self, fd, timeline):
        d = ExtSemHandleDesc()
        d.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD if timeline else CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD
        d.handle.fd = fd
        s = ctypes.c_void_p()
        self.call("cuImportExternalSemaphore", ctypes.byref(s), ctypes.byref(d))
        return s

    def signal(self, sem, value, stream):
        p = ExtSemSignalParams()
        p.params.fence.value = value
        arr = (ctypes.c_void_p * 1)(sem.value)
        self.call("cuSignalExternalSemaphoresAsync", arr, ctypes.byref(p), 1, ctypes.c_void_p(stream))

    def wait(self, sem, value, stream):
        p = ExtSemWaitParams()
        p.params.fence.value = value
        arr = (ctypes.c_void_p * 1)(sem.value)
        self.call("cuWaitExternalSemaphoresAsync", arr, ctypes.byref(p), 1, ctypes.c_void_p(stream))

    def copy_dtod_async(self, dst, src, n, stream):
        self.call("cuMemcpyDtoDAsync_v2", dst, src, n, ctypes.c_void_p(stream))


class _CAI:
    """A raw device pointer as __cuda_array_interface__ (int16 view)."""

    def __init__(self, ptr, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes // 2,), "typestr": "<i2", "data": (ptr, False),
                                         "strides": None, "version": 2}


def tensor_at(torch, ptr, nbytes, ordinal):
    """An int16 torch tensor over imported memory (no copy)."""
    try:
        t = torch.as_tensor(_CAI(ptr, nbytes), device="cuda:%d" % ordinal)
    except Exception as e:  # fall back to CuPy + DLPack
        log("torch.as_tensor(__cuda_array_interface__) failed (%s); trying CuPy + DLPack" % e)
        import cupy
        with cupy.cuda.Device(ordinal):
            mem = cupy.cuda.UnownedMemory(ptr, nbytes, owner=None, device_id=ordinal)
            arr = cupy.ndarray((nbytes // 2,), dtype=cupy.int16, memptr=cupy.cuda.MemoryPointer(mem, 0))
            t = torch.utils.dlpack.from_dlpack(arr.toDlpack())
    assert t.data_ptr() == ptr, "tensor does not alias the imported memory"
    return t


# ---------------------------------------------------------------- rounds


class Counters:
    def __init__(self):
        self.host_staged_bytes = 0
        self.device_copy_bytes = 0

    def snap(self):
        return {"host_staged_bytes": self.host_staged_bytes, "device_copy_bytes": self.device_copy_bytes}


def delta(a, b):
    return {k: b[k] - a[k] for k in a}


class Check:
    def __init__(self):
        self.items = []

    def __call__(self, name, ok, detail=""):
        self.items.append({"check": name, "ok": bool(ok), "detail": detail})
        log(("PASS " if ok else "FAIL ") + name + (": " + detail if detail else ""))

    def ok(self):
        return all(c["ok"] for c in self.items)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", default=".devbin/cudaserve",
                    help="server command (shell words), e.g. '.devbin/cudaserve' or '.devbin/vkzip cuda-selftest'")
    ap.add_argument("--connect", help="connect to a server already listening on this socket instead of starting one")
    ap.add_argument("--values", type=int, default=1 << 24, help="BF16 values per round (default 16Mi = 32 MiB)")
    ap.add_argument("--sleep-ms", type=float, default=1000.0, help="length of the GPU op before the write")
    ap.add_argument("--rounds", default="zero-copy,copy,host")
    ap.add_argument("--mode", choices=["cuda", "local"], default="cuda",
                    help="local: no CUDA; mmap lavapipe memory (tests; server needs --probe)")
    ap.add_argument("--cuda-lib", default=os.environ.get("VKZIP_CUDA_LIB", "libcuda.so.1"))
    ap.add_argument("--allow-host-ordering", action="store_true",
                    help="accept a server whose vkcodec cannot wait on semaphores on the GPU (fallback)")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--hang-dump", type=float, default=60.0,
                    help="print every thread's Python stack if the client is still running after this many seconds")
    ap.add_argument("--json-out", help="also write the summary JSON here")
    ap.add_argument("--verbose", action="store_true", help="log every step of the enqueued chain")
    a = ap.parse_args()
    # A hang (a wait that never completes) must leave evidence: dump all stacks after --hang-dump seconds.
    faulthandler.dump_traceback_later(a.hang_dump, exit=True)

    check = Check()
    summary = {"mode": a.mode, "values": a.values, "rounds": [], "checks": check.items}
    proc = None
    tmpdir = None
    sock_path = a.connect
    if not sock_path:
        tmpdir = tempfile.mkdtemp(prefix="vkzip-cuda-")
        sock_path = os.path.join(tmpdir, "s.sock")
        cmd = shlex.split(a.server) + ["--socket", sock_path, "--values", str(a.values)]
        if a.mode == "local":
            cmd.append("--probe")
        log("starting", " ".join(cmd))
        proc = subprocess.Popen(cmd)
        deadline = time.time() + 120
        while not os.path.exists(sock_path):
            if proc.poll() is not None:
                log("server exited with status %d before listening" % proc.returncode)
                return 2
            if time.time() > deadline:
                proc.kill()
                log("server did not listen within 120 s")
                return 2
            time.sleep(0.05)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(a.timeout)
    s.connect(sock_path)
    conn = Conn(s)
    exit_code = 1
    try:
        exit_code = run(a, conn, check, summary)
    except Exception as e:
        import traceback
        traceback.print_exc()
        check("no exception", False, "%s: %s" % (type(e).__name__, e))
        try:
            conn.send_control({"op": "error", "error": "%s: %s" % (type(e).__name__, e)})
        except Exception:
            pass
    finally:
        s.close()
        if proc is not None:
            try:
                rc = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
            summary["server_exit_status"] = rc
            check("server exited 0", rc == 0, "status %d" % rc)
        if tmpdir:
            try:
                os.remove(sock_path)
            except OSError:
                pass
            os.rmdir(tmpdir)
    summary["ok"] = check.ok()
    out = json.dumps(summary, indent=2)
    print(out)
    if a.json_out:
        with open(a.json_out, "w") as f:
            f.write(out + "\n")
    log("ALL CHECKS PASSED" if summary["ok"] else "SOME CHECKS FAILED")
    return 0 if summary["ok"] and exit_code == 0 else 1


def run(a, conn, check, summary):
    kind, payload, fds = conn.recv()
    if kind != KIND_HANDSHAKE:
        raise ProtocolError("expected the handshake first")
    hs = json.loads(payload)
    hs["buffers"] = hs.get("buffers") or []
    hs["semaphores"] = hs.get("semaphores") or []
    validate_handshake(hs, len(fds))
    cfg = conn.recv_control()
    assert cfg["op"] == "config", cfg
    log("handshake: device %s uuid %s, buffers %s, semaphores %s" % (
        hs["device"], hs["device_uuid"], [b["name"] for b in hs["buffers"]], [x["name"] for x in hs["semaphores"]]))
    log("server config:", json.dumps(cfg))
    summary["handshake"] = hs
    summary["server_config"] = cfg
    bufs = {b["name"]: b for b in hs["buffers"]}
    sems = {x["name"]: x for x in hs["semaphores"]}
    fd_of = {x["name"]: fds[x["fd"]] for x in hs["buffers"] + hs["semaphores"]}
    n = min(a.values, cfg["values"])
    if a.mode == "cuda":
        env = CudaSide(a, hs, bufs, sems, fd_of, check, summary)
    else:
        env = LocalSide(a, cfg, bufs, fd_of, check, summary)
    conn.send_control({"op": "imported", "mode": a.mode, "device": env.device_name, "uuid_match": True})
    counters = Counters()
    value = 0
    for rnd in [r.strip() for r in a.rounds.split(",") if r.strip()]:
        c0 = counters.snap()
        rec = {"round": rnd, "values": n}
        if rnd in ("zero-copy", "copy"):
            if rnd == "copy" and a.mode == "local":
                log("round copy needs CUDA: skipped in local mode")
                continue
            ready, encoded, done = value + 1, value + 2, value + 3
            value = done
            res, got = env.shared_round(conn, rnd, n, ready, encoded, done, counters, rec)
        elif rnd == "host":
            res, got = env.host_round(conn, n, counters, rec)
        else:
            raise SystemExit("unknown round %r" % rnd)
        rec["client_counters"] = delta(c0, counters.snap())
        rec["server"] = res
        summary["rounds"].append(rec)
        sc = res.get("counters", {})
        cc = rec["client_counters"]
        check("%s: server round ok" % rnd, res.get("ok"), res.get("error", ""))
        check("%s: decoded tensor is bitwise equal" % rnd, got == 0, "%s mismatching values" % got)
        if res.get("body_len"):
            rec["ratio"] = 2 * n / res["body_len"]
        if rnd == "zero-copy":
            check("zero-copy: no host staging (client)", cc["host_staged_bytes"] == 0, str(cc))
            check("zero-copy: no host staging (server)", sc.get("host_staged_bytes") == 0, str(sc))
            check("zero-copy: no device copy", cc["device_copy_bytes"] == 0, str(cc))
        elif rnd == "copy":
            check("copy: no host staging", cc["host_staged_bytes"] == 0 and sc.get("host_staged_bytes") == 0,
                  "client %s server %s" % (cc, sc))
            check("copy: one counted device copy", cc["device_copy_bytes"] == 2 * n, str(cc))
        elif rnd == "host":
            check("host: bytes staged through host memory > 0",
                  cc["host_staged_bytes"] > 0 and sc.get("host_staged_bytes", 0) > 0,
                  "client %s server %s" % (cc, sc))
        if rnd in ("zero-copy", "copy"):
            gpu = res.get("ordering") == "gpu"
            check("%s: encode ordered on the GPU by the imported semaphore" % rnd, gpu or a.allow_host_ordering,
                  "ordering %s%s" % (res.get("ordering"), " (accepted: --allow-host-ordering)" if not gpu else ""))
            if "enqueue_ms" in rec:
                check("%s: the host enqueued the whole chain without blocking" % rnd,
                      rec["enqueue_ms"] < a.sleep_ms / 2, "%.1f ms to enqueue, GPU op %.0f ms" % (rec["enqueue_ms"], a.sleep_ms))
            # Evidence, not a check: "ready" below the wait value when vkzip queued the encode means the
            # submission was in the queue before CUDA signalled, so only the semaphore ordered it.
            rec["queued_before_cuda_signalled"] = res.get("ready_value_at_submit", 0) < ready
    conn.send_control({"op": "bye", "ok": check.ok(), "error": "; ".join(c["check"] for c in check.items if not c["ok"])})
    bye = conn.recv_control()
    summary["server_counters_total"] = bye.get("counters")
    env.close()
    return 0


class CudaSide:
    def __init__(self, a, hs, bufs, sems, fd_of, check, summary):
        # CUDA loads kernels lazily by default, and loading one synchronises the context. The chain below enqueues
        # the compare *after* the stream waits on "done", which the server signals only once this client has sent
        # its next message: a lazily loaded compare kernel would block the host right there, forever (seen on the
        # H200). Load modules eagerly, and still warm up every kernel of the chain before the timed rounds.
        os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")
        import torch
        self.torch = torch
        self.a = a
        self.cuda = CUDA(a.cuda_lib)
        devs = self.cuda.devices()
        match = [d for d in devs if d["uuid"] == hs["device_uuid"]]
        check("CUDA device matches the Vulkan device by UUID", len(match) == 1,
              "vulkan %s, cuda %s" % (hs["device_uuid"], [(d["ordinal"], d["uuid"]) for d in devs]))
        if not match:
            raise RuntimeError("no CUDA device with the Vulkan device's UUID")
        d = match[0]
        self.ordinal = d["ordinal"]
        self.device_name = d["name"]
        summary["cuda"] = {"driver_version": self.cuda.version, "device": d, "torch": torch.__version__}
        torch.cuda.set_device(self.ordinal)
        torch.cuda.init()
        self.ctx = self.cuda.open(d["dev"])
        self.mems, self.ptrs, self.sems = [], {}, {}
        for name, b in bufs.items():
            fd = fd_of[name]
            try:
                m = self.cuda.import_memory(fd, b["alloc_size"], b["dedicated"])
            except Exception:
                os.close(fd)
                raise
            self.mems.append(m)
            self.ptrs[name] = self.cuda.map_buffer(m, b["offset"], b["size"])
        for name, x in sems.items():
            fd = fd_of[name]
            try:
                self.sems[name] = self.cuda.import_semaphore(fd, x["type"] == "timeline")
            except Exception:
                os.close(fd)
                raise
        if "ready" not in self.sems or "done" not in self.sems:
            raise RuntimeError("the server exported no semaphores (its Vulkan device lacks VK_KHR_external_semaphore_fd)")
        self.src = tensor_at(torch, self.ptrs["src"], bufs["src"]["size"], self.ordinal)
        self.dst = tensor_at(torch, self.ptrs["dst"], bufs["dst"]["size"], self.ordinal)
        self.stream = torch.cuda.Stream()
        self.gen = torch.Generator(device="cuda").manual_seed(1234)
        # torch.cuda._sleep counts GPU clock cycles: calibrate once (host sync allowed here, before the test).
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        torch.cuda._sleep(100_000_000)
        e1.record()
        e1.synchronize()
        self.cycles_per_ms = 100_000_000 / max(e0.elapsed_time(e1), 1e-3)
        self.warm_up()
        log("CUDA %d, device %d %s; imported %s; %.0f cycles/ms" % (
            self.cuda.version, self.ordinal, self.device_name, sorted(self.ptrs), self.cycles_per_ms))

    def warm_up(self):
        """Runs every kernel of shared_round once, on small tensors, so none is loaded inside the chain."""
        torch = self.torch
        with torch.cuda.stream(self.stream):
            a = torch.empty(4096, device="cuda", dtype=torch.int16)
            a.fill_(0x7FC1)
            torch.cuda._sleep(1000)
            kv = self.kv(4096)
            a.copy_(kv.view(torch.int16))
            int((a != kv.view(torch.int16)).sum().item())
        self.stream.synchronize()
        log("kernels of the chain warmed up (CUDA_MODULE_LOADING=%s)" % os.environ.get("CUDA_MODULE_LOADING"))

    def kv(self, n):
        # A KV-like BF16 tensor made on the current stream (after whatever was queued before).
        t = self.torch.randn(n, device="cuda", dtype=self.torch.float32, generator=self.gen) * 0.05
        return t.to(self.torch.bfloat16)

    def shared_round(self, conn, rnd, n, ready, encoded, done, counters, rec):
        torch = self.torch
        s = self.stream
        h = s.cuda_stream
        src16, dst16 = self.src[:n], self.dst[:n]
        t0 = time.perf_counter()
        step = lambda what: log("%s: enqueue %s" % (rnd, what)) if self.a.verbose else None
        with torch.cuda.stream(s):
            step("fill")
            src16.fill_(0x7FC1)  # a pattern a premature encode would see
            dst16.fill_(0x0101)
            step("sleep")
            torch.cuda._sleep(int(self.a.sleep_ms * self.cycles_per_ms))  # the long GPU op
            step("kv")
            kv = self.kv(n)
            if rnd == "zero-copy":
                src16.copy_(kv.view(torch.int16))  # torch writes straight into vkzip's buffer
            else:
                # Ordinary caching-allocator memory: Vulkan cannot import it, so one counted D2D copy.
                self.cuda.copy_dtod_async(self.ptrs["src"], kv.data_ptr(), 2 * n, h)
                counters.device_copy_bytes += 2 * n
            step("signal ready=%d" % ready)
            self.cuda.signal(self.sems["ready"], ready, h)  # CUDA -> Vulkan
            step("wait done=%d" % done)
            self.cuda.wait(self.sems["done"], done, h)  # Vulkan -> CUDA: decoded data is in dst
            step("compare")
            mismatches = (dst16 != kv.view(torch.int16)).sum()
        enqueue_ms = (time.perf_counter() - t0) * 1e3
        rec["enqueue_ms"] = enqueue_ms
        rec["sleep_ms"] = self.a.sleep_ms
        log("%s: enqueued sleep + write + signal(ready=%d) + wait(done=%d) + compare in %.1f ms, no host sync" % (
            rnd, ready, done, enqueue_ms))
        conn.send_control({"op": "encode", "round": rnd, "values": n, "ready": ready, "encoded": encoded, "done": done})
        res = conn.recv_control()
        # The end of the chain: only now does the host wait (bounded, in case the chain is stuck).
        deadline = time.time() + self.a.timeout
        while not s.query():
            if time.time() > deadline:
                raise TimeoutError("the CUDA stream did not finish: 'done' never reached %d" % done)
            time.sleep(0.0005)
        rec["wall_ms"] = (time.perf_counter() - t0) * 1e3
        return res, int(mismatches.item())

    def host_round(self, conn, n, counters, rec):
        torch = self.torch
        t0 = time.perf_counter()
        kv = self.kv(n)
        host = kv.view(torch.int16).cpu().numpy().tobytes()  # device -> host
        counters.host_staged_bytes += len(host)
        conn.send_control({"op": "host_encode", "round": "host", "values": n})
        conn.send(KIND_DATA, host)
        res = conn.recv_control()
        if not res.get("ok"):
            return res, -1
        data = conn.recv_data(2 * n)
        back = torch.frombuffer(bytearray(data), dtype=torch.int16).to("cuda")  # host -> device
        counters.host_staged_bytes += len(data)
        mismatches = int((back != kv.view(torch.int16)).sum().item())
        rec["wall_ms"] = (time.perf_counter() - t0) * 1e3
        return res, mismatches

    def close(self):
        self.torch.cuda.synchronize()
        self.src = self.dst = None
        for name, p in self.ptrs.items():
            self.cuda.call("cuMemFree_v2", p)
        for m in self.mems:
            self.cuda.call("cuDestroyExternalMemory", m)
        for sem in self.sems.values():
            self.cuda.call("cuDestroyExternalSemaphore", sem)


class LocalSide:
    """No CUDA: the buffers are lavapipe memfds, mapped here (tests of the protocol)."""

    def __init__(self, a, cfg, bufs, fd_of, check, summary):
        self.device_name = "local (mmap)"
        probe = cfg.get("probe")
        if not probe:
            raise RuntimeError("local mode needs a server started with --probe")
        self.maps, self.off = {}, {}
        for name, b in bufs.items():
            fd = fd_of[name]
            size = os.fstat(fd).st_size
            self.maps[name] = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            os.close(fd)
            marker = bytes.fromhex(probe[name])
            off = self.maps[name].find(marker)
            if off < 0:
                raise RuntimeError("probe marker of %s not found in its mapping" % name)
            self.off[name] = off + b["offset"]

    def shared_round(self, conn, rnd, n, ready, encoded, done, counters, rec):
        kv = os.urandom(2 * n)
        so, do = self.off["src"], self.off["dst"]
        self.maps["src"][so:so + 2 * n] = kv
        self.maps["dst"][do:do + 2 * n] = b"\x01" * (2 * n)
        conn.send_control({"op": "encode", "round": rnd, "values": n, "ready": ready, "encoded": encoded, "done": done,
                           "host_signal": True})
        res = conn.recv_control()
        got = self.maps["dst"][do:do + 2 * n]
        return res, sum(1 for i in range(0, 2 * n, 2) if got[i:i + 2] != kv[i:i + 2])

    def host_round(self, conn, n, counters, rec):
        kv = os.urandom(2 * n)
        counters.host_staged_bytes += len(kv)
        conn.send_control({"op": "host_encode", "round": "host", "values": n})
        conn.send(KIND_DATA, kv)
        res = conn.recv_control()
        if not res.get("ok"):
            return res, -1
        data = conn.recv_data(2 * n)
        counters.host_staged_bytes += len(data)
        return res, sum(1 for i in range(0, 2 * n, 2) if data[i:i + 2] != kv[i:i + 2])

    def close(self):
        for m in self.maps.values():
            m.close()


if __name__ == "__main__":
    sys.exit(main())
