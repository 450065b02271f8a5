#!/usr/bin/python3
# benchmark helper: writes a llama GGUF that llama.cpp and lwload both load.
# Issue 9 helper: writes a llama-architecture GGUF v3 (default alignment 32, no general.alignment key)
# with random F16 weights and the tokenizer.* vocabulary copied byte for byte from a llama.cpp vocab GGUF,
# so that llama.cpp (e.g. through node-llama-cpp) and lwload can load the same file.
#
#   /usr/bin/python3 scripts/bench/llama-write-gguf.py OUT.gguf [--vocab VOCAB.gguf] [--layers N] [--dump]
#
# Default shape (TinyLlama-like, GQA): n_embd 2048, n_ff 5632, 32 heads, 4 KV heads, 12 blocks,
# n_vocab from the vocab file (32000 for vocab-llama-spm.gguf) -> about 1.23 GiB.
# --dump only prints the KV section of OUT.gguf (or of --vocab when OUT is '-').
import argparse, os, struct, sys
from pathlib import Path
import numpy as np

# GGUF metadata value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR = {U8: '<B', I8: '<b', U16: '<H', I16: '<h', U32: '<I', I32: '<i', F32: '<f', BOOL: '<?',
          U64: '<Q', I64: '<q', F64: '<d'}
GGML_F32, GGML_F16 = 0, 1


class Reader:
    """Just enough GGUF to read the header and the KV section (values kept as raw bytes as well)."""

    def __init__(self, path):
        self.b = open(path, 'rb').read()
        self.o = 0
        magic, self.version = self.take('<4sI')
        if magic != b'GGUF' or self.version not in (2, 3):
            raise SystemExit(f'{path}: not GGUF v2/v3 (magic {magic!r}, version {self.version})')
        self.n_tensors, self.n_kv = self.take('<QQ')
        self.kv = []  # (key, type, decoded value, raw value bytes)
        for _ in range(self.n_kv):
            key = self.string()
            (t,) = self.take('<I')
            start = self.o
            v = self.value(t)
            self.kv.append((key, t, v, self.b[start:self.o]))

    def take(self, fmt):
        r = struct.unpack_from(fmt, self.b, self.o)
        self.o += struct.calcsize(fmt)
        return r

    def string(self):
        (n,) = self.take('<Q')
        s = self.b[self.o:self.o + n].decode('utf-8', errors='replace')
        self.o += n
        return s

    def value(self, t):
        if t in SCALAR:
            return self.take(SCALAR[t])[0]
        if t == STR:
            return self.string()
        if t == ARR:
            et, n = self.take('<IQ')
            if et in SCALAR:  # fast path for big numeric arrays
                a = np.frombuffer(self.b, dtype=np.dtype(SCALAR[et]), count=n, offset=self.o)
                self.o += a.nbytes
                return a
            return [self.value(et) for _ in range(n)]
        raise SystemExit(f'unknown GGUF value type {t} at offset {self.o}')


def s(x):
    x = x.encode()
    return struct.pack('<Q', len(x)) + x


def kv(key, t, v):
    if t == STR:
        payload = s(v)
    else:
        payload = struct.pack(SCALAR[t], v)
    return s(key) + struct.pack('<I', t) + payload


