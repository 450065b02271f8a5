#!/usr/bin/python3
"""Writes the small files that once cost minutes or gigabytes to open (test_amplification.cpp).

  /usr/bin/python3 tests/amplification/make_hostile.py CASE OUT

PyTorch cases are zip archives laid out as torch.save writes them (archive/data.pkl, archive/data/N),
their pickles written by Python's own pickle module with stand-ins for torch's globals (no torch
import needed, and the memo sharing is exactly what the pickler does for a shared object), except
`torch50k`, which is a real torch.save of 50,000 tensors.
"""
import io
import json
import pickle
import struct
import sys
import types
import zipfile
from collections import OrderedDict


def fake_torch():
    """Module stand-ins so pickle writes GLOBAL torch._utils._rebuild_tensor_v2 / torch.FloatStorage."""
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")

    def _rebuild_tensor_v2(*args):
        raise AssertionError("never called")

    _rebuild_tensor_v2.__module__ = "torch._utils"
    _rebuild_tensor_v2.__qualname__ = "_rebuild_tensor_v2"
    utils._rebuild_tensor_v2 = _rebuild_tensor_v2

    class FloatStorage:
        pass

    FloatStorage.__module__ = "torch"
    FloatStorage.__qualname__ = "FloatStorage"
    torch.FloatStorage = FloatStorage
    torch._utils = utils
    sys.modules["torch"] = torch
    sys.modules["torch._utils"] = utils
    return torch, utils


class Storage:
    def __init__(self, key, numel):
        self.key, self.numel = key, numel


class Tensor:
    """Pickles as torch.save pickles a tensor: _rebuild_tensor_v2(storage, offset, size, stride, ...)."""

    def __init__(self, storage, size, stride):
        self.storage, self.size, self.stride = storage, size, stride

    def __reduce__(self):
        return (sys.modules["torch._utils"]._rebuild_tensor_v2,
                (self.storage, 0, self.size, self.stride, False, OrderedDict()))


class TorchPickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            return ("storage", sys.modules["torch"].FloatStorage, obj.key, "cpu", obj.numel)
        return None


def write_checkpoint(out, root, storages=None, raw_pickle=None):
    fake_torch()
    data = raw_pickle
    if data is None:
        buffer = io.BytesIO()
        TorchPickler(buffer, protocol=2).dump(root)
        data = buffer.getvalue()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", data)
        z.writestr("archive/byteorder", "little")
        for key, numel in (storages or {}).items():
            z.writestr(f"archive/data/{key}", b"\0" * (4 * numel))


def write_gguf(out, kvs):
    """A GGUF v3 file with these (key, type + value bytes) metadata pairs and no tensors."""
    with open(out, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)))
        for key, value in kvs:
            f.write(struct.pack("<Q", len(key)) + key + value)


def write_safetensors_many(out, count):
    """`count` one-byte U8 tensors named tN, packed in order (a 70 MB header for a million)."""
    parts = [f'"t{i}":{{"dtype":"U8","shape":[1],"data_offsets":[{i},{i + 1}]}}'
             for i in range(count)]
    text = ("{" + ",".join(parts) + "}").encode()
    text += b" " * (-len(text) % 8)
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"\1" * count)


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def length_delimited(field, payload):
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def write_onnx_many(out, count):
    """A ModelProto whose graph holds `count` initializers: TensorProto{dims: [1], data_type: UINT8,
    name: "wN", raw_data: one byte}, written on the wire directly (onnx's helpers take minutes)."""
    inits = b"".join(length_delimited(5, b"\x08\x01\x10\x02" + length_delimited(8, b"w%d" % i) + b"\x4a\x01\x01")
                     for i in range(count))
    graph = length_delimited(2, b"g") + inits
    model = b"\x08\x08" + length_delimited(8, b"\x10\x11") + length_delimited(7, graph)
    with open(out, "wb") as f:
        f.write(model)


