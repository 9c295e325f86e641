"""Tests of the vkzip Python package (numpy; torch when installed, CUDA when available).

Run with pytest or the standard library: `python3 -m pytest python/tests` or `python3 -m unittest discover -s
python/tests`. Environment:
  VKZIP_LIB             the libvkzip.so to test (default: the package's own, else bin/libvkzip.so)
  VKZIP_CLI             a built vkzip CLI to compare payloads with (default: bin/vkzip when present)
  VKZIP_TEST_INSTALLED  1: test the installed vkzip package rather than the one in python/
  VKZIP_TEST_BACKENDS   backends to run on, space-separated (default: cpu, plus vulkan when a Vulkan device is
                        usable or VKZIP_REQUIRE_VULKAN=1)
Regenerate the golden files (only when the format changes on purpose): python3 python/tests/test_vkzip.py --regen
"""

import json
import multiprocessing
import os
import random
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if os.environ.get("VKZIP_TEST_INSTALLED") != "1":  # else: test the package as installed (make python)
    sys.path.insert(0, os.path.join(ROOT, "python"))

import vkzip  # noqa: E402
from vkzip import _lib  # noqa: E402

KV = os.path.join(ROOT, "cmd", "vkzip", "testdata", "kv-sample.safetensors")
GOLDEN_ST = os.path.join(HERE, "data", "golden.safetensors")
GOLDEN_VKZ = os.path.join(HERE, "data", "golden.safetensors.vkz")
PAYLOAD_CLASSES = {"format", "version", "truncated", "checksum", "corrupt", "noncanonical", "too_large",
                   "unsupported"}


def cli_path():
    p = os.environ.get("VKZIP_CLI") or os.path.join(ROOT, "bin", "vkzip")
    return p if os.path.exists(p) else None


def cli(*args, stdin=None):
    """Runs the built CLI (for comparisons only: the package itself never runs a subprocess)."""
    r = subprocess.run([cli_path()] + list(args), input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       check=False)
    if r.returncode != 0:
        raise AssertionError("vkzip %s: %s" % (" ".join(args), r.stderr.decode()))
    return r.stdout


def backends():
    env = os.environ.get("VKZIP_TEST_BACKENDS")
    if env:
        return env.split()
    out = ["cpu"]
    usable = any(d.get("usable") for d in vkzip.devices().get("vulkan_devices", []))
    if usable or os.environ.get("VKZIP_REQUIRE_VULKAN") == "1":
        out.append("vulkan")
    return out


def bf16_of(f32):
    """BF16 bit patterns (uint16) of float32 values, by truncation."""
    return (np.asarray(f32, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


def kv_like(n, seed=0):
    rng = np.random.default_rng(seed)
    return bf16_of(rng.standard_normal(n).astype(np.float32) * 0.5)


def read_safetensors(buf):
    """An independent minimal reader, for checking files: {name: (dtype, shape, bytes)} and metadata."""
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n])
    meta = header.pop("__metadata__", None)
    out = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        out[name] = (e["dtype"], tuple(e["shape"]), bytes(buf[8 + n + b:8 + n + end]))
    return out, meta


def golden_tensors():
    """The tensors of the golden file: every coded dtype, a stored one, a scalar; values from formulas."""
    i = np.arange(512, dtype=np.float32)
    return {
        "layer0.k": bf16_of(np.sin(i * 0.37) * (1 + (i % 7) / 8)).reshape(16, 4, 8),
        "layer0.v": bf16_of(np.cos(i * 0.11) * 0.25).reshape(16, 4, 8),
        "scale": (np.linspace(0.5, 2.0, 8)).astype(np.float32),
        "h16": (np.sin(i[:64] * 0.05) * 3).astype(np.float16).reshape(4, 16),
        "q8": ((np.arange(64) * 37) % 120).astype(np.uint8),
        "e5": ((np.arange(64) * 11) % 124).astype(np.uint8),
        "pos": np.arange(5, dtype=np.int32),
        "step": np.array(7, dtype=np.int64),
    }


GOLDEN_DTYPES = {"layer0.k": "bf16", "layer0.v": "bf16", "q8": "f8_e4m3", "e5": "f8_e5m2"}
GOLDEN_META = {"producer": "vkzip python tests", "layout": "python/README.md"}


def regen():
    payload = vkzip.save(golden_tensors(), GOLDEN_META, GOLDEN_DTYPES, backend="cpu")
    with open(GOLDEN_VKZ, "wb") as f:
        f.write(payload)
    st = bytes(vkzip.Codec(backend="cpu").decode_bytes(payload))
    with open(GOLDEN_ST, "wb") as f:
        f.write(st)
    print("wrote %s (%d bytes) and %s (%d bytes)" % (GOLDEN_VKZ, len(payload), GOLDEN_ST, len(st)))


