// The floor under bench/safetensors.bench.mjs: what building only the objects
// parseSafetensorsHeader returns costs, against JSON.parse of the same header. "build" decodes the
// header (strict UTF-8, as the parser does) and creates exactly the result — names sliced from the
// text, bigint shapes (small dimensions from a cache), [bigint, bigint] offsets, the two number
// fields, the byName Map and the data-order array — from numbers known in advance: no tokenizing,
// no validation. What is left of JSON.parse's time after that is the budget a JavaScript
// tokenizer with every rule checked has for the parse to stay within a given ratio.
// Interleaved rounds; process-CPU medians and minima.
import { loadavg } from 'node:os';
import { parseSafetensorsHeader, writeSafetensorsHeader } from '@tensorfs/format';

function makeHeader(count) {
  const tensors = [];
  for (let i = 0; i < count; i++) {
    const name = `model.layers.${Math.floor(i / 64)}.mlp.experts.${i % 64}.${['gate_proj', 'up_proj', 'down_proj', 'norm'][i % 4]}.weight`;
    tensors.push(i % 4 === 3 ? { name, dtype: 'F32', shape: [2048] } : { name, dtype: 'BF16', shape: [1408, 2048] });
  }
  return writeSafetensorsHeader(tensors, { metadata: { format: 'pt' } });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

for (const [count, rounds, runs] of [
  [2_000, 41, 10],
  [20_000, 21, 2],
]) {
  const { bytes, tensors: infos } = makeHeader(count);
  const fileSize = infos.at(-1).byteOffset + infos.at(-1).byteLength;
  const header = bytes.subarray(8);
  const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const text = new TextDecoder().decode(header);
  // The facts a parse would find, gathered in advance.
  const facts = infos.map((t) => {
    const quoted = JSON.stringify(t.name);
    const at = text.indexOf(`${quoted}:`) + 1;
    return {
      at,
      end: at + quoted.length - 2,
      dtype: t.dtype,
      dims: t.shape.map(Number),
      begin: Number(t.dataOffsets[0]),
      length: t.byteLength,
    };
  });
  const cache = [];
  const big = (v) => (v < 65536 ? (cache[v] ??= BigInt(v)) : BigInt(v));
  const build = () => {
    const decoded = strictUtf8.decode(header);
    const byName = new Map();
    const tensors = new Array(count);
    let running = 0n;
    for (let i = 0; i < count; i++) {
      const f = facts[i];
      const shape = new Array(f.dims.length);
      for (let k = 0; k < f.dims.length; k++) shape[k] = big(f.dims[k]);
      const end = BigInt(f.begin + f.length);
      const info = {
        name: decoded.slice(f.at, f.end),
        dtype: f.dtype,
        shape,
        dataOffsets: [running, end],
        byteOffset: bytes.length + f.begin,
        byteLength: f.length,
      };
      running = end;
      byName.set(info.name, info);
      tensors[i] = info;
    }
    return { byName, tensors };
  };
  if (build().tensors.some((t, i) => t.name !== infos[i].name)) throw new Error('names differ');
  const cases = {
    json: () => JSON.parse(new TextDecoder().decode(header)),
    build,
    parse: () => parseSafetensorsHeader(bytes, { fileSize, strict: true }),
  };
  const sample = (fn) => {
    const c0 = process.cpuUsage();
    for (let i = 0; i < runs; i++) fn();
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / 1000 / runs;
  };
  for (const fn of Object.values(cases)) for (let i = 0; i < 3; i++) fn();
  const s = { json: [], build: [], parse: [] };
  for (let r = 0; r < rounds; r++)
    for (const k of r % 2 ? ['parse', 'build', 'json'] : ['json', 'build', 'parse']) s[k].push(sample(cases[k]));
  const fmt = (k) =>
    `${median(s[k]).toFixed(2)} / ${Math.min(...s[k]).toFixed(2)} ms (${(median(s[k]) / median(s.json)).toFixed(2)} / ${(Math.min(...s[k]) / Math.min(...s.json)).toFixed(2)}x)`;
  console.log(
    `${count} tensors, CPU median / min: JSON.parse ${median(s.json).toFixed(2)} / ${Math.min(...s.json).toFixed(2)} ms | build only ${fmt('build')} | strict parse ${fmt('parse')} | load ${loadavg()[0].toFixed(1)}`,
  );
}
