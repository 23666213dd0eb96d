// `TensorView.readInto` of 100 tensors of a 1 GiB model out of the store into one reused buffer,
// against `FileHandle.read` of the same byte ranges from the plain file into the same buffer
// (one handle kept open), warm page cache, interleaved; wall and CPU medians. Both read one tensor
// at a time, awaiting each read (the same concurrency); the store opens, fstats (length check) and
// closes each tensor's object file and checks its quarantine entry, the baseline reads one open
// file. A second case measures that per-read cost alone: the same reads of 100 tensors of 32 bytes,
// where copying costs nothing. TENSORFS_BENCH_RUNS sets the rounds (default 15).
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { openTensors } from '@tensorfs/tensors';
import { compare, interleave } from './cpu.mjs';
import { writeLayersModel } from './lib.mjs';

const TENSORS = 128;
const runs = Number(process.env.TENSORFS_BENCH_RUNS ?? 15);

/** A model of `TENSORS` BF16 [rows, rows] tensors imported into a store; 100 of them picked. */
async function setUp(dir, rows) {
  const file = path.join(dir, `model-${rows}.safetensors`);
  const infos = await writeLayersModel(file, TENSORS, rows);
  const store = await LocalStore.open(path.join(dir, `store-${rows}`));
  await store.importPath(file, { name: 'bench/model' });
  const set = await openTensors(store, 'bench/model');
  const picked = infos
    .map((t) => t.name)
    .map((n, i) => [n, (i * 7919) % TENSORS])
    .sort((a, b) => a[1] - b[1])
    .slice(0, 100)
    .map(([n]) => n);
  const views = picked.map((n) => set.get(n));
  const ranges = picked.map((n) => infos.find((x) => x.name === n));
  const target = new Uint8Array(rows * rows * 2);
  const fh = await fsp.open(file, 'r');
  const cases = {
    ours: async () => {
      for (const v of views) await v.readInto(target);
    },
    fs: async () => {
      for (const x of ranges) await fh.read(target, 0, x.byteLength, x.byteOffset);
    },
  };
  return { cases, close: () => Promise.all([fh.close(), store.close()]) };
}

const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-bench-readinto-'));
try {
  const big = await setUp(dir, 2048); // 8 MiB each, 1 GiB in all
  const r = await interleave(big.cases, { runs });
  compare('readInto 100 tensors (8 MiB each)', r.ours, 'fs read', r.fs);
  await big.close();
  const tiny = await setUp(dir, 4); // 32 bytes each: what each read costs beyond its copy
  const loops = 20;
  const t = await interleave(
    {
      ours: async () => {
        for (let i = 0; i < loops; i++) await tiny.cases.ours();
      },
      fs: async () => {
        for (let i = 0; i < loops; i++) await tiny.cases.fs();
      },
    },
    { runs },
  );
  const perRead = (m) => ({ wall: (m.wall * 1000) / (loops * 100), cpu: (m.cpu * 1000) / (loops * 100) });
  const extra = ((t.ours.cpu - t.fs.cpu) * 1000) / (loops * 100);
  compare(
    '  per read, 32-byte tensors (figures in µs)',
    perRead(t.ours),
    'fs read',
    perRead(t.fs),
    `store adds ${extra.toFixed(1)} µs CPU a read`,
  );
  await tiny.close();
} finally {
  await fsp.rm(dir, { recursive: true, force: true });
}
