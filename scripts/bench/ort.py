#!/usr/bin/python3
# benchmark: ONNX Runtime's own loading against the lwload adapter (docs/BENCHMARKS.md).
"""Benchmark: ONNX Runtime on its own loading vs on lwload's weights (the adapter), side by side in
one run, for docs/BENCHMARKS.md. Models: a 256 MiB model (four 4096×4096 F32 MatMul weights) with
its weights inline and as external data, and the largest real ONNX file of the real-file suite
(PaddleOCR v4 recognition, paddle2onnx). Each row is the median of N processes of examples/ort_run
(the loaders alternate, the page cache warm), prepacking on and off: seconds to ready (session made,
weights resident), anonymous memory at ready, peak RSS growth, the first run and the steady run.

  /usr/bin/python3 scripts/bench/ort.py --ort-run build/examples/ort_run [--runs 5] [--folder DIR] [--cache DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def big_model(folder):
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal((4096, 4096), dtype=np.float32) for _ in range(4)]
    nodes = [helper.make_node("MatMul", ["x" if i == 0 else f"m{i - 1}", f"w{i}"], [f"m{i}" if i < 3 else "y"])
             for i in range(4)]
    graph = helper.make_graph(nodes, "matmuls", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4096])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4096])],
                              [numpy_helper.from_array(w, f"w{i}") for i, w in enumerate(weights)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    paths = {}
    paths["256 MiB, inline"] = os.path.join(folder, "inline", "model.onnx")
    os.makedirs(os.path.dirname(paths["256 MiB, inline"]))
    onnx.save(model, paths["256 MiB, inline"])
    paths["256 MiB, external data"] = os.path.join(folder, "external", "model.onnx")
    os.makedirs(os.path.dirname(paths["256 MiB, external data"]))
    onnx.save(model, paths["256 MiB, external data"], save_as_external_data=True, location="weights.bin")
    return paths


def run(ort_run, model, loader, prepack, extra):
    out = subprocess.run([ort_run, model, "--loader", loader, "--prepack", prepack, "--runs", "5", "--json", *extra],
                         capture_output=True, text=True, check=True)
    lines = out.stdout.strip().split("\n")
    return lines[:-1], json.loads(lines[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ort-run", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--folder", default=None)
    parser.add_argument("--cache", default=os.path.join(ROOT, "build", "tests", "real-models"))
    args = parser.parse_args()
    folder = args.folder or tempfile.mkdtemp(prefix="bench_ort_")
    models = big_model(folder)
    fetched = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "onnxruntime", "fetch_onnx.py"), args.cache],
                             capture_output=True, text=True)
    for path in fetched.stdout.split():
        if path.endswith("ch_PP-OCRv4_rec_infer.onnx"):
            models["PaddleOCR v4 rec (10.3 MiB, paddle2onnx)"] = path
    extra = {"PaddleOCR v4 rec (10.3 MiB, paddle2onnx)": ["--shape", "x=1x3x48x320"]}
    print(f"load average {os.getloadavg()[0]:.1f}; medians of {args.runs} processes each; MiB = 2^20 bytes\n")
    print("| model | prepack | loader | ready s | anon at ready MiB | peak RSS growth MiB | first run s | run s | outputs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, path in models.items():
        for prepack in ["off", "on"]:
            rows = {"ort": [], "lwload": []}
            digests = {}
            for _ in range(args.runs):
                for loader in ["ort", "lwload"]:
                    d, figures = run(args.ort_run, path, loader, prepack, extra.get(name, []))
                    digests.setdefault(loader, d)
                    rows[loader].append(figures)
            same = "identical" if digests["ort"] == digests["lwload"] else "DIFFER"
            for loader in ["ort", "lwload"]:
                med = {k: statistics.median(r[k] for r in rows[loader])
                       for k in ["ready_seconds", "anon_growth", "peak_rss_growth", "first_run_seconds", "run_seconds"]}
                print(f"| {name} | {prepack} | {'ONNX Runtime' if loader == 'ort' else 'lwload'} | {med['ready_seconds']:.3f} | "
                      f"{med['anon_growth'] / 2**20:.1f} | {med['peak_rss_growth'] / 2**20:.1f} | "
                      f"{med['first_run_seconds']:.4f} | {med['run_seconds']:.4f} | {same} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
