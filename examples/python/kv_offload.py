#!/usr/bin/env python3
"""Offload a KV cache with vkzip and bring it back: what a serving engine does with the cache of a preempted or
idle sequence (host-memory offload), or of a prefix it keeps for later (disk offload).

The cache is a list of layers, each a pair of key and value tensors of shape [batch, kv_heads, seq, head_dim] in
BF16, as PyTorch tensors (on the GPU with --device cuda) or, without PyTorch, numpy arrays of BF16 bit patterns.
Offloading compresses every tensor losslessly; restoring decompresses into preallocated tensors and checks that
every bit came back. It prints the bytes saved and the time each way.

    make python                                   # builds libvkzip.so and installs the package
    python3 examples/python/kv_offload.py                       # host memory, CPU tensors
    python3 examples/python/kv_offload.py --to disk --dir /tmp  # one .vkz file per layer
    python3 examples/python/kv_offload.py --device cuda --prefer ratio

The synthetic cache mimics real ones where it matters to the codec: values of magnitude around 1 per channel,
with a few channels (the outlier channels of real keys) much larger, so the exponents are few and skewed.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import vkzip  # noqa: E402  (the installed package, or the repository's python/ when run from a checkout)

try:
    import torch
except ImportError:
    torch = None


def bf16_bits(f32):
    """BF16 bit patterns of float32 values (round to nearest even), as uint16."""
    u = f32.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def make_kv_cache(layers, batch, heads, seq, dim, device, seed=0):
    rng = np.random.default_rng(seed)
    cache = []
    for layer in range(layers):
        pair = []
        for kind in ("k", "v"):
            scale = np.ones(dim, dtype=np.float32)
            if kind == "k":
                scale[rng.choice(dim, size=max(1, dim // 16), replace=False)] = 8.0  # outlier channels
            x = rng.standard_normal((batch, heads, seq, dim)).astype(np.float32) * scale * (0.5 + layer / layers)
            bits = bf16_bits(x)
            if torch is not None:
                t = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
                pair.append(t.to(device))
            else:
                pair.append(bits)
        cache.append(tuple(pair))
    return cache


def nbytes(t):
    return t.numel() * t.element_size() if torch is not None and isinstance(t, torch.Tensor) else t.nbytes


def synchronize(device):
    if torch is not None and str(device).startswith("cuda"):
        torch.cuda.synchronize()


def offload(cache, codec, to, directory):
    """Compresses the cache: a list of (k payload, v payload) in memory, or one file per layer on disk."""
    out = []
    for i, (k, v) in enumerate(cache):
        if to == "memory":
            out.append((codec.compress(k, dtype="bf16"), codec.compress(v, dtype="bf16")))
        else:
            path = os.path.join(directory, "kv-layer%03d.vkz" % i)
            codec.save_file({"k": k, "v": v}, path, metadata={"layer": str(i)}, dtypes={"k": "bf16", "v": "bf16"})
            out.append(path)
    return out


def restore(stored, like, codec, to, device):
    """Decompresses the cache into freshly allocated tensors shaped like the originals."""
    cache = []
    for item, (k0, v0) in zip(stored, like):
        if to == "memory":
            if torch is not None:
                k, v = torch.empty_like(k0), torch.empty_like(v0)
            else:
                k, v = np.empty_like(k0), np.empty_like(v0)
            codec.decompress(item[0], out=k)
            codec.decompress(item[1], out=v)
        else:
            t = codec.load_file(item, device=device if torch is not None else None)
            k, v = t["k"], t["v"]
        cache.append((k, v))
    return cache


def same(a, b):
    if torch is not None and isinstance(a, torch.Tensor):
        return torch.equal(a.view(torch.int16), b.view(torch.int16))
    return np.array_equal(a.view(np.uint16), b.view(np.uint16))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=8, help="KV heads")
    ap.add_argument("--seq", type=int, default=2048, help="cached tokens")
    ap.add_argument("--dim", type=int, default=128, help="head dimension")
    ap.add_argument("--device", default="cpu", help="where the cache lives: cpu, cuda, cuda:1 (needs PyTorch)")
    ap.add_argument("--to", choices=("memory", "disk"), default="memory")
    ap.add_argument("--dir", default=None, help="directory for --to disk (default: a temporary one)")
    ap.add_argument("--backend", default="auto", help="vkzip backend: auto, cpu, vulkan")
    ap.add_argument("--prefer", choices=("speed", "balanced", "ratio"), default="speed")
    args = ap.parse_args()
    if torch is None and args.device != "cpu":
        sys.exit("kv_offload: --device %s needs PyTorch" % args.device)

    cache = make_kv_cache(args.layers, args.batch, args.heads, args.seq, args.dim, args.device)
    raw = sum(nbytes(k) + nbytes(v) for k, v in cache)
    codec = vkzip.Codec(backend=args.backend, prefer=args.prefer)
    info = codec.describe()
    print("KV cache: %d layers x K/V of [%d, %d, %d, %d] BF16 (%s, %s): %.1f MiB" % (
        args.layers, args.batch, args.heads, args.seq, args.dim, "torch" if torch is not None else "numpy",
        args.device, raw / 2**20))
    print("vkzip %s: backend %s (%s), prefer %s" % (vkzip.version(), info["backend"], info["device"], args.prefer))

    directory, made = args.dir, False
    if args.to == "disk" and directory is None:
        import tempfile
        directory, made = tempfile.mkdtemp(prefix="kv-offload-"), True
    codec.compress(cache[0][0], dtype="bf16")  # first-call set-up (GPU pipelines) out of the timings

    synchronize(args.device)
    t0 = time.perf_counter()
    stored = offload(cache, codec, args.to, directory)
    t1 = time.perf_counter()
    if args.to == "memory":
        kept = sum(len(k) + len(v) for k, v in stored)
    else:
        kept = sum(os.path.getsize(p) for p in stored)
    back = restore(stored, cache, codec, args.to, args.device)
    synchronize(args.device)
    t2 = time.perf_counter()

    exact = all(same(a, b) for pa, pb in zip(cache, back) for a, b in zip(pa, pb))
    where = "host memory" if args.to == "memory" else directory
    print("offload to %s: %d -> %d bytes, ratio %.4f, %.1f MiB saved (%.1f%%), %.3f s (%.0f MB/s)" % (
        where, raw, kept, raw / kept, (raw - kept) / 2**20, 100 * (raw - kept) / raw, t1 - t0, raw / 1e6 / (t1 - t0)))
    print("restore: %.3f s (%.0f MB/s), bit-exact: %s" % (t2 - t1, raw / 1e6 / (t2 - t1), "yes" if exact else "NO"))
    if args.device.startswith("cuda"):
        print("CUDA data movement: %s" % vkzip.cuda_counters())
    if made:
        import shutil
        shutil.rmtree(directory)
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
