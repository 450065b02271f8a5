#!/usr/bin/python3
"""The ggml adapter against ggml's own loading, through examples/ggml_matvec on a real ggml backend.

  run_ggml_tests.py GGML_MATVEC TESTDATA SCRATCH GGUF_PY BACKEND LWLOAD

For BACKEND (cpu or vulkan), each case runs ggml_matvec with --loader lwload and --loader ggml (the
way ggml applications load: gguf_init_from_file + ggml_backend_alloc_ctx_tensors + tensor_set), and
requires the same SHA-256 of every 2-D weight's ggml_mul_mat output:
  - the tiny llama GGUF in tests/data;
  - a llama-shaped GGUF of about 256 MiB (alignment 32; F16, Q8_0, Q4_0 and F32 tensors) written by
    gguf-py, llama.cpp's own GGUF writer;
  - safetensors (F16 and BF16, packed as the reference writer packs them) through the adapter, against
    the same arrays written to GGUF by gguf-py and loaded by ggml;
and a tensor ggml has no type for (U8 from safetensors) is refused, naming it; and
`lwload profile --compare ggml` draws ggml's own loading beside lwload's.
Prints 'N passed, N failed'; exit 0 only when every case passed.
"""
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np

exe, testdata, scratch, gguf_py, backend, lwload = sys.argv[1:7]
sys.path.insert(0, gguf_py)
import gguf  # noqa: E402  (llama.cpp's gguf-py, from the prepared ggml)

scratch = Path(scratch) / f"ggml-{backend}"
scratch.mkdir(parents=True, exist_ok=True)
env = dict(os.environ, GGML_VK_VISIBLE_DEVICES="0")  # ggml-vulkan skips CPU-type devices (lavapipe) otherwise
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    print(f"{'ok  ' if ok else 'FAIL'} {backend}: {name}{'' if ok else ': ' + detail}", flush=True)
    passed, failed = passed + ok, failed + (not ok)


def matvec(model, loader):
    """(digest lines, the JSON line as a dict) of one ggml_matvec run."""
    run = subprocess.run([exe, str(model), "--backend", backend, "--loader", loader],
                         capture_output=True, text=True, env=env, timeout=900)
    if run.returncode != 0:
        raise RuntimeError(f"ggml_matvec {model.name} --loader {loader} exited {run.returncode}: {run.stderr[-2000:]}")
    lines = run.stdout.strip().splitlines()
    return lines[:-1], json.loads(lines[-1])


def same_outputs(case, lwload_model, ggml_model, min_weights):
    try:
        ours, ours_json = matvec(lwload_model, "lwload")
        theirs, theirs_json = matvec(ggml_model, "ggml")
    except RuntimeError as e:
        check(case, False, str(e))
        return None
    differ = [a for a, b in zip(ours, theirs) if a != b]
    check(f"{case}: {len(ours)} weights bit-identical to ggml's own loading",
          len(ours) == len(theirs) and len(ours) >= min_weights and not differ and ours_json["tensors"] == len(ours),
          f"{len(ours)} vs {len(theirs)} outputs (want ≥ {min_weights}); first differing: {differ[:2]}")
    return ours_json, theirs_json


