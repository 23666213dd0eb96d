import * as fsp from 'node:fs/promises';
import path from 'node:path';
import type { ManifestFileEntry, RecordRef } from '@tensorfs/format';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commit, openTensors, TensorWriter } from '../src/index.js';
import { expectCode, objectFile, sha256Hex, storedObjects } from '@tensorfs/testkit';
import { expectedTensors, FIXTURES, importTree, type TestStore, tempStore } from './helpers.js';

describe('reads over damaged or hostile snapshots', () => {
  let t: TestStore;
  beforeEach(async () => {
    t = await tempStore();
  });
  afterEach(() => t.close());

  it('a deleted tensor object is not_found, naming the tensor; the other tensors still read', async () => {
    await importTree(t, { 'm.safetensors': 'tiny.safetensors' }, 'm');
    const set = await openTensors(t.store, 'm');
    const victim = set.get('embed.weight');
    await fsp.rm(objectFile(t.root, victim.digests[0]!));
    try {
      await victim.read();
      expect.unreachable();
    } catch (error) {
      expect((error as { code: string }).code).toBe('not_found');
      expect((error as { details: Record<string, unknown> }).details).toMatchObject({
        tensor: 'embed.weight',
        path: 'm.safetensors',
        digest: victim.digests[0],
      });
    }
    expect((await set.get('positions').read()).length).toBe(96);
  });

  it('a deleted header object makes opening fail with not_found', async () => {
    const snapshot = await importTree(t, { 'm.safetensors': 'tiny.safetensors' }, 'm');
    const entry = (await t.store.getManifest(snapshot)).entries[0] as ManifestFileEntry;
    await fsp.rm(objectFile(t.root, entry.records[0]!.digest));
    await expectCode(() => openTensors(t.store, 'm'), 'not_found');
  });

  it('a corrupted object (same length) is corrupt under verify, and none of its bytes come back', async () => {
    await importTree(t, { 'm.safetensors': 'tiny.safetensors' }, 'm');
    const set = await openTensors(t.store, 'm');
    const view = set.get('embed.weight');
    const file = objectFile(t.root, view.digests[0]!);
    await fsp.chmod(file, 0o644);
    const bytes = await fsp.readFile(file);
    bytes[100] = bytes[100]! ^ 0xff;
    await fsp.writeFile(file, bytes);
    const got: Uint8Array[] = [];
    await expectCode(async () => {
      for await (const piece of view.pieces({ verify: true })) got.push(piece);
    }, 'corrupt');
    expect(got).toEqual([]);
    await expectCode(() => view.read({ verify: true }), 'corrupt');
  });

  it('a truncated object is corrupt on every read, verify or not', async () => {
    await importTree(t, { 'm.gguf': 'tiny.gguf' }, 'm');
    const set = await openTensors(t.store, 'm');
    const view = set.get('token_embd.weight');
    const file = objectFile(t.root, view.digests[0]!);
    await fsp.chmod(file, 0o644);
    await fsp.truncate(file, view.byteLength - 1);
    await expectCode(() => view.read(), 'corrupt');
    await expectCode(() => view.readInto(new Uint8Array(view.byteLength)), 'corrupt');
  });

  it('refuses a buffer too small for readInto', async () => {
    await importTree(t, { 'm.safetensors': 'tiny.safetensors' }, 'm');
    const view = (await openTensors(t.store, 'm')).get('embed.weight');
    await expectCode(() => view.readInto(new Uint8Array(view.byteLength - 1)), 'invalid_argument');
    await expectCode(() => view.readInto(new Uint8Array(view.byteLength), 1), 'invalid_argument');
  });

  it('a shard index naming a shard the snapshot lacks is not_found, whole-snapshot or by file', async () => {
    await importTree(
      t,
      {
        'model-00001-of-00002.safetensors': 'sharded/model-00001-of-00002.safetensors',
        'model.safetensors.index.json': 'sharded/model.safetensors.index.json',
      },
      'm',
    );
    await expectCode(() => openTensors(t.store, 'm'), 'not_found');
    await expectCode(() => openTensors(t.store, 'm', { file: 'model.safetensors.index.json' }), 'not_found');
    // The surviving shard alone still opens.
    const one = await openTensors(t.store, 'm', { file: 'model-00001-of-00002.safetensors' });
    expect(one.names().sort()).toEqual(['a.bias', 'a.weight']);
  });

  it('a shard index that disagrees with its shards is refused', async () => {
    const index = JSON.parse(await fsp.readFile(path.join(FIXTURES, 'sharded/model.safetensors.index.json'), 'utf8'));
    index.weight_map['a.bias'] = 'model-00002-of-00002.safetensors';
    await importTree(
      t,
      {
        'model-00001-of-00002.safetensors': 'sharded/model-00001-of-00002.safetensors',
        'model-00002-of-00002.safetensors': 'sharded/model-00002-of-00002.safetensors',
        'model.safetensors.index.json': new TextEncoder().encode(JSON.stringify(index)),
      },
      'm',
    );
    await expectCode(() => openTensors(t.store, 'm'), 'malformed');
  });

  it('a planned file whose records do not fall on tensor boundaries is corrupt', async () => {
    const bytes = await fsp.readFile(path.join(FIXTURES, 'tiny.safetensors'));
    // Cut the file in two halves that split a tensor, and call it safetensors-v1.
    const half = 700;
    const records: RecordRef[] = [];
    for (const part of [bytes.subarray(0, half), bytes.subarray(half)]) {
      const { id, length } = await t.store.put([part]);
      records.push({ digest: id, length });
    }
    const entry: ManifestFileEntry = {
      path: 'm.safetensors',
      kind: 'file',
      mode: 0o644,
      size: bytes.length,
      profile: 'safetensors-v1',
      records,
    };
    await commit(t.store, { put: [entry], ref: 'bad' });
    await expectCode(() => openTensors(t.store, 'bad'), 'corrupt');
  });

  it('a planned file whose first record is not its whole header is corrupt', async () => {
    const bytes = await fsp.readFile(path.join(FIXTURES, 'tiny.safetensors'));
    const records: RecordRef[] = [];
    for (const part of [bytes.subarray(0, 100), bytes.subarray(100)]) {
      const { id, length } = await t.store.put([part]);
      records.push({ digest: id, length });
    }
    const entry: ManifestFileEntry = {
      path: 'm.safetensors',
      kind: 'file',
      mode: 0o644,
      size: bytes.length,
      profile: 'safetensors-v1',
      records,
    };
    await commit(t.store, { put: [entry], ref: 'bad' });
    try {
      await openTensors(t.store, 'bad');
      expect.unreachable();
    } catch (error) {
      expect((error as { code: string }).code).toBe('corrupt');
      expect((error as { details: { rule: string } }).details.rule).toBe('tensors.header_record');
    }
  });

  it('a tensor file stored whole (blob-v1) still opens and reads through byte ranges', async () => {
    const bytes = await fsp.readFile(path.join(FIXTURES, 'tiny.safetensors'));
    const { id } = await t.store.put([bytes]);
    const entry: ManifestFileEntry = {
      path: 'old.safetensors',
      kind: 'file',
      mode: 0o644,
      size: bytes.length,
      profile: 'blob-v1',
      records: [{ digest: id, length: bytes.length }],
    };
    await commit(t.store, { put: [entry], ref: 'old' });
    const set = await openTensors(t.store, 'old');
    expect(set.files[0]!.aligned).toBe(false);
    for (const e of (await expectedTensors())['tiny.safetensors']!) {
      const view = set.get(e.name);
      // An empty tensor has no bytes: it is trivially aligned.
      expect(view.aligned).toBe(e.length === 0);
      expect(view.digests).toEqual([]);
      expect(sha256Hex(await view.read({ verify: true }))).toBe(e.sha256);
    }
    // Inheriting views that own no objects copies their bytes onto the planner's grid: the result
    // is exactly the file a planned import gives.
    const writer = new TensorWriter(t.store, 'old.safetensors', { metadata: { format: 'pt' } });
    for (const view of set) await writer.inherit(view);
    const copied = await writer.finish();
    await writer.close();
    const planned = await importTree(t, { 'old.safetensors': 'tiny.safetensors' });
    expect(copied).toEqual((await t.store.getManifest(planned)).entries[0]);
  });

  it('follows a symlink to the file inside the snapshot', async () => {
    await importTree(t, { 'real/m.safetensors': 'tiny.safetensors' }, 'm');
    await commit(t.store, {
      base: 'm',
      put: [{ path: 'link.safetensors', kind: 'symlink', target: 'real/m.safetensors' }],
      ref: 'm',
    });
    const set = await openTensors(t.store, 'm', { file: 'link.safetensors' });
    expect(set.files.map((f) => f.path)).toEqual(['real/m.safetensors']);
    expect((await set.get('positions').read()).length).toBe(96);
  });

  it('leaves out (and lists) a whole-stored .safetensors that does not parse; by file it is malformed', async () => {
    const before = await storedObjects(t.root);
    await importTree(
      t,
      // A header length of 10, then 10 bytes that are not JSON.
      {
        'junk.safetensors': new Uint8Array([10, 0, 0, 0, 0, 0, 0, 0, ...new TextEncoder().encode('not json!!')]),
        'ok.gguf': 'tiny.gguf',
      },
      'm',
    );
    expect((await storedObjects(t.root)).size).toBeGreaterThan(before.size);
    const set = await openTensors(t.store, 'm');
    expect(set.files.map((f) => f.path)).toEqual(['ok.gguf']);
    expect(set.skipped.map((s) => [s.path, s.code])).toEqual([['junk.safetensors', 'malformed']]);
    await expectCode(() => openTensors(t.store, 'm', { file: 'junk.safetensors' }), 'malformed');
  });
});