def damaged(payload, count, seed=20261201):
    """Damaged copies of payload, as scripts/corrupt-check.sh makes them."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        b = bytearray(payload)
        kind = i % 4
        if kind == 0:
            for _ in range(rng.randint(1, 4)):
                p = rng.randrange(len(b))
                b[p] ^= 1 << rng.randrange(8)
        elif kind == 1:
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        elif kind == 2:
            b = b[:rng.randrange(len(b))]
        else:
            a, ln, d = rng.randrange(len(b)), rng.randint(1, 256), rng.randrange(len(b))
            piece = bytes(b[a:a + ln])
            b[d:d + len(piece)] = piece
            if b == bytearray(payload):
                b[rng.randrange(len(b))] ^= 0xFF
        out.append(bytes(b))
    return out


class Base(unittest.TestCase):
    backend = "cpu"

    def codec(self, **kw):
        return vkzip.Codec(backend=self.backend, **kw)


class BackendTests:
    """Run once per backend (subclasses below)."""

    def test_round_trip_dtypes(self):
        c = self.codec()
        x = kv_like(3 * 4096 + 5)
        cases = [
            (x, "bf16"),
            (np.sin(np.arange(5000, dtype=np.float32) * 0.01).astype(np.float16).reshape(50, 100), None),
            (np.cos(np.arange(4096, dtype=np.float32) * 0.02).reshape(64, 64), None),
            ((np.arange(3000) % 110).astype(np.uint8), "f8_e4m3"),
            ((np.arange(3000) % 120).astype(np.uint8), "f8_e5m2"),
            (np.arange(100, dtype=np.int32).reshape(10, 10), None),
        ]
        for a, dt in cases:
            b = c.compress(a, dtype=dt)
            self.assertLessEqual(len(b), vkzip.compress_bound(a, dtype=dt))
            self.assertGreater(vkzip.compress_bound(a, dtype=dt), a.nbytes)  # room for a stored tensor's header
            inf = vkzip.info(b)
            self.assertEqual(inf["shape"], a.shape)
            self.assertEqual(inf["dtype"], dt or {"float16": "f16", "float32": "f32", "int32": "i32"}[a.dtype.name])
            out = np.full(a.shape, 0x5A, dtype=a.dtype)  # poisoned: the decode must overwrite every byte
            self.assertIs(c.decompress(b, out=out), out)
            self.assertTrue(np.array_equal(out.view(np.uint8), a.view(np.uint8)), dt)
            y = c.decompress(b)
            self.assertEqual(y.shape, a.shape)
            self.assertEqual(y.tobytes(), a.tobytes())
            if dt is None:
                self.assertEqual(y.dtype, a.dtype)

    def test_kv_file_tensors_and_ratio(self):
        """Every tensor of the KV test file round-trips bit-exactly; the whole file through save_file at a ratio
        of at least 1.30."""
        with open(KV, "rb") as f:
            raw = f.read()
        meta, items = vkzip._safetensors.parse(raw)
        tensors, dtypes = {}, {}
        c = self.codec()
        for name, dtype, shape, b, e in items:
            a = np.frombuffer(raw[b:e], dtype=vkzip.numpy_dtype(dtype)).reshape(shape)
            tensors[name], dtypes[name] = a, dtype
            payload = c.compress(a, dtype=dtype)
            self.assertLess(len(payload), a.nbytes, name)
            self.assertEqual(c.decompress(payload).tobytes(), raw[b:e], name)
        self.assertEqual(len(tensors), 8)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "kv.vkz")
            c.save_file(tensors, path, meta, dtypes=dtypes)
            size = os.path.getsize(path)
            back, got_dtypes = c.load_file(path, with_dtypes=True)
        ratio = len(raw) / size
        print("\n  %s: KV test file %d -> %d bytes through save_file, ratio %.4f" % (self.backend, len(raw), size,
                                                                                     ratio))
        self.assertGreaterEqual(ratio, 1.30)
        self.assertEqual(list(back), list(tensors))
        self.assertEqual(got_dtypes, dtypes)
        for name, a in tensors.items():
            self.assertEqual(back[name].shape, a.shape)
            self.assertEqual(back[name].tobytes(), a.tobytes(), name)

    def test_files_like_cli(self):
        with open(KV, "rb") as f:
            raw = f.read()
        c = self.codec()
        payload = c.encode_tensorfile(raw)
        self.assertEqual(bytes(c.decode_bytes(payload)), raw)
        with tempfile.TemporaryDirectory() as d:
            enc, dec = os.path.join(d, "kv.vkz"), os.path.join(d, "kv.safetensors")
            c.encode_file(KV, enc)
            with open(enc, "rb") as f:
                self.assertEqual(f.read(), payload)
            c.decode_file(enc, dec)
            with open(dec, "rb") as f:
                self.assertEqual(f.read(), raw)
            with self.assertRaises(vkzip.Error) as e:
                c.encode_file(os.path.join(d, "missing.safetensors"), enc)
            self.assertEqual(e.exception.cls, "io")
            if cli_path():
                self.assertEqual(payload, cli("encode", "-q", "--backend", "cpu", "-c", KV))

    def test_bad_input(self):
        c = self.codec()
        x = kv_like(4096)
        for bad in [(np.zeros(10, np.float32), "bf16"), (x, "bf17"), (x, "f32")]:
            with self.assertRaises(vkzip.Error) as e:
                c.compress(*bad)
            self.assertEqual(e.exception.cls, "invalid_argument", bad[1])
        with self.assertRaises(vkzip.Error) as e:
            c.compress(b"abc", dtype="bf16")
        self.assertEqual(e.exception.cls, "invalid_argument")
        with self.assertRaises(vkzip.Error):
            c.compress(b"abcd")
        with self.assertRaises(vkzip.Error):
            c.compress([1, 2, 3])
        payload = c.compress(x, dtype="bf16")
        for wrong in [np.empty(4096, np.float32), np.empty(4095, np.uint16), np.empty(4096, np.uint8)]:
            with self.assertRaises(vkzip.Error) as e:
                c.decompress(payload, out=wrong)
            self.assertEqual(e.exception.cls, "invalid_argument")
        with self.assertRaises(vkzip.Error) as e:
            c.decompress("not bytes")
        self.assertEqual(e.exception.cls, "invalid_argument")
        # Truncations at every length up to the first body, then sampled; corruptions as corrupt-check.sh makes.
        cuts = list(range(0, 200)) + list(range(200, len(payload), 97))
        for n in cuts:
            with self.assertRaises(vkzip.Error) as e:
                c.decompress(payload[:n])
            self.assertIn(e.exception.cls, PAYLOAD_CLASSES, n)
        for i, b in enumerate(damaged(payload, 200)):
            with self.assertRaises(vkzip.Error, msg="damaged payload %d" % i) as e:
                c.decompress(b)
            self.assertIn(e.exception.cls, PAYLOAD_CLASSES, i)
        # The payload scripts/corrupt-check.sh damages: the KV file at 1,024-value chunks.
        with open(KV, "rb") as f:
            fp = self.codec(chunk_size=1024).encode_tensorfile(f.read())
        for i, b in enumerate(damaged(fp, 200, seed=7)):
            with self.assertRaises(vkzip.Error, msg="damaged file payload %d" % i) as e:
                c.load(b)
            self.assertIn(e.exception.cls, PAYLOAD_CLASSES, i)
        # A file's payload is no tensor, and a tensor's is no file.
        with self.assertRaises(vkzip.Error) as e:
            c.decompress(fp)
        self.assertEqual(e.exception.cls, "invalid_argument")
        with self.assertRaises(vkzip.Error):
            c.load(payload)

    def test_codebooks(self):
        x = kv_like(1 << 15, seed=3)
        cb = vkzip.calibrate(x, dtype="bf16")
        self.assertEqual(len(cb), 16)
        self.assertEqual(len(set(cb)), 16)
        c = self.codec(codebook=cb)
        self.assertEqual(c.decompress(c.compress(x, dtype="bf16")).tobytes(), x.tobytes())
        for bad, cls in [(cb[:15], "invalid_argument"), (cb[:15] + cb[:1], "corrupt"),
                         (b'{"codebook": "x"}', "invalid_argument")]:
            with self.assertRaises(vkzip.Error) as e:
                self.codec(codebook=bad)
            self.assertEqual(e.exception.cls, cls, bad)
        with self.assertRaises(vkzip.Error) as e:
            vkzip.calibrate(np.zeros(4, np.float32))
        self.assertEqual(e.exception.cls, "unsupported")

    def test_threads(self):
        c = self.codec()
        errors = []

        def work(seed):
            try:
                for k in range(4):
                    x = kv_like(20000 + k, seed=seed)
                    if c.decompress(c.compress(x, dtype="bf16")).tobytes() != x.tobytes():
                        errors.append("mismatch %d" % seed)
            except Exception as e:  # reported below
                errors.append(repr(e))

        ts = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])

    def test_describe(self):
        d = self.codec(prefer="ratio").describe()
        self.assertEqual(d["backend"], self.backend)
        self.assertEqual(d["formats"], "huff,auto")
        self.assertEqual(d["abi_version"], _lib.ABI_VERSION)


for _b in backends():
    globals()["Test_" + _b] = type("Test_" + _b, (BackendTests, Base), {"backend": _b})


class TestCLIEquality(Base):
    """A payload made from Python equals the CLI's from the same bytes and options."""

    def setUp(self):
        if not cli_path():
            self.skipTest("no built CLI (set VKZIP_CLI or build bin/vkzip)")

    def test_tensors(self):
        x = kv_like(70000, seed=5)
        f16 = np.sin(np.arange(9000, dtype=np.float32) * 0.003).astype(np.float16)
        f8 = (np.arange(5000) % 111).astype(np.uint8)
        for arr, dtype in [(x, "bf16"), (f16, "f16"), (f8, "f8_e4m3")]:
            for prefer in [None, "speed", "balanced", "ratio"]:
                args = ["encode", "-q", "--backend", "cpu", "--kind", "raw", "--dtype", dtype, "-c", "-"]
                if prefer:
                    args[1:1] = ["--prefer", prefer]
                want = cli(*args, stdin=arr.tobytes())
                got = vkzip.compress(arr, prefer=prefer, dtype=dtype, backend="cpu")
                self.assertEqual(got, want, (dtype, prefer))
        want = cli("encode", "-q", "--backend", "cpu", "--format", "tbe3", "--no-checksum", "--chunk", "4096",
                   "--kind", "raw", "--dtype", "bf16", "-c", "-", stdin=x.tobytes())
        got = vkzip.compress(x.tobytes(), format="tbe3", dtype="bf16", backend="cpu", checksums=False,
                             chunk_size=4096)
        self.assertEqual(got, want)

    def test_save_is_cli_encode_of_the_file(self):
        t = golden_tensors()
        payload = vkzip.save(t, GOLDEN_META, GOLDEN_DTYPES, backend="cpu")
        st = bytes(vkzip.Codec(backend="cpu").decode_bytes(payload))
        self.assertEqual(cli("encode", "-q", "--backend", "cpu", "-c", "-", stdin=st), payload)
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "g.vkz")
            with open(p, "wb") as f:
                f.write(payload)
            self.assertEqual(cli("decode", "-q", "--backend", "cpu", "-c", p), st)

    def test_codebook_json_from_cli(self):
        with tempfile.TemporaryDirectory() as d:
            cbp = os.path.join(d, "cb.json")
            cli("calibrate", "-q", "-o", cbp, KV)
            with open(cbp, "rb") as f:
                cbjson = f.read()
            x = kv_like(40000, seed=9)
            want = cli("encode", "-q", "--backend", "cpu", "--codebook", cbp, "--kind", "raw", "--dtype", "bf16",
                       "-c", "-", stdin=x.tobytes())
        self.assertEqual(vkzip.compress(x, dtype="bf16", backend="cpu", codebook=cbjson), want)
        with open(KV, "rb") as f:
            raw = f.read()
        _, items = vkzip._safetensors.parse(raw)
        allbf16 = b"".join(raw[b:e] for _, _, _, b, e in items)
        cb = vkzip.calibrate(allbf16, dtype="bf16")
        self.assertEqual(list(cb), json.loads(cbjson)["exponents"])


