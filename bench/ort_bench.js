// ort_bench.js - times every DIR/<name>_b<batch>.onnx in ONNX Runtime's CPU
// provider (the onnxruntime-node package bench/compare.sh installs), with
// 2 intra-op threads and all graph optimizations. Prints
// `name batch median_us`: the median of 7 repetitions, each the mean over
// enough runs to take about 0.05 s, after a warm-up (bench/models.py's rule).
//
//   NODE_PATH=<dir with node_modules> node ort_bench.js DIR
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function randn(n) {
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++)
    v[i] = Math.sqrt(-2 * Math.log(1 - Math.random())) *
           Math.cos(2 * Math.PI * Math.random());
  return v;
}

async function timeModel(file) {
  const session = await ort.InferenceSession.create(file, {
    intraOpNumThreads: 2,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionProviders: ['cpu'],
  });
  const meta = session.inputMetadata ? session.inputMetadata[0] : null;
  const dims = meta && meta.shape ? meta.shape : null;
  const shape = dims || JSON.parse(fs.readFileSync(file + '.shape', 'utf8'));
  const n = shape.reduce((a, b) => a * b, 1);
  const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', randn(n), shape)};
  for (let i = 0; i < 5; i++) await session.run(feeds);
  let runs = 0;
  let start = process.hrtime.bigint();
  while (Number(process.hrtime.bigint() - start) < 5e7) {
    await session.run(feeds);
    runs++;
  }
  const reps = [];
  for (let r = 0; r < 7; r++) {
    start = process.hrtime.bigint();
    for (let i = 0; i < runs; i++) await session.run(feeds);
    reps.push(Number(process.hrtime.bigint() - start) / 1e3 / runs);
  }
  reps.sort((a, b) => a - b);
  await session.release();
  return reps[3];
}

async function main() {
  const dir = process.argv[2];
  const files = fs.readdirSync(dir).filter(f => f.endsWith('.onnx')).sort();
  for (const f of files) {
    const m = /^(.*)_b(\d+)\.onnx$/.exec(f);
    const us = await timeModel(path.join(dir, f));
    console.log(`${m[1]} ${m[2]} ${us.toFixed(2)}`);
  }
}

main().catch(e => { console.error(e); process.exit(1); });
