// First import of a 1 GiB safetensors file into a new store against `cp` + `sync` of the same file
// into a new folder (the durable write) and `openssl dgst -sha256` (one core of hashing), all in
// the same rounds, interleaved. Wall and CPU time for each: ours is process.cpuUsage() (every
// thread, hashing workers included); the baselines' is their own user + system time (reaped
// children, /proc/self/stat). Import runs in both write modes: default (buffered) and directIO.
//
// The floors, measured in the same rounds. `cp` copies in the kernel (copy_file_range): no byte
// ever reaches user space, whereas import must read every byte into memory to hash it.
// - `dd + fdatasync` / `dd direct + fdatasync`: the user-space copy floor, read into a buffer and
//   write out (through the page cache / with O_DIRECT), one fdatasync, no hashing.
// - `hash only`: planAndHash with the hashing pool, no write (the hashing floor).
// - `write only`: the same 1 GiB as 128 new files of 8 MiB, each written from page-aligned memory
//   and fdatasynced, four at a time, as import does (the durable-write floor).
// - `hash ∥ write`: hash only and write only at the same time, nothing linking them: the work
//   import cannot avoid, perfectly overlapped. Import can only add to it (the digest must come
//   before publishing, the manifest after).
// Whole process (issue 29 item 3): `tfs import` (node packages/cli/dist/bin.js, a new store each
// time) with no option, and with TENSORFS_DIRECT_IO=0 (every write through the page cache, the
// default before), against `cp` then `sync`; each followed by `read after`: reading every object
// file of the new store at once (the first read of a model just imported), timed apart.
// TENSORFS_BENCH_BEFORE_CLI=<bin.js of another checkout's build> adds `tfs import (before)`.
// TENSORFS_BENCH_BEFORE_CAS=<an ESM bundle of an older @tensorfs/cas> also imports with that
// build in the same rounds; TENSORFS_BENCH_CAS=<bundle> imports with that build instead of the
// built package. TENSORFS_BENCH_RUNS sets the rounds (default 5); TENSORFS_BENCH_CASES=<a,b,…>
// runs only the cases named (`cp + sync` always runs: the ratios need it).
import { execFileSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { constants, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { createNodeHasher, fileHandleSource, LocalStore } from '@tensorfs/cas';
import { planAndHash } from '@tensorfs/planner';
import { importSources, localSource } from '@tensorfs/remote';
import * as fsp from 'node:fs/promises';
import { writeLayersModel } from './lib.mjs';

const MiB = 1 << 20;
const RUNS = Number(process.env.TENSORFS_BENCH_RUNS ?? 5);
const ours = process.env.TENSORFS_BENCH_CAS ? await import(process.env.TENSORFS_BENCH_CAS) : { LocalStore };
const before = process.env.TENSORFS_BENCH_BEFORE_CAS ? await import(process.env.TENSORFS_BENCH_BEFORE_CAS) : undefined;
// The store, the copies and the source on one filesystem (the store's usual home is too).
const dir = mkdtempSync(join(process.env.TENSORFS_BENCH_DIR ?? tmpdir(), 'tfs-bench-import-'));

/** CPU ms of this process's reaped children (cutime + cstime, 100 Hz ticks). */
function childCpuMs() {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(f[13]) + Number(f[14])) * 10;
}

function child(cmd, args, env) {
  const c0 = childCpuMs();
  const t0 = performance.now();
  execFileSync(cmd, args, {
    stdio: ['ignore', 'ignore', 'inherit'],
    ...(env ? { env: { ...process.env, ...env } } : {}),
  });
  return { wall: performance.now() - t0, cpu: childCpuMs() - c0 };
}

async function importWith(Store, file, options = {}) {
  const root = mkdtempSync(join(dir, 'store-'));
  const store = await Store.open(root, options);
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

/** Wall and CPU time (every thread of this process) of `job`. */
async function measured(job) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await job();
  const c = process.cpuUsage(c0);
  return { wall: performance.now() - t0, cpu: (c.user + c.system) / 1000 };
}

/** planAndHash of the file with the hashing pool, no write (the hashing floor). */
async function hashOnly(file) {
  const hasher = createNodeHasher();
  const fh = await fsp.open(file);
  try {
    await planAndHash(fileHandleSource(fh, (await fh.stat()).size), { hasher });
  } finally {
    await fh.close();
    await hasher.close();
  }
}

/**
 * The durable write import does, alone: 1 GiB as 128 new files of 8 MiB, each written from memory
 * (page-aligned, distinct bytes) and fdatasynced, four at a time; with O_DIRECT or buffered.
 */
async function writeOnly(direct) {
  const out = mkdtempSync(join(dir, direct ? 'direct-' : 'buffered-'));
  let next = 0;
  const one = async () => {
    while (next < 128) {
      const i = next++;
      const fh = await fsp.open(
        join(out, `f${i}`),
        O_WRONLY | O_CREAT | O_EXCL | (direct ? (O_DIRECT ?? 0) : 0),
        0o444,
      );
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
  rmSync(out, { recursive: true, force: true });
}

const TFS = fileURLToPath(new URL('../packages/cli/dist/bin.js', import.meta.url));
const BEFORE_TFS = process.env.TENSORFS_BENCH_BEFORE_CLI;
/** Read times of every object file right after each whole-process import, per case. */
const readAfter = {};

/** Every object file under `root` read once, in full (the first read after an import). */
async function readObjects(root) {
  const files = [];
  const walk = async (d) => {
    for (const e of await fsp.readdir(d, { withFileTypes: true })) {
      if (e.isDirectory()) await walk(join(d, e.name));
      else files.push(join(d, e.name));
    }
  };
  await walk(join(root, 'objects'));
  const buf = Buffer.allocUnsafe(8 * MiB);
  let bytes = 0;
  for (const f of files) {
    const fh = await fsp.open(f);
    try {
      for (;;) {
        const { bytesRead } = await fh.read(buf, 0, buf.length, null);
        if (bytesRead === 0) break;
        bytes += bytesRead;
      }
    } finally {
      await fh.close();
    }
  }
  return bytes;
}

/** `tfs import` as a user runs it (a new process, a new store), then the first read of what it stored. */
async function importProcess(name, file, env, args = [], bin = TFS) {
  const root = mkdtempSync(join(dir, 'cli-'));
  const m = child(process.execPath, [bin, '--store', root, 'import', file, '--name', 'base', ...args], env);
  const t0 = performance.now();
  const bytes = await readObjects(root);
  (readAfter[name] ??= []).push(performance.now() - t0);
  if (bytes < 1024 * MiB) throw new Error(`stored only ${bytes} bytes`);
  rmSync(root, { recursive: true, force: true });
  return m;
}

function dd(file, flags) {
  const out = mkdtempSync(join(dir, 'dd-'));
  const m = child('dd', [`if=${file}`, `of=${out}/f`, 'bs=4M', 'conv=fdatasync', 'status=none', ...flags]);
  rmSync(out, { recursive: true, force: true });
  return m;
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
  'hash only (planAndHash)': (file) => measured(() => hashOnly(file)),
  'write only (buffered)': () => measured(() => writeOnly(false)),
  'write only (O_DIRECT)': () => measured(() => writeOnly(true)),
  // Import's own floor: the two jobs it must do, run side by side with nothing linking them (no
  // digest awaited, no publish, no manifest). Import can only add to this.
  'hash ∥ write buffered': (file) => measured(() => Promise.all([hashOnly(file), writeOnly(false)])),
  'hash ∥ write O_DIRECT': (file) => measured(() => Promise.all([hashOnly(file), writeOnly(true)])),
  // The user-space copy floors: read the bytes into a buffer and write them out (no hashing), then
  // one fdatasync. Anything that must see every byte in memory pays at least this; `cp` does not.
  'dd + fdatasync': (file) => dd(file, []),
  'dd direct + fdatasync': (file) => dd(file, ['oflag=direct']),
  'tfs import (process)': (file) => importProcess('tfs import (process)', file, { TENSORFS_DIRECT_IO: '' }),
  'tfs import buffered': (file) => importProcess('tfs import buffered', file, { TENSORFS_DIRECT_IO: '0' }),
  'tfs import direct': (file) => importProcess('tfs import direct', file, { TENSORFS_DIRECT_IO: '1' }),
  // The whole-file SHA-256 list recorded too (one more SHA-256 pass; docs/decisions.md 25).
  'tfs import --file-sha256': (file) =>
    importProcess('tfs import --file-sha256', file, { TENSORFS_DIRECT_IO: '' }, ['--file-sha256']),
  ...(BEFORE_TFS
    ? {
        'tfs import (before)': (file) =>
          importProcess('tfs import (before)', file, { TENSORFS_DIRECT_IO: '' }, [], BEFORE_TFS),
      }
    : {}),
  // The one import pipeline with the local adapter into the same store (issue 23 item 3; docs/decisions.md 22).
  'importSources(localSource)': async (file) => {
    const root = mkdtempSync(join(dir, 'store-'));
    const store = await LocalStore.open(root);
    const m = await measured(() => importSources(store, localSource(file), { name: 'base' }));
    await store.close();
    rmSync(root, { recursive: true, force: true });
    return m;
  },
  'import (default)': (file) => importWith(ours.LocalStore, file),
  import: (file) => importWith(ours.LocalStore, file, { directIO: false }),
  'import (directIO)': (file) => importWith(ours.LocalStore, file, { directIO: true }),
  ...(before
    ? {
        'import (before)': (file) => importWith(before.LocalStore, file, { directIO: false }),
        'import (before) directIO': (file) => importWith(before.LocalStore, file, { directIO: true }),
      }
    : {}),
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
  const only = process.env.TENSORFS_BENCH_CASES?.split(',');
  const names = Object.keys(cases).filter((n) => !only || n === 'cp + sync' || only.includes(n));
  const samples = Object.fromEntries(names.map((n) => [n, { wall: [], cpu: [] }]));
  const loads = [];
  for (let r = 0; r <= RUNS; r++) {
    for (const n of r % 2 ? [...names].reverse() : names) {
      // Every sample starts alike: the source in the page cache (a kernel that reclaims idle
      // pages, as DAMON's pageout does on some VMs, may have dropped it since the last sample)
      // and no dirty page of an earlier case left for this one's sync to write.
      execFileSync('cat', [file], { stdio: ['ignore', 'ignore', 'inherit'] });
      execFileSync('sync');
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
      `${n.padEnd(23)} wall ${wall.toFixed(0).padStart(5)} ms  CPU ${cpu.toFixed(0).padStart(5)} ms  ${((size / MiB / wall) * 1000).toFixed(0).padStart(5)} MiB/s | vs cp + sync ${vs('cp + sync')} ${med['openssl dgst -sha256'] ? ` | vs openssl ${vs('openssl dgst -sha256')}` : ''} (wall / CPU)`,
    );
    console.log(`${''.padEnd(23)} samples wall ${samples[n].wall.map((x) => x.toFixed(0)).join(' ')}`);
  }
  for (const [n, xs] of Object.entries(readAfter)) {
    const t = median(xs.slice(-RUNS));
    console.log(
      `read after ${n}: ${t.toFixed(0)} ms (${((size / MiB / t) * 1000).toFixed(0)} MiB/s) samples ${xs
        .slice(-RUNS)
        .map((x) => x.toFixed(0))
        .join(' ')}`,
    );
  }
  // Ours against the floor of its own write mode: "import = X× cp + sync; the floor for reading
  // the bytes into memory and writing them (buffered / O_DIRECT) is Y×; ours is Z× that floor".
  const r = (a, b, k) => (med[a][k] / med[b][k]).toFixed(2);
  for (const [mine, copy, both] of [
    ['import', 'dd + fdatasync', 'hash ∥ write buffered'],
    ['import (directIO)', 'dd direct + fdatasync', 'hash ∥ write O_DIRECT'],
  ]) {
    if (![mine, copy, both].every((n) => med[n])) continue;
    console.log(
      `${mine}: ${r(mine, 'cp + sync', 'wall')}× cp + sync (CPU ${r(mine, 'cp + sync', 'cpu')}×); user-space copy floor (${copy}) ${r(copy, 'cp + sync', 'wall')}× cp + sync, ours ${r(mine, copy, 'wall')}× it; hash and write side by side (${both}) ${r(both, 'cp + sync', 'wall')}× cp + sync, ours ${r(mine, both, 'wall')}× it (CPU ${r(mine, both, 'cpu')}×)`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
