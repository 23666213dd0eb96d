// `TensorView.readInto` of 100 tensors of a 1 GiB model out of the store into one reused buffer,
// against `FileHandle.read` of the same byte ranges from the plain file into the same buffer
// (one handle kept open), warm page cache, interleaved; wall and CPU medians.
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { openTensors } from '@tensorfs/tensors';
import { compare, interleave } from './cpu.mjs';
import { writeLayersModel } from './lib.mjs';

const TENSORS = 128;
const ROWS = 2048; // BF16 [2048, 2048] = 8 MiB each, 1 GiB in all
const TENSOR_BYTES = ROWS * ROWS * 2;

const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-bench-readinto-'));
try {
  const file = path.join(dir, 'model.safetensors');
  const infos = await writeLayersModel(file, TENSORS, ROWS);
  const store = await LocalStore.open(path.join(dir, 'store'));
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
  const target = new Uint8Array(TENSOR_BYTES);
  const fh = await fsp.open(file, 'r');
  const r = await interleave(
    {
      ours: async () => {
        for (const v of views) await v.readInto(target);
      },
      fs: async () => {
        for (const x of ranges) await fh.read(target, 0, x.byteLength, x.byteOffset);
      },
    },
    { runs: 15 },
  );
  compare('readInto 100 tensors (8 MiB each)', r.ours, 'fs read', r.fs);
  await fh.close();
  await store.close();
} finally {
  await fsp.rm(dir, { recursive: true, force: true });
}
