#!/usr/bin/python3
"""Independent safetensors reader for the real-file tests, written from the format's description
(no lwload code, no safetensors package): an 8-byte little-endian header length N, N bytes of JSON
({name: {dtype, shape, data_offsets: [begin, end]}, optional "__metadata__"}), then the data, each
tensor's bytes at data_offsets relative to the data's start. Every tensor is written to
OUTDIR/index.json + N.bin (see reference_onnx.write_dump), in the header's order.

  /usr/bin/python3 tests/real/reference_safetensors.py MODEL OUTDIR

dtype names are the format's own (F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I64 ... U8, BOOL), which
are lwload's spellings too. A sharded model (model.safetensors.index.json) is every shard's tensors.
"""
import json
import os
import struct
import sys

from reference_onnx import write_dump

SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I64": 8, "I32": 4, "I16": 2,
         "I8": 1, "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1}


def read_file(path, tensors):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        count = 1
        for d in info["shape"]:
            count *= d
        if end - begin != count * SIZES[info["dtype"]] or end > len(data):
            raise SystemExit(f"{path}: '{name}': data_offsets {begin}..{end} do not hold {info['shape']} "
                             f"{info['dtype']}")
        tensors.append((name, info["dtype"], list(info["shape"]), data[begin:end]))


def main():
    model_path, out_dir = sys.argv[1], sys.argv[2]
    tensors = []
    if model_path.endswith(".index.json"):
        with open(model_path) as f:
            shards = list(dict.fromkeys(json.load(f)["weight_map"].values()))
        for shard in shards:
            read_file(os.path.join(os.path.dirname(model_path), shard), tensors)
    else:
        read_file(model_path, tensors)
    write_dump(out_dir, tensors)


if __name__ == "__main__":
    main()
