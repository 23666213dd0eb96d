/**
 * A checkpoint's whole-file SHA-256 list (file-sha256.ts): recorded by the writer at commit for the
 * files of its `--safetensors` export, taken from the source snapshot's list when it has one;
 * other files hashed with `fileSha256: true` and left to a server by default; nothing recorded
 * with `fileSha256: false`.
 */
import { type ObjectId, writeSafetensors } from '@tensorfs/format';
import { decodeFileSha256, fileRecordsKey, fileSha256Ref, readFileSha256List } from '@tensorfs/format/store';
import { noise, sha256Hex as sha256 } from '@tensorfs/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CheckpointWriter,
  OverlayStore,
  checkpointFileSha256,
  convertSnapshot,
  openCheckpoint,
  safetensorsExportTree,
} from '../src/index.js';
import { STORE_KINDS, type TestStore, importTree, tempStore } from './helpers.js';

const MiB = 1024 * 1024;

/** Every multi-record file of the checkpoint's export: its record-list key and the SHA-256 of its bytes, read back independently. */
async function exportHashes(t: TestStore, id: ObjectId): Promise<Map<string, string>> {
  const cp = await openCheckpoint(t.store, id);
  // Built in the store under test (its header object too), so its files read back through the port.
  const tree = await safetensorsExportTree(t.store, cp);
  const out = new Map<string, string>();
  for (const e of (await t.store.getManifest(tree)).entries) {
    if (e.kind !== 'file' || e.records.length < 2) continue;
    out.set(await fileRecordsKey(e.records), sha256(await t.fileBytes(tree, e.path)));
  }
  return out;
}

async function listOf(t: TestStore, id: ObjectId): Promise<Map<string, string> | null> {
  const ref = await t.store.getRef(fileSha256Ref(id));
  return ref === null ? null : decodeFileSha256(await t.store.readObject(ref));
}

for (const kind of STORE_KINDS) {
  describe(`checkpoint whole-file SHA-256 lists (${kind} store)`, () => {
    let t: TestStore;
    beforeEach(async () => {
      t = await tempStore(kind);
    });
    afterEach(async () => {
      await t.close();
    });

    it('with fileSha256: true the writer records the SHA-256 of each export file of several records at commit', async () => {
      const w = new CheckpointWriter(t.store, { fileSha256: true });
      const text = w.component('text_encoder', { cls: 'CLIP', config: { a: 1 } });
      await text.put('a.weight', noise(3 * MiB, 1), { dtype: 'U8', shape: [3 * MiB] });
      await text.put('b.weight', noise(1000, 2), { dtype: 'F32', shape: [250] });
      const unet = w.component('unet', { cls: 'UNet', config: {} });
      // A tensor past 64 MiB is two objects: the file is header + 3 records.
      await unet.put('big', noise(64 * MiB + 8, 3), { dtype: 'U8', shape: [64 * MiB + 8] });
      const { id } = await w.commit({ name: 'team/cp' });
      const list = await listOf(t, id);
      const expected = await exportHashes(t, id);
      expect(expected.size).toBe(2);
      expect(list).toEqual(expected);
    });

    it('fileSha256: false and the default (nothing free to take: no source) record nothing; the checkpoint is the same', async () => {
      const make = async (fileSha256?: boolean) => {
        const w = new CheckpointWriter(t.store, fileSha256 === undefined ? {} : { fileSha256 });
        w.component('m', { cls: 'M', config: {} });
        await w.put('a', noise(4096, 4), { dtype: 'U8', shape: [4096] });
        await w.put('b', noise(4096, 5), { dtype: 'U8', shape: [4096] });
        return (await w.commit()).id;
      };
      const off = await make(false);
      expect(await t.store.getRef(fileSha256Ref(off))).toBeNull();
      expect(await make()).toBe(off);
      expect(await t.store.getRef(fileSha256Ref(off))).toBeNull();
      expect(await make(true)).toBe(off);
      expect(await listOf(t, off)).toEqual(await exportHashes(t, off));
    });

    it('a converted checkpoint takes its source snapshot list when the import recorded one, else (fileSha256: true) hashes the source files once', async () => {
      const model = writeSafetensors([
        { name: 'x.weight', dtype: 'U8', shape: [2n * BigInt(MiB)], data: noise(2 * MiB, 6) },
        { name: 'y.weight', dtype: 'U8', shape: [1024n], data: noise(1024, 7) },
      ]);
      const snap = await importTree(
        t,
        { 'model.safetensors': model, 'config.json': new TextEncoder().encode('{}\n') },
        'src',
        { fileSha256: true },
      );
      const sourceList = await readFileSha256List(t.store, snap);
      // By default the writer takes only what the source's list gives (nothing read).
      const free = await convertSnapshot(t.store, 'src', { name: 'team/free' });
      expect(await listOf(t, free.id)).toEqual(kind === 'local' ? await exportHashes(t, free.id) : null);
      const r = await convertSnapshot(t.store, 'src', { name: 'team/cp', fileSha256: true });
      const found = await checkpointFileSha256(t.store, (await openCheckpoint(t.store, r.id)).bytes);
      expect(found.tree).toBe(snap);
      expect([found.files, found.reused, found.hashed]).toEqual(sourceList.size > 0 ? [1, 1, 0] : [1, 0, 1]);
      // The local store's import records a list when asked (named or not); the memory store has no importer.
      expect(sourceList.size).toBe(kind === 'local' ? 1 : 0);
      expect(found.bytesHashed).toBe(kind === 'local' ? 0 : model.length);
      expect([...(await listOf(t, r.id))!.values()]).toEqual([sha256(model)]);
      expect(await listOf(t, r.id)).toEqual(await exportHashes(t, r.id));
    });

    it('no list for a checkpoint whose export has no file of several records, or none at all (an encoded tensor, no source)', async () => {
      const one = new CheckpointWriter(t.store);
      one.component('m', { cls: 'M', config: {} });
      await one.asset('tokenizer.json', new TextEncoder().encode('{}'));
      const a = await one.commit({ name: 'assets-only' });
      expect(await t.store.getRef(fileSha256Ref(a.id))).toBeNull();

      const enc = new CheckpointWriter(t.store);
      enc.component('m', { cls: 'M', config: {} });
      await enc.putEncoded('q', {
        dtype: 'F32',
        shape: [4],
        scheme: 'x-test',
        params: {},
        parts: { data: { dtype: 'U8', shape: [16], data: noise(16, 8) } },
      });
      await enc.put('p', noise(16, 9), { dtype: 'U8', shape: [16] });
      const e = await enc.commit({ name: 'encoded' });
      // Committed all the same; a server cannot export it as safetensors anyway.
      expect(await t.store.getRef('encoded')).toBe(e.id);
      expect(await t.store.getRef(fileSha256Ref(e.id))).toBeNull();
    });

    it('builds the export layout without writing to the store (an overlay)', async () => {
      const w = new CheckpointWriter(t.store, { fileSha256: false });
      w.component('m', { cls: 'M', config: { n: 1 } });
      await w.put('a', noise(100, 10), { dtype: 'U8', shape: [100] });
      await w.put('b', noise(100, 11), { dtype: 'U8', shape: [100] });
      const { id, bytes } = await w.commit({ name: 'cp' });
      const before = await t.objects();
      const found = await checkpointFileSha256(t.store, bytes);
      expect(await t.objects()).toEqual(before);
      expect([found.files, found.reused, found.hashed]).toEqual([1, 0, 1]);
      const overlay = new OverlayStore(t.store);
      expect(await overlay.has(found.tree)).toBe(false);
      expect(found.list).toEqual(await exportHashes(t, id));
    });
  });
}
