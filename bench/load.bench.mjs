// Whole-model loads: `openTensors` + `loadTensors` of a 1.01 GiB Llama-shaped F16 model stored in
// a TensorFS store, whole and one layer (prefix `model.layers.0.`, 98 MiB), warm and cold, against
// Python safetensors on the same file in the same run (`safe_open` + `get_tensor` for each tensor,
// and `load_file`; numpy; in-process times from a long-lived worker, so interpreter start-up is not
// counted, as ours is not) and against a plain `fs.read` of the same bytes into one fresh buffer.
// Cold: posix_fadvise(DONTNEED) on every object file of the store and on the model file before
// each sample (both sides). Samples are interleaved round-robin; medians of TENSORFS_BENCH_RUNS
// (default 5). Also prints the allocation and concurrency variants the default was chosen from.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { LocalStore } from '@tensorfs/cas';
import { loadedByteLength, loadTensors, openTensors, TensorPool } from '@tensorfs/tensors';
import { compare } from './cpu.mjs';
import { listFiles, median } from './lib.mjs';
import { writeLlama } from './llama.mjs';
import { startWorker } from './safetensors-py.mjs';

const here = path.dirname(new URL(import.meta.url).pathname);

const runs = Number(process.env.TENSORFS_BENCH_RUNS ?? 5);
// TENSORFS_BENCH_SUITES=<a;b;…> runs only the suites named (e.g. `layer 0, fresh process`).
const only = process.env.TENSORFS_BENCH_SUITES?.split(';');
const PREFIX = 'model.layers.0.';

/** Reads byte ranges of the plain file into one fresh buffer (64 MiB reads, one after another). */
async function fsRead(file, ranges) {
  const total = ranges.reduce((n, [, len]) => n + len, 0);
  const out = new Uint8Array(total);
  const fh = await fsp.open(file, 'r');
  try {
    let done = 0;
    for (const [at, len] of ranges) {
      for (let o = 0; o < len; ) {
        const n = Math.min(64 << 20, len - o);
        const { bytesRead } = await fh.read(out, done + o, n, at + o);
        if (bytesRead === 0) throw new Error('short read');
        o += bytesRead;
      }
      done += len;
    }
  } finally {
    await fh.close();
  }
  return out;
}

