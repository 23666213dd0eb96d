// Decoding checkpoint tensors (issue 13): the six cases of bench/encodings.bench.mjs stored as
// encoded tensors of a checkpoint (CheckpointWriter.putEncoded), then read back decoded with
// `view.readInto(buffer, 0, { decode: true, dtype: 'F32' })` — the parts read from the store
// (length-checked, not rehashed) and decoded — against the same numpy decode of the same parts in
// the same run, and against the in-memory `decodeInto` (the store's share is the difference).
// Times are CPU time of the whole process, best of 5 after a warm-up.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '@tensorfs/cas';
import { decodeInto } from '@tensorfs/format/encodings';
import { CheckpointWriter, openCheckpoint } from '@tensorfs/tensors';
import { cases, cpuBest, K, N, numpyBaseline, reportAgainstNumpy } from './encodings-cases.mjs';
import { mibps } from './lib.mjs';

const dir = mkdtempSync(join(tmpdir(), 'tensorfs-bench-cpdec-'));
try {
  const numpy = numpyBaseline(dir);
  const store = await openStore(join(dir, 'store'));
  const w = new CheckpointWriter(store);
  const comp = w.component('model', { cls: '', config: null });
  for (const c of cases) {
    await comp.putEncoded(c.name, {
      dtype: 'F32',
      shape: [N, K],
      scheme: c.enc.scheme,
      params: c.enc.params,
      parts: Object.fromEntries(
        Object.entries(c.enc.parts).map(([role, p]) => [role, { dtype: p.dtype, shape: p.shape, data: p.bytes }]),
      ),
    });
  }
  await w.commit({ name: 'bench' });
  const cp = await openCheckpoint(store, 'bench');
  const outBytes = N * K * 4;
  const dst = new Uint8Array(outBytes);
  const mem = new Uint8Array(outBytes);
  for (const c of cases) {
    const view = cp.component('model').tensors.get(c.name);
    const ms = await cpuBest(() => view.readInto(dst, 0, { decode: true, dtype: 'F32' }));
    const inMemory = await cpuBest(() => decodeInto(c.enc, mem, { dtype: 'F32' }));
    const ours = createHash('sha256').update(dst).digest('hex');
    const same = ours === createHash('sha256').update(mem).digest('hex');
    const np = numpy[c.name];
    const label = `checkpoint decode ${c.label ?? c.name}`;
    const extra = `${mibps(outBytes, ms)} MiB/s (in memory ${inMemory.toFixed(1)} ms, ${mibps(outBytes, inMemory)} MiB/s)${same ? '' : ' | DIFFERS from in-memory'}`;
    reportAgainstNumpy(label, ms, np, outBytes, ours, extra);
  }
  await store.close?.();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
