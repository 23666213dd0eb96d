/**
 * Listings that show what they can (issue 11): one bad ref — a symlink, a file that is not one id
 * and a newline, a ref naming a missing, corrupt or non-manifest object — must not hide the good
 * ones from `checkRefs` and `usage`, while `listRefs` (what GC and verify start from) still refuses.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import { describe, expect, it, vi } from 'vitest';
import { bytesOf, expectCode, idOf, objectFile, tempDir } from '@tensorfs/testkit';

async function damagedStore() {
  const root = join(tempDir(), 'store');
  const s = await LocalStore.open(root);
  const ids: Record<string, ObjectId> = {};
  for (const [i, name] of ['a', 'b', 'c', 'd'].entries()) {
    const src = join(tempDir(), name);
    mkdirSync(src);
    writeFileSync(join(src, `${name}.bin`), bytesOf(1000 + i, i + 1));
    ids[name] = (await s.importPath(src, { name: `local/${name}` })).snapshot;
  }
  // c: its manifest moved away (a partial restore); d: its manifest's bytes changed.
  renameSync(objectFile(root, ids.c!), join(tempDir(), 'parked'));
  const d = objectFile(root, ids.d!);
  const bytes = readFileSync(d);
  bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 1, bytes.length - 1);
  chmodSync(d, 0o644);
  writeFileSync(d, bytes);
  // A ref naming a plain object (no manifest), a ref file holding garbage, a symlinked ref.
  const blob = bytesOf(500, 9);
  await s.put(blob);
  await s.setRef('local/tensor', idOf(blob));
  writeFileSync(join(root, 'refs', 'local', 'garbage'), 'not an id\n');
  const elsewhere = join(tempDir(), 'r');
  writeFileSync(elsewhere, `${ids.a}\n`);
  symlinkSync(elsewhere, join(root, 'refs', 'local', 'link'));
  return { root, s, ids, blob: idOf(blob) };
}

describe('ref listings with bad refs', () => {
  it('checkRefs lists every good ref and names each bad one with its code and rule', async () => {
    const { s, ids, blob } = await damagedStore();
    const r = await s.checkRefs();
    expect(r.refs).toEqual([
      { name: 'local/a', id: ids.a, kind: 'snapshot' },
      { name: 'local/b', id: ids.b, kind: 'snapshot' },
    ]);
    expect(r.problems.map(({ message: _, ...p }) => p)).toEqual([
      { name: 'local/c', id: ids.c, code: 'corrupt', rule: 'ref.target_missing' },
      { name: 'local/d', id: ids.d, code: 'corrupt', rule: 'store.digest' },
      { name: 'local/garbage', code: 'corrupt', rule: 'ref.content' },
      { name: 'local/link', code: 'corrupt', rule: 'ref.not_regular' },
      { name: 'local/tensor', id: blob, code: 'corrupt', rule: 'ref.target_malformed' },
    ]);
    for (const p of r.problems) expect(p.message).not.toContain(s.root);
    await s.close();
  });

  it('scanRefs lists every ref whose file reads (no object read) and names the other entries', async () => {
    const { s, ids, blob } = await damagedStore();
    const r = await s.scanRefs();
    expect(r.refs).toEqual([
      { name: 'local/a', id: ids.a },
      { name: 'local/b', id: ids.b },
      { name: 'local/c', id: ids.c },
      { name: 'local/d', id: ids.d },
      { name: 'local/tensor', id: blob },
    ]);
    expect(r.problems.map(({ message: _, ...p }) => p)).toEqual([
      { name: 'local/garbage', code: 'corrupt', rule: 'ref.content' },
      { name: 'local/link', code: 'corrupt', rule: 'ref.not_regular' },
    ]);
    for (const p of r.problems) expect(p.message).not.toContain(s.root);
    await s.close();
  });

  it('usage measures the good refs and names the bad ones; listRefs and GC still refuse', async () => {
    const { s, ids } = await damagedStore();
    const u = await s.usage();
    expect(u.refs.map((r) => [r.name, r.id, r.logicalBytes, r.objects])).toEqual([
      ['local/a', ids.a, 1000, 2],
      ['local/b', ids.b, 1001, 2],
    ]);
    expect(u.logicalBytes).toBe(2001);
    expect(u.problems.map((p) => [p.name, p.code, p.rule])).toEqual([
      ['local/c', 'corrupt', 'ref.target_missing'],
      ['local/d', 'corrupt', 'store.digest'],
      ['local/garbage', 'corrupt', 'ref.content'],
      ['local/link', 'corrupt', 'ref.not_regular'],
      ['local/tensor', 'corrupt', 'ref.target_malformed'],
    ]);
    // GC and verify start from listRefs: a root they cannot read makes them refuse, naming it.
    const e = await expectCode(s.listRefs(), 'corrupt');
    expect(e.details).toMatchObject({
      rule: 'ref.content',
      ref: 'local/garbage',
      refs: ['local/garbage', 'local/link'],
    });
    await expectCode(s.gc({ graceMs: 0 }), 'corrupt');
    await expectCode(s.gc({ graceMs: 0, dryRun: true }), 'corrupt');
    await s.close();
  });

  it('once the bad refs are removed there are no problems; an aborted signal is cancelled', async () => {
    const { s } = await damagedStore();
    for (const name of ['local/c', 'local/d', 'local/garbage', 'local/link', 'local/tensor']) await s.deleteRef(name);
    expect((await s.checkRefs()).problems).toEqual([]);
    expect((await s.usage()).problems).toEqual([]);
    await expectCode(s.checkRefs({ signal: AbortSignal.abort() }), 'cancelled');
    await s.close();
  });

  it('usage reads each head object once (the check, the walk and the logical size share it)', async () => {
    const { root, s, ids } = await damagedStore();
    await s.addRoot(ids.b!, 'keep b');
    // The first run quarantines local/d's damaged manifest; the counted run sees the same figures.
    const { problems: _, ...expected } = await s.usage();
    const heads = new Map([ids.a!, ids.b!].map((id) => [objectFile(root, id), id]));
    const opened: string[] = [];
    /** Records each open of a head object through `module.open`/`openSync`, then opens it. */
    const counting = <M extends { open: unknown } | { openSync: unknown }>(module: M, name: keyof M) => {
      const real = module[name] as (...a: unknown[]) => unknown;
      return vi.spyOn(module, name as never).mockImplementation(((p: string, ...rest: unknown[]) => {
        const id = heads.get(String(p));
        if (id !== undefined) opened.push(id);
        return real(p, ...rest);
      }) as never);
    };
    const spy = counting(fsp, 'open');
    // Small objects are opened with a direct syscall: count those opens too.
    const spySync = counting(fs, 'openSync');
    syncBuiltinESMExports();
    try {
      const { problems, ...measured } = await s.usage();
      expect(measured).toEqual(expected);
      expect(problems.map((p) => p.name)).toEqual([
        'local/c',
        'local/d',
        'local/garbage',
        'local/link',
        'local/tensor',
      ]);
    } finally {
      spy.mockRestore();
      spySync.mockRestore();
      syncBuiltinESMExports();
    }
    // Once each: b is both local/b and a root, measured once.
    expect(opened.sort()).toEqual([ids.a!, ids.b!].sort());
    expect(expected.refs.map((r) => [r.name, r.logicalBytes])).toEqual([
      ['local/a', 1000],
      ['local/b', 1001],
    ]);
    await s.close();
  });
});
