#!/usr/bin/python3
"""lwload's GGUF reader against ggml's own, gguf_init_from_file, on the same files: every file one
reads the other reads, and every file ggml refuses lwload refuses (exit 3), so no GGUF loads through
lwload that llama.cpp cannot open. A file ggml reads otherwise than it is written (a name holding a
NUL, which ggml reads as the C string before it) lwload refuses.

  gguf_reference.py GGML_LIB_DIR GGUF_PY LWLOAD SCRATCH

The files: a few written by gguf-py (llama.cpp's own writer; every ggml type the linked ggml reads,
NVFP4, Q1_0 and Q2_0 among them), and one per refusal class of ggml's reader written here byte by
byte (names of 63, 64 and 89 bytes, a NUL in a name, tensors out of info order, with a gap or
overlapping, general.alignment of each integer type, n_dims 5, 2^63 elements, a zero dimension
beside dimensions whose product overflows 64 bits, a retired type, ne0 not a whole number of
blocks, duplicate names and keys, an array of arrays, a string over 1 GiB in a sparse file). Prints 'N passed, N failed'; exit 0 only
when every verdict agrees.
"""
import ctypes
import os
import struct
import subprocess
import sys
from pathlib import Path

lib_dir, gguf_py, lwload, scratch = sys.argv[1:5]
sys.path.insert(0, gguf_py)
import numpy as np  # noqa: E402
import gguf  # noqa: E402  (llama.cpp's gguf-py, from the prepared ggml)

scratch = Path(scratch) / "gguf-reference"
scratch.mkdir(parents=True, exist_ok=True)


class InitParams(ctypes.Structure):
    _fields_ = [("no_alloc", ctypes.c_bool), ("ctx", ctypes.c_void_p)]


ggml = ctypes.CDLL(os.path.join(lib_dir, "libggml-base.so"))
ggml.gguf_init_from_file.restype = ctypes.c_void_p
ggml.gguf_init_from_file.argtypes = [ctypes.c_char_p, InitParams]
ggml.gguf_free.argtypes = [ctypes.c_void_p]


def ggml_reads(path):
    ctx = ggml.gguf_init_from_file(str(path).encode(), InitParams(True, None))
    if ctx:
        ggml.gguf_free(ctx)
    return bool(ctx)


def lwload_reads(path):
    run = subprocess.run([lwload, "inspect", "--json", str(path)], capture_output=True, text=True)
    if run.returncode not in (0, 3):
        raise RuntimeError(f"lwload inspect {path.name} exited {run.returncode}: {run.stderr[-500:]}")
    return run.returncode == 0, run.stderr.strip()


# ---- a GGUF written byte by byte (v3, little-endian) -------------------------------------------

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", U64: "<Q", I64: "<q"}


def gguf_string(s):
    return struct.pack("<Q", len(s)) + s


