/**
 * A tree's whole-file SHA-256 list travels with it: pushed to an origin and pulled back (plain pull
 * and pullRevision), then a read-only hub over the pulled store answers the first HEAD of a
 * multi-record file from it.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { fileSha256Ref, readFileSha256 } from '@tensorfs/cas';
import { bytesOf, safetensorsBytes, tempDir } from '@tensorfs/testkit';
import { convertSnapshot } from '@tensorfs/tensors';
import { describe, expect, it } from 'vitest';
import { FolderOrigin, StoreOrigin, publishTree, pull, pullRevision, push, serveHub } from '../src/index.js';
import { after, folderOf, newStore } from './helpers.js';

const model = safetensorsBytes([
  { name: 'a', data: bytesOf(2 << 20, 1) },
  { name: 'b', data: bytesOf(3 << 20, 2) },
]);
const sha = createHash('sha256').update(model).digest('hex');

describe('whole-file SHA-256 lists carried by push and pull', () => {
  it('push then pull copies the list; a read-only hub over the pulled store uses it', async () => {
    const a = await newStore();
    const r = await a.importPath(folderOf({ 'model.safetensors': model, 'config.json': bytesOf(10, 3) }), {
      name: 'team/m',
      fileSha256: true,
    });
    const origin = new FolderOrigin(join(tempDir('tfs-origin-'), 'o'));
    await push(a, origin, 'team/m');
    expect(await origin.getRef(fileSha256Ref(r.snapshot))).toBe(await a.getRef(fileSha256Ref(r.snapshot)));

    const b = await newStore();
    await pull(b, origin, 'team/m');
    expect([...(await readFileSha256(b, r.snapshot)).values()]).toEqual([sha]);

    // An upload (a branch move) carries it too, and pullRevision brings it back.
    const up = new FolderOrigin(join(tempDir('tfs-origin-'), 'u'));
    await publishTree(a, up, r.snapshot, { repo: 'team/up', branch: 'main', author: 't', message: 'm' });
    const c = await newStore();
    await pullRevision(c, up, 'team/up@main');
    expect([...(await readFileSha256(c, r.snapshot)).values()]).toEqual([sha]);

    const hub = await serveHub(new StoreOrigin(b));
    after(() => hub.close());
    const head = await fetch(`${hub.url}/team/m/resolve/main/model.safetensors`, { method: 'HEAD' });
    expect([head.status, head.headers.get('x-linked-etag')]).toEqual([200, `"${sha}"`]);
  });

  it('asks an origin for no list when the tree has no file of several records', async () => {
    const a = await newStore();
    await a.importPath(folderOf({ 'w.bin': bytesOf(1 << 20, 5) }), { name: 'team/blob' });
    const origin = new FolderOrigin(join(tempDir('tfs-origin-'), 'o'));
    await push(a, origin, 'team/blob');
    const asked: string[] = [];
    const getRef = origin.getRef.bind(origin);
    origin.getRef = (name, options) => {
      asked.push(name);
      return getRef(name, options);
    };
    await pull(await newStore(), origin, 'team/blob');
    expect(asked).toEqual(['team/blob']);
  });

  it("a checkpoint's list (of its export) travels with it: push, pull, a --to publish, pullRevision of the variant tree", async () => {
    const a = await newStore();
    const config = new TextEncoder().encode('{"model_type":"llama"}\n');
    await a.importPath(folderOf({ 'model.safetensors': model, 'config.json': config }), { name: 'src' });
    const cp = await convertSnapshot(a, 'src', { name: 'team/ck', fileSha256: true });
    const listRef = await a.getRef(fileSha256Ref(cp.id));
    expect(listRef).not.toBeNull();
    expect([...(await readFileSha256(a, cp.id)).values()]).toEqual([sha]);

    // push + pull: the checkpoint header is the top, its list goes with it.
    const origin = new FolderOrigin(join(tempDir('tfs-origin-'), 'o'));
    await push(a, origin, 'team/ck');
    expect(await origin.getRef(fileSha256Ref(cp.id))).toBe(listRef);
    const b = await newStore();
    await pull(b, origin, 'team/ck');
    expect(await b.getRef(fileSha256Ref(cp.id))).toBe(listRef);
    const hub = await serveHub(new StoreOrigin(b));
    after(() => hub.close());
    const head = await fetch(`${hub.url}/team/ck/resolve/main/model.safetensors`, { method: 'HEAD' });
    expect([head.status, head.headers.get('x-linked-etag')]).toEqual([200, `"${sha}"`]);

    // convert --to: the writer sends the list to the origin with the checkpoint; the tree holding
    // it as model.cozytensors carries it on pullRevision.
    const up = new FolderOrigin(join(tempDir('tfs-origin-'), 'u'));
    const published = await convertSnapshot(a, 'src', {
      name: 'team/ck2',
      fileSha256: true,
      destination: { origin: up, repo: 'team/up', branch: 'main', author: 't' },
    });
    expect(published.id).toBe(cp.id);
    expect(await up.getRef(fileSha256Ref(cp.id))).toBe(listRef);
    const c = await newStore();
    await pullRevision(c, up, 'team/up@main');
    expect(await c.getRef(fileSha256Ref(cp.id))).toBe(listRef);
    const hubC = await serveHub(new StoreOrigin(c));
    after(() => hubC.close());
    const headC = await fetch(`${hubC.url}/team/up/resolve/main/model.safetensors`, { method: 'HEAD' });
    expect([headC.status, headC.headers.get('x-linked-etag')]).toEqual([200, `"${sha}"`]);
  });
});
