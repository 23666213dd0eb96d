// cozytensors checkpoints, on a 1 GiB Diffusers-shaped folder (unet 512 MiB in one file, a text
// encoder of 256 MiB in two shards with an index, a vae of 256 MiB, configs and tokenizer files):
//
//  1. convert the folder once it is imported (tfs convert <folder>: hash it again, write only what is
//     new) vs `tfs import` of the same folder into a fresh store; and convert from the snapshot ref
//     (no byte re-read); the figure that matters is the bytes written (target: header only);
//  2. openCheckpoint + read every unet tensor vs reading the same ranges of the original file with
//     fs read, same run, warm cache (target ≤ 1.2×);
//  3. a fine-tune: the same folder with 8 of the unet's 64 tensors changed, converted with --base:
//     bytes written against the folder's size;
//  4. the whole-file SHA-256 list a checkpoint writer records at commit (what a Hugging Face
//     server's first HEAD reads), on against `fileSha256: false`, interleaved, wall and CPU:
//     convert from a snapshot with a list (taken from it), from one without (one hash pass over
//     the source's multi-record files) and compose (no source: the export laid out and hashed).
import { randomFillSync } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openStore } from '@tensorfs/cas';
import { writeSafetensorsHeader } from '@tensorfs/format';
import { fileSha256Ref } from '@tensorfs/format/store';
import { composeCheckpoint, convertPath, convertSnapshot, openCheckpoint } from '@tensorfs/tensors';
import { mibps, paired, report } from './lib.mjs';

const MiB = 1024 * 1024;
const TENSOR = 8 * MiB; // F32 [2048, 1024]

const noise = randomFillSync(new Uint8Array(TENSOR));
let serial = 0;

/** Writes a safetensors file of `count` distinct F32 [2048, 1024] tensors; returns name → range. */
async function weights(file, prefix, count, mutate = () => false) {
  const names = Array.from({ length: count }, (_, i) => `${prefix}.${String(i).padStart(3, '0')}.weight`);
  const { bytes: header, tensors } = writeSafetensorsHeader(
    names.map((name) => ({ name, dtype: 'F32', shape: [2048n, 1024n] })),
    { metadata: new Map([['format', 'pt']]), order: 'given' },
  );
  await fsp.mkdir(path.dirname(file), { recursive: true });
  const fh = await fsp.open(file, 'w');
  await fh.write(header);
  for (let i = 0; i < count; i++) {
    const view = new DataView(noise.buffer);
    view.setUint32(0, serial++);
    view.setUint32(4, mutate(i) ? 0xdeadbeef : 0);
    await fh.write(noise);
  }
  await fh.close();
  return new Map(tensors.map((t) => [t.name, t]));
}

async function diffusersFolder(root, mutate) {
  serial = 0;
  const json = (p, v) => fsp.writeFile(path.join(root, p), `${JSON.stringify(v, null, 2)}\n`);
  await fsp.mkdir(path.join(root, 'scheduler'), { recursive: true });
  await fsp.mkdir(path.join(root, 'tokenizer'), { recursive: true });
  await json('model_index.json', {
    _class_name: 'StableDiffusionPipeline',
    scheduler: ['diffusers', 'EulerDiscreteScheduler'],
    text_encoder: ['transformers', 'CLIPTextModel'],
    tokenizer: ['transformers', 'CLIPTokenizer'],
    unet: ['diffusers', 'UNet2DConditionModel'],
    vae: ['diffusers', 'AutoencoderKL'],
  });
  await json('scheduler/scheduler_config.json', { _class_name: 'EulerDiscreteScheduler', beta_start: 0.00085 });
  await json('tokenizer/vocab.json', Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`tok${i}`, i])));
  await fsp.writeFile(path.join(root, 'tokenizer/merges.txt'), '#version: 0.2\n'.repeat(2000));
  const unet = await weights(path.join(root, 'unet/diffusion_pytorch_model.safetensors'), 'unet', 64, mutate);
  await json('unet/config.json', { _class_name: 'UNet2DConditionModel', sample_size: 64 });
  const map = {};
  for (const shard of ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']) {
    const t = await weights(path.join(root, 'text_encoder', shard), `te.${shard.slice(6, 11)}`, 16);
    for (const name of t.keys()) map[name] = shard;
  }
  await json('text_encoder/model.safetensors.index.json', { metadata: { total_size: 32 * TENSOR }, weight_map: map });
  await json('text_encoder/config.json', { architectures: ['CLIPTextModel'], hidden_size: 1024 });
  await weights(path.join(root, 'vae/diffusion_pytorch_model.safetensors'), 'vae', 32);
  await json('vae/config.json', { _class_name: 'AutoencoderKL' });
  return unet;
}

async function folderSize(dir) {
  let n = 0;
  for (const e of await fsp.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += (await fsp.stat(path.join(e.parentPath ?? e.path, e.name))).size;
  }
  return n;
}

