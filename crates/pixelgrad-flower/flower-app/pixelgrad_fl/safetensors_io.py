"""Minimal safetensors reading and writing with NumPy (float32 tensors only).

The format: an 8-byte little-endian header length, a JSON header mapping tensor names to
{"dtype", "shape", "data_offsets": [begin, end]} plus an optional "__metadata__" map of
strings, then the raw little-endian data.
"""

import json
import struct

import numpy as np


def read(path: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Tensors by name and the metadata of a safetensors file."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    meta = header.pop("__metadata__", {}) or {}
    data = raw[8 + n :]
    tensors = {}
    for name, info in header.items():
        if info["dtype"] != "F32":
            raise ValueError(f"{path}: tensor {name} has dtype {info['dtype']}, expected F32")
        begin, end = info["data_offsets"]
        arr = np.frombuffer(data[begin:end], dtype="<f4").reshape(info["shape"])
        tensors[name] = arr.copy()
    return tensors, meta


def write(path: str, tensors: dict[str, np.ndarray], meta: dict[str, str]) -> None:
    """Writes float32 `tensors` (in the given order) with `meta`."""
    header: dict = {"__metadata__": meta} if meta else {}
    offset = 0
    blobs = []
    for name, arr in tensors.items():
        b = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
