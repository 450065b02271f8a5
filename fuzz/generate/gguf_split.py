#!/usr/bin/python3
"""Part 1 of a split GGUF, for fuzz_folder_gguf: its hostile folder holds the model as
model-00001-of-00002.gguf and part 2 beside it (fuzz_folder.cpp: split.no 1 of 2, 2 tensors in all,
architecture "llama", tensor "b"), a FIFO as part 2 of 3 and /dev/zero as part 3 of 3. The whole
model, and one disagreement between the parts per file.

  /usr/bin/python3 fuzz/generate/gguf_split.py OUT_DIR
"""
import os
import struct
import sys


def text(t):
    b = t.encode()
    return struct.pack("<Q", len(b)) + b


def part1(no=0, count=2, tensors=2, arch="llama", name="a", count_type=2, drop=None):
    kvs = [("general.architecture", struct.pack("<I", 8) + text(arch)),
           ("split.no", struct.pack("<IH", 2, no)),
           ("split.count", struct.pack("<IH", 2, count) if count_type == 2 else struct.pack("<Ii", 5, count)),
           ("split.tensors.count", struct.pack("<Ii", 5, tensors))]
    kvs = [kv for kv in kvs if kv[0] != drop]
    out = b"GGUF" + struct.pack("<IQQ", 3, 1, len(kvs))
    for key, value in kvs:
        out += text(key) + value
    out += text(name) + struct.pack("<IQIQ", 1, 4, 0, 0)
    out += b"\0" * ((32 - len(out) % 32) % 32)
    return out + b"\0" * 16


def files():
    yield "whole", part1()
    yield "three-parts", part1(count=3, tensors=3)
    yield "same-tensor", part1(name="b")
    yield "total", part1(tensors=5)
    yield "architecture", part1(arch="bert")
    yield "number", part1(no=1)
    yield "int32-count", part1(count_type=5)
    yield "no-total", part1(drop="split.tensors.count")
    yield "zero-count", part1(count=0)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in files():
        with open(os.path.join(out, f"{name}.gguf"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
