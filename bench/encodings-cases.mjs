// The six decode cases of bench/encodings.bench.mjs (and bench/checkpoint-decode.bench.mjs), the
// numpy baseline runner (bench/encodings.decode.py) and the CPU-time measure they share.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mibps, report } from './lib.mjs';

export const N = 2048;
export const K = 4096;
// Times are CPU time of the process (process.cpuUsage / time.process_time), best of RUNS: the
// machine is shared by many processes, and wall time there measures the scheduler, not the decode.
export const RUNS = 5;

let seed = 0x9e3779b9;
function bytes(n) {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    out[i] = seed & 0xff;
  }
  return out;
}
const f32b = (a) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const part = (dtype, shape, b) => ({ dtype, shape, bytes: b });

const NF4 = new Float32Array([
  -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635, -0.18477343022823334,
  -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
  0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
]);

function cublasIndex(r, c, c4) {
  return ((r >> 7) * (c4 >> 2) + (c >> 2)) * 512 + (r & 31) * 16 + ((r & 127) >> 5) * 4 + (c & 3);
}

export const cases = [];
{
  const n = N * K;
  const absmax = new Float32Array(n / 64).map((_, i) => 0.5 + (i % 13) / 7);
  cases.push({
    name: 'bnb_nf4',
    enc: {
      scheme: 'bnb_nf4',
      params: { shape: [N, K], dtype: 'F32', blocksize: 64, nibble_order: 'hi_first', nested: false },
      parts: {
        codes: part('U8', [n / 2, 1], bytes(n / 2)),
        absmax: part('F32', [n / 64], f32b(absmax)),
        code_table: part('F32', [16], f32b(NF4)),
      },
    },
    py: { n, blocksize: 64, parts: { codes: 'uint8', absmax: 'float32', code_table: 'float32' } },
  });
}
{
  const q = bytes(N * K).map((b) => ((b & 0x7f) === 0x7f ? 0x38 : b));
  const s = new Float32Array(N).map((_, i) => 0.001 + i / 1e5);
  cases.push({
    name: 'fp8_row',
    label: 'fp8_e4m3fn row-scaled',
    enc: {
      scheme: 'fp8_e4m3fn',
      params: { shape: [N, K], dtype: 'F32', granularity: 'row' },
      parts: { q: part('F8_E4M3', [N, K], q), scale: part('F32', [N], f32b(s)) },
    },
    py: { rows: N, cols: K, parts: { q: 'uint8', scale: 'float32' } },
  });
}
{
  const sc = K / 16;
  const c4 = Math.ceil(sc / 4) * 4;
  const rp = Math.ceil(N / 128) * 128;
  const rm = bytes(N * sc).map((b) => 0x20 + (b & 0x2f));
  const sw = new Uint8Array(rp * c4);
  for (let r = 0; r < N; r++) for (let c = 0; c < sc; c++) sw[cublasIndex(r, c, c4)] = rm[r * sc + c];
  cases.push({
    name: 'nvfp4_swizzled',
    label: 'nvfp4 hi_first cublas_128x4',
    enc: {
      scheme: 'nvfp4',
      params: { shape: [N, K], dtype: 'F32', block_size: 16, nibble_order: 'hi_first', scale_layout: 'cublas_128x4' },
      parts: {
        q: part('U8', [N, K / 2], bytes((N * K) / 2)),
        block_scale: part('F8_E4M3', [rp, c4], sw),
        global_scale: part('F32', [], f32b(new Float32Array([0.01]))),
      },
    },
    py: {
      rows: N,
      cols: K,
      scale_shape: [rp, c4],
      parts: { q: 'uint8', block_scale: 'uint8', global_scale: 'float32' },
    },
  });
}
{
  const g = 128;
  const groups = K / g;
  const gidx = new Int32Array(K).map((_, k) => Math.floor(k / g));
  for (let i = K - 1; i > 0; i--) {
    const j = (Math.imul(i, 2654435761) >>> 0) % (i + 1);
    [gidx[i], gidx[j]] = [gidx[j], gidx[i]];
  }
  const scales = new Uint16Array(groups * N).map((_, i) => 0x2000 + (i % 2000));
  cases.push({
    name: 'gptq4_act_order',
    label: 'gptq 4-bit act-order (g_idx)',
    enc: {
      scheme: 'gptq',
      params: {
        shape: [N, K],
        dtype: 'F32',
        bits: 4,
        group_size: g,
        zero_format: 'v1_minus_one',
        group_index: 'g_idx',
      },
      parts: {
        qweight: part('I32', [K / 8, N], bytes((K / 8) * N * 4)),
        qzeros: part('I32', [groups, N / 8], bytes(groups * (N / 8) * 4)),
        scales: part('F16', [groups, N], new Uint8Array(scales.buffer)),
        g_idx: part('I32', [K], new Uint8Array(gidx.buffer)),
      },
    },
    py: { rows: N, cols: K, groups, parts: { qweight: 'uint32', qzeros: 'uint32', scales: 'float16', g_idx: 'int32' } },
  });
}
for (const [type, ts] of [
  ['Q4_K', 144],
  ['Q6_K', 210],
]) {
  const blocks = bytes((N * K * ts) / 256);
  // keep the f16 scales finite and modest (random bytes would be NaN/Inf now and then)
  const dOff = type === 'Q4_K' ? [0, 2] : [208];
  for (let b = 0; b < blocks.length; b += ts)
    for (const o of dOff) blocks[b + o + 1] = 0x20 + (blocks[b + o + 1] & 0x0f);
  cases.push({
    name: type,
    label: `ggml ${type}`,
    enc: {
      scheme: 'ggml',
      params: { shape: [N, K], dtype: 'F32', type },
      parts: { blocks: part('U8', [blocks.length], blocks) },
    },
    py: { rows: N, type, parts: { blocks: 'uint8' } },
  });
}

