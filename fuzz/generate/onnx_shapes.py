#!/usr/bin/python3
"""ONNX models written with python3-onnx for shapes no suite leaves in a file: weights in a
model-local function, in TENSORS / SPARSE_TENSOR attributes and Constant value_floats, element
types the samples lack (complex128, float8, int4), long names, and one defect per model of the
kinds the reader names (no name, no data_type, a bad data_location, external data without a
location or a length, strings where raw bytes belong). External data names files of the hostile
folder of fuzz_folder.cpp (weights.bin, data.bin: 64 KiB each).

  /usr/bin/python3 fuzz/generate/onnx_shapes.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(nodes, initializers=(), functions=()):
    graph = helper.make_graph(list(nodes), "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("local", 1)])
    m.functions.extend(functions)
    return m


def raw(name, dtype, dims, data):
    t = TensorProto(name=name, data_type=dtype, dims=dims, raw_data=data)
    return t


def external(name, location=None, offset=0, length=None, data_location=TensorProto.EXTERNAL):
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[16])
    if location is not None:
        t.external_data.add(key="location", value=location)
    t.external_data.add(key="offset", value=str(offset))
    if length is not None:
        t.external_data.add(key="length", value=str(length))
    t.data_location = data_location
    return t


def models():
    const = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.ones(3, np.float32), "v"))
    function = helper.make_function("local", "F", [], ["c"], [const], [helper.make_opsetid("", 13)])
    yield "function", model([helper.make_node("F", [], ["y"], domain="local", name="call")], functions=[function])
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "vals"),
                                       numpy_helper.from_array(np.array([0, 3], np.int64), "idx"), [4])
    yield "sparse-attr", model([helper.make_node("Constant", [], ["y"], sparse_value=sparse)])
    node = helper.make_node("Custom", [], ["y"], domain="x", name="n" * 300)
    node.attribute.append(helper.make_attribute("ts", [numpy_helper.from_array(np.zeros(2, np.int8), "t0"),
                                                       numpy_helper.from_array(np.zeros(1, np.int32), "t1")]))
    node.attribute.append(helper.make_attribute("sp", [sparse]))
    yield "tensors-attr", model([node])
    yield "value-floats", model([helper.make_node("Constant", [], ["y"], value_floats=[1.0, 2.0, 3.0])])
    yield "value-ints", model([helper.make_node("Constant", [], ["y"], value_ints=[1, -2, 3])])
    yield "no-output", model([helper.make_node("Constant", [], [], value_float=1.0)])
    two = helper.make_node("Constant", [], ["y"], value_float=1.0)
    two.attribute.append(helper.make_attribute("value_int", 2))
    yield "two-values", model([two])
    yield "dtypes", model([], [raw("c128", 15, [1], b"\0" * 16), raw("f8a", 17, [2], b"\1\2"), raw("f8b", 19, [2], b"\1\2"),
                               raw("i4", 22, [4], b"\x12\x34"), raw("u4", 21, [4], b"\x12\x34"),
                               raw("é" * 200, TensorProto.FLOAT, [1], b"\0" * 4)])
    yield "no-name", model([], [raw("", TensorProto.FLOAT, [1], b"\0" * 4)])
    yield "no-dtype", model([], [TensorProto(name="t", dims=[1], raw_data=b"\0" * 4)])
    yield "rank", model([], [raw("r", TensorProto.UINT8, [1] * 40, b"\0")])
    yield "string-raw", model([], [raw("s", TensorProto.STRING, [1], b"abc")])
    t = TensorProto(name="s", data_type=TensorProto.FLOAT, dims=[1], string_data=[b"x"])
    yield "string-data-float", model([], [t])
    t = TensorProto(name="u16", data_type=TensorProto.UINT16, dims=[3], int32_data=[1, 2, 70000])
    t2 = TensorProto(name="c64", data_type=TensorProto.COMPLEX64, dims=[1], float_data=[1.0, 2.0])
    t3 = TensorProto(name="f64", data_type=TensorProto.DOUBLE, dims=[2], double_data=[1.0, 2.0])
    t4 = TensorProto(name="u64", data_type=TensorProto.UINT64, dims=[2], uint64_data=[1, 1 << 63])
    t5 = TensorProto(name="b", data_type=TensorProto.BOOL, dims=[3], int32_data=[0, 1, 7])
    t6 = TensorProto(name="f16", data_type=TensorProto.FLOAT16, dims=[2], int32_data=[15360, 48128])
    yield "typed", model([], [t, t2, t3, t4, t5, t6])
    yield "external", model([], [external("w", "weights.bin", 0, 64), external("d", "data.bin", 4096, 64),
                                 external("i", "inside.bin", 128, 64)])
    yield "external-no-location", model([], [external("w")])
    yield "external-no-length", model([], [external("w", "weights.bin", 64)])
    # data_location 5: no such enum value, so written as EXTERNAL (field 14, value 1) and patched.
    yield "external-bad-location", model([], [external("w", "weights.bin", 0, 64)]).SerializeToString().replace(
        b"\x70\x01", b"\x70\x05")
    yield "external-not-external", model([], [external("w", "weights.bin", 0, 64, data_location=TensorProto.DEFAULT)])
    yield "external-out", model([], [external("w", "outside.bin", 0, 64), external("p", "../m/weights.bin", 0, 64)])
    yield "external-fifo", model([], [external("w", "fifo", 0, 64)])
    cond = helper.make_node("If", ["c"], ["y"],
                            then_branch=helper.make_graph([const], "then", [], [helper.make_tensor_value_info("c", 1, None)],
                                                          initializer=[raw("ti", TensorProto.FLOAT, [1], b"\0" * 4)]),
                            else_branch=helper.make_graph([], "else", [], [], initializer=[external("e", "data.bin", 0, 64)]))
    yield "if", model([cond])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, m in models():
        with open(os.path.join(out, f"{name}.onnx"), "wb") as f:
            f.write(m if isinstance(m, bytes) else m.SerializeToString())


if __name__ == "__main__":
    main()