class TestGolden(Base):
    """The committed golden file: a vkzip container of a safetensors file, and that file."""

    def test_golden(self):
        with open(GOLDEN_VKZ, "rb") as f:
            golden = f.read()
        with open(GOLDEN_ST, "rb") as f:
            st = f.read()
        self.assertEqual(vkzip.save(golden_tensors(), GOLDEN_META, GOLDEN_DTYPES, backend="cpu"), golden)
        self.assertEqual(bytes(vkzip.Codec(backend="cpu").decode_bytes(golden)), st)
        entries, meta = read_safetensors(st)
        self.assertEqual(meta, GOLDEN_META)
        want = golden_tensors()
        self.assertEqual(set(entries), set(want))
        names = {"bf16": "BF16", "f8_e4m3": "F8_E4M3", "f8_e5m2": "F8_E5M2"}
        for name, a in want.items():
            dtype, shape, data = entries[name]
            self.assertEqual(shape, a.shape, name)
            self.assertEqual(data, a.tobytes(), name)
            if name in GOLDEN_DTYPES:
                self.assertEqual(dtype, names[GOLDEN_DTYPES[name]])
        (n,) = struct.unpack("<Q", st[:8])
        self.assertEqual((8 + n) % 8, 0)
        back, dts = vkzip.load_file(GOLDEN_VKZ, with_dtypes=True, backend="cpu")
        for name, a in want.items():
            self.assertEqual(back[name].tobytes(), a.tobytes())
        self.assertEqual({k: v for k, v in dts.items() if k in GOLDEN_DTYPES}, GOLDEN_DTYPES)


