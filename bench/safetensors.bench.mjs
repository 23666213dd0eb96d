// Safetensors header parsing: our strict, exact parser against JSON.parse of the same header
// bytes (TextDecoder + JSON.parse, which validates nothing), measured in the same run.
// Rounds alternate ours/baseline so background load hits both alike.
import { parseSafetensorsHeader, writeSafetensorsHeader } from '@tensorfs/format';
import { mibps, report, time } from './lib.mjs';

// TENSORFS_BENCH_BEFORE=<an ESM bundle of an older @tensorfs/format> also times that build's
// strict parse in the same rounds (a before/after comparison under the same load).
const before = process.env.TENSORFS_BENCH_BEFORE ? await import(process.env.TENSORFS_BENCH_BEFORE) : undefined;

/** A header shaped like a real MoE checkpoint: long dotted names, BF16/F32, 1-2 dims. */
function makeHeader(count) {
  const tensors = [];
  for (let i = 0; i < count; i++) {
    const layer = Math.floor(i / 64);
    const expert = i % 64;
    const kind = ['gate_proj', 'up_proj', 'down_proj', 'norm'][i % 4];
    tensors.push(
      kind === 'norm'
        ? { name: `model.layers.${layer}.mlp.experts.${expert}.${kind}.weight`, dtype: 'F32', shape: [2048] }
        : { name: `model.layers.${layer}.mlp.experts.${expert}.${kind}.weight`, dtype: 'BF16', shape: [1408, 2048] },
    );
  }
  const { bytes, tensors: infos } = writeSafetensorsHeader(tensors, { metadata: { format: 'pt' } });
  const last = infos[infos.length - 1];
  return { bytes, fileSize: last.byteOffset + last.byteLength };
}

/** One sample: wall and process CPU time (ms) of `runs` calls; CPU time is less hurt by other load. */
function sample(fn, runs) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) fn();
  const wall = (performance.now() - t0) / runs;
  const c = process.cpuUsage(c0);
  return { wall, cpu: (c.user + c.system) / 1000 / runs };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const decoder = new TextDecoder();
for (const [count, rounds, runs] of [
  [2_000, 21, 10],
  [20_000, 15, 2],
  [200_000, 7, 1],
]) {
  const { bytes, fileSize } = makeHeader(count);
  const header = bytes.subarray(8);
  const parse = (strict) => () => parseSafetensorsHeader(bytes, { fileSize, strict });
  const baseline = () => JSON.parse(decoder.decode(header));
  // Sanity: both see the same tensors.
  if (parseSafetensorsHeader(bytes, { fileSize }).tensors.length !== Object.keys(baseline()).length - 1) {
    throw new Error('tensor count mismatch');
  }
  for (const fn of [parse(true), parse(false), baseline]) await time(fn, { runs: 1, warmup: 2 });
  const cases = { strict: parse(true), default: parse(false), json: baseline };
  if (before) cases.before = () => before.parseSafetensorsHeader(bytes, { fileSize, strict: true });
  const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  // Alternate the three so background load and GC state hit them alike.
  for (let r = 0; r < rounds; r++) for (const [k, fn] of Object.entries(cases)) samples[k].push(sample(fn, runs));
  const wall = (k) => median(samples[k].map((x) => x.wall));
  const cpu = (k) => median(samples[k].map((x) => x.cpu));
  const strictMs = wall('strict');
  const defaultMs = wall('default');
  const jsonMs = wall('json');
  const cpuNote = (k) =>
    `cpu ${cpu(k).toFixed(1)} vs ${cpu('json').toFixed(1)} ms (ratio ${(cpu(k) / cpu('json')).toFixed(2)})`;
  const size = `${(header.length / 1e6).toFixed(1)} MB header`;
  report(
    `parse ${count} tensors, strict`,
    strictMs,
    'JSON.parse',
    jsonMs,
    `${size}, ${mibps(header.length, strictMs)} MiB/s, ${((strictMs * 1e6) / count).toFixed(0)} ns/tensor, ${cpuNote('strict')}`,
  );
  report(`parse ${count} tensors, default`, defaultMs, 'JSON.parse', jsonMs, cpuNote('default'));
  if (before)
    report(`  before: parse ${count} tensors, strict`, wall('before'), 'JSON.parse', jsonMs, cpuNote('before'));
  console.log(`  load average ${(await import('node:os')).loadavg()[0].toFixed(1)}`);
}
