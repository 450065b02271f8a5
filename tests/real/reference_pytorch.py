#!/usr/bin/python3
"""Independent PyTorch reader for the real-file tests: torch itself (Debian's python3-torch) loads
the file — torch.jit.load for TorchScript archives (their state_dict(): parameters and buffers by
attribute path), torch.load otherwise — and every tensor is written to OUTDIR/index.json + N.bin
(see reference_onnx.write_dump).

  /usr/bin/python3 tests/real/reference_pytorch.py MODEL OUTDIR
"""
import sys

import torch

from reference_onnx import write_dump

DTYPES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
          torch.bool: "BOOL", torch.complex64: "C64", torch.complex128: "C128"}


def flatten(value, name, out):
    if isinstance(value, torch.Tensor):
        out.append((name, value))
    elif isinstance(value, dict):
        for key, item in value.items():
            flatten(item, f"{name}.{key}" if name else str(key), out)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            flatten(item, f"{name}.{i}" if name else str(i), out)


def main():
    model_path, out_dir = sys.argv[1], sys.argv[2]
    try:
        state = torch.jit.load(model_path, map_location="cpu").state_dict()
    except RuntimeError:  # not a TorchScript archive
        state = torch.load(model_path, map_location="cpu")
    found = []
    flatten(state, "", found)
    tensors = []
    for name, t in found:
        t = t.detach().contiguous()
        data = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        tensors.append((name, DTYPES[t.dtype], list(t.shape), data))
    write_dump(out_dir, tensors)


if __name__ == "__main__":
    main()
