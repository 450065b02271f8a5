#!/usr/bin/python3
"""Independent TFLite reader for the real-file tests: Python classes flatc generates from the
schema (lib/formats/tflite_schema.fbs, into a temporary folder) read the model with the
flatbuffers runtime (Debian's python3-flatbuffers), and every tensor whose buffer holds data is
written to OUTDIR/index.json + N.bin (see reference_onnx.write_dump).

  /usr/bin/python3 tests/real/reference_tflite.py MODEL OUTDIR [--densify]

Names as TFLite gives them; tensors of subgraph i > 0 are prefixed "subgraph<i>/", an unnamed
tensor is "tensor<index>". Inline buffers only (the files packages ship are under 2 GiB).
Sparse tensors are their stored values, or with --densify the dense tensor, expanded here level by
level with numpy (breadth first, where lwload walks depth first), as TFLite's Densify defines it.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

NUMPY = {0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64, 6: np.bool_, 7: np.int16,
         9: np.int8, 10: np.float64, 12: np.uint64, 15: np.uint32, 16: np.uint16}


def index_vector(kind, table):
    """A SparseIndexVector union as a numpy array (1: Int32Vector, 2: Uint16Vector, 3: Uint8Vector)."""
    from lwload.fb.tflite.Int32Vector import Int32Vector  # noqa: E402 (generated in main)
    from lwload.fb.tflite.Uint16Vector import Uint16Vector  # noqa: E402
    from lwload.fb.tflite.Uint8Vector import Uint8Vector  # noqa: E402
    cls = {1: Int32Vector, 2: Uint16Vector, 3: Uint8Vector}[kind]
    vector = cls()
    vector.Init(table.Bytes, table.Pos)
    return vector.ValuesAsNumpy().astype(np.int64) if vector.ValuesLength() else np.zeros(0, np.int64)


def densify(tensor, shape, values):
    s = tensor.Sparsity()
    order = [s.TraversalOrder(i) for i in range(s.TraversalOrderLength())]
    block_map = [s.BlockMap(i) for i in range(s.BlockMapLength())]
    rank = len(shape)
    block_size = [s.DimMetadata(rank + j).DenseSize() for j in range(len(block_map))]
    positions = np.zeros(1, np.int64)  # per leaf so far: its position at the current level
    coords = np.zeros((0, 1), np.int64)  # per leaf so far: one coordinate per level
    for level in range(len(order)):
        dim = s.DimMetadata(level)
        if dim.Format() == 0:  # DENSE
            n = dim.DenseSize()
            children = np.repeat(positions, n) * n + np.tile(np.arange(n), len(positions))
            coords = np.vstack([np.repeat(coords, n, axis=1), np.tile(np.arange(n), len(positions))])
        else:
            segments = index_vector(dim.ArraySegmentsType(), dim.ArraySegments())
            indices = index_vector(dim.ArrayIndicesType(), dim.ArrayIndices())
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
        raise SystemExit(f"{tensor.Name()}: {len(values)} values stored, the sparsity places {coords.shape[1]}")
    dense[tuple(original)] = values
    return dense.tobytes()

from reference_onnx import write_dump

DTYPES = {0: "F32", 1: "F16", 2: "I32", 3: "U8", 4: "I64", 5: "STRING", 6: "BOOL", 7: "I16", 8: "C64",
          9: "I8", 10: "F64", 11: "C128", 12: "U64", 15: "U32", 16: "U16", 17: "I4", 18: "BF16"}


def main():
    model_path, out_dir = sys.argv[1], sys.argv[2]
    densify_wanted = "--densify" in sys.argv[3:]
    schema = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib", "formats",
                          "tflite_schema.fbs")
    with tempfile.TemporaryDirectory() as generated:
        subprocess.run(["flatc", "--python", "-o", generated, schema], check=True)
        sys.path.insert(0, generated)
        from lwload.fb.tflite.Model import Model  # noqa: E402 (generated just now)
        data = open(model_path, "rb").read()
        model = Model.GetRootAs(data, 0)
        tensors = []
        for s in range(model.SubgraphsLength()):
            graph = model.Subgraphs(s)
            for i in range(graph.TensorsLength()):
                t = graph.Tensors(i)
                buffer = model.Buffers(t.Buffer()) if t.Buffer() != 0 else None
                if (buffer is None or buffer.DataLength() == 0) and t.Sparsity() is None:
                    continue  # no data: an activation or an input (a sparse tensor storing none is zeros)
                raw = t.Name().decode() if t.Name() else ""
                name = ("" if s == 0 else f"subgraph{s}/") + (raw or f"tensor{i}")
                shape = [int(d) for d in t.ShapeAsNumpy()] if t.ShapeLength() else []
                data = buffer.DataAsNumpy().astype(np.uint8).tobytes() if buffer and buffer.DataLength() else b""
                if t.Sparsity() is not None and densify_wanted:
                    data = densify(t, shape, np.frombuffer(data, dtype=NUMPY[t.Type()]))
                tensors.append((name, DTYPES[t.Type()], shape, data))
        write_dump(out_dir, tensors)


if __name__ == "__main__":
    main()
