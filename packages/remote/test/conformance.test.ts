// The storage contract's conformance suite (`@tensorfs/format/store/conformance`) against every
// remote implementation: the folder origin, static HTTP (nginx over a folder, read-only), the hub
// client (a hub over the local store, and a hub over the in-memory store: the hub serves any
// implementation), S3 (moto_server), and the store that fetches on a miss (wrapping two stores of
// different kinds). Every server is started here on loopback and stopped after.
import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { openStore } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import { MemoryStore } from '@tensorfs/format/store';
import type { ConformanceReport } from '@tensorfs/format/store/conformance';
import { expectConformant, type Moto, outcomes, startMoto, startNginx, tempDir } from '@tensorfs/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FetchingStore, FolderOrigin, HubOrigin, S3Origin, s3ConfigFromEnv, serveHub } from '../src/index.js';
import { after } from './helpers.js';

const TOKEN = 'conformance-token-0123456789';

/** The first three words of every check that did not apply. */
function notApplicable(report: ConformanceReport): string[] {
  return Object.entries(outcomes(report))
    .filter(([, o]) => o === 'not applicable')
    .map(([c]) => c.split(' ').slice(0, 3).join(' '));
}

function plantFile(root: string) {
  let n = 0;
  return async (name: string) => {
    const file = join(root, ...name.split('/'));
    mkdirSync(dirname(file), { recursive: true });
    if (n++ % 2 === 0) writeFileSync(file, 'not an id at all\n');
    else symlinkSync('/etc/passwd', file);
  };
}

describe('the storage contract over the remote implementations', () => {
  it('folder origin', async () => {
    const root = tempDir();
    const o = new FolderOrigin(root);
    const report = await expectConformant({
      name: 'folder origin',
      store: o,
      plantBadRef: plantFile(join(root, 'refs')),
    });
    expect(notApplicable(report)).toEqual(['objects: a batch', 'refs: a ref', 'absent capabilities: their']);
    // A FIFO is named as not a regular file, and does not hang the listing.
    expect(spawnSync('mkfifo', [join(root, 'refs', 'fifo')]).status).toBe(0);
    const listing = await o.scanRefs();
    expect(listing.problems.find((p) => p.name === 'fifo')).toMatchObject({ code: 'corrupt', rule: 'ref.not_regular' });
  });

  it('static HTTP origin (nginx over a folder): read-only, writes refused unsupported', async () => {
    const root = tempDir();
    const nginx = await startNginx(root);
    after(() => nginx.stop().then(() => {}));
    const { StaticHttpOrigin } = await import('../src/index.js');
    const o = new StaticHttpOrigin(nginx.url);
    after(() => o.close());
    const filler = new FolderOrigin(root);
    const report = await expectConformant({
      name: 'static HTTP origin (nginx)',
      store: o,
      seed: async (objects, refs) => {
        for (const bytes of objects) await filler.put(bytes);
        for (const [name, id] of Object.entries(refs)) await filler.setRef(name, id as ObjectId);
      },
    });
    expect(report.capabilities).toEqual([]);
    const o2 = outcomes(report);
    expect(o2['absent capabilities: their calls are refused unsupported']).toBe('passed');
    expect(o2['objects: a read past the end is invalid_argument']).toBe('passed');
    expect(o2['cancellation: an aborted signal ends calls cancelled']).toBe('passed');
  });

  it('hub client over a hub serving the local store', async () => {
    const store = await openStore(tempDir());
    after(() => store.close());
    const hub = await serveHub(store, { tokens: { tokens: [{ token: TOKEN, read: ['*'], write: ['*'] }] } });
    after(() => hub.close(100));
    const o = new HubOrigin(hub.url, { credential: TOKEN });
    after(() => o.close());
    const report = await expectConformant({
      name: 'hub client (hub over the local store)',
      store: o,
      plantBadRef: plantFile(join(store.root, 'refs')),
    });
    expect(notApplicable(report)).toEqual(['objects: a batch']);
    expect(
      outcomes(report)[`refs: 8 concurrent compare-and-swaps with the same expected value, exactly one winner`],
    ).toBe('passed');
  });

  it('hub client over a hub serving the in-memory store (the hub serves any implementation)', async () => {
    const store = new MemoryStore();
    const hub = await serveHub(store, { tokens: { tokens: [{ token: TOKEN, read: ['*'], write: ['*'] }] } });
    after(() => hub.close(100));
    const o = new HubOrigin(hub.url, { credential: TOKEN });
    after(() => o.close());
    await expectConformant({
      name: 'hub client (hub over the in-memory store)',
      store: o,
      plantBadRef: async (name) => {
        store.refs.set(name, 'garbage' as ObjectId);
      },
    });
  });

  it('the fetch-on-miss store wraps any two implementations (memory over folder, local over memory)', async () => {
    const remote = new FolderOrigin(tempDir());
    const local = new MemoryStore();
    const a = new FetchingStore(local, remote);
    after(() => a.close());
    await expectConformant({
      name: 'fetch-on-miss (memory store, misses from a folder origin)',
      store: a,
      plantBadRef: async (name) => {
        local.refs.set(name, 'garbage' as ObjectId);
      },
    });
    const disk = await openStore(tempDir());
    after(() => disk.close());
    const b = new FetchingStore(disk, new MemoryStore());
    after(() => b.close());
    await expectConformant({
      name: 'fetch-on-miss (local store, misses from the in-memory store)',
      store: b,
      plantBadRef: plantFile(join(disk.root, 'refs')),
    });
    // A miss is fetched: an object only the remote holds reads through, and is local afterwards.
    const bytes = new TextEncoder().encode('only at the origin');
    const { id } = await remote.put(bytes);
    expect(await local.has(id)).toBe(false);
    expect(await a.readObject(id)).toEqual(bytes);
    expect(await local.has(id)).toBe(true);
  });
});

describe('the storage contract over S3 (moto_server)', () => {
  let moto: Moto;
  beforeAll(async () => {
    moto = await startMoto('tfs-conformance');
  }, 60_000);
  afterAll(async () => {
    await moto?.stop();
  });

  it('S3 origin', async () => {
    const prefix = `conf${Date.now()}`;
    const o = new S3Origin(`s3://${moto.bucket}/${prefix}/`, { env: moto.env });
    after(() => o.close());
    const client = new S3Client(s3ConfigFromEnv(moto.env));
    after(() => client.destroy());
    const report = await expectConformant({
      name: 's3 origin (moto)',
      store: o,
      plantBadRef: async (name) => {
        await client.send(
          new PutObjectCommand({ Bucket: moto.bucket, Key: `${prefix}/refs/${name}`, Body: 'garbage, not an id' }),
        );
      },
    });
    expect(notApplicable(report)).toEqual(['objects: a batch', 'refs: a ref']);
  });
});