def show(r):
    print(f'GGUF v{r.version}: {r.n_tensors} tensors, {r.n_kv} KVs')
    for key, t, v, raw in r.kv:
        if isinstance(v, (list, np.ndarray)):
            head = list(v[:5])
            print(f'  {key} (type {t}) array[{len(v)}] {head} ...')
        else:
            print(f'  {key} (type {t}) = {v!r}')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('out')
    ap.add_argument('--vocab', default=str(Path(__file__).resolve().parent.parent / 'tests' / 'data' / 'gguf' / 'vocab-llama-spm.gguf'))
    ap.add_argument('--layers', type=int, default=12)
    ap.add_argument('--embd', type=int, default=2048)
    ap.add_argument('--ff', type=int, default=5632)
    ap.add_argument('--heads', type=int, default=32)
    ap.add_argument('--heads-kv', type=int, default=4)
    ap.add_argument('--ctx', type=int, default=2048)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--dump', action='store_true')
    a = ap.parse_args()
    if a.dump:
        show(Reader(a.vocab if a.out == '-' else a.out))
        return

    voc = Reader(a.vocab)
    tok = [(k, t, raw) for k, t, v, raw in voc.kv if k.startswith('tokenizer.')]
    tokens = next(v for k, t, v, raw in voc.kv if k == 'tokenizer.ggml.tokens')
    n_vocab = len(tokens)
    E, F, L, H, HKV = a.embd, a.ff, a.layers, a.heads, a.heads_kv
    head_dim = E // H
    align = 32

    # tensors: name, ggml type, dims innermost first (ne0 = row length)
    tensors = [('token_embd.weight', GGML_F16, (E, n_vocab))]
    for i in range(L):
        p = f'blk.{i}.'
        tensors += [
            (p + 'attn_norm.weight', GGML_F32, (E,)),
            (p + 'attn_q.weight', GGML_F16, (E, E)),
            (p + 'attn_k.weight', GGML_F16, (E, head_dim * HKV)),
            (p + 'attn_v.weight', GGML_F16, (E, head_dim * HKV)),
            (p + 'attn_output.weight', GGML_F16, (E, E)),
            (p + 'ffn_norm.weight', GGML_F32, (E,)),
            (p + 'ffn_gate.weight', GGML_F16, (E, F)),
            (p + 'ffn_up.weight', GGML_F16, (E, F)),
            (p + 'ffn_down.weight', GGML_F16, (F, E)),
        ]
    tensors += [('output_norm.weight', GGML_F32, (E,)),
                ('output.weight', GGML_F16, (E, n_vocab))]

    meta = [
        kv('general.architecture', STR, 'llama'),
        kv('general.name', STR, f'lwload-bench-llama-{L}x{E}'),
        kv('general.file_type', U32, 1),  # LLAMA_FTYPE_MOSTLY_F16
        kv('llama.context_length', U32, a.ctx),
        kv('llama.embedding_length', U32, E),
        kv('llama.block_count', U32, L),
        kv('llama.feed_forward_length', U32, F),
        kv('llama.attention.head_count', U32, H),
        kv('llama.attention.head_count_kv', U32, HKV),
        kv('llama.rope.dimension_count', U32, head_dim),
        kv('llama.rope.freq_base', F32, 10000.0),
        kv('llama.attention.layer_norm_rms_epsilon', F32, 1e-5),
        kv('llama.vocab_size', U32, n_vocab),
    ]
    meta += [s(k) + struct.pack('<I', t) + raw for k, t, raw in tok]

    infos, offs, off = [], [], 0
    for name, t, dims in tensors:
        off = (off + align - 1) // align * align
        offs.append(off)
        infos.append(s(name) + struct.pack('<I', len(dims)) + struct.pack(f'<{len(dims)}Q', *dims)
                     + struct.pack('<IQ', t, off))
        off += int(np.prod(dims)) * (4 if t == GGML_F32 else 2)
    data_size = off

    rng = np.random.default_rng(a.seed)
    tmp = a.out + '.part'
    with open(tmp, 'wb') as f:
        f.write(struct.pack('<4sIQQ', b'GGUF', 3, len(tensors), len(meta)))
        for m in meta:
            f.write(m)
        for i in infos:
            f.write(i)
        pad = (-f.tell()) % align
        f.write(b'\0' * pad)
        base = f.tell()
        for (name, t, dims), o in zip(tensors, offs):
            cur = f.tell() - base
            f.write(b'\0' * (o - cur))
            n = int(np.prod(dims))
            if t == GGML_F32:  # norms: ones
                f.write(np.ones(n, dtype='<f4').tobytes())
            else:  # small random weights so an accidental forward pass stays finite
                w = rng.standard_normal(n, dtype=np.float32)
                w *= 0.02
                f.write(w.astype('<f2').tobytes())
        size = f.tell()
    os.replace(tmp, a.out)
    print(f'wrote {a.out}: {size} bytes ({size / 2**30:.3f} GiB), {len(tensors)} tensors, '
          f'{len(meta)} KVs ({len(tok)} tokenizer.*), n_vocab {n_vocab}, data at {base}, '
          f'data {data_size} bytes, alignment {align}')


if __name__ == '__main__':
    main()
