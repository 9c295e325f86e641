"""safetensors bytes: the layout save() writes and load() reads (python/README.md, "File layout").

    u64 little-endian  N, the header length
    N bytes            a JSON object, compact: "__metadata__" (str -> str) first when given, then one entry per
                       tensor in data order, {"dtype": "BF16", "shape": [...], "data_offsets": [begin, end]};
                       spaces pad 8 + N to a multiple of 8
    data               the tensors' bytes, little-endian, C order, back to back: sorted by element size (largest
                       first, so every tensor is aligned to its element size), then by name
"""

import json
import struct

# vkzip dtype name <-> safetensors dtype name, and element sizes.
ST_NAMES = {"bf16": "BF16", "f16": "F16", "f32": "F32", "f64": "F64", "f8_e4m3": "F8_E4M3", "f8_e5m2": "F8_E5M2",
            "i8": "I8", "u8": "U8", "i16": "I16", "u16": "U16", "i32": "I32", "u32": "U32", "i64": "I64",
            "u64": "U64", "bool": "BOOL"}
FROM_ST = {v: k for k, v in ST_NAMES.items()}
SIZES = {"bf16": 2, "f16": 2, "f32": 4, "f64": 8, "f8_e4m3": 1, "f8_e5m2": 1, "i8": 1, "u8": 1, "i16": 2,
         "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8, "bool": 1}


def serialize(entries, metadata=None):
    """safetensors bytes of entries, a list of (name, dtype, shape, data) with data a bytes-like object."""
    names = [e[0] for e in entries]
    if len(set(names)) != len(names):
        raise ValueError("tensor names repeat")
    for name in names:
        if not isinstance(name, str) or name == "__metadata__":
            raise ValueError("tensor name %r" % (name,))
    order = sorted(entries, key=lambda e: (-SIZES[e[1]], e[0]))
    header = {}
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise ValueError("metadata must map str to str")
        header["__metadata__"] = dict(metadata)
    pos = 0
    for name, dtype, shape, data in order:
        n = memoryview(data).nbytes
        header[name] = {"dtype": ST_NAMES[dtype], "shape": [int(d) for d in shape], "data_offsets": [pos, pos + n]}
        pos += n
    js = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    js += b" " * ((8 - (8 + len(js)) % 8) % 8)
    parts = [struct.pack("<Q", len(js)), js]
    parts.extend(memoryview(e[3]).cast("B") for e in order)
    return b"".join(parts)


def parse(buf):
    """The tensors of safetensors bytes, in data order: (metadata, [(name, dtype, shape, begin, end)]), with begin
    and end absolute offsets into buf."""
    mv = memoryview(buf)
    if len(mv) < 8:
        raise ValueError("safetensors data of %d bytes" % len(mv))
    (n,) = struct.unpack("<Q", mv[:8])
    if n > len(mv) - 8:
        raise ValueError("safetensors header of %d bytes in %d" % (n, len(mv)))
    header = json.loads(bytes(mv[8:8 + n]).decode("utf-8"))
    base = 8 + n
    meta = header.pop("__metadata__", None)
    out = []
    for name, e in header.items():
        dtype = FROM_ST.get(e["dtype"])
        if dtype is None:
            raise ValueError("tensor %r: dtype %s" % (name, e["dtype"]))
        begin, end = e["data_offsets"]
        count = 1
        for d in e["shape"]:
            count *= d
        if end - begin != count * SIZES[dtype] or base + end > len(mv) or begin > end:
            raise ValueError("tensor %r: data_offsets %r for shape %r" % (name, e["data_offsets"], e["shape"]))
        out.append((name, dtype, tuple(e["shape"]), base + begin, base + end))
    out.sort(key=lambda t: t[3])
    return meta, out