def _spawn_worker(seed):
    import vkzip as v
    return v.compress(kv_like(10000, seed=seed), dtype="bf16", backend="cpu")


class TestProcesses(Base):
    def test_fork_raises(self):
        vkzip.compress(kv_like(100), dtype="bf16", backend="cpu")  # loaded in this process
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            signal.alarm(30)  # a hang is the failure this guards against
            res = []
            try:
                vkzip.compress(kv_like(100), dtype="bf16", backend="cpu")
                res.append("no error")
            except vkzip.Error as e:
                res.append(e.cls)
            # Below the Python check, the C entry points refuse too, without entering the Go runtime.
            raw = _lib._lib
            res.append(str(raw.vkzip_encode_bound(b"bf16", 2, -1)))
            res.append("fork" in raw.vkzip_last_error().decode())
            os.write(w, json.dumps(res).encode())
            os._exit(0)
        os.close(w)
        _, status = os.waitpid(pid, 0)
        got = os.read(r, 4096)
        os.close(r)
        self.assertTrue(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "child status %d" % status)
        self.assertEqual(json.loads(got), ["forked", "0", True])
        # The parent still works.
        x = kv_like(1000)
        self.assertEqual(vkzip.decompress(vkzip.compress(x, dtype="bf16", backend="cpu")).tobytes(), x.tobytes())

    def test_spawn_works(self):
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(1) as pool:
            got = pool.map(_spawn_worker, [1, 2])
        self.assertEqual(got, [_spawn_worker(1), _spawn_worker(2)])


def _torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


