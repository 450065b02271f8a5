#!/usr/bin/python3
"""Independent TFLite reader for the real-file tests: Python classes flatc generates from the
schema (lib/formats/tflite_schema.fbs, into a temporary folder) read the model with the
flatbuffers runtime (Debian's python3-flatbuffers), and every tensor whose buffer holds data is
written to OUTDIR/index.json + N.bin (see reference_onnx.write_dump).

  /usr/bin/python3 tests/real/reference_tflite.py MODEL OUTDIR

Names as TFLite gives them; tensors of subgraph i > 0 are prefixed "subgraph<i>/", an unnamed
tensor is "tensor<index>". Inline buffers only (the files packages ship are under 2 GiB).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

from reference_onnx import write_dump

DTYPES = {0: "F32", 1: "F16", 2: "I32", 3: "U8", 4: "I64", 5: "STRING", 6: "BOOL", 7: "I16", 8: "C64",
          9: "I8", 10: "F64", 11: "C128", 12: "U64", 15: "U32", 16: "U16", 17: "I4", 18: "BF16"}


def main():
    model_path, out_dir = sys.argv[1], sys.argv[2]
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
                if t.Buffer() == 0:
                    continue
                buffer = model.Buffers(t.Buffer())
                if buffer.DataLength() == 0:
                    continue
                raw = t.Name().decode() if t.Name() else ""
                name = ("" if s == 0 else f"subgraph{s}/") + (raw or f"tensor{i}")
                shape = [int(d) for d in t.ShapeAsNumpy()] if t.ShapeLength() else []
                tensors.append((name, DTYPES[t.Type()], shape, buffer.DataAsNumpy().astype(np.uint8).tobytes()))
        write_dump(out_dir, tensors)


if __name__ == "__main__":
    main()