def write_tflite_shared_quantization(out, tensors, channels):
    """A TFLite model whose `tensors` INT8 tensors of `channels` elements share one buffer, one shape
    vector and one QuantizationParameters table of `channels` scales, as a FlatBuffers writer that
    shares tables writes it."""
    import flatbuffers
    b = flatbuffers.Builder(1 << 20)
    def vector(values, fmt, size):
        b.StartVector(size, len(values), size)
        for v in reversed(values):
            b.Prepend(getattr(flatbuffers.number_types, fmt), v)
        return b.EndVector()
    scales = vector([0.5] * channels, "Float32Flags", 4)
    zero_points = vector([0] * channels, "Int64Flags", 8)
    b.StartObject(7)  # QuantizationParameters
    b.PrependUOffsetTRelativeSlot(2, scales, 0)
    b.PrependUOffsetTRelativeSlot(3, zero_points, 0)
    quantization = b.EndObject()
    shape = vector([channels], "Int32Flags", 4)
    data = vector([1] * channels, "Uint8Flags", 1)
    b.StartObject(1)
    empty = b.EndObject()
    b.StartObject(1)
    b.PrependUOffsetTRelativeSlot(0, data, 0)
    filled = b.EndObject()
    names = [b.CreateString(f"t{i}") for i in range(tensors)]
    offsets = []
    for i in range(tensors):
        b.StartObject(5)  # Tensor: shape, type, buffer, name, quantization
        b.PrependUOffsetTRelativeSlot(0, shape, 0)
        b.PrependInt8Slot(1, 9, 0)  # INT8
        b.PrependUint32Slot(2, 1, 0)
        b.PrependUOffsetTRelativeSlot(3, names[i], 0)
        b.PrependUOffsetTRelativeSlot(4, quantization, 0)
        offsets.append(b.EndObject())
    def table_vector(items):
        b.StartVector(4, len(items), 4)
        for item in reversed(items):
            b.PrependUOffsetTRelative(item)
        return b.EndVector()
    tensor_vector = table_vector(offsets)
    name = b.CreateString("main")
    b.StartObject(5)  # SubGraph
    b.PrependUOffsetTRelativeSlot(0, tensor_vector, 0)
    b.PrependUOffsetTRelativeSlot(4, name, 0)
    subgraph = b.EndObject()
    subgraphs = table_vector([subgraph])
    buffers = table_vector([empty, filled])
    description = b.CreateString("shared quantization")
    b.StartObject(5)  # Model: version, operator_codes, subgraphs, description, buffers
    b.PrependUint32Slot(0, 3, 0)
    b.PrependUOffsetTRelativeSlot(2, subgraphs, 0)
    b.PrependUOffsetTRelativeSlot(3, description, 0)
    b.PrependUOffsetTRelativeSlot(4, buffers, 0)
    model = b.EndObject()
    b.Finish(model, file_identifier=b"TFL3")
    with open(out, "wb") as f:
        f.write(b.Output())


def write_tflite_tiny_tensors(out, tensors):
    """A TFLite model of `tensors` INT8 scalars sharing one shape vector ([1]) and one buffer, each
    table a name and two offsets: the fewest bytes a tensor can take."""
    import flatbuffers
    b = flatbuffers.Builder(1 << 20)
    b.StartVector(4, 1, 4)
    b.PrependInt32(1)
    shape = b.EndVector()
    b.StartVector(1, 1, 1)
    b.PrependUint8(1)
    data = b.EndVector()
    b.StartObject(1)
    empty = b.EndObject()
    b.StartObject(1)
    b.PrependUOffsetTRelativeSlot(0, data, 0)
    filled = b.EndObject()
    offsets = []
    for i in range(tensors):
        name = b.CreateString(f"t{i}")
        b.StartObject(5)  # Tensor: shape, type (INT8), buffer, name
        b.PrependUOffsetTRelativeSlot(0, shape, 0)
        b.PrependInt8Slot(1, 9, 0)
        b.PrependUint32Slot(2, 1, 0)
        b.PrependUOffsetTRelativeSlot(3, name, 0)
        offsets.append(b.EndObject())
    def table_vector(items):
        b.StartVector(4, len(items), 4)
        for item in reversed(items):
            b.PrependUOffsetTRelative(item)
        return b.EndVector()
    tensor_vector = table_vector(offsets)
    b.StartObject(5)  # SubGraph
    b.PrependUOffsetTRelativeSlot(0, tensor_vector, 0)
    subgraph = b.EndObject()
    subgraphs = table_vector([subgraph])
    buffers = table_vector([empty, filled])
    b.StartObject(5)  # Model
    b.PrependUint32Slot(0, 3, 0)
    b.PrependUOffsetTRelativeSlot(2, subgraphs, 0)
    b.PrependUOffsetTRelativeSlot(4, buffers, 0)
    b.Finish(b.EndObject(), file_identifier=b"TFL3")
    with open(out, "wb") as f:
        f.write(b.Output())


