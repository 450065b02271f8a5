#!/usr/bin/env node
// Independent TensorFlow.js reader for the real-file tests: @tensorflow/tfjs-core itself (with the
// pure-JS CPU backend, installed by run.py into its cache and found through NODE_PATH) decodes the
// weights, and every tensor is written to OUTDIR/index.json + N.bin like the other references.
//
//   NODE_PATH=.../node_modules node tests/real/reference_tfjs.js MODEL OUTDIR
//
// MODEL is a manifest (model.json, or a bare *weights_manifest.json: an array of groups) or a folder
// holding model.json / weights_manifest.json. Each group's shards (paths relative to the manifest)
// are concatenated and handed to tf.io.decodeWeights, exactly as tfjs' loaders do.
//
// What is compared (run.py reads this dump):
//  - names, shapes, manifest order: the manifest as JSON.parse reads it.
//  - dtype: what is stored, as lwload reports it: a quantized weight is its quantization dtype
//    (uint8 → U8, uint16 → U16, float16 → F16), else float32 → F32, int32 → I32, bool → BOOL,
//    complex64 → C64, string → STRING (no bytes).
//  - bytes: for an unquantized weight, the bytes of the values tfjs-core decoded (dataSync), which
//    must also equal the weight's slice of the group's stream. For a quantized weight lwload keeps
//    the stored (quantized) bytes, so the reference bytes are that slice, walked from the manifest's
//    sizes; the slice is proven to be the one tfjs decoded: every value tfjs produced equals the
//    slice's value dequantized as tfjs does (float32(q * scale + min); for float16, the half decoded
//    to float32; int32 originals: Math.round(q * scale + min)). A mismatch aborts the reference.
//  - quantization: each quantized entry carries {"quantization": {dtype, scale, min}} with scale and
//    min the manifest's numbers as JSON.parse reads them (correctly rounded doubles; JSON.stringify
//    writes them back shortest-round-trip, so Python reads the same bits). run.py compares them
//    bit for bit with `lwload inspect --json`'s quantization scale/min.
'use strict';
const fs = require('fs');
const path = require('path');
const tf = require('@tensorflow/tfjs-core');
require('@tensorflow/tfjs-backend-cpu');

const STORED = {float32: 'F32', int32: 'I32', bool: 'BOOL', complex64: 'C64', string: 'STRING'};
const QUANTIZED = {uint8: ['U8', 1], uint16: ['U16', 2], float16: ['F16', 2]};
const SIZE = {float32: 4, int32: 4, bool: 1, complex64: 8};

function manifestPath(model) {
  if (!fs.statSync(model).isDirectory()) return model;
  for (const name of ['model.json', 'weights_manifest.json'])
    if (fs.existsSync(path.join(model, name))) return path.join(model, name);
  const found = fs.readdirSync(model).filter((n) => n.endsWith('.json'));
  if (found.length !== 1) throw new Error(`${model}: not one manifest but ${found.length}`);
  return path.join(model, found[0]);
}

function half(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}

function same(a, b) {  // float32 values equal, NaN equal to NaN
  return a === b || (Number.isNaN(a) && Number.isNaN(b));
}

async function main() {
  const [model, outDir] = process.argv.slice(2);
  await tf.setBackend('cpu');
  const manifestFile = manifestPath(model);
  const parsed = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
  const groups = Array.isArray(parsed) ? parsed : parsed.weightsManifest;
  const dir = path.dirname(manifestFile);
  const index = [];
  fs.mkdirSync(outDir, {recursive: true});
  for (const group of groups) {
    const stream = Buffer.concat(group.paths.map((p) => fs.readFileSync(path.join(dir, p))));
    const buffer = stream.buffer.slice(stream.byteOffset, stream.byteOffset + stream.byteLength);
    const decoded = tf.io.decodeWeights(buffer, group.weights);
    let cursor = 0;
    for (const spec of group.weights) {
      const t = decoded[spec.name];
      const count = spec.shape.reduce((a, b) => a * b, 1);
      const q = spec.quantization;
      const entry = {name: spec.name, dtype: null, shape: spec.shape, bytes: null, file: null};
      let data = null;
      if (spec.dtype === 'string') {
        entry.dtype = 'STRING';
        for (let i = 0; i < count; i++) cursor += 4 + stream.readUInt32LE(cursor);
      } else if (q) {
        const [dtype, size] = QUANTIZED[q.dtype];
        entry.dtype = dtype;
        data = stream.subarray(cursor, cursor + count * size);
        cursor += count * size;
        const values = t.dataSync();
        for (let i = 0; i < count; i++) {
          const stored = size === 1 ? data[i] : data.readUInt16LE(2 * i);
          let expect;
          if (q.dtype === 'float16') expect = Math.fround(half(stored));
          else if (spec.dtype === 'int32') expect = Math.round(stored * q.scale + q.min);
          else expect = Math.fround(stored * q.scale + q.min);
          if (!same(values[i], expect))
            throw new Error(`${spec.name}[${i}]: tfjs decoded ${values[i]}, the stored ${stored} gives ${expect}`);
        }
        entry.quantization = {dtype: q.dtype};
        if ('scale' in q) entry.quantization.scale = q.scale;
        if ('min' in q) entry.quantization.min = q.min;
      } else {
        entry.dtype = STORED[spec.dtype];
        const values = t.dataSync();
        data = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
        const slice = stream.subarray(cursor, cursor + count * SIZE[spec.dtype]);
        cursor += count * SIZE[spec.dtype];
        if (spec.dtype === 'bool') data = Buffer.from(Array.from(values, (v) => (v ? 1 : 0)));
        if (!data.equals(slice)) throw new Error(`${spec.name}: tfjs' values are not the stream's bytes`);
      }
      if (data !== null) {
        entry.file = `${index.length}.bin`;
        entry.bytes = data.length;
        fs.writeFileSync(path.join(outDir, entry.file), data);
      }
      index.push(entry);
    }
    for (const name in decoded) decoded[name].dispose();
  }
  fs.writeFileSync(path.join(outDir, 'index.json'), JSON.stringify(index));
}

main().catch((e) => {
  console.error(`reference_tfjs: ${e.stack || e}`);
  process.exit(1);
});
