#!/usr/bin/env node
// ONNX Runtime as a peer in cvattn's comparisons: runs one .onnx model on the CPU, one thread.
//
//   node bench/ort/run_ort.js --model M.onnx --in NAME=X.npy [--in NAME=Y.npy ...]
//                             [--repeat R] [--out OUT.npy]
//
// Session: intraOpNumThreads=1, interOpNumThreads=1, graphOptimizationLevel 'all', sequential
// execution, CPU memory arena and memory pattern on, CPU execution provider. Inputs are float32
// C-order .npy files, fed under NAME (the graph's input names). One warm-up run, then R timed
// runs of session.run(); prints one JSON line {"median_ms", "min_ms", "runs", "cpu_ms",
// "session_median_ms", "session_min_ms"}: wall time of session.run() seen from JS, process
// CPU time per run, and ORT's own time per run from its profiler. Timed runs write into
// preallocated output tensors. With --out the first output of the warm-up run is written as a
// float32 .npy, for the caller to check against PyTorch.
// Install once: npm install --prefix bench/ort   (node_modules stays out of git).
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

function fail(msg) {
  process.stderr.write('run_ort.js: error: ' + msg + '\n');
  process.exit(2);
}

function loadOrt() {
  try {
    return require('onnxruntime-node');
  } catch (e) {
    fail('onnxruntime-node is not installed (npm install --prefix ' +
         path.relative(process.cwd(), __dirname) + '): ' + e.message);
  }
  return null;
}

// .npy: magic "\x93NUMPY", version byte pair, header length (2 bytes for v1, 4 for v2/v3),
// a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (..), }, the data.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.readUInt8(0) !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY') {
    fail(file + ': not a .npy file');
  }
  const major = buf.readUInt8(6);
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) fail(file + ': unreadable .npy header ' + header.trim());
  if (descr[1] !== '<f4' && descr[1] !== '=f4') {
    fail(file + ': dtype ' + descr[1] + ', only float32 (<f4) is supported');
  }
  if (fortran[1] === 'True') fail(file + ': Fortran order, only C order is supported');
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const offset = start + headerLen;
  if (buf.length - offset !== 4 * count) {
    fail(file + ': ' + (buf.length - offset) + ' data bytes, shape ' + JSON.stringify(dims) +
         ' needs ' + 4 * count);
  }
  // Copy into an aligned buffer: the data need not start at a multiple of 4 in the file buffer.
  const data = new Float32Array(count);
  Buffer.from(data.buffer).set(buf.subarray(offset));
  return { data, dims };
}

function writeNpy(file, data, dims) {
  const shape = dims.length === 1 ? '(' + dims[0] + ',)' : '(' + dims.join(', ') + ')';
  let header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ', }';
  const pad = 64 - ((10 + header.length + 1) % 64);  // whole header a multiple of 64 bytes
  header += ' '.repeat(pad % 64) + '\n';
  const head = Buffer.alloc(10);
  head.writeUInt8(0x93, 0);
  head.write('NUMPY', 1, 'latin1');
  head.writeUInt8(1, 6);
  head.writeUInt8(0, 7);
  head.writeUInt16LE(header.length, 8);
  const f32 = Float32Array.from(data);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'),
    Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength)]));
}

function parseArgs(argv) {
  const args = { model: null, inputs: [], repeat: 10, out: null };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) fail(a + ' needs a value');
      return argv[++i];
    };
    if (a === '--model') args.model = next();
    else if (a === '--in') {
      const v = next();
      const eq = v.indexOf('=');
      if (eq <= 0) fail('--in wants NAME=FILE.npy, got ' + v);
      args.inputs.push([v.slice(0, eq), v.slice(eq + 1)]);
    } else if (a === '--repeat') {
      args.repeat = Number(next());
      if (!Number.isInteger(args.repeat) || args.repeat < 1) fail('--repeat wants a count >= 1');
    } else if (a === '--out') args.out = next();
    else fail('unknown argument ' + a);
  }
  if (!args.model) fail('--model is required');
  if (!args.inputs.length) fail('at least one --in NAME=FILE.npy is required');
  return args;
}

function cpuMs(usage) {
  return (usage.user + usage.system) / 1000;
}

// The model_run durations of the timed runs (the first, the warm-up, left out), in ms; the
// profile file is removed.
function sessionTimes(session, dir) {
  session.endProfiling();
  const runs = [];
  for (const name of fs.readdirSync(dir)) {
    const file = path.join(dir, name);
    try {
      for (const e of JSON.parse(fs.readFileSync(file, 'utf8'))) {
        if (e.cat === 'Session' && e.name === 'model_run') runs.push([e.ts, e.dur / 1000]);
      }
    } catch (e) {
      // an unreadable profile: no session times
    }
    fs.unlinkSync(file);
  }
  fs.rmdirSync(dir);
  runs.sort((a, b) => a[0] - b[0]);
  return runs.slice(1).map((r) => r[1]);
}

function median(v) {
  const s = v.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : 0.5 * (s[m - 1] + s[m]);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'run_ort_'));
  const session = await ort.InferenceSession.create(args.model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    // Both on: onnxruntime-node 1.30 left the memory pattern off here, and then every run
    // page-faulted its intermediate buffers in afresh (measured: sys time 2 ms of a 3 ms run).
    enableCpuMemArena: true,
    enableMemPattern: true,
    // ORT's own time per run (its profiler's model_run events), beside the wall time seen from
    // JS, which adds onnxruntime-node's conversion of the feeds and fetches.
    enableProfiling: true,
    profileFilePrefix: path.join(profileDir, 'ort'),
  });
  const feeds = {};
  for (const [name, file] of args.inputs) {
    if (!session.inputNames.includes(name)) {
      fail('the model has no input ' + name + ' (inputs: ' + session.inputNames.join(', ') + ')');
    }
    const { data, dims } = readNpy(file);
    feeds[name] = new ort.Tensor('float32', data, dims);
  }
  for (const name of session.inputNames) {
    if (!(name in feeds)) fail('no --in for the model input ' + name);
  }
  const first = await session.run(feeds);  // warm-up
  if (args.out) {
    const t = first[session.outputNames[0]];
    writeNpy(args.out, t.data, t.dims);
  }
  // Timed runs write into output tensors allocated once: without them onnxruntime-node copies
  // every output into a fresh JS buffer, which is the binding's cost, not ONNX Runtime's.
  const fetches = {};
  for (const name of session.outputNames) {
    const t = first[name];
    fetches[name] = new ort.Tensor(t.type, new Float32Array(t.data.length), t.dims);
  }
  const times = [];
  const cpu0 = process.cpuUsage();
  for (let r = 0; r < args.repeat; ++r) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds, fetches);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const cpu = cpuMs(process.cpuUsage(cpu0)) / times.length;
  const session_ms = sessionTimes(session, profileDir);
  process.stdout.write(JSON.stringify({
    median_ms: median(times),
    min_ms: Math.min(...times),
    runs: times.length,
    cpu_ms: cpu,
    session_median_ms: session_ms.length ? median(session_ms) : null,
    session_min_ms: session_ms.length ? Math.min(...session_ms) : null,
  }) + '\n');
}

main().catch((e) => fail(e && e.message ? e.message : String(e)));
