// First import of a 1 GiB safetensors file into a new store against `cp` + `sync` of the same file
// into a new folder (the durable write) and `openssl dgst -sha256` (one core of hashing), all in
// the same rounds, interleaved. Wall and CPU time for each: ours is process.cpuUsage() (every
// thread, hashing workers included); the baselines' is their own user + system time (reaped
// children, /proc/self/stat). `hash only` is planAndHash with no write (the hashing floor).
// `write only` writes and fdatasyncs the same 1 GiB as 128 files of 8 MiB with O_DIRECT from a
// page-aligned buffer, four at a time, as import does (the durable-write floor; `cp` itself copies
// in the kernel with copy_file_range, so it never copies through user-space pages either).
// Import's floor is about max(hash only, write only) on an idle machine.
// TENSORFS_BENCH_BEFORE_CAS=<an ESM bundle of an older @tensorfs/cas> also imports with that
// build in the same rounds. TENSORFS_BENCH_RUNS sets the rounds (default 5).
import { execFileSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { constants, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createNodeHasher, fileHandleSource, LocalStore } from '@tensorfs/cas';
import { planAndHash } from '@tensorfs/planner';
import * as fsp from 'node:fs/promises';
import { writeLayersModel } from './lib.mjs';

const MiB = 1 << 20;
const RUNS = Number(process.env.TENSORFS_BENCH_RUNS ?? 5);
const before = process.env.TENSORFS_BENCH_BEFORE_CAS ? await import(process.env.TENSORFS_BENCH_BEFORE_CAS) : undefined;
// The store, the copies and the source on one filesystem (the store's usual home is too).
const dir = mkdtempSync(join(process.env.TENSORFS_BENCH_DIR ?? tmpdir(), 'tfs-bench-import-'));

/** CPU ms of this process's reaped children (cutime + cstime, 100 Hz ticks). */
function childCpuMs() {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(f[13]) + Number(f[14])) * 10;
}

function child(cmd, args) {
  const c0 = childCpuMs();
  const t0 = performance.now();
  execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  return { wall: performance.now() - t0, cpu: childCpuMs() - c0 };
}

async function importWith(Store, file) {
  const root = mkdtempSync(join(dir, 'store-'));
  const store = await Store.open(root);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await store.importPath(file, { name: 'base' });
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  await store.close();
  rmSync(root, { recursive: true, force: true });
  if (r.bytesWritten < 1024 * MiB) throw new Error(`wrote only ${r.bytesWritten} bytes`);
  return { wall, cpu: (c.user + c.system) / 1000 };
}

const cases = {
  'cp + sync': (file) => {
    const out = mkdtempSync(join(dir, 'cp-'));
    const m = child('sh', ['-c', `cp "${file}" "${out}/f" && sync "${out}/f"`]);
    rmSync(out, { recursive: true, force: true });
    return m;
  },
  'openssl dgst -sha256': (file) => child('openssl', ['dgst', '-sha256', file]),
  // The part of an import no write can hide on a busy machine: read and hash on every core.
  'hash only (planAndHash)': async (file) => {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const hasher = createNodeHasher();
    const fh = await fsp.open(file);
    try {
      await planAndHash(fileHandleSource(fh, (await fh.stat()).size), { hasher });
    } finally {
      await fh.close();
      await hasher.close();
    }
    const c = process.cpuUsage(c0);
    return { wall: performance.now() - t0, cpu: (c.user + c.system) / 1000 };
  },
  'write only (O_DIRECT)': async () => {
    const out = mkdtempSync(join(dir, 'direct-'));
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    let next = 0;
    const one = async () => {
      while (next < 128) {
        const i = next++;
        const fh = await fsp.open(join(out, `f${i}`), O_WRONLY | O_CREAT | O_EXCL | (O_DIRECT ?? 0), 0o444);
        try {
          const at = (i % 8) * 8 * MiB;
          for (let done = 0; done < 8 * MiB; )
            done += (await fh.write(aligned, at + done, 8 * MiB - done, done)).bytesWritten;
          await fh.datasync();
        } finally {
          await fh.close();
        }
      }
    };
    await Promise.all([one(), one(), one(), one()]);
    const c = process.cpuUsage(c0);
    const wall = performance.now() - t0;
    rmSync(out, { recursive: true, force: true });
    return { wall, cpu: (c.user + c.system) / 1000 };
  },
  import: (file) => importWith(LocalStore, file),
  ...(before ? { 'import (before)': (file) => importWith(before.LocalStore, file) } : {}),
};

// 64 MiB of distinct bytes in page-aligned memory (WebAssembly.Memory), for the O_DIRECT writes.
const aligned = new Uint8Array(new WebAssembly.Memory({ initial: 1024, maximum: 1024 }).buffer);
for (let i = 0; i < aligned.length; i += 65536) randomFillSync(aligned, i, 65536);
const { O_WRONLY, O_CREAT, O_EXCL, O_DIRECT } = constants;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

try {
  const file = join(dir, 'model.safetensors');
  await writeLayersModel(file, 128, 2048); // 128 distinct BF16 [2048, 2048] tensors, 8 MiB each
  const size = 1024 * MiB;
  execFileSync('cat', [file], { stdio: ['ignore', 'ignore', 'inherit'] }); // warm page cache
  execFileSync('sync'); // the model's own dirty pages are not billed to the first case
  const names = Object.keys(cases);
  const samples = Object.fromEntries(names.map((n) => [n, { wall: [], cpu: [] }]));
  const loads = [];
  for (let r = 0; r <= RUNS; r++) {
    for (const n of r % 2 ? [...names].reverse() : names) {
      const m = await cases[n](file);
      if (r > 0) {
        samples[n].wall.push(m.wall);
        samples[n].cpu.push(m.cpu);
      }
    }
    loads.push(loadavg()[0]);
  }
  const med = Object.fromEntries(names.map((n) => [n, { wall: median(samples[n].wall), cpu: median(samples[n].cpu) }]));
  console.log(
    `1 GiB safetensors (128 tensors of 8 MiB), ${RUNS} interleaved rounds, medians; load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`,
  );
  for (const n of names) {
    const { wall, cpu } = med[n];
    const vs = (b) => `${(wall / med[b].wall).toFixed(2)}× / ${(cpu / med[b].cpu).toFixed(2)}×`;
    console.log(
      `${n.padEnd(22)} wall ${wall.toFixed(0).padStart(5)} ms  CPU ${cpu.toFixed(0).padStart(5)} ms  ${((size / MiB / wall) * 1000).toFixed(0).padStart(5)} MiB/s | vs cp + sync ${vs('cp + sync')} | vs openssl ${vs('openssl dgst -sha256')} (wall / CPU)`,
    );
    console.log(`${''.padEnd(22)} samples wall ${samples[n].wall.map((x) => x.toFixed(0)).join(' ')}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
