#!/usr/bin/env python3
"""Writes safetensors_fuzz's seed corpus into DIR (standard library only): small valid files of
every dtype the reader knows, a zero-element tensor, and a file with metadata and no tensors.
scripts/fuzz.sh runs it into its temporary corpus, so that no binary file lives in the repo.

usage: safetensors_seeds.py DIR"""
import json
import os
import struct
import sys


def write(path, tensors, metadata=None):
    """tensors: [(name, dtype, shape, data bytes)], laid out in order."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    f32 = lambda *v: struct.pack("<%df" % len(v), *v)
    write(os.path.join(out, "f32_matrix.safetensors"), [("x", "F32", [2, 2], f32(1, 2, 3, 4))])
    write(os.path.join(out, "empty_tensor.safetensors"),
          [("z", "F32", [0, 3], b""), ("w", "F32", [1], f32(1))])
    write(os.path.join(out, "no_tensors.safetensors"), [], {"k": "v"})
    write(os.path.join(out, "mixed_dtypes.safetensors"),
          [("a", "F64", [2], struct.pack("<2d", 0.5, -1.0)),
           ("b", "I64", [3], struct.pack("<3q", 1, -2, 3)),
           ("c", "BOOL", [2], bytes([1, 0])),
           ("d", "BF16", [], bytes.fromhex("803f")),
           ("e", "F16", [1, 1], bytes.fromhex("003c")),
           ("f", "I32", [1], struct.pack("<i", 7)),
           ("g", "I16", [1], struct.pack("<h", 7)),
           ("h", "I8", [2], bytes([1, 0xff])),
           ("i", "U8", [2], bytes([1, 0xff]))],
          {"format": "pt"})


if __name__ == "__main__":
    main()