const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-bench-load-'));
const py = startWorker();
const kept = { value: null }; // what the last case loaded, kept until the next one (as a loader keeps it)
try {
  const file = path.join(dir, 'model.safetensors');
  const infos = await writeLlama(file);
  const fd = fs.openSync(file, 'r+');
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  const store = await LocalStore.open(path.join(dir, 'store'));
  await store.importPath(file, { name: 'bench/llama' });
  const objects = await listFiles(path.join(dir, 'store', 'objects'));
  const evictable = [...objects, file];
  const layer = infos.filter((i) => i.name.startsWith(PREFIX));
  const wholeBytes = infos.reduce((n, i) => n + i.byteLength, 0);
  const layerBytes = layer.reduce((n, i) => n + i.byteLength, 0);
  console.log(
    `model: ${infos.length} tensors, ${(wholeBytes / 2 ** 30).toFixed(2)} GiB (F16); layer 0: ${layer.length} tensors, ${(layerBytes / 2 ** 20).toFixed(0)} MiB; safetensors ${py.version}; ${os.cpus().length} cores, shared`,
  );
  const fullRanges = [[infos[0].byteOffset, wholeBytes]];
  const layerRanges = [[layer[0].byteOffset, layerBytes]];

  // Minor page faults too: each is a first touch of a fresh 4 KiB page (what a load into memory
  // its allocator did not hand back from an earlier, freed load pays), on each side.
  const faults = () => process.resourceUsage().minorPageFault;
  const timed = async (fn) => {
    const f0 = faults();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await fn();
    const wall = performance.now() - t0;
    const c = process.cpuUsage(c0);
    return { wall, cpu: (c.user + c.system) / 1000, faults: faults() - f0 };
  };
  // `ours` is the default: one arena from the process-wide pool, which the previous sample's
  // `release()` gave back to. `fresh(kind)` is a new pool each sample (nothing to reuse but what
  // the allocator itself reuses): `malloc` is Buffer.allocUnsafeSlow (no zero-fill), `calloc` the
  // default `new Uint8Array` (main's allocation), with one buffer a tensor or one arena.
  const ours = (options) => () =>
    timed(async () => {
      const set = await openTensors(store, 'bench/llama');
      kept.value = await loadTensors(set, options);
    });
  const eachPool = new TensorPool(); // its own: the default pool keeps the arenas
  const malloc = (n) => {
    const b = Buffer.allocUnsafeSlow(n);
    return new Uint8Array(b.buffer, b.byteOffset, n);
  };
  const fresh = (kind, options) => () =>
    timed(async () => {
      const set = await openTensors(store, 'bench/llama');
      const pool = new TensorPool(kind === 'malloc' ? { allocate: malloc } : {});
      kept.value = await loadTensors(set, { ...options, pool });
    });
  const python = (cmd) => async () => {
    const r = await py.call({ ...cmd, file });
    return { wall: r.ms, cpu: r.cpu, faults: r.faults };
  };
  // The pooled arena: one buffer the caller keeps and passes as `into` on every load (touched
  // once by the warm-up round), as a serving process reloading weights would.
  const pools = new Map();
  const pooled = (options) => () =>
    timed(async () => {
      const set = await openTensors(store, 'bench/llama');
      const key = options.prefix ?? '';
      let into = pools.get(key);
      if (into === undefined) pools.set(key, (into = new Uint8Array(loadedByteLength(set, options))));
      kept.value = await loadTensors(set, { ...options, into });
    });
  // A fresh process per sample, each side: the first load of a process, nothing to reuse.
  const freshOurs = (prefix) => async () => {
    const out = execFileSync(
      process.execPath,
      [path.join(here, 'load-once.mjs'), path.join(dir, 'store'), 'bench/llama', ...(prefix ? [prefix] : [])],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const r = JSON.parse(out);
    return { wall: r.ms, cpu: r.cpu, faults: r.faults };
  };
  const freshPython = (cmd) => async () => {
    const worker = startWorker();
    try {
      const r = await worker.call({ ...cmd, file });
      return { wall: r.ms, cpu: r.cpu, faults: r.faults };
    } finally {
      await worker.close();
    }
  };
  const plain = (ranges) => () =>
    timed(async () => {
      kept.value = await fsRead(file, ranges);
    });

  const suites = [
    {
      name: 'whole model',
      cases: {
        ours: ours({}),
        get_tensor: python({ op: 'get_tensor', names: null }),
        load_file: python({ op: 'load_file' }),
        'fs.read': plain(fullRanges),
        'each malloc': fresh('malloc', {}),
        'each calloc': fresh('calloc', {}),
        'arena calloc': fresh('calloc', { allocation: 'arena' }),
        'each pooled': ours({ allocation: 'each', pool: eachPool }),
        'ours into': pooled({}),
      },
    },
    {
      name: 'layer 0 (prefix)',
      cases: {
        ours: ours({ prefix: PREFIX }),
        get_tensor: python({ op: 'get_tensor', names: layer.map((i) => i.name) }),
        'fs.read': plain(layerRanges),
        'each malloc': fresh('malloc', { prefix: PREFIX }),
        'each calloc': fresh('calloc', { prefix: PREFIX }),
        'arena calloc': fresh('calloc', { prefix: PREFIX, allocation: 'arena' }),
        'each pooled': ours({ prefix: PREFIX, allocation: 'each', pool: eachPool }),
        'ours into': pooled({ prefix: PREFIX }),
      },
    },
    {
      name: 'whole model, fresh process',
      cases: {
        ours: freshOurs(),
        get_tensor: freshPython({ op: 'get_tensor', names: null }),
        load_file: freshPython({ op: 'load_file' }),
        'fs.read': plain(fullRanges),
      },
    },
    {
      name: 'layer 0, fresh process',
      cases: {
        ours: freshOurs(PREFIX),
        get_tensor: freshPython({ op: 'get_tensor', names: layer.map((i) => i.name) }),
        'fs.read': plain(layerRanges),
      },
    },
  ];
  for (const cold of [false, true]) {
    for (const suite of suites.filter((x) => !only || only.includes(x.name))) {
      const names = Object.keys(suite.cases);
      const samples = Object.fromEntries(names.map((n) => [n, []]));
      for (let r = 0; r <= runs; r++) {
        for (const n of r % 2 ? [...names].reverse() : names) {
          // A loader done with its tensors releases them (the default pool takes them back).
          kept.value?.release?.();
          kept.value = null;
          globalThis.gc?.();
          if (cold) await py.call({ op: 'evict', files: evictable });
          const ms = await suite.cases[n]();
          if (r > 0 || cold) samples[n].push(ms);
        }
      }
      const m = Object.fromEntries(
        names.map((n) => [
          n,
          {
            wall: median(samples[n].map((x) => x.wall)),
            cpu: median(samples[n].map((x) => x.cpu)),
            faults: median(samples[n].map((x) => x.faults)),
          },
        ]),
      );
      const label = `${suite.name}, ${cold ? 'cold' : 'warm'}`;
      const bytes = suite.name.startsWith('whole') ? wholeBytes : layerBytes;
      const gibps = (x) => `${(bytes / 2 ** 30 / (x.wall / 1000)).toFixed(2)} GiB/s`;
      compare(`load ${label}`, m.ours, 'get_tensor', m.get_tensor, gibps(m.ours));
      if (m.load_file) compare(`load ${label}`, m.ours, 'load_file', m.load_file);
      compare(`load ${label}`, m.ours, 'fs.read', m['fs.read'], `fs.read ${gibps(m['fs.read'])}`);
      if (m['ours into']) {
        compare(
          `load ${label}, caller's arena (into)`,
          m['ours into'],
          'get_tensor',
          m.get_tensor,
          gibps(m['ours into']),
        );
      }
      for (const v of ['each malloc', 'each calloc', 'arena calloc', 'each pooled'])
        if (m[v]) compare(`load ${label}, ${v}`, m[v], 'get_tensor', m.get_tensor);
      console.log(`  minor page faults (median), ${label}: ${names.map((n) => `${n} ${m[n].faults}`).join(', ')}`);
    }
  }
  await store.close();
} finally {
  kept.value?.release?.();
  kept.value = null;
  await py.close();
  await fsp.rm(dir, { recursive: true, force: true });
}