def write(name, tensors, kvs=(), alignment=32, data=None, raw_kvs=()):
    """tensors: (name bytes, ne list, ggml type, offset); kvs: (key bytes, type, int value);
    raw_kvs: (key bytes, the value's type and bytes as written)."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs) + len(raw_kvs))
    for key, type_, value in kvs:
        out += gguf_string(key) + struct.pack("<I", type_) + struct.pack(SCALAR[type_], value)
    for key, value in raw_kvs:
        out += gguf_string(key) + value
    for tname, ne, type_, offset in tensors:
        out += gguf_string(tname) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", type_, offset)
    out += b"\0" * (-len(out) % alignment)
    out += data if data is not None else bytes(range(256)) * 4
    path = scratch / name
    path.write_bytes(out)
    return path


F32_TYPE, Q8_0_TYPE, Q1_0_TYPE = 0, 8, 41
cases = {
    "name of 63 bytes": write("name63.gguf", [(b"n" * 63, [8], F32_TYPE, 0)]),
    "name of 64 bytes": write("name64.gguf", [(b"n" * 64, [8], F32_TYPE, 0)]),
    "name of 89 bytes": write("name89.gguf", [(b"n" * 89, [8], F32_TYPE, 0)]),
    "a NUL in a name, beside its prefix": write("nul.gguf", [(b"w\0evil", [8], F32_TYPE, 0), (b"w", [8], F32_TYPE, 32)]),
    "a NUL in a name alone": write("nul_alone.gguf", [(b"w\0evil", [8], F32_TYPE, 0)]),  # ggml reads it as 'w'
    "packed in info order": write("packed.gguf", [(b"a", [8], F32_TYPE, 0), (b"s", [], F32_TYPE, 32),
                                                  (b"e", [0, 4], F32_TYPE, 64), (b"b", [8], F32_TYPE, 64)]),
    "out of info order": write("order.gguf", [(b"late", [8], F32_TYPE, 32), (b"early", [8], F32_TYPE, 0)]),
    "a gap between tensors": write("gap.gguf", [(b"a", [8], F32_TYPE, 0), (b"b", [8], F32_TYPE, 64)]),
    "overlapping tensors": write("overlap.gguf", [(b"a", [16], F32_TYPE, 0), (b"b", [8], F32_TYPE, 32)]),
    "a misaligned offset": write("misaligned.gguf", [(b"s", [], F32_TYPE, 0), (b"t", [8], F32_TYPE, 4)]),
    "n_dims 5": write("dims5.gguf", [(b"w", [1, 1, 1, 1, 8], F32_TYPE, 0)]),
    "2^63 elements": write("int64.gguf", [(b"big", [1 << 62, 2], Q1_0_TYPE, 0)]),
    "a retired type (4)": write("retired.gguf", [(b"w", [32], 4, 0)]),
    "type 43 (past GGML_TYPE_COUNT)": write("type43.gguf", [(b"w", [64], 43, 0)]),
    "ne0 not a whole number of blocks": write("block.gguf", [(b"q", [48, 2], Q8_0_TYPE, 0)]),
    "a duplicate tensor name": write("dup.gguf", [(b"w", [8], F32_TYPE, 0), (b"w", [8], F32_TYPE, 32)]),
    "a duplicate key": write("dupkey.gguf", [(b"w", [8], F32_TYPE, 0)], kvs=[(b"k", U8, 1), (b"k", U8, 2)]),
    "an empty key": write("emptykey.gguf", [(b"w", [8], F32_TYPE, 0)], kvs=[(b"", U8, 1)]),
    "alignment 48": write("align48.gguf", [(b"w", [8], F32_TYPE, 0)], kvs=[(b"general.alignment", U32, 48)]),
}
cases["a zero dimension beside dimensions that overflow"] = write(
    "zero_dim.gguf", [(b"e", [1 << 40, 1 << 40, 0], F32_TYPE, 0), (b"w", [8], F32_TYPE, 0)])
cases["an array of arrays"] = write("nested.gguf", [(b"w", [8], F32_TYPE, 0)], raw_kvs=[
    (b"nested", struct.pack("<IIQ", ARRAY, ARRAY, 1) + struct.pack("<IQ", I16, 2) + struct.pack("<hh", 1, 2))])
cases["an array of strings"] = write("strings.gguf", [(b"w", [8], F32_TYPE, 0)], raw_kvs=[
    (b"tokens", struct.pack("<IIQ", ARRAY, STRING, 2) + gguf_string(b"a") + gguf_string(b""))])


def sparse_string(name, length):
    """A GGUF of one STRING KV of `length` bytes and no tensors, the string a hole (no 1 GiB written)."""
    path = scratch / name
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gguf_string(b"big")
                     + struct.pack("<IQ", STRING, length))
    os.truncate(path, path.stat().st_size + length + 4096)
    return path


cases["a string of 1 GiB + 1 (sparse)"] = sparse_string("string_1g.gguf", (1 << 30) + 1)
for type_ in (U8, I8, U16, I16, U32, I32, U64, I64):
    cases[f"general.alignment 64 as type {type_}"] = write(
        f"align_type{type_}.gguf", [(b"w", [16], F32_TYPE, 0)], kvs=[(b"general.alignment", type_, 64)], alignment=64)

# ---- gguf-py's own files: every type the linked ggml reads ------------------------------------

writer_path = scratch / "gguf_py_types.gguf"
writer = gguf.GGUFWriter(str(writer_path), "test")
rng = np.random.default_rng(3)
for quant, (block, type_size) in gguf.GGML_QUANT_SIZES.items():
    if quant.value in (4, 5, 31, 32, 33, 36, 37, 38):
        continue  # retired: gguf-py keeps no sizes for them anyway
    rows, blocks_per_row = 2, 2
    raw = rng.integers(0, 256, size=(rows, blocks_per_row * type_size), dtype=np.uint8)
    writer.add_tensor(f"t{quant.value}.{quant.name}", raw, raw_dtype=quant)  # the shape: bytes per row / type size * block
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
cases["gguf-py: one tensor of every type"] = writer_path

# Files ggml reads otherwise than they are written: lwload refuses them, naming the ambiguity.
READ_OTHERWISE = {"a NUL in a name alone"}

passed = failed = 0
for what, path in cases.items():
    theirs = ggml_reads(path)
    ours, message = lwload_reads(path)
    ok = (not ours) if what in READ_OTHERWISE else theirs == ours
    verdict = lambda v: "reads" if v else "refuses"  # noqa: E731
    print(f"{'ok  ' if ok else 'FAIL'} {what}: ggml {verdict(theirs)}, lwload {verdict(ours)}"
          + ("" if ours else f" ({message.splitlines()[-1] if message else ''})"), flush=True)
    passed, failed = passed + ok, failed + (not ok)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
