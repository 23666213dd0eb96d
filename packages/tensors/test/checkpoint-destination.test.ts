/**
 * The checkpoint writer given an origin destination: objects stream to the origin while it
 * writes (only the ones it lacks), `commit()` publishes a tree holding the header and moves the
 * branch, and a failed upload keeps the local checkpoint and is still an error.
 */
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { decodeManifest, isTensorFSError, type ObjectId, resolveRevision, TensorFSError } from '@tensorfs/format';
import { MemoryStore } from '@tensorfs/format/store';
import { noise } from '@tensorfs/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointWriter } from '../src/index.js';
import { type TestStore, tempStore } from './helpers.js';

/** An origin counting what it admits, that can be made to fail its uploads. */
class CountingOrigin extends MemoryStore {
  admitted: ObjectId[] = [];
  fail = false;
  override async put(...args: Parameters<MemoryStore['put']>): ReturnType<MemoryStore['put']> {
    if (this.fail) throw new TensorFSError('unavailable', 'the origin is down', { details: { rule: 'test.down' } });
    const r = await super.put(...args);
    if (r.written) this.admitted.push(r.id);
    return r;
  }
}

let t: TestStore;
beforeEach(async () => {
  t = await tempStore('local');
});
afterEach(async () => {
  await t.close();
});

async function waitFor(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('timed out');
}

async function write(
  origin: MemoryStore,
  tensors: [string, number][],
  options: { variant?: string; resume?: string } = {},
) {
  const w = new CheckpointWriter(t.store, {
    destination: {
      origin,
      repo: 'acme/m',
      author: 'tester',
      message: 'convert',
      ...(options.variant !== undefined ? { variant: options.variant } : {}),
    },
    ...(options.resume !== undefined ? { resume: options.resume } : {}),
    // Its list is made at commit and sent with it (the default lists only what a source gives).
    fileSha256: true,
  });
  w.component('m', { cls: 'M', config: {} });
  for (const [name, seed] of tensors) await w.put(name, noise(64 * 1024, seed), { dtype: 'U8', shape: [64 * 1024] });
  return w;
}

describe('CheckpointWriter with an origin destination', () => {
  it('streams objects while writing, then publishes a tree with the header on the draft branch', async () => {
    const origin = new CountingOrigin();
    const w = await write(origin, [
      ['a', 1],
      ['b', 2],
    ]);
    // Before commit: the tensors' objects reach the origin in the background.
    const a = noise(64 * 1024, 1);
    const { id: aId } = await new MemoryStore().put([a]);
    await waitFor(() => origin.has(aId));
    expect(await origin.getRef('_branches/acme/m/draft')).toBeNull();
    const done = await w.commit({ name: 'local/m' });
    const p = done.published!;
    expect(p).toMatchObject({ repo: 'acme/m', branch: 'draft', path: 'model.cozytensors', previous: null });
    // The exact tree: one file, the header object, as model.cozytensors.
    const tree = decodeManifest(await origin.readObject(p.tree, { verify: true }));
    expect(tree.entries).toEqual([
      {
        path: 'model.cozytensors',
        kind: 'file',
        mode: 0o644,
        size: done.bytes.length,
        profile: 'blob-v1',
        records: [{ digest: done.id, length: done.bytes.length }],
      },
    ]);
    const r = await resolveRevision(origin, 'acme/m', 'draft');
    expect(r).toMatchObject({ commit: p.revision, target: p.tree, targetKind: 'tree' });
    expect(r.document).toMatchObject({ author: 'tester', message: 'convert', repo: 'acme/m', branch: 'draft' });
    // Nothing on main; every object sent once (two tensors, the header, the tree, the revision).
    expect(await origin.getRef('acme/m')).toBeNull();
    expect(new Set(origin.admitted).size).toBe(origin.admitted.length);
    expect(p.sent.objects).toBe(3);
    expect(await t.store.getRef('local/m')).toBe(done.id);
  });

  it('a variant lands next to the tree it is written to, sending only its new objects', async () => {
    const origin = new CountingOrigin();
    const base = await (
      await write(origin, [
        ['a', 1],
        ['b', 2],
      ])
    ).commit();
    const sentBefore = origin.admitted.length;
    const ft = await (
      await write(
        origin,
        [
          ['a', 1],
          ['b', 3],
        ],
        { variant: 'ft' },
      )
    ).commit();
    const p = ft.published!;
    expect(p.path).toBe('model.ft.cozytensors');
    expect(p.previous).toBe(base.published!.revision);
    const tree = decodeManifest(await origin.readObject(p.tree));
    expect(tree.entries.map((e) => e.path)).toEqual(['model.cozytensors', 'model.ft.cozytensors']);
    // New: tensor b (seed 3), the header; then its whole-file SHA-256 list, the tree and the revision.
    expect(p.sent.objects).toBe(2);
    expect(origin.admitted.length - sentBefore).toBe(5);
    const list = await origin.getRef(`_hf/sha256/${ft.id.slice(7)}`);
    expect(list).toBe(await t.store.getRef(`_hf/sha256/${ft.id.slice(7)}`));
    expect(origin.admitted.slice(sentBefore)).toContain(list);
  });

  it('an upload failure keeps the local checkpoint (and the journal) and is still an error; the branch stays', async () => {
    const origin = new CountingOrigin();
    const first = await (await write(origin, [['a', 1]])).commit();
    const journal = path.join(t.scratch, 'j');
    origin.fail = true;
    const w = await write(origin, [['c', 9]], { resume: journal });
    let error: unknown;
    try {
      await w.commit({ name: 'local/kept' });
    } catch (e) {
      error = e;
    }
    expect(isTensorFSError(error) && error.code).toBe('unavailable');
    const kept = (error as TensorFSError).details.checkpoint as ObjectId;
    expect(await t.store.getRef('local/kept')).toBe(kept);
    expect(await origin.getRef('_branches/acme/m/draft')).toBe(first.published!.revision);
    await fsp.access(journal);
    // Again with the journal, the origin back: the same checkpoint, published.
    origin.fail = false;
    const again = await (await write(origin, [['c', 9]], { resume: journal })).commit();
    expect(again.id).toBe(kept);
    expect(again.published!.previous).toBe(first.published!.revision);
    await expect(fsp.access(journal)).rejects.toThrow();
  });

  it('refuses a destination without an author or with a bad repository before writing', () => {
    const origin = new MemoryStore();
    const code = (d: object) => {
      try {
        new CheckpointWriter(t.store, { destination: { origin, ...d } as never });
      } catch (e) {
        if (isTensorFSError(e)) return `${e.code} ${String(e.details.rule)}`;
      }
      return 'ok';
    };
    expect(code({ repo: 'acme/m' })).toBe('invalid_argument repo.author_required');
    expect(code({ repo: 'acme/m', author: 'x', variant: 'a.b' })).toBe('invalid_argument repo.variant_name');
    expect(code({ repo: '_x/y', author: 'x' })).toMatch(/^invalid_argument /);
  });
});
