#!/usr/bin/python3
"""TFJS manifests whose shards are files the hostile folder of fuzz_folder.cpp holds
(group1-shard1of1.bin and group1-shard1of2.bin: 64 KiB of zeros each, so every string weight's
length prefix reads 0), for the shapes no suite leaves with those names: string weights before
others (their length prefixes walked), a shard listed again, a name twice, a quantized string, a
string count past the shards, an element count that overflows, both manifest forms.

  /usr/bin/python3 fuzz/generate/tfjs_folder.py OUT_DIR
"""
import json
import os
import sys

SHARD = "group1-shard1of1.bin"


def weight(name, dtype, shape, **extra):
    return dict(name=name, dtype=dtype, shape=shape, **extra)


def groups():
    yield "strings-walked", [{"paths": [SHARD], "weights": [weight("s", "string", [3]), weight("f", "float32", [4])]}]
    yield "shard-again", [{"paths": [SHARD, SHARD, "group1-shard1of2.bin"],
                           "weights": [weight("s", "string", [2]), weight("f", "float32", [40000])]}]
    yield "name-twice", [{"paths": [SHARD], "weights": [weight("a", "int32", [2]), weight("a", "int32", [2])]},
                         {"paths": [SHARD], "weights": [weight("a", "bool", [1])]}]
    yield "string-quantized", [{"paths": [SHARD], "weights": [
        weight("s", "string", [1], quantization={"dtype": "uint8", "scale": 1, "min": 0})]}]
    yield "strings-past-end", [{"paths": [SHARD], "weights": [weight("s", "string", [1 << 40]), weight("f", "float32", [1])]}]
    yield "count-overflow", [{"paths": [SHARD], "weights": [weight("s", "string", [1 << 32, 1 << 32, 16])]}]
    yield "quantized", [{"paths": [SHARD], "weights": [
        weight("u8", "float32", [4], quantization={"dtype": "uint8", "scale": 0.5, "min": -1, "original_dtype": "float32"}),
        weight("u16", "float32", [4], quantization={"dtype": "uint16", "scale": 1e-3, "min": 0}),
        weight("f16", "float32", [4], quantization={"dtype": "float16"}),
        weight("bad", "float32", [4], quantization={"dtype": "uint8"})]}]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, manifest in groups():
        with open(os.path.join(out, f"{name}.model.json"), "w") as f:
            json.dump({"format": "graph-model", "generatedBy": "fuzz", "convertedBy": "fuzz",
                       "modelTopology": {"node": []}, "weightsManifest": manifest}, f)
        with open(os.path.join(out, f"{name}.weights_manifest.json"), "w") as f:
            json.dump(manifest, f)


if __name__ == "__main__":
    main()
