#!/usr/bin/python3
"""safetensors files and index files for shapes no suite leaves in a file: a name twice in one
header, every JSON value type in __metadata__ and in a tensor's record, and index files over the
hostile folder of fuzz_folder.cpp (its model-00001-of-00002.safetensors holds tensor "a", U8[16]):
a tensor in two shards, a weight_map that puts a tensor in a shard without it.

  /usr/bin/python3 fuzz/generate/safetensors_shapes.py OUT_DIR
"""
import json
import os
import struct
import sys


def single(header_text, data=b""):
    header = header_text.encode()
    header += b" " * ((8 - len(header) % 8) % 8)
    return struct.pack("<Q", len(header)) + header + data


def files():
    yield "twice.safetensors", single('{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
                                      '"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}', b"abcd")
    yield "values.safetensors", single('{"__metadata__":{"k":"v","n":null,"b":true,"d":1.5,"l":[1],"o":{}},'
                                       '"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":[null,false,2.5,{"y":"z"}]}}',
                                       b"\0\0\x80\x3f")
    yield "long-string.safetensors", single('{"' + "n" * 5000 + '":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                                            '"__metadata__":{"k":"' + "v" * 10000 + '"}}', b"x")
    shard = "model-00001-of-00002.safetensors"
    yield "two-shards.index.json", json.dumps({"metadata": {"total_size": 16},
                                               "weight_map": {"a": shard, "b": shard}})
    yield "in-two.index.json", json.dumps({"weight_map": {"a": shard, "z": "model-00002-of-00002.safetensors"}})
    yield "missing-tensor.index.json", json.dumps({"weight_map": {"b": shard}})
    yield "whole.index.json", json.dumps({"metadata": {"total_size": 16, "format": "pt"}, "weight_map": {"a": shard}})
    yield "metadata-values.index.json", json.dumps({"metadata": {"n": None, "b": True, "d": 0.5, "u": 1 << 63,
                                                               "i": -3, "l": [1, "x", [None]], "o": {"k": 1}},
                                                  "weight_map": {"a": shard}})
    yield "shard-twice.index.json", '{"weight_map":{"a":"' + shard + '","a":"' + shard + '"}}'


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, content in files():
        with open(os.path.join(out, name), "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)


if __name__ == "__main__":
    main()
