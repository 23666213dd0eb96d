// Tensor-parallel slices: 8 ranks, each reading its 1/8 of every tensor of a 1.01 GiB
// Llama-shaped F16 model stored in a TensorFS store (Megatron-style: q/k/v/gate/up, embed and
// lm_head split on dim 0, o/down on dim 1, norms on dim 0), one rank after another, with
// `openTensors` + `view.readSlice` — against Python safetensors `safe_open` + `get_slice(name)[...]`
// of the same shards of the same file in the same run (numpy, in-process times from a long-lived
// worker). Each side keeps one rank's shards at a time (the worker drops a rank's arrays when the
// next rank's command arrives; ours drops them when the next rank starts), as a rank process
// holds only its own. Prints time, minor page faults (first touches of fresh memory), the bytes
// each side returns and the bytes and reads ours makes: by default gaps of at most 64 KiB between
// a slice's runs are read through (`exact`: `gap: 0`, only the slice's bytes, a read per run).
// Warm, then cold (posix_fadvise(DONTNEED) on every object file and the model file before each
// sample). Medians of TENSORFS_BENCH_RUNS (5; the exact case at most 2).
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { LocalStore } from '@tensorfs/cas';
import { openTensors, sliceReads } from '@tensorfs/tensors';
import { compare } from './cpu.mjs';
import { listFiles, median } from './lib.mjs';
import { writeLlama } from './llama.mjs';
import { startWorker } from './safetensors-py.mjs';

const runs = Number(process.env.TENSORFS_BENCH_RUNS ?? 5);
const RANKS = 8;
// The exact-runs case takes several times as long (a read per run): at most this many rounds of it.
const EXACT_RUNS = Math.min(runs, 2);

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
  const reads = { through: { bytes: 0, reads: 0 }, exact: { bytes: 0, reads: 0 } };
  for (const shards of ranks) {
    for (const s of shards) {
      const v = set0.get(s[0]);
      const r = rangesOf(s);
      sliceBytes += v.byteLength / RANKS;
      for (const [k, gap] of [
        ['through', undefined],
        ['exact', 0],
      ]) {
        const x = sliceReads(v, r, gap === undefined ? {} : { gap });
        reads[k].bytes += x.bytes;
        reads[k].reads += x.reads;
      }
    }
  }
  const mib = (n) => `${(n / 2 ** 20).toFixed(0)} MiB`;
  const readBytes = reads.through.bytes;
  console.log(
    `model: ${infos.length} tensors, ${RANKS} ranks; each side returns ${mib(sliceBytes)} in all; ours reads ${mib(readBytes)} in ${reads.through.reads} reads (${(readBytes / sliceBytes).toFixed(2)}x the slices), with gap 0 ${mib(reads.exact.bytes)} in ${reads.exact.reads} reads (${(reads.exact.bytes / sliceBytes).toFixed(2)}x); safetensors ${py.version}`,
  );
  const faults = () => process.resourceUsage().minorPageFault;
  const ranked = (options) => async () => {
    const f0 = faults();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (const shards of ranks) {
      kept.value = null; // the previous rank's shards are dropped, as the worker drops its arrays
      const set = await openTensors(store, 'bench/llama');
      const out = [];
      for (const s of shards) out.push(await set.get(s[0]).readSlice(rangesOf(s), options));
      kept.value = out;
    }
    const wall = performance.now() - t0;
    const c = process.cpuUsage(c0);
    return { wall, cpu: (c.user + c.system) / 1000, faults: faults() - f0 };
  };
  const ours = ranked({});
  const exact = ranked({ gap: 0 });
  // The pooled variant: each rank's destination buffers kept and passed as `into` on every load
  // (touched once by the warm-up round), as a serving process reloading its weights would.
  const pool = new Map();
  const pooled = async () => {
    const f0 = faults();
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
    return { wall, cpu: (c.user + c.system) / 1000, faults: faults() - f0 };
  };
  const python = async () => {
    kept.value = null;
    const sum = { wall: 0, cpu: 0, faults: 0 };
    for (const shards of ranks) {
      const r = await py.call({ op: 'get_slice', file, shards });
      sum.wall += r.ms;
      sum.cpu += r.cpu;
      sum.faults += r.faults;
    }
    return sum;
  };
  for (const cold of [false, true]) {
    const cases = { ours, get_slice: python, pooled, exact };
    const names = Object.keys(cases);
    const samples = Object.fromEntries(names.map((n) => [n, []]));
    for (let r = 0; r <= runs; r++) {
      for (const n of r % 2 ? [...names].reverse() : names) {
        if (n === 'exact' && r > EXACT_RUNS) continue;
        kept.value = null;
        globalThis.gc?.();
        if (cold) await py.call({ op: 'evict', files: evictable });
        const ms = await cases[n]();
        if (r > 0 || cold) samples[n].push(ms);
      }
    }
    const med = (xs) => ({
      wall: median(xs.map((x) => x.wall)),
      cpu: median(xs.map((x) => x.cpu)),
      faults: median(xs.map((x) => x.faults)),
    });
    compare(
      `8 ranks x 1/8 of every tensor, ${cold ? 'cold' : 'warm'}`,
      med(samples.ours),
      'get_slice',
      med(samples.get_slice),
      `ours reads ${mib(readBytes)} for ${mib(sliceBytes)} of slices`,
    );
    compare(
      `  same, gap 0 (exact runs), ${cold ? 'cold' : 'warm'}`,
      med(samples.exact),
      'get_slice',
      med(samples.get_slice),
      `reads ${mib(reads.exact.bytes)} in ${reads.exact.reads} reads`,
    );
    compare(
      `  exact runs vs reading through gaps, ${cold ? 'cold' : 'warm'}`,
      med(samples.exact),
      'through',
      med(samples.ours),
    );
    compare(
      `  same, into pooled buffers, ${cold ? 'cold' : 'warm'}`,
      med(samples.pooled),
      'get_slice',
      med(samples.get_slice),
    );
    console.log(
      `  minor page faults (median), ${cold ? 'cold' : 'warm'}: ${names.map((n) => `${n} ${med(samples[n]).faults}`).join(', ')}`,
    );
  }
  await store.close();
} finally {
  kept.value = null;
  await py.close();
  await fsp.rm(dir, { recursive: true, force: true });
}
