#!/usr/bin/python3
"""Independent ONNX reader for the real-file tests: python3-onnx (Debian) walks a model and writes
every constant tensor it holds, named as lwload names them, to OUTDIR/index.json plus OUTDIR/N.bin
(the tensor's bytes as numpy_helper.to_array gives them, little-endian).

  /usr/bin/python3 tests/real/reference_onnx.py MODEL OUTDIR

Constants: initializers and sparse_initializers of every graph and subgraph (If/Loop/Scan GRAPH and
GRAPHS attributes, nested) and of model-local functions; Constant nodes (value, value_float(s),
value_int(s), value_string(s), sparse_value) named by their output; TENSOR(S) / SPARSE_TENSOR(S)
attributes of other nodes, named "<node name or first output>.<attribute>" ("<...>.<i>" for
lists). A sparse tensor is two tensors, "<name>.values" and "<name>.indices". A repeated name gets
"#2", "#3", ... in traversal order (the file's order: nodes, then initializers, then
sparse_initializers; a node's subgraphs before its own constants; functions after the graph).
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import AttributeProto, numpy_helper

DTYPES = {1: "F32", 2: "U8", 3: "I8", 4: "U16", 5: "I16", 6: "I32", 7: "I64", 8: "STRING", 9: "BOOL",
          10: "F16", 11: "F64", 12: "U32", 13: "U64", 14: "C64", 15: "C128", 16: "BF16"}


class Walk:
    def __init__(self, base_dir):
        self.base_dir = base_dir
        self.names = set()
        self.tensors = []  # (name, dtype, shape, bytes or None)

    def unique(self, name):
        if name not in self.names:
            self.names.add(name)
            return name
        n = 2
        while f"{name}#{n}" in self.names:
            n += 1
        self.names.add(f"{name}#{n}")
        return f"{name}#{n}"

    def add(self, name, dtype, shape, data):
        self.tensors.append((self.unique(name), dtype, list(shape), data))

    def tensor(self, t, name=None):
        name = name if name is not None else t.name
        dtype = DTYPES[t.data_type]
        if dtype == "STRING":
            self.add(name, "STRING", t.dims, None)
            return
        if t.data_location == onnx.TensorProto.EXTERNAL:
            onnx.external_data_helper.load_external_data_for_tensor(t, self.base_dir)
            t.data_location = onnx.TensorProto.DEFAULT  # now inline, as onnx.load leaves it
            del t.external_data[:]
        array = numpy_helper.to_array(t)
        if dtype == "BF16":  # to_array gives float32 values; lwload keeps the stored 16-bit patterns
            data = np.frombuffer(t.raw_data, dtype=np.uint16).tobytes() if t.raw_data else \
                np.array(t.int32_data, dtype=np.uint16).tobytes()
        elif dtype == "F16" and not t.raw_data:
            data = np.array(t.int32_data, dtype=np.uint16).tobytes()
        else:
            data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        self.add(name, dtype, t.dims, data)

    def sparse(self, s, name=None):
        base = name if name is not None else s.values.name
        self.tensor(s.values, base + ".values")
        self.tensor(s.indices, base + ".indices")

    def graph(self, g):
        for node in g.node:
            self.node(node)
        for t in g.initializer:
            self.tensor(t)
        for s in g.sparse_initializer:
            self.sparse(s)

    def node(self, node):
        data = []
        for a in node.attribute:
            if a.type == AttributeProto.GRAPH:
                self.graph(a.g)
            elif a.type == AttributeProto.GRAPHS:
                for g in a.graphs:
                    self.graph(g)
            else:
                data.append(a)
        constant = node.op_type == "Constant" and node.domain in ("", "ai.onnx")
        if constant:
            a = data[0]
            out = node.output[0]
            if a.type == AttributeProto.TENSOR:
                self.tensor(a.t, out)
            elif a.type == AttributeProto.SPARSE_TENSOR:
                self.sparse(a.sparse_tensor, out)
            elif a.type == AttributeProto.FLOAT:
                self.add(out, "F32", [], np.array(a.f, dtype="<f4").tobytes())
            elif a.type == AttributeProto.FLOATS:
                self.add(out, "F32", [len(a.floats)], np.array(a.floats, dtype="<f4").tobytes())
            elif a.type == AttributeProto.INT:
                self.add(out, "I64", [], np.array(a.i, dtype="<i8").tobytes())
            elif a.type == AttributeProto.INTS:
                self.add(out, "I64", [len(a.ints)], np.array(a.ints, dtype="<i8").tobytes())
            elif a.type == AttributeProto.STRING:
                self.add(out, "STRING", [], None)
            elif a.type == AttributeProto.STRINGS:
                self.add(out, "STRING", [-1], None)
            return
        base = node.name or (node.output[0] if node.output else "")
        for a in data:
            if a.type == AttributeProto.TENSOR:
                self.tensor(a.t, f"{base}.{a.name}")
            elif a.type == AttributeProto.TENSORS:
                for i, t in enumerate(a.tensors):
                    self.tensor(t, f"{base}.{a.name}.{i}")
            elif a.type == AttributeProto.SPARSE_TENSOR:
                self.sparse(a.sparse_tensor, f"{base}.{a.name}")
            elif a.type == AttributeProto.SPARSE_TENSORS:
                for i, s in enumerate(a.sparse_tensors):
                    self.sparse(s, f"{base}.{a.name}.{i}")


def main():
    model_path, out_dir = sys.argv[1], sys.argv[2]
    if os.path.isdir(model_path):
        model_path = os.path.join(model_path, "model.onnx")
    model = onnx.load(model_path, load_external_data=False)
    walk = Walk(os.path.dirname(os.path.abspath(model_path)))
    walk.graph(model.graph)
    for f in model.functions:
        for node in f.node:
            walk.node(node)
    write_dump(out_dir, walk.tensors)


def write_dump(out_dir, tensors):
    """index.json: [{name, dtype, shape, bytes, file}] in order; file is null for STRING tensors."""
    os.makedirs(out_dir, exist_ok=True)
    index = []
    for i, (name, dtype, shape, data) in enumerate(tensors):
        entry = {"name": name, "dtype": dtype, "shape": shape, "bytes": None if data is None else len(data),
                 "file": None}
        if data is not None:
            entry["file"] = f"{i}.bin"
            with open(os.path.join(out_dir, entry["file"]), "wb") as f:
                f.write(data)
        index.append(entry)
    with open(os.path.join(out_dir, "index.json"), "w") as f:
        json.dump(index, f)


if __name__ == "__main__":
    main()
