#!/usr/bin/python3
"""PyTorch checkpoints written by torch (python3-torch) and then rewritten as zip archives in the
ways the zip reader tells apart, for shapes no suite leaves in a small file: every dtype, views with
a storage offset, non-contiguous and shared storages, the legacy format (and its protocol version
and byte order changed), a whole module pickled, TorchScript archives (with attributes state_dict()
leaves out), and
every pickle protocol, and the same archive re-zipped with ZIP64 extra fields, with a deflated record, with a comment, and with
two end records.

  /usr/bin/python3 fuzz/generate/pytorch_shapes.py OUT_DIR
"""
import io
import os
import typing
import sys
import zipfile

import torch


def state():
    base = torch.arange(12, dtype=torch.float32)
    return {
        "f32": base[:4], "view": base[4:8], "t": base.reshape(3, 4).t(), "f16": torch.ones(3, dtype=torch.float16),
        "bf16": torch.ones(2, dtype=torch.bfloat16), "i64": torch.arange(3), "u8": torch.zeros(2, dtype=torch.uint8),
        "b": torch.tensor([True, False]), "c64": torch.zeros(1, dtype=torch.complex64), "scalar": torch.tensor(1.5),
        "nested": {"a": [torch.zeros(1), (torch.ones(1), 3)], "s": "text", "n": None},
    }


def saved(obj, **kwargs):
    buffer = io.BytesIO()
    torch.save(obj, buffer, **kwargs)
    return buffer.getvalue()


def rezip(data, compress=None, zip64=False, comment=b"", which="data.pkl", level=None, rewrite=None):
    """The archive again: records whose name ends with `which` deflated at `level` (when `compress`),
    each record's bytes through `rewrite(name, bytes)` (when given)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            record = zipfile.ZipInfo(info.filename, info.date_time)
            if compress is not None and info.filename.endswith(which):
                record.compress_type = compress
                record._compresslevel = level
            with dst.open(record, "w", force_zip64=zip64) as f:
                content = src.read(info.filename)
                f.write(rewrite(info.filename, content) if rewrite else content)
        dst.comment = comment
    return out.getvalue()


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(2))
        self.register_buffer("b", torch.zeros(1))

    def forward(self, x):
        return x * self.w + self.b


class Attributes(torch.nn.Module):
    """TorchScript attributes state_dict() leaves out: a list, a dict, a plain tensor, a submodule."""

    def __init__(self):
        super().__init__()
        self.sizes: typing.List[int] = [1, 2]
        self.names: typing.Dict[str, int] = {"a": 1}
        self.plain = torch.ones(2)
        self.inner = Small()

    def forward(self, x):
        return self.inner(x) + self.plain.sum() + self.sizes[0] + self.names["a"]


def files():
    zipped = saved(state())
    yield "state.pt", zipped
    yield "legacy.pt", saved(state(), _use_new_zipfile_serialization=False)
    yield "tensor.pt", saved(torch.arange(4, dtype=torch.int16))
    yield "zip64.pt", rezip(zipped, zip64=True)
    yield "deflated.pt", rezip(zipped, compress=zipfile.ZIP_DEFLATED)
    yield "comment.pt", rezip(zipped, comment=b"a comment")
    end = zipped.rfind(b"PK\x05\x06")
    yield "two-ends.pt", zipped + zipped[end:]
    # Every pickle protocol, over objects that need the long opcodes (LONG1, LONG_BINPUT / BINGET).
    many = {f"k{i}": torch.zeros(1) for i in range(80)}
    many.update(big=1 << 40, negative=-(1 << 40), huge=1 << 70, shared=[many["k0"]] * 3)
    for protocol in range(6):
        yield f"protocol{protocol}.pt", saved(many, pickle_protocol=protocol)
    yield "legacy-protocol0.pt", saved(state(), _use_new_zipfile_serialization=False, pickle_protocol=0)
    script = io.BytesIO()
    torch.jit.save(torch.jit.script(Small()), script)
    yield "script.pt", script.getvalue()
    attributes = io.BytesIO()
    torch.jit.save(torch.jit.script(Attributes()), attributes)
    yield "script-attributes.pt", attributes.getvalue()
    yield "module.pt", saved(Small())  # a whole module pickled: its class, not a state_dict
    legacy = saved(state(), _use_new_zipfile_serialization=False)
    yield "legacy-version.pt", legacy.replace(b"M\xe9\x03", b"M\xea\x03", 1)  # protocol version 1002
    yield "legacy-big-endian.pt", legacy.replace(b"little_endianq\x02\x88", b"little_endianq\x02\x89", 1)
    # TorchScript sources deflated: stored blocks (level 0), fixed and dynamic Huffman codes.
    for level in (0, 1, 9):
        yield f"script-deflated{level}.pt", rezip(script.getvalue(), zipfile.ZIP_DEFLATED, which=".py", level=level)
    yield "big-endian.pt", rezip(zipped, rewrite=lambda name, b: b"big" if name.endswith("byteorder") else b)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in files():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
