#!/usr/bin/python3
"""Independent TFLite reader for the real-file tests, written apart from lwload: no schema file
(neither lwload's trimmed lib/formats/tflite/tflite_schema.fbs nor code generated from it) and no
flatbuffers runtime. The FlatBuffers binary format (root offset, tables with a vtable of field
offsets, vectors with a length prefix, strings, unions as a type byte plus a table) is decoded
here by hand, and the field ids are those of TensorFlow's published schema
(tensorflow/lite/schema/schema.fbs), written out below from that schema's declaration order, so a
wrong field id in lwload's schema shows as a difference instead of being shared by both sides.
Every tensor whose buffer holds data is written to OUTDIR/index.json + N.bin (see
reference_onnx.write_dump).

  /usr/bin/python3 tests/real/reference_tflite.py MODEL OUTDIR [--densify]

Names as TFLite gives them; tensors of subgraph i > 0 are prefixed "subgraph<i>/", an unnamed
tensor is "tensor<index>". Buffers inline (Buffer.data) or extended (Buffer.offset > 1: Buffer.size
bytes at that absolute file offset; the file is mapped, so a sparse file past 4 GiB costs only the
pages read). Sparse tensors are their stored values, or with --densify the dense tensor, expanded
here level by level with numpy (breadth first, where lwload walks depth first), as TFLite's
Densify defines it.
"""
import mmap
import struct
import sys

import numpy as np

from reference_onnx import write_dump

# Field ids (declaration order in TensorFlow's schema.fbs; a union takes two: its type, then it).
MODEL_SUBGRAPHS, MODEL_BUFFERS = 2, 4
SUBGRAPH_TENSORS = 0
TENSOR_SHAPE, TENSOR_TYPE, TENSOR_BUFFER, TENSOR_NAME, TENSOR_SPARSITY = 0, 1, 2, 3, 6
BUFFER_DATA, BUFFER_OFFSET, BUFFER_SIZE = 0, 1, 2
SPARSITY_TRAVERSAL_ORDER, SPARSITY_BLOCK_MAP, SPARSITY_DIM_METADATA = 0, 1, 2
DIM_FORMAT, DIM_DENSE_SIZE, DIM_SEGMENTS_TYPE, DIM_SEGMENTS, DIM_INDICES_TYPE, DIM_INDICES = 0, 1, 2, 3, 4, 5
INDEX_VECTOR_VALUES = 0  # Int32Vector, Uint16Vector, Uint8Vector: values

# TensorType → (lwload's dtype name, numpy type)
TYPES = {0: ("F32", np.float32), 1: ("F16", np.float16), 2: ("I32", np.int32), 3: ("U8", np.uint8),
         4: ("I64", np.int64), 5: ("STRING", None), 6: ("BOOL", np.bool_), 7: ("I16", np.int16),
         8: ("C64", np.complex64), 9: ("I8", np.int8), 10: ("F64", np.float64), 11: ("C128", np.complex128),
         12: ("U64", np.uint64), 15: ("U32", np.uint32), 16: ("U16", np.uint16), 17: ("I4", None),
         18: ("BF16", None)}


class Table:
    """A FlatBuffers table at `pos` of `buf`: an int32 back to its vtable, whose uint16 entries
    (after the vtable's own size and the table's size) are each field's offset in the table, 0 when absent."""

    def __init__(self, buf, pos):
        self.buf, self.pos = buf, pos
        self.vtable = pos - struct.unpack_from("<i", buf, pos)[0]
        self.vtable_size = struct.unpack_from("<H", buf, self.vtable)[0]

    def field(self, fid):
        slot = 4 + 2 * fid
        if slot >= self.vtable_size:
            return 0
        return struct.unpack_from("<H", self.buf, self.vtable + slot)[0]

    def scalar(self, fid, fmt, default=0):
        off = self.field(fid)
        return struct.unpack_from(fmt, self.buf, self.pos + off)[0] if off else default

    def indirect(self, fid):
        """The absolute position an offset field points to, or None."""
        off = self.field(fid)
        if not off:
            return None
        at = self.pos + off
        return at + struct.unpack_from("<I", self.buf, at)[0]

    def table(self, fid):
        at = self.indirect(fid)
        return Table(self.buf, at) if at is not None else None

    def vector(self, fid):
        """(position of the first element, length), or (None, 0)."""
        at = self.indirect(fid)
        if at is None:
            return None, 0
        return at + 4, struct.unpack_from("<I", self.buf, at)[0]

    def scalars(self, fid, dtype):
        start, n = self.vector(fid)
        if start is None:
            return np.zeros(0, dtype)
        return np.frombuffer(self.buf, dtype=np.dtype(dtype).newbyteorder("<"), count=n, offset=start)

    def tables(self, fid):
        start, n = self.vector(fid)
        out = []
        for i in range(n):
            at = start + 4 * i
            out.append(Table(self.buf, at + struct.unpack_from("<I", self.buf, at)[0]))
        return out

    def string(self, fid):
        at = self.indirect(fid)
        if at is None:
            return None
        n = struct.unpack_from("<I", self.buf, at)[0]
        return bytes(self.buf[at + 4:at + 4 + n]).decode()