const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-bench-checkpoint-'));
try {
  const folder = path.join(dir, 'sd');
  const unetRanges = await diffusersFolder(folder, () => false);
  const size = await folderSize(folder);
  console.log(`folder: Diffusers-shaped, ${(size / MiB).toFixed(0)} MiB`);

  // 1. convert an imported folder vs import it.
  const store = await openStore(path.join(dir, 'store'));
  const t0 = performance.now();
  const imported = await store.importPath(folder, { name: 'bench/sd-snapshot' });
  const importMs = performance.now() - t0;
  const t1 = performance.now();
  const converted = await convertPath(store, folder, { name: 'bench/sd' });
  const convertMs = performance.now() - t1;
  report(
    'convert imported 1 GiB Diffusers folder',
    convertMs,
    'tfs import',
    importMs,
    `wrote ${converted.bytesWritten} B (header ${converted.bytesWritten} B) vs import ${(imported.bytesWritten / MiB).toFixed(0)} MiB`,
  );
  const t2 = performance.now();
  const fromRef = await convertSnapshot(store, 'bench/sd-snapshot', { name: 'bench/sd2' });
  const refMs = performance.now() - t2;
  report(
    'convert from the snapshot ref (no re-read)',
    refMs,
    'tfs import',
    importMs,
    `wrote ${fromRef.bytesWritten} B`,
  );

  // 2. openCheckpoint + read the unet's tensors vs fs read of the same ranges.
  const file = path.join(folder, 'unet/diffusion_pytorch_model.safetensors');
  const fh = await fsp.open(file, 'r');
  const ranges = [...unetRanges.values()];
  const plainRead = async () => {
    for (const r of ranges) {
      const buf = Buffer.allocUnsafe(r.byteLength);
      const { bytesRead } = await fh.read(buf, 0, r.byteLength, r.byteOffset);
      if (bytesRead !== r.byteLength) throw new Error('short read');
    }
  };
  const checkpointRead = async () => {
    const cp = await openCheckpoint(store, 'bench/sd');
    for (const v of cp.component('unet').tensors.values()) {
      if ((await v.read()).length !== v.byteLength) throw new Error('short read');
    }
  };
  const [ours, base] = await paired(checkpointRead, plainRead);
  report('openCheckpoint + read unet (512 MiB)', ours, 'fs read', base, `${mibps(64 * TENSOR, ours)} MiB/s`);
  const target = new Uint8Array(TENSOR);
  const plainInto = async () => {
    for (const r of ranges) await fh.read(target, 0, r.byteLength, r.byteOffset);
  };
  const checkpointInto = async () => {
    const cp = await openCheckpoint(store, 'bench/sd');
    for (const v of cp.component('unet').tensors.values()) await v.readInto(target);
  };
  const [oursInto, baseInto] = await paired(checkpointInto, plainInto);
  report('openCheckpoint + readInto unet', oursInto, 'fs read', baseInto, `${mibps(64 * TENSOR, oursInto)} MiB/s`);
  await fh.close();

  // 3. fine-tune: 8 of the unet's 64 tensors changed.
  const tuned = path.join(dir, 'sd-tuned');
  await diffusersFolder(tuned, (i) => i % 8 === 3);
  const t3 = performance.now();
  const ft = await convertPath(store, tuned, { name: 'bench/sd-ft', base: 'bench/sd' });
  const ftMs = performance.now() - t3;
  const t4 = performance.now();
  const fresh = await openStore(path.join(dir, 'fresh'));
  const full = await fresh.importPath(tuned);
  const fullMs = performance.now() - t4;
  await fresh.close();
  report(
    'fine-tune: convert with 8/64 unet tensors changed',
    ftMs,
    'import into a fresh store',
    fullMs,
    `wrote ${(ft.bytesWritten / MiB).toFixed(1)} MiB (${ft.changedTensors} tensors changed) vs ${(full.bytesWritten / MiB).toFixed(0)} MiB`,
  );

  // 4. the checkpoint's whole-file SHA-256 list at commit: on vs off, interleaved, wall and CPU.
  const clock = async (fn) => {
    const c0 = process.cpuUsage();
    const w0 = performance.now();
    await fn();
    const cpu = process.cpuUsage(c0);
    return { wall: performance.now() - w0, cpu: (cpu.user + cpu.system) / 1000 };
  };
  const onOff = async (name, run, runs = 3) => {
    const on = [];
    const off = [];
    await run(true);
    await run(false);
    for (let i = 0; i < runs; i++) {
      on.push(await clock(() => run(true)));
      off.push(await clock(() => run(false)));
    }
    const med = (xs, k) => xs.map((x) => x[k]).sort((x, y) => x - y)[Math.floor(xs.length / 2)];
    report(
      name,
      med(on, 'wall'),
      'fileSha256: false',
      med(off, 'wall'),
      `CPU ${(med(on, 'cpu') / 1000).toFixed(2)} s vs ${(med(off, 'cpu') / 1000).toFixed(2)} s; load ${(await fsp.readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ')}`,
    );
  };
  const snapshot = imported.snapshot;
  await onOff('convert, source list present (taken from it)', (fileSha256) =>
    convertSnapshot(store, snapshot, { fileSha256 }),
  );
  // A source imported without a list (an older store): its list is set aside for this case.
  const sourceList = await store.getRef(fileSha256Ref(snapshot));
  await store.deleteRef(fileSha256Ref(snapshot));
  await onOff(`convert, source without a list (hash ${(size / MiB).toFixed(0)} MiB once)`, (fileSha256) =>
    convertSnapshot(store, snapshot, { fileSha256 }),
  );
  if (sourceList !== null) await store.setRef(fileSha256Ref(snapshot), sourceList);
  const cp = (await openCheckpoint(store, 'bench/sd')).id;
  await onOff('compose (no source: export laid out and hashed)', (fileSha256) =>
    composeCheckpoint(store, cp, { drop: ['unet.063.weight'] }, { component: 'unet', fileSha256 }),
  );
  await store.close();
} finally {
  await fsp.rm(dir, { recursive: true, force: true });
}
