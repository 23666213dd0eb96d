// Tensor reads and conversions straight from the store, against the same work on a plain file.
//
//  1. read 100 tensors of a 1 GiB safetensors model out of the store (view.read / readInto /
//     pieces) vs reading the same byte ranges from the plain file with fs read, same run, warm cache;
//  2. a conversion that replaces 10% of the tensors (TensorWriter: add the new ones, inherit the rest,
//     finish, commit) vs writing the whole converted file with fs (fsync'd, as the store fsyncs).
import { randomFillSync } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { writeSafetensorsHeader } from '@tensorfs/format';
import { commit, openTensors, TensorWriter } from '@tensorfs/tensors';
import { mibps, paired, report } from './lib.mjs';

const MiB = 1024 * 1024;
const TENSORS = 128;
const ROWS = 2048; // BF16 [2048, 2048] = 8 MiB each, 1 GiB in all
const TENSOR_BYTES = ROWS * ROWS * 2;
const READS = 100;

const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-bench-tensors-'));
try {
  const file = path.join(dir, 'model.safetensors');
  const names = Array.from({ length: TENSORS }, (_, i) => `model.layers.${String(i).padStart(3, '0')}.weight`);
  const { bytes: header, tensors: infos } = writeSafetensorsHeader(
    names.map((name) => ({ name, dtype: 'BF16', shape: [BigInt(ROWS), BigInt(ROWS)] })),
    { metadata: new Map([['format', 'pt']]), order: 'given' },
  );
  const noise = randomFillSync(new Uint8Array(TENSOR_BYTES));
  {
    const fh = await fsp.open(file, 'w');
    await fh.write(header);
    for (let i = 0; i < TENSORS; i++) {
      new DataView(noise.buffer).setUint32(0, i); // every tensor distinct
      await fh.write(noise);
    }
    await fh.close();
  }
  const fileSize = (await fsp.stat(file)).size;
  console.log(`model: ${TENSORS} BF16 tensors, ${(fileSize / MiB).toFixed(0)} MiB`);

  const store = await LocalStore.open(path.join(dir, 'store'));
  const t0 = performance.now();
  await store.importPath(file, { name: 'bench/model' });
  console.log(
    `setup, import into the store: ${(performance.now() - t0).toFixed(0)} ms (${mibps(fileSize, performance.now() - t0)} MiB/s)`,
  );

  const set = await openTensors(store, 'bench/model');
  // 100 tensors in a fixed shuffled order, so neither side reads sequentially.
  const picked = names
    .map((n, i) => [n, (i * 7919) % TENSORS])
    .sort((a, b) => a[1] - b[1])
    .slice(0, READS)
    .map(([n]) => n);
  const views = picked.map((n) => set.get(n));
  const ranges = picked.map((n) => infos.find((x) => x.name === n));
  const readBytes = READS * TENSOR_BYTES;

  const fh = await fsp.open(file, 'r');
  const plainRead = async () => {
    for (const r of ranges) {
      const buf = Buffer.allocUnsafe(r.byteLength);
      const { bytesRead } = await fh.read(buf, 0, r.byteLength, r.byteOffset);
      if (bytesRead !== r.byteLength) throw new Error('short read');
    }
  };
  const storeRead = async () => {
    for (const v of views) if ((await v.read()).length !== v.byteLength) throw new Error('short read');
  };
  const [ours, baseline] = await paired(storeRead, plainRead, 9);
  report('read 100 tensors (view.read)', ours, 'fs read', baseline, `${mibps(readBytes, ours)} MiB/s`);
  // The store reads each object into a zero-filled buffer; the same fs read into zeroed buffers
  // shows how much of the gap that is.
  const zeroedRead = async () => {
    for (const r of ranges) await fh.read(new Uint8Array(r.byteLength), 0, r.byteLength, r.byteOffset);
  };
  const [oursZ, zeroed] = await paired(storeRead, zeroedRead, 9);
  report('read 100 tensors (view.read)', oursZ, 'fs read, zeroed bufs', zeroed, `${mibps(readBytes, oursZ)} MiB/s`);

  const target = new Uint8Array(TENSOR_BYTES);
  const plainInto = async () => {
    for (const r of ranges) await fh.read(target, 0, r.byteLength, r.byteOffset);
  };
  const storeInto = async () => {
    for (const v of views) await v.readInto(target);
  };
  const [oursInto, baseInto] = await paired(storeInto, plainInto, 9);
  report(
    'read 100 tensors into one buffer (readInto)',
    oursInto,
    'fs read',
    baseInto,
    `${mibps(readBytes, oursInto)} MiB/s`,
  );

  const storePieces = async () => {
    for (const v of views) for await (const piece of v.pieces()) if (piece.length === 0) throw new Error('empty');
  };
  const [oursPieces, basePieces] = await paired(storePieces, plainRead, 9);
  report('stream 100 tensors (pieces)', oursPieces, 'fs read', basePieces, `${mibps(readBytes, oursPieces)} MiB/s`);

  const storeVerify = async () => {
    for (const v of views) await v.read({ verify: true });
  };
  const [oursVerify, baseVerify] = await paired(storeVerify, plainRead, 3);
  report(
    'read 100 tensors, verify: true (rehash)',
    oursVerify,
    'fs read',
    baseVerify,
    `${mibps(readBytes, oursVerify)} MiB/s`,
  );
  await fh.close();

  // Opening reads headers only: against reading and JSON-parsing the same header from the plain file.
  const plainHeader = async () => {
    const h = await fsp.open(file, 'r');
    const prefix = Buffer.alloc(8);
    await h.read(prefix, 0, 8, 0);
    const n = Number(prefix.readBigUInt64LE(0));
    const json = Buffer.alloc(n);
    await h.read(json, 0, n, 8);
    await h.close();
    return JSON.parse(json.toString('utf8'));
  };
  const [openMs, headerMs] = await paired(() => openTensors(store, 'bench/model'), plainHeader, 15);
  report('openTensors (1 GiB model, headers only)', openMs, 'fs read + JSON.parse', headerMs);

  // Conversion: replace every tenth tensor with new bytes, keep the rest.
  let run = 0;
  const replaced = names.filter((_, i) => i % 10 === 0);
  const sourceObjects = new Set(set.entry('model.safetensors').records.map((r) => r.digest));
  let written = 0;
  const convert = async () => {
    run++;
    const writer = new TensorWriter(store, 'model.safetensors', { metadata: { format: 'pt' } });
    for (const view of set) {
      if (replaced.includes(view.name)) {
        new DataView(noise.buffer).setUint32(4, run * 1000 + names.indexOf(view.name));
        await writer.add(view.name, 'BF16', view.shape, noise);
      } else {
        await writer.inherit(view);
      }
    }
    const entry = await writer.finish();
    await commit(store, { base: 'bench/model', put: [entry], ref: `bench/converted-${run}` });
    await writer.close();
    // Bytes of objects the source did not have: the new tensors and the header.
    written = entry.records.filter((r) => !sourceObjects.has(r.digest)).reduce((n, r) => n + r.length, 0);
  };
  const wholePath = path.join(dir, 'converted.safetensors');
  const writeWhole = async () => {
    const out = await fsp.open(wholePath, 'w');
    await out.write(header);
    for (let i = 0; i < TENSORS; i++) await out.write(noise);
    await out.datasync();
    await out.close();
  };
  const [convertMs, wholeMs] = await paired(convert, writeWhole, 3);
  report(
    'convert: replace 10% of tensors',
    convertMs,
    'fs write whole file',
    wholeMs,
    `wrote ${(written / MiB).toFixed(1)} MiB vs ${(fileSize / MiB).toFixed(0)} MiB`,
  );
  await store.close();
} finally {
  await fsp.rm(dir, { recursive: true, force: true });
}