def index_vector(dim, type_fid, value_fid):
    """A SparseIndexVector union (1: Int32Vector, 2: Uint16Vector, 3: Uint8Vector) as int64s."""
    kind = dim.scalar(type_fid, "<B")
    table = dim.table(value_fid)
    if table is None:
        return np.zeros(0, np.int64)
    return table.scalars(INDEX_VECTOR_VALUES, {1: np.int32, 2: np.uint16, 3: np.uint8}[kind]).astype(np.int64)


def densify(name, sparsity, shape, values):
    order = [int(v) for v in sparsity.scalars(SPARSITY_TRAVERSAL_ORDER, np.int32)]
    block_map = [int(v) for v in sparsity.scalars(SPARSITY_BLOCK_MAP, np.int32)]
    dims = sparsity.tables(SPARSITY_DIM_METADATA)
    rank = len(shape)
    block_size = [dims[rank + j].scalar(DIM_DENSE_SIZE, "<i") for j in range(len(block_map))]
    positions = np.zeros(1, np.int64)  # per leaf so far: its position at the current level
    coords = np.zeros((0, 1), np.int64)  # per leaf so far: one coordinate per level
    for level in range(len(order)):
        dim = dims[level]
        if dim.scalar(DIM_FORMAT, "<b") == 0:  # DENSE
            n = dim.scalar(DIM_DENSE_SIZE, "<i")
            children = np.repeat(positions, n) * n + np.tile(np.arange(n), len(positions))
            coords = np.vstack([np.repeat(coords, n, axis=1), np.tile(np.arange(n), len(positions))])
        else:  # SPARSE_CSR
            segments = index_vector(dim, DIM_SEGMENTS_TYPE, DIM_SEGMENTS)
            indices = index_vector(dim, DIM_INDICES_TYPE, DIM_INDICES)
            counts = segments[positions + 1] - segments[positions]
            children = np.concatenate([np.arange(segments[p], segments[p + 1]) for p in positions]
                                      or [np.zeros(0, np.int64)]).astype(np.int64)
            coords = np.vstack([np.repeat(coords, counts, axis=1), indices[children]])
        positions = children
    original = [None] * rank
    for level in range(rank):
        original[order[level]] = coords[level]
    for j, d in enumerate(block_map):
        original[d] = original[d] * block_size[j] + coords[rank + j]
    dense = np.zeros(shape, dtype=values.dtype)
    if len(values) != coords.shape[1]:
        raise SystemExit(f"{name}: {len(values)} values stored, the sparsity places {coords.shape[1]}")
    dense[tuple(original)] = values
    return dense.tobytes()


def main():
    model_path, out_dir = sys.argv[1], sys.argv[2]
    densify_wanted = "--densify" in sys.argv[3:]
    with open(model_path, "rb") as f:
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    # A TFLite file begins with the root table's offset, then the file identifier ("TFL3").
    model = Table(buf, struct.unpack_from("<I", buf, 0)[0])
    buffers = model.tables(MODEL_BUFFERS)
    tensors = []
    for s, graph in enumerate(model.tables(MODEL_SUBGRAPHS)):
        for i, t in enumerate(graph.tables(SUBGRAPH_TENSORS)):
            index = t.scalar(TENSOR_BUFFER, "<I")
            sparsity = t.table(TENSOR_SPARSITY)
            data = b""
            if index != 0:
                b = buffers[index]
                offset, size = b.scalar(BUFFER_OFFSET, "<Q"), b.scalar(BUFFER_SIZE, "<Q")
                if offset > 1:  # extended: the bytes lie at an absolute offset, after the flatbuffer
                    data = bytes(buf[offset:offset + size])
                else:
                    start, n = b.vector(BUFFER_DATA)
                    data = bytes(buf[start:start + n]) if start is not None else b""
            if not data and sparsity is None:
                continue  # no data: an activation or an input (a sparse tensor storing none is zeros)
            raw = t.string(TENSOR_NAME) or ""
            name = ("" if s == 0 else f"subgraph{s}/") + (raw or f"tensor{i}")
            shape = [int(d) for d in t.scalars(TENSOR_SHAPE, np.int32)]
            dtype, numpy_type = TYPES[t.scalar(TENSOR_TYPE, "<b")]
            if sparsity is not None and densify_wanted:
                data = densify(name, sparsity, shape, np.frombuffer(data, dtype=numpy_type))
            tensors.append((name, dtype, shape, data))
    write_dump(out_dir, tensors)


if __name__ == "__main__":
    main()