/** Writes each case's parts for the Python side and returns numpy's `{case: {ms, sha256}}` (or `{}`). */
export function numpyBaseline(dir) {
  for (const c of cases) {
    writeFileSync(join(dir, `${c.name}.json`), JSON.stringify(c.py));
    for (const role of Object.keys(c.py.parts))
      writeFileSync(join(dir, `${c.name}.${role}.bin`), c.enc.parts[role].bytes);
  }
  try {
    const script = fileURLToPath(new URL('encodings.decode.py', import.meta.url));
    const out = execFileSync('python3', [script, dir, String(RUNS), ...cases.map((c) => c.name)], {
      env: { ...process.env, OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1', MKL_NUM_THREADS: '1' },
      encoding: 'utf8',
      maxBuffer: 1 << 20,
    });
    return Object.fromEntries(
      out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .map((r) => [r.case, r]),
    );
  } catch (err) {
    console.log(`numpy baseline unavailable (${String(err.message ?? err).split('\n')[0]})`);
    return {};
  }
}

/** Best CPU time (ms, user + system of the whole process) of RUNS runs after one warm-up. */
export async function cpuBest(fn) {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i <= RUNS; i++) {
    const t0 = process.cpuUsage();
    await fn();
    const used = process.cpuUsage(t0);
    if (i > 0) best = Math.min(best, (used.user + used.system) / 1000);
  }
  return best;
}

/** One line: ours against numpy's decode of the same parts (and whether the outputs agree). */
export function reportAgainstNumpy(label, ms, np, outBytes, ours, extra) {
  if (np)
    report(
      label,
      ms,
      'numpy',
      np.ms,
      `${extra} vs ${mibps(outBytes, np.ms)} MiB/s | agree ${ours === np.sha256 ? 'yes' : 'NO'}`,
    );
  else console.log(`${label.padEnd(48)} ours ${ms.toFixed(1)} ms | ${extra}`);
}