def q_blocks(rng, rows, cols, qtype):
    """Quantized rows with sane scales (f16 d = 1/64) and random quants, as raw bytes."""
    if qtype == gguf.GGMLQuantizationType.Q8_0:
        block = np.dtype([("d", "<f2"), ("q", "i1", 32)])
    else:  # Q4_0
        block = np.dtype([("d", "<f2"), ("q", "u1", 16)])
    blocks = np.zeros(rows * cols // 32, dtype=block)
    blocks["d"] = 1 / 64
    blocks["q"] = rng.integers(-128 if qtype == gguf.GGMLQuantizationType.Q8_0 else 0, 127, blocks["q"].shape)
    return blocks.view(np.uint8).reshape(rows, -1)


def write_llama_gguf(path, layers=14, n_embd=1024, n_ff=2816, n_vocab=32000):
    rng = np.random.default_rng(7)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(2048)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_block_count(layers)
    w.add_head_count(16)
    w.add_head_count_kv(16)
    w.add_layer_norm_rms_eps(1e-5)
    f16 = lambda *shape: (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)
    Q8, Q4 = gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q4_0
    w.add_tensor("token_embd.weight", f16(n_vocab, n_embd))
    for i in range(layers):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(p + "attn_q.weight", f16(n_embd, n_embd))
        w.add_tensor(p + "attn_k.weight", f16(n_embd, n_embd))
        w.add_tensor(p + "attn_v.weight", q_blocks(rng, n_embd, n_embd, Q8), raw_dtype=Q8)
        w.add_tensor(p + "attn_output.weight", q_blocks(rng, n_embd, n_embd, Q8), raw_dtype=Q8)
        w.add_tensor(p + "ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", q_blocks(rng, n_ff, n_embd, Q4), raw_dtype=Q4)
        w.add_tensor(p + "ffn_up.weight", q_blocks(rng, n_ff, n_embd, Q4), raw_dtype=Q4)
        w.add_tensor(p + "ffn_down.weight", q_blocks(rng, n_embd, n_ff, Q8), raw_dtype=Q8)
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    w.add_tensor("output.weight", q_blocks(rng, n_vocab, n_embd, Q4), raw_dtype=Q4)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_safetensors(path, arrays):
    """The reference layout: JSON header padded with spaces to 8 bytes, tensors packed in order."""
    header, offset, blobs = {}, 0, []
    for name, (dtype, array) in arrays.items():
        raw = array.tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def bf16(array):
    """float32 → bfloat16 bits (round to nearest even), as uint16."""
    bits = array.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


# The tiny llama GGUF shipped in tests/data.
tiny = Path(testdata) / "gguf" / "tiny-llama-f32-f16-q8.gguf"
same_outputs("tiny llama GGUF (tests/data)", tiny, tiny, 1)

# A llama-shaped GGUF of about 256 MiB.
big = scratch / "llama-256mib.gguf"
write_llama_gguf(big)
result = same_outputs(f"llama-shaped GGUF of {big.stat().st_size >> 20} MiB (F16, Q8_0, Q4_0)", big, big, 100)
if result:
    # Both devices import host memory (the CPU; lavapipe through VK_EXT_external_memory_host): the
    # GGUF's 32-aligned tensors are the file's own pages.
    check("the adapter loads the GGUF zero-copy (over 95% of its bytes imported)",
          result[0]["zero_copy_bytes"] > big.stat().st_size * 0.95, f"zero_copy_bytes {result[0]['zero_copy_bytes']}")
if result and backend == "cpu":
    # ggml's CPU device imports host memory: the adapter's weights are the file's pages, so the load
    # adds no anonymous memory of the model's size (ggml's own path allocates all of it).
    ours, theirs = result
    check("the adapter's CPU load is zero-copy (anonymous growth under 32 MiB; ggml's own over the model)",
          ours["anon_growth"] < 32 << 20 and theirs["anon_growth"] > big.stat().st_size * 0.9,
          f"lwload {ours['anon_growth']} bytes, ggml {theirs['anon_growth']} bytes")
big.unlink()

# Safetensors (F16 and BF16) through the adapter against the same arrays in a GGUF loaded by ggml.
rng = np.random.default_rng(11)
arrays = {}
for i, (rows, cols) in enumerate([(256, 512), (64, 1024), (300, 96), (7, 64)]):
    a = rng.standard_normal((rows, cols), dtype=np.float32) * 0.1
    arrays[f"layer{i}.f16.weight"] = ("F16", a.astype(np.float16))
    arrays[f"layer{i}.bf16.weight"] = ("BF16", bf16(a))
arrays["norm.weight"] = ("F32", np.ones(96, dtype=np.float32))
st = scratch / "model.safetensors"
write_safetensors(st, arrays)
gg = scratch / "model.gguf"
w = gguf.GGUFWriter(str(gg), "llama")
for name, (dtype, array) in arrays.items():
    w.add_tensor(name, array, raw_dtype=gguf.GGMLQuantizationType.BF16 if dtype == "BF16" else None)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
same_outputs("safetensors F16/BF16 through the adapter = the same arrays as GGUF through ggml", st, gg, 4)

# A tensor ggml has no type for is refused before anything loads, naming it.
bad = scratch / "u8.safetensors"
write_safetensors(bad, {"good.weight": ("F16", arrays["layer0.f16.weight"][1]),
                        "mask.u8": ("U8", np.zeros((4, 4), dtype=np.uint8))})
run = subprocess.run([exe, str(bad), "--backend", backend], capture_output=True, text=True, env=env, timeout=300)
check("a U8 tensor is refused, naming it", run.returncode != 0 and "mask.u8" in run.stderr and "ggml type" in run.stderr,
      f"exit {run.returncode}, stderr: {run.stderr.strip()[-300:]}")

# A tensor stored sparse (MediaPipe's face detector, shipped TFLite) is its stored values, not ggml's
# dense tensor: refused before anything loads, saying how to get the dense one.
sparse = Path(testdata) / "tflite" / "face_detection_full_range_sparse.tflite"
run = subprocess.run([exe, str(sparse), "--backend", backend], capture_output=True, text=True, env=env, timeout=300)
check("a TFLite tensor stored sparse is refused, naming it and densify",
      run.returncode != 0 and "Conv2D_dequantize" in run.stderr and "densify" in run.stderr,
      f"exit {run.returncode}, stderr: {run.stderr.strip()[-300:]}")

# lwload profile --compare ggml: ggml's own loading as a row beside lwload's, in one SVG.
svg = scratch / "compare.svg"
device = "vulkan:0" if backend == "vulkan" else "host"
run = subprocess.run([lwload, "profile", str(gg), "--device", device, "--compare", "naive,ggml", "--svg", str(svg)],
                     capture_output=True, text=True, env=env, timeout=300)
rows = [line.split()[0] for line in run.stdout.splitlines() if line.split()[:1] in (["naive"], ["ggml"], ["lwload"])]
drawn = svg.read_text() if svg.exists() else ""
check("profile --compare ggml: a ggml row beside naive and lwload, in one SVG",
      run.returncode == 0 and rows[:3] == ["naive", "ggml", "lwload"] and ">ggml<" in drawn.replace("</tspan>", "<"),
      f"exit {run.returncode}, rows {rows}, stderr {run.stderr.strip()[-300:]}")

for f in (st, gg, bad, svg):
    f.unlink()
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
