import { join } from 'node:path';
import type { ObjectId } from '@tensorfs/format';
import { describe, expect, it } from 'vitest';
import { FolderOrigin, HubOrigin, type Origin, StoreOrigin, pull, push, serveHub } from '../src/index.js';
import { bytesOf, idOf, tempDir } from '@tensorfs/testkit';
import { after, code, newStore, sampleFiles, storeWith } from './helpers.js';

type Make = () => Promise<Origin>;

const TOKEN = 'tok-roundtrip-0123456789';

const origins: [string, Make][] = [
  ['folder', async () => new FolderOrigin(join(tempDir(), 'origin'))],
  [
    'hub over a store',
    async () => {
      const backing = await newStore();
      const hub = await serveHub(new StoreOrigin(backing), {
        tokens: { tokens: [{ token: TOKEN, read: ['*'], write: ['*'] }] },
      });
      after(() => hub.close());
      return new HubOrigin(hub.url, { credential: TOKEN });
    },
  ],
  [
    'hub over a folder',
    async () => {
      const hub = await serveHub(new FolderOrigin(join(tempDir(), 'origin')), {
        tokens: { tokens: [{ token: TOKEN, read: ['*'], write: ['*'] }] },
      });
      after(() => hub.close());
      return new HubOrigin(hub.url, { credential: TOKEN });
    },
  ],
];

describe.each(origins)('push and pull through %s', (_label, make) => {
  it('sends only what is lacking, pulls only what is missing, and names nothing until all is present', async () => {
    const { store: a, id } = await storeWith('team/model');
    const origin = await make();
    const p1 = await push(a, origin, 'team/model');
    expect(p1).toMatchObject({ name: 'team/model', id, previous: null, objects: { total: 4, sent: 4, present: 0 } });
    expect(await origin.getRef('team/model')).toBe(id);
    // Pushing again sends nothing.
    const p2 = await push(a, origin, 'team/model');
    expect(p2.objects).toEqual({ total: 4, sent: 0, present: 4 });
    expect(p2.bytes.sent).toBe(0);

    const b = await newStore();
    const r1 = await pull(b, origin, 'team/model');
    expect(r1).toMatchObject({ name: 'team/model', id, remoteId: id, objects: { total: 4, present: 0, fetched: 4 } });
    expect(r1.bytes.fetched).toBe(r1.bytes.total);
    expect(await b.getRef('team/model')).toBe(id);
    expect((await b.verify({ data: true })).corrupt).toEqual([]);
    const w = await b.readObject(
      (await b.getManifest(id)).entries.find((e) => e.path === 'unet/weights.bin')!.kind === 'file'
        ? (
            (await b.getManifest(id)).entries.find((e) => e.path === 'unet/weights.bin') as {
              records: { digest: ObjectId }[];
            }
          ).records[0]!.digest
        : id,
    );
    expect(idOf(w)).toBe(idOf(sampleFiles()['unet/weights.bin']!));
    const r2 = await pull(b, origin, 'team/model', { name: 'again' });
    expect(r2.objects).toEqual({ total: 4, present: 4, fetched: 0 });
    expect(r2.bytes.fetched).toBe(0);
  });

  it('moves the remote ref by compare-and-swap: a concurrent move is a conflict', async () => {
    const { store: a } = await storeWith('team/model');
    const origin = await make();
    await push(a, origin, 'team/model');
    const other = await a.importPath((await import('./helpers.js')).folderOf({ 'x.bin': bytesOf(1000, 9) }), {
      name: 'team/other',
    });
    expect(await code(push(a, origin, 'team/other', { name: 'team/model', expected: null }))).toBe('conflict');
    expect(await code(push(a, origin, 'team/other', { name: 'team/model', expected: other.snapshot }))).toBe(
      'conflict',
    );
    await push(a, origin, 'team/other', { name: 'team/model' });
    expect(await origin.getRef('team/model')).toBe(other.snapshot);
  });

  it('pulls one component as a snapshot of just it, fetching only its objects', async () => {
    const { store: a, id } = await storeWith('team/model');
    const origin = await make();
    await push(a, origin, 'team/model');
    const b = await newStore();
    const r = await pull(b, origin, 'team/model', { components: ['text'], name: 'local/text' });
    expect(r.remoteId).toBe(id);
    expect(r.id).not.toBe(id);
    const m = await b.getManifest(r.id);
    expect(m.entries.map((e) => e.path)).toEqual(['text/encoder.bin']);
    expect(r.objects.fetched).toBe(2); // the manifest and the one record
    expect(r.bytes.fetched).toBeLessThan(130_000);
    expect(await code(pull(b, origin, 'team/model', { components: ['nope'] }))).toBe('not_found');
  });

  it('an absent ref is not_found and names nothing', async () => {
    const origin = await make();
    const b = await newStore();
    expect(await code(pull(b, origin, 'team/none'))).toBe('not_found');
    expect(await b.getRef('team/none')).toBeNull();
  });
});

describe('a folder origin that is a file', () => {
  it('pull and push fail conflict (folder.not_a_folder), naming nothing', async () => {
    const { writeFileSync } = await import('node:fs');
    const file = join(tempDir(), 'not-a-folder');
    writeFileSync(file, 'hello');
    const { store } = await storeWith('team/model');
    for (const run of [
      () => pull(store, new FolderOrigin(file), 'team/model', { name: 'team/other' }),
      () => push(store, new FolderOrigin(file), 'team/model'),
    ]) {
      const err = await run().then(
        () => undefined,
        (e) => e,
      );
      expect([err?.code, err?.details?.rule]).toEqual(['conflict', 'folder.not_a_folder']);
    }
    expect(await store.getRef('team/other')).toBeNull();
    // A ref name below an existing ref is simply absent.
    const folder = join(tempDir(), 'origin');
    await push(store, new FolderOrigin(folder), 'team/model');
    expect(await new FolderOrigin(folder).getRef('team/model/v2')).toBeNull();
  });
});
