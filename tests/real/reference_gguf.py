#!/usr/bin/python3
"""Independent GGUF reader for the real-file tests, written from the GGUF specification (ggml's
docs/gguf.md; no lwload code, no gguf-py): magic "GGUF", version (1: 32-bit counts; 2, 3: 64-bit),
tensor and key-value counts, the key-values (general.alignment, default 32), the tensor infos (name,
n_dims, ne[0..n_dims), ggml type, offset), then the data, starting at the next multiple of the
alignment; each tensor's bytes are ne / block elements * block bytes at data start + offset. Every
tensor is written to OUTDIR/index.json + N.bin (see reference_onnx.write_dump), in the file's order.

  /usr/bin/python3 tests/real/reference_gguf.py MODEL OUTDIR

Names as stored; shape as stored (ne[0], the contiguous dimension, first — as lwload reports it);
dtype: the ggml type's name (F32, F16, Q4_0, ..., BF16, TQ1_0, MXFP4, NVFP4, Q1_0, Q2_0), which lwload spells alike.
"""
import struct
import sys

from reference_onnx import write_dump

# ggml type id → (name, elements per block, bytes per block), from ggml's type traits.
TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
         7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36), 10: ("Q2_K", 256, 84),
         11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210),
         15: ("Q8_K", 256, 292), 16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98),
         19: ("IQ1_S", 256, 50), 20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82),
         23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8),
         28: ("F64", 1, 8), 29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54),
         35: ("TQ2_0", 256, 66), 39: ("MXFP4", 32, 17), 40: ("NVFP4", 64, 36), 41: ("Q1_0", 128, 18),
         42: ("Q2_0", 64, 18)}
# GGUF metadata value types → struct format (8: string, 9: array handled apart).
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


class Reader:
    def __init__(self, data):
        self.data, self.pos, self.wide = data, 0, True

    def take(self, fmt):
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def count(self):
        return self.take("<Q" if self.wide else "<I")

    def string(self):
        n = self.count()
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def value(self, kind):
        if kind in SCALARS:
            return self.take(SCALARS[kind])
        if kind == 8:
            return self.string()
        if kind == 9:
            item = self.take("<I")
            return [self.value(item) for _ in range(self.count())]
        raise SystemExit(f"unknown GGUF value type {kind}")


def main():
    model_path, out_dir = sys.argv[1], sys.argv[2]
    with open(model_path, "rb") as f:
        data = f.read()
    r = Reader(data)
    if data[:4] != b"GGUF":
        raise SystemExit(f"{model_path}: not GGUF")
    r.pos = 4
    version = r.take("<I")
    r.wide = version >= 2
    n_tensors, n_kv = r.count(), r.count()
    alignment = 32
    for _ in range(n_kv):
        key = r.string()
        value = r.value(r.take("<I"))
        if key == "general.alignment":
            alignment = value
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        shape = [r.count() for _ in range(r.take("<I"))]
        kind, offset = r.take("<I"), r.take("<Q")
        infos.append((name, shape, kind, offset))
    start = (r.pos + alignment - 1) // alignment * alignment
    tensors = []
    for name, shape, kind, offset in infos:
        dtype, block, size = TYPES[kind]
        count = 1
        for d in shape:
            count *= d
        nbytes = count // block * size
        if count % block or start + offset + nbytes > len(data):
            raise SystemExit(f"{model_path}: '{name}' {dtype} {shape} does not fit")
        tensors.append((name, dtype, shape, data[start + offset:start + offset + nbytes]))
    write_dump(out_dir, tensors)


if __name__ == "__main__":
    main()