@unittest.skipIf(_torch() is None, "torch is not installed")
class TestTorch(Base):
    def test_cpu(self):
        torch = _torch()
        t = torch.randn(64, 4, 32).to(torch.bfloat16)
        b = vkzip.compress(t, backend="cpu")
        self.assertEqual(b, vkzip.compress(t.view(torch.int16).numpy(), dtype="bf16", backend="cpu"))
        back = vkzip.decompress(b, device="cpu", backend="cpu")
        self.assertEqual(back.dtype, torch.bfloat16)
        self.assertTrue(torch.equal(back.view(torch.int16), t.view(torch.int16)))
        out = torch.full_like(t, 7.0)
        vkzip.decompress(b, out=out, backend="cpu")
        self.assertTrue(torch.equal(out.view(torch.int16), t.view(torch.int16)))
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "t.vkz")
            vkzip.save_file({"k": t, "v": t.float()}, p, backend="cpu")
            got = vkzip.load_file(p, device="cpu", backend="cpu")
        self.assertEqual(got["k"].dtype, torch.bfloat16)
        self.assertTrue(torch.equal(got["v"], t.float()))

    def _cuda_dtypes(self):
        """The CUDA test dtypes this torch has: (name, torch dtype, integer dtype of its size)."""
        torch = _torch()
        out = [("bf16", torch.bfloat16, torch.int16), ("f16", torch.float16, torch.int16)]
        for name, attr in (("f8_e4m3", "float8_e4m3fn"), ("f8_e5m2", "float8_e5m2")):
            if hasattr(torch, attr):
                out.append((name, getattr(torch, attr), torch.uint8))
        return out

    @unittest.skipIf(_torch() is None or not _torch().cuda.is_available(), "no CUDA device")
    def test_cuda(self):
        """CUDA -> payload -> CUDA: bit-exact, the payload equal to the CPU codec's, and on the shared path (memory
        shared by CUDA and Vulkan) one device copy each way and no value through host memory. VKZIP_TEST_CUDA_SHARED=1
        makes the shared path mandatory (on a GPU whose Vulkan driver shares memory with CUDA)."""
        torch = _torch()
        required = os.environ.get("VKZIP_TEST_CUDA_SHARED") == "1"
        c = vkzip.Codec()
        cpu = vkzip.Codec(backend="cpu")
        for name, dt, ints in self._cuda_dtypes():
            with self.subTest(dtype=name):
                g = torch.Generator(device="cuda").manual_seed(len(name))
                t = (torch.randn(256, 8, 129, device="cuda", generator=g) * 3).to(dt)
                nb = t.numel() * t.element_size()
                poison = 0x5A5A if ints == torch.int16 else 0x5A
                k0 = vkzip.cuda_counters()
                b = c.compress(t)
                self.assertEqual(b, cpu.compress(t.cpu()), "the CUDA payload differs from the CPU codec's")
                out = torch.empty_like(t)
                out.view(ints).fill_(poison)
                c.decompress(b, out=out)
                torch.cuda.synchronize()
                self.assertTrue(torch.equal(out.view(ints), t.view(ints)), "CUDA round trip is not bit-exact")
                k1 = vkzip.cuda_counters()
                d = _growth(k0, k1)
                print("\n  %s: %s; host-staged %d, device-copied %d bytes of %d" % (
                    name, k1["last_path"], d["host_staged_bytes"], d["device_copy_bytes"], nb))
                if d["shared_calls"] == 2:
                    self.assertTrue(k1["shared"])
                    self.assertEqual(d["host_staged_bytes"], 0, "values crossed host memory on the shared path")
                    self.assertEqual(d["device_copy_bytes"], 2 * nb)
                    self.assertEqual(d["zero_copy_bytes"], 2 * nb)
                else:
                    self.assertFalse(required, "VKZIP_TEST_CUDA_SHARED=1 but: " + k1["last_path"])
                    self.assertEqual(d["host_staged_bytes"], 2 * nb)
                back = c.decompress(b, device="cuda")
                self.assertTrue(back.is_cuda and back.dtype == dt and torch.equal(back.view(ints), t.view(ints)))

    @unittest.skipIf(_torch() is None or not _torch().cuda.is_available(), "no CUDA device")
    def test_cuda_stream_and_damage(self):
        """A tensor produced on a side stream is read after that stream's work; a damaged payload raises its class
        and leaves the output tensor as it was."""
        torch = _torch()
        c = vkzip.Codec()
        s = torch.cuda.Stream()
        base = torch.randn(1 << 20, device="cuda")
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            torch.cuda._sleep(1 << 24)  # the values land well after the call would read them unordered
            t = (base * 2).to(torch.bfloat16)
            b = c.compress(t)
        s.synchronize()
        self.assertEqual(b, vkzip.compress(t.cpu(), backend="cpu"))
        bad = bytearray(b)
        bad[len(bad) // 2] ^= 0x10
        out = torch.full_like(t, 7.0)
        with self.assertRaises(vkzip.Error) as e:
            c.decompress(bytes(bad), out=out)
        self.assertIn(e.exception.cls, ("checksum", "corrupt"))
        torch.cuda.synchronize()
        self.assertTrue(bool((out == 7.0).all()), "a damaged payload wrote the output tensor")

    @unittest.skipIf(_torch() is None or not _torch().cuda.is_available(), "no CUDA device")
    def test_cuda_device_payload(self):
        """CUDA tensor -> payload in CUDA memory -> CUDA tensor: the payload's bytes equal the CPU codec's, the round
        trip is bit-exact, no value crosses host memory on the shared path, out= is used in place, and a small,
        truncated or damaged payload raises its class without writing the output tensor."""
        torch = _torch()
        required = os.environ.get("VKZIP_TEST_CUDA_SHARED") == "1"
        c = vkzip.Codec()
        cpu = vkzip.Codec(backend="cpu")
        for name, dt, ints in self._cuda_dtypes():
            with self.subTest(dtype=name):
                g = torch.Generator(device="cuda").manual_seed(7 + len(name))
                t = (torch.randn(128, 8, 257, device="cuda", generator=g) * 3).to(dt)
                nb = t.numel() * t.element_size()
                k0 = vkzip.cuda_counters()
                p = c.compress(t, device="cuda")
                self.assertTrue(p.is_cuda and p.dtype == torch.uint8)
                self.assertEqual(p.cpu().numpy().tobytes(), cpu.compress(t.cpu()), "device payload differs")
                out = torch.empty_like(t)
                out.view(ints).fill_(0x5A5A if ints == torch.int16 else 0x5A)
                c.decompress(p, out=out)
                torch.cuda.synchronize()
                self.assertTrue(torch.equal(out.view(ints), t.view(ints)), "round trip is not bit-exact")
                k1 = vkzip.cuda_counters()
                d = _growth(k0, k1)
                print("\n  %s device payload: %s; host-staged %d, device-copied %d bytes (tensor %d, payload %d)" % (
                    name, k1["last_path"], d["host_staged_bytes"], d["device_copy_bytes"], nb, p.numel()))
                if d["shared_calls"] == 2:
                    self.assertEqual(d["host_staged_bytes"], 0, "values crossed host memory on the shared path")
                    # one copy of the values each way, and the body once each way
                    self.assertGreaterEqual(d["device_copy_bytes"], 2 * nb)
                    self.assertLessEqual(d["device_copy_bytes"], 2 * nb + 2 * p.numel())
                else:
                    self.assertFalse(required, "VKZIP_TEST_CUDA_SHARED=1 but: " + k1["last_path"])
                back = c.decompress(p)
                self.assertTrue(back.is_cuda and back.dtype == dt and back.shape == t.shape)
                self.assertTrue(torch.equal(back.view(ints), t.view(ints)))
                buf = torch.full((p.numel() + 100,), 0xA5, dtype=torch.uint8, device="cuda")
                q = c.compress(t, out=buf)
                self.assertEqual(q.data_ptr(), buf.data_ptr())
                self.assertTrue(torch.equal(q, p))
                with self.assertRaises(vkzip.Error) as e:
                    c.compress(t, out=torch.empty(p.numel() - 1, dtype=torch.uint8, device="cuda"))
                self.assertEqual(e.exception.cls, "buffer_too_small")
                keep = torch.full_like(t, 7.0)
                for what, bad in (("truncated", p[:p.numel() - 8].clone()), ("damaged", p.clone())):
                    if what == "damaged":
                        bad[bad.numel() // 2] ^= 0x10
                    with self.assertRaises(vkzip.Error, msg=what) as e:
                        c.decompress(bad, out=keep)
                    self.assertIn(e.exception.cls, ("checksum", "corrupt", "truncated"), what)
                torch.cuda.synchronize()
                self.assertTrue(bool((keep == 7.0).all()), "a bad payload wrote the output tensor")

    @unittest.skipIf(_torch() is None or not _torch().cuda.is_available(), "no CUDA device")
    def test_cuda_empty_zero_copy(self):
        """Tensors in the codec's own CUDA memory are coded where they lie: no device copy of the values, the same
        payload, bit-exact; the memory outlives close() while a tensor over it lives."""
        torch = _torch()
        c = vkzip.Codec()
        g = torch.Generator(device="cuda").manual_seed(3)
        t = (torch.randn(64, 8, 512, device="cuda", generator=g) * 3).to(torch.bfloat16)
        nb = t.numel() * 2
        try:
            a = c.cuda_empty(t.shape, torch.bfloat16)
        except vkzip.Error as e:
            self.assertFalse(os.environ.get("VKZIP_TEST_CUDA_SHARED") == "1", str(e))
            self.skipTest("no memory shared with Vulkan here: %s" % e)
        self.assertTrue(a.is_cuda and a.dtype == torch.bfloat16 and a.shape == t.shape)
        a.copy_(t)
        want = c.compress(t, device="cuda")
        k0 = vkzip.cuda_counters()
        p = c.compress(a, device="cuda")
        out = c.cuda_empty(t.shape, "bf16")
        out.view(torch.int16).fill_(0x5A5A)
        c.decompress(p, out=out)
        torch.cuda.synchronize()
        k1 = vkzip.cuda_counters()
        d = _growth(k0, k1)
        self.assertTrue(torch.equal(p, want))
        self.assertTrue(torch.equal(out.view(torch.int16), t.view(torch.int16)))
        self.assertEqual(d["host_staged_bytes"], 0)
        self.assertLessEqual(d["device_copy_bytes"], 2 * p.numel(), "values were copied: %s" % d)
        self.assertEqual(d["zero_copy_bytes"], 2 * nb)
        # The payload in the codec's memory too (a fixed codebook, so the header is known before the body, its length
        # from the tensor's previous payload): nothing is copied at all.
        cc = vkzip.Codec(codebook=vkzip.calibrate(t))
        pb = cc.cuda_empty(vkzip.compress_bound(t), "u8")
        src, back = cc.cuda_empty(t.shape, "bf16"), cc.cuda_empty(t.shape, "bf16")
        src.copy_(t)
        back.view(torch.int16).fill_(0x5A5A)
        cc.compress(src, out=pb)
        pb.fill_(0xA5)
        k0 = vkzip.cuda_counters()
        q = cc.compress(src, out=pb)
        cc.decompress(q, out=back)
        torch.cuda.synchronize()
        k1 = vkzip.cuda_counters()
        # In place the payload starts up to 15 bytes into pb, where its body (after the preamble, the directory
        # padded to 4 bytes and its CRC) lies 16-byte aligned.
        qb = q.cpu().numpy().tobytes()
        self.assertTrue(0 <= q.data_ptr() - pb.data_ptr() < 16, "payload at +%d" % (q.data_ptr() - pb.data_ptr()))
        head = ((20 + int.from_bytes(qb[12:16], "little") + 3) & ~3) + 4
        self.assertEqual((q.data_ptr() + head) % 16, 0, "body at +%d" % (q.data_ptr() + head - pb.data_ptr()))
        self.assertEqual(qb, vkzip.Codec(backend="cpu", codebook=vkzip.calibrate(t)).compress(t.cpu()))
        self.assertTrue(torch.equal(back.view(torch.int16), t.view(torch.int16)))
        self.assertEqual(k1["device_copy_bytes"] - k0["device_copy_bytes"], 0, "a copy on the all-in-place path")
        del pb, src, back
        # a host payload from it too
        self.assertEqual(c.compress(a), vkzip.Codec(backend="cpu").compress(t.cpu()))
        c.close()
        a.fill_(1.0)  # still valid memory after close
        torch.cuda.synchronize()
        self.assertTrue(bool((a == 1.0).all()))
        with self.assertRaises(vkzip.Error):
            c.compress(t)
        del a, out
        import gc
        gc.collect()
        self.assertEqual(c._live, 0)

    @unittest.skipUnless(os.environ.get("VKZIP_TEST_CUDA_BENCH") == "1" and _torch() is not None
                         and _torch().cuda.is_available(), "set VKZIP_TEST_CUDA_BENCH=1 on a CUDA machine")
    def test_cuda_throughput(self):
        """512 MiB of KV-like BF16 in CUDA memory, wall clock, median of VKZIP_TEST_CUDA_ITERS (default 5), three
        ways: to a host payload and back; to a payload in CUDA memory and back (PyTorch tensors: one device copy of
        the values each way); the same with the tensors in the codec's own memory (cuda_empty: no copy) and a
        calibrated codebook, as the Go bench runs. With VKZIP_GO_BENCH_JSON (the output of `vkzip bench --backend
        vulkan --size 512MiB --format splitzip4 --json` in the same run) the lines give the fractions of the Go
        bench's wall GB/s; VKZIP_TEST_CUDA_BENCH_MIN=F asserts that the zero-copy way reaches F on both."""
        torch = _torch()
        n = 512 << 20
        with open(KV, "rb") as f:
            raw = f.read()
        _, items = vkzip._safetensors.parse(raw)
        kv = np.frombuffer(b"".join(raw[b:e] for _, _, _, b, e in items), dtype=np.uint16)
        host = np.resize(kv, n // 2)
        t = torch.from_numpy(host.view(np.int16)).cuda().view(torch.bfloat16)
        c = vkzip.Codec(backend=os.environ.get("VKZIP_BACKEND", "auto"))
        cb = vkzip.Codec(backend=os.environ.get("VKZIP_BACKEND", "auto"), codebook=vkzip.calibrate(t))
        want = vkzip.Codec(backend="cpu").compress(host.view(np.int16), dtype="bf16")
        iters = int(os.environ.get("VKZIP_TEST_CUDA_ITERS", "5"))
        torch_buf = torch.empty(len(want) + (1 << 20), dtype=torch.uint8, device="cuda")

        def run(codec, src, out, buf):
            device_payload = buf is not None
            enc, dec = [], []
            k0 = vkzip.cuda_counters()
            for i in range(iters + 1):
                out.view(torch.int16).fill_(0x5A5A)
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                b = codec.compress(src, out=buf) if device_payload else codec.compress(src)
                torch.cuda.synchronize()
                t1 = time.perf_counter()
                codec.decompress(b, out=out)
                torch.cuda.synchronize()
                t2 = time.perf_counter()
                if i == 0:  # warm-up: buffers and pipelines
                    got = b.cpu().numpy().tobytes() if device_payload else b
                    self.assertEqual(got, want)
                    k0 = vkzip.cuda_counters()
                    continue
                enc.append(n / (t1 - t0) / 1e9)
                dec.append(n / (t2 - t1) / 1e9)
            self.assertTrue(torch.equal(out.view(torch.int16), t.view(torch.int16)))
            k1 = vkzip.cuda_counters()
            staged = (k1["host_staged_bytes"] - k0["host_staged_bytes"]) / iters
            copied = (k1["device_copy_bytes"] - k0["device_copy_bytes"]) / iters
            return sorted(enc)[iters // 2], sorted(dec)[iters // 2], staged, copied, k1["last_path"]

        ways = [("host payload, PyTorch tensors", c, t, torch.empty_like(t), None),
                ("CUDA payload, PyTorch tensors", c, t, torch.empty_like(t), torch_buf)]
        try:
            src = cb.cuda_empty(t.shape, torch.bfloat16)
            src.copy_(t)
            ways.append(("CUDA payload, cuda_empty tensors, codebook", cb, src, cb.cuda_empty(t.shape, "bf16"),
                         cb.cuda_empty(vkzip.compress_bound(src), "u8")))
        except vkzip.Error as e:
            print("\n  no cuda_empty here: %s" % e)
        ref = os.environ.get("VKZIP_GO_BENCH_JSON")
        go = None
        if ref:
            with open(ref) as f:
                go = _find_keys(json.load(f), ("encode_wall_gbps", "decode_wall_gbps"))
        line = "\n  CUDA 512 MiB bf16 on %s, ratio %.4f, wall GB/s, median of %d:" % (
            torch.cuda.get_device_name(), n / len(want), iters)
        # The Go library's own figures for a tensor in CUDA memory (the outputs of `vkzip bench --source copy|cuda
        # --json`, one after another): the same data movement as the PyTorch-tensor and cuda_empty ways.
        src_go = {}
        for r in _json_documents(os.environ.get("VKZIP_GO_SOURCE_JSON")):
            r = r.get("results", [r])[0]
            src_go[r["source"]] = (r["encode_gbps"], r["decode_gbps"])
        fracs = same_fracs = None
        for (name, codec, src, out, buf), same in zip(ways, (None, "copy", "cuda")):
            e, d, staged, copied, path = run(codec, src, out, buf)
            line += "\n    %-44s compress %7.2f, decompress %7.2f; per round trip host-staged %d B, " \
                    "device-copied %d B" % (name, e, d, staged, copied)
            if go:
                fracs = (e / go["encode_wall_gbps"], d / go["decode_wall_gbps"])
                line += "; %.3f x / %.3f x of the Go bench (resident)" % fracs
            if same in src_go:
                same_fracs = (e / src_go[same][0], d / src_go[same][1])
                line += "; %.3f x / %.3f x of Go's --source %s (%.1f / %.1f)" % (
                    same_fracs + (same, src_go[same][0], src_go[same][1]))
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        h = t.cpu()
        t1 = time.perf_counter()
        t.copy_(h)
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        line += "\n  the raw tensor's own copy to / from host memory: %.2f / %.2f GB/s" % (
            n / (t1 - t0) / 1e9, n / (t2 - t1) / 1e9)
        if go:
            line += "\n  Go bench (vulkan, splitzip4, 512 MiB, device-resident): encode %.1f, decode %.1f GB/s wall" % (
                go["encode_wall_gbps"], go["decode_wall_gbps"])
        floor = os.environ.get("VKZIP_TEST_CUDA_BENCH_MIN")
        if floor and len(ways) == 3 and (go or "cuda" in src_go):
            # The zero-copy way against the Go library moving the same data (--source cuda), else against the
            # device-resident bench.
            got = same_fracs if "cuda" in src_go else fracs
            self.assertGreaterEqual(min(got), float(floor), line)
        print(line)


def _growth(k0, k1):
    """How much each numeric CUDA counter grew from k0 to k1 (vkzip.cuda_counters())."""
    return {k: k1[k] - k0[k] for k in k1 if isinstance(k1[k], int) and not isinstance(k1[k], bool)}


def _json_documents(path):
    """Every JSON document in the file at path, one after another, each on one line or pretty-printed over several
    (`vkzip bench --json` prints one document per run); none when path is empty."""
    if not path:
        return []
    with open(path) as f:
        text = f.read()
    dec, docs, i = json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return docs
        doc, i = dec.raw_decode(text, i)
        docs.append(doc)


def _find_keys(obj, keys):
    """The first value of each key anywhere in a JSON document (the bench's fields, wherever its layout nests them)."""
    found = {}
    stack = [obj]
    while stack and len(found) < len(keys):
        o = stack.pop(0)
        if isinstance(o, dict):
            for k, v in o.items():
                if k in keys and k not in found and isinstance(v, (int, float)):
                    found[k] = float(v)
                else:
                    stack.append(v)
        elif isinstance(o, list):
            stack.extend(o)
    missing = [k for k in keys if k not in found]
    if missing:
        raise AssertionError("the Go bench JSON has no %s" % ", ".join(missing))
    return found


class TestLibrary(unittest.TestCase):
    def test_version_and_devices(self):
        self.assertTrue(vkzip.version())
        d = vkzip.devices()
        self.assertIn("cpu", d["backends"])
        self.assertTrue(os.path.exists(vkzip.library_path()))
        k = vkzip.cuda_counters()
        self.assertEqual(set(k), {"host_staged_bytes", "device_copy_bytes", "zero_copy_bytes", "shared_calls",
                                  "staged_calls", "shared", "last_path"})
        self.assertIsInstance(k["last_path"], str)
        with self.assertRaises(vkzip.Error) as e:
            vkzip.Codec(backend="no-such-backend")
        self.assertEqual(e.exception.cls, "unsupported")
        with self.assertRaises(vkzip.Error) as e:
            vkzip.Codec(prefer="speed", format="tbe3")
        self.assertEqual(e.exception.cls, "invalid_argument")


if __name__ == "__main__":
    if sys.argv[1:] == ["--regen"]:
        regen()
    else:
        unittest.main()
