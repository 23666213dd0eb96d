// Tensor-parallel slices: 8 ranks, each reading its 1/8 of every tensor of a 1.01 GiB
// Llama-shaped F16 model stored in a TensorFS store (Megatron-style: q/k/v/gate/up, embed and
// lm_head split on dim 0, o/down on dim 1, norms on dim 0), one rank after another, with
// `openTensors` + `view.readSlice` — against Python safetensors `safe_open` + `get_slice(name)[...]`
// of the same shards of the same file in the same run (numpy, in-process times from a long-lived
// worker). Prints time, the bytes each side returns and the bytes ours reads (gaps of at most
// 64 KiB between a slice's runs are read through). Warm, then cold (posix_fadvise(DONTNEED) on
// every object file and the model file before each sample). Medians of TENSORFS_BENCH_RUNS (5).
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { LocalStore } from '@tensorfs/cas';
import { openTensors, sliceReadBytes } from '@tensorfs/tensors';
import { compare } from './cpu.mjs';
import { listFiles, median } from './lib.mjs';
import { writeLlama } from './llama.mjs';
import { startWorker } from './safetensors-py.mjs';

const runs = Number(process.env.TENSORFS_BENCH_RUNS ?? 5);
const RANKS = 8;

const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-bench-slice-'));
const py = startWorker();
const kept = { value: null };
try {
  const file = path.join(dir, 'model.safetensors');
  const infos = await writeLlama(file);
  const fd = fs.openSync(file, 'r+');
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  const store = await LocalStore.open(path.join(dir, 'store'));
  await store.importPath(file, { name: 'bench/llama' });
  const evictable = [...(await listFiles(path.join(dir, 'store', 'objects'))), file];
  // Each rank's shard of each tensor: [name, axis, start, end).
  const shardsOf = (rank) =>
    infos.map((t) => {
      const axis = t.tp === 'row' ? 1 : 0;
      const n = t.shape[axis] / RANKS;
      return [t.name, axis, n * rank, n * (rank + 1)];
    });
  const ranks = Array.from({ length: RANKS }, (_, r) => shardsOf(r));
  const set0 = await openTensors(store, 'bench/llama');
  const rangesOf = ([name, axis, start, end]) => {
    const shape = set0.get(name).shape;
    return axis === 0
      ? [[start, end]]
      : [
          [0, shape[0]],
          [start, end],
        ];
  };
  let sliceBytes = 0;
  let readBytes = 0;
  for (const shards of ranks) {
    for (const s of shards) {
      const v = set0.get(s[0]);
      const r = rangesOf(s);
      sliceBytes += v.byteLength / RANKS;
      readBytes += sliceReadBytes(v, r);
    }
  }
  console.log(
    `model: ${infos.length} tensors, ${RANKS} ranks; each side returns ${(sliceBytes / 2 ** 20).toFixed(0)} MiB in all; ours reads ${(readBytes / 2 ** 20).toFixed(0)} MiB (${(readBytes / sliceBytes).toFixed(2)}x the slices); safetensors ${py.version}`,
  );
  const ours = async () => {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const out = [];
    for (const shards of ranks) {
      const set = await openTensors(store, 'bench/llama');
      for (const s of shards) out.push(await set.get(s[0]).readSlice(rangesOf(s)));
    }
    kept.value = out;
    const wall = performance.now() - t0;
    const c = process.cpuUsage(c0);
    return { wall, cpu: (c.user + c.system) / 1000 };
  };
  // The pooled variant: each rank's destination buffers kept and passed as `into` on every load
  // (touched once by the warm-up round), as a serving process reloading its weights would.
  const pool = new Map();
  const pooled = async () => {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const out = [];
    for (const [rank, shards] of ranks.entries()) {
      const set = await openTensors(store, 'bench/llama');
      for (const s of shards) {
        const key = `${rank}:${s[0]}`;
        let into = pool.get(key);
        if (into === undefined) pool.set(key, (into = new Uint8Array(set.get(s[0]).byteLength / RANKS)));
        out.push(await set.get(s[0]).readSlice(rangesOf(s), { into }));
      }
    }
    kept.value = out;
    const wall = performance.now() - t0;
    const c = process.cpuUsage(c0);
    return { wall, cpu: (c.user + c.system) / 1000 };
  };
  const python = async () => {
    kept.value = null;
    const sum = { wall: 0, cpu: 0 };
    for (const shards of ranks) {
      const r = await py.call({ op: 'get_slice', file, shards });
      sum.wall += r.ms;
      sum.cpu += r.cpu;
    }
    return sum;
  };
  for (const cold of [false, true]) {
    const cases = { ours, get_slice: python, pooled };
    const names = Object.keys(cases);
    const samples = { ours: [], get_slice: [], pooled: [] };
    for (let r = 0; r <= runs; r++) {
      for (const n of r % 2 ? [...names].reverse() : names) {
        kept.value = null;
        globalThis.gc?.();
        if (cold) await py.call({ op: 'evict', files: evictable });
        const ms = await cases[n]();
        if (r > 0 || cold) samples[n].push(ms);
      }
    }
    const med = (xs) => ({ wall: median(xs.map((x) => x.wall)), cpu: median(xs.map((x) => x.cpu)) });
    compare(
      `8 ranks x 1/8 of every tensor, ${cold ? 'cold' : 'warm'}`,
      med(samples.ours),
      'get_slice',
      med(samples.get_slice),
      `ours reads ${(readBytes / 2 ** 20).toFixed(0)} MiB for ${(sliceBytes / 2 ** 20).toFixed(0)} MiB of slices`,
    );
    compare(
      `  same, into pooled buffers, ${cold ? 'cold' : 'warm'}`,
      med(samples.pooled),
      'get_slice',
      med(samples.get_slice),
    );
  }
  await store.close();
} finally {
  kept.value = null;
  await py.close();
  await fsp.rm(dir, { recursive: true, force: true });
}