def main():
    case, out = sys.argv[1], sys.argv[2]
    if case == "pickle_empty_lists":  # 16 MiB of EMPTY_LIST: one node per byte
        write_checkpoint(out, None, raw_pickle=b"\x80\x02" + b"]" * (16 << 20) + b".")
    elif case == "pickle_memo_dag":  # a list holding the level below twice, 22 levels: 4,194,304 paths
        storage = Storage("0", 1)
        level = [Tensor(storage, (1,), (1,))]
        for _ in range(22):
            level = [level, level]
        write_checkpoint(out, {"m": level}, {"0": 1})
    elif case == "pickle_shared_shape":  # 10,000 tensors sharing one memoized 10,000-dim shape
        storage = Storage("0", 1)
        shape = (1,) * 10000
        write_checkpoint(out, {f"t{i}": Tensor(storage, shape, shape) for i in range(10000)}, {"0": 1})
    elif case == "pickle_setitems":  # one dict of 100,000 keys (SETITEMS), beside one tensor
        state = {f"k{i}": i for i in range(100000)}
        state["w"] = Tensor(Storage("0", 4), (4,), (1,))
        write_checkpoint(out, state, {"0": 4})
    elif case == "pickle_shared_storage":  # 10,000 tensors over one 1 MiB storage
        storage = Storage("0", 1 << 18)
        write_checkpoint(out, {f"t{i}": Tensor(storage, (1 << 18,), (1,)) for i in range(10000)}, {"0": 1 << 18})
    elif case == "torch50k":  # a legitimate torch.save state dict of 50,000 tensors
        import torch
        torch.save({f"layer{i}.weight": torch.zeros(4) for i in range(50000)}, out)
    elif case == "safetensors_metadata":  # 200,000 __metadata__ keys
        header = {"__metadata__": {f"k{i}": "v" for i in range(200000)},
                  "w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        with open(out, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + b"\0" * 4)
    elif case == "big_json":  # 64 MiB of JSON that is no model
        with open(out, "w") as f:
            f.write('{"rows": [')
            row = json.dumps(list(range(200)))
            n = (64 << 20) // (len(row) + 1)
            f.write(",".join([row] * n))
            f.write("]}")
    elif case == "tfjs_repeated_shard":  # one 1 MiB shard listed 20,000 times (OUT is a folder)
        import os
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "shard.bin"), "wb") as f:
            f.write(b"\0" * (1 << 20))
        group = {"paths": ["shard.bin"] * 20000,
                 "weights": [{"name": f"w{i}", "shape": [1 << 18], "dtype": "float32"} for i in range(20000)]}
        with open(os.path.join(out, "weights_manifest.json"), "w") as f:
            json.dump([group], f)
    elif case == "tfjs_string_walk":  # a string weight whose length walk crosses one shard listed 20,000 times
        import os
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "shard.bin"), "wb") as f:
            f.write(b"\0" * (1 << 20))  # 262,144 empty strings per pass
        group = {"paths": ["shard.bin"] * 20000,
                 "weights": [{"name": "s", "shape": [20000 << 18], "dtype": "string"},
                             {"name": "w", "shape": [1], "dtype": "float32"}]}
        with open(os.path.join(out, "weights_manifest.json"), "w") as f:
            json.dump([group], f)
    elif case in ("tfjs_big_topology", "tfjs_big_manifest", "safetensors_big_index"):
        # 64 MiB of JSON: in model.json's modelTopology, in its weightsManifest (one group of 1.5
        # million weights listing one 4-byte shard... each weight 0 elements), or beside an index's weight_map
        import os
        os.makedirs(out, exist_ok=True)
        rows = json.dumps([list(range(200))] * ((64 << 20) // 900))
        if case == "safetensors_big_index":
            header = json.dumps({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
            header += b" " * (-len(header) % 8)
            with open(os.path.join(out, "model-00001-of-00001.safetensors"), "wb") as f:
                f.write(struct.pack("<Q", len(header)) + header + b"\0" * 4)
            with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
                f.write('{"metadata": {}, "extra": ' + rows + ', "weight_map": {"w": "model-00001-of-00001.safetensors"}}')
            return
        with open(os.path.join(out, "shard.bin"), "wb") as f:
            f.write(b"\0" * 4)
        weights = [{"name": "w", "shape": [1], "dtype": "float32"}]
        if case == "tfjs_big_manifest":
            weights += [{"name": f"z{i}", "shape": [0], "dtype": "float32"} for i in range((64 << 20) // 50)]
            topology = {}
        else:
            topology = "TOPOLOGY"
        text = json.dumps({"format": "layers-model", "modelTopology": topology,
                           "weightsManifest": [{"paths": ["shard.bin"], "weights": weights}]})
        with open(os.path.join(out, "model.json"), "w") as f:
            f.write(text.replace('"TOPOLOGY"', rows))
    elif case == "tfjs_linked_candidates":  # 150 hard links to one 8 MiB .json that is no manifest
        import os
        os.makedirs(out, exist_ok=True)
        first = os.path.join(out, "c0.json")
        with open(first, "w") as f:
            row = json.dumps(list(range(200)))
            f.write('{"rows": [' + ",".join([row] * ((8 << 20) // (len(row) + 1))) + "]}")
        for i in range(1, 150):
            os.link(first, os.path.join(out, f"c{i}.json"))
    elif case in ("onnx_function_origins", "onnx_subgraph_origins", "onnx_duplicate_names"):
        import onnx
        from onnx import TensorProto, helper
        long_name = "f" * 60000
        def constant(output):
            return helper.make_node("Constant", [], [output],
                                    value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]))
        if case == "onnx_function_origins":  # 20,000 Constants in a function with a 60 KB name
            nodes = [constant(f"c{i}") for i in range(20000)]
            function = helper.make_function("local", long_name, [], ["c0"], nodes,
                                            [helper.make_opsetid("", 17)])
            graph = helper.make_graph([helper.make_node(long_name, [], ["y"], domain="local")], "g", [],
                                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
            model = helper.make_model(graph, functions=[function],
                                      opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
        else:
            if case == "onnx_subgraph_origins":  # 20,000 initializers in an If branch of a node with a 60 KB name
                inits = [helper.make_tensor(f"i{i}", TensorProto.FLOAT, [1], [1.0]) for i in range(20000)]
                nodes = [constant("k")]
            else:  # 20,000 Constants in a subgraph, all naming their output "c"
                inits = []
                nodes = [constant("c") for _ in range(20000)]
            branch = helper.make_graph(nodes, "branch", [], [helper.make_tensor_value_info("k" if inits else "c", TensorProto.FLOAT, [1])],
                                       initializer=inits)
            node = helper.make_node("If", ["cond"], ["y"], name=long_name if inits else "if",
                                    then_branch=branch, else_branch=branch)
            graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        with open(out, "wb") as f:
            f.write(model.SerializeToString())
    elif case == "gguf_u8_array":  # one metadata value: an array of 8,000,000 UINT8 (8 MB of header)
        write_gguf(out, [(b"big", struct.pack("<IIQ", 9, 0, 8000000) + b"\x01" * 8000000)])
    elif case == "gguf_empty_strings":  # 2,000,000 empty strings: 8 header bytes each
        write_gguf(out, [(b"s", struct.pack("<IIQ", 9, 8, 2000000) + b"\0" * 8 * 2000000)])
    elif case == "gguf_empty_arrays":  # 1,000,000 empty arrays of UINT8, 12 header bytes each (refused: ggml reads no arrays of arrays)
        write_gguf(out, [(b"a", struct.pack("<IIQ", 9, 9, 1000000) + struct.pack("<IQ", 0, 0) * 1000000)])
    elif case == "gguf_tiny_tensors":  # 1,000,000 scalar I8 tensors at alignment 1: ~31 header bytes each
        infos = b"".join(struct.pack("<Q", len(b"t%d" % i)) + b"t%d" % i + struct.pack("<IIQ", 0, 24, i)
                         for i in range(1000000))
        alignment = (b"general.alignment", struct.pack("<II", 4, 1))
        with open(out, "wb") as f:
            f.write(b"GGUF" + struct.pack("<IQQ", 3, 1000000, 1))
            f.write(struct.pack("<Q", len(alignment[0])) + alignment[0] + alignment[1] + infos + b"\1" * 1000000)
    elif case == "tflite_tiny_tensors":  # 100,000 tensors of one shared shape and buffer: ~28 bytes each
        write_tflite_tiny_tensors(out, 100000)
    elif case == "onnx_tiny_initializers":  # 1,000,000 empty initializers (dims [0]), 3-byte names: 11 bytes each
        names = (bytes([1 + i % 255, 1 + i // 255 % 255, 1 + i // 65025 % 255]) for i in range(1000000))
        inits = b"".join(length_delimited(5, b"\x08\x00\x10\x02" + length_delimited(8, n)) for n in names)
        with open(out, "wb") as f:
            f.write(b"\x08\x08" + length_delimited(8, b"\x10\x11") + length_delimited(7, length_delimited(2, b"g") + inits))
    elif case == "safetensors_1m":  # 1,000,000 one-element U8 tensors, packed
        write_safetensors_many(out, 1000000)
    elif case == "onnx_1m":  # 1,000,000 one-element UINT8 initializers with raw_data
        write_onnx_many(out, 1000000)
    elif case.startswith(("safetensors_many_", "onnx_many_")):  # e.g. onnx_many_200000: that many, as above
        kind, count = case.rsplit("_", 1)
        (write_safetensors_many if kind == "safetensors_many" else write_onnx_many)(out, int(count))
    elif case == "tflite_shared_quantization":  # 10,000 tensors sharing one 5,000-channel table
        write_tflite_shared_quantization(out, 10000, 5000)
    else:
        raise SystemExit(f"unknown case {case}")


if __name__ == "__main__":
    main()
