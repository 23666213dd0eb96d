/**
 * `tfs convert … --to <origin> --repo R[@branch] [--resume DIR]`: the conversion publishes to a
 * hub as it writes; a token limited to drafts cannot move `main` (exit 8, nothing changed); a
 * conversion killed with SIGKILL and started again with the same `--resume` sends no object twice
 * and publishes the same tree as an uninterrupted run.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { branchRefName, decodeManifest, type ObjectId, resolveRevision } from '@tensorfs/format';
import { type Hub, StoreOrigin, serveHub, type TokensConfig } from '@tensorfs/remote';
import { noise, safetensorsBytes, tempDir } from '@tensorfs/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, tfs } from './remote-servers.js';

const WRITER = 'writer-token-0123456789';
const DRAFTS = 'drafts-token-0123456789';
const TAGS = 'tags-token-0123456789';
const TOKENS: TokensConfig = {
  tokens: [
    // A plain glob: the form of tokens files from before repositories.
    { token: WRITER, read: ['*'], write: ['acme/*'] },
    { token: DRAFTS, read: ['acme/*'], write: ['acme/*@draft'] },
    { token: TAGS, read: ['acme/*'], tag: ['acme/*'] },
  ],
};
const ownerOf = (token: string) => createHash('sha256').update(token).digest('hex').slice(0, 16);

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

/** A hub over a fresh store that counts the objects it admits and can hold uploads past a count. */
async function countingHub() {
  const store = await LocalStore.open(join(tempDir('tfs-hub-'), 'store'));
  const origin = new StoreOrigin(store);
  const admitted: ObjectId[] = [];
  let holdAfter = Number.POSITIVE_INFINITY;
  let release: ((ok: boolean) => void) | undefined;
  const held = new Promise<boolean>((r) => {
    release = r;
  });
  const write = origin.write.bind(origin);
  let started = 0;
  origin.write = async (id, length, body, options) => {
    // Uploads past `holdAfter` wait (the first ones may still be running).
    if (++started > holdAfter && !(await held)) throw new Error('held upload dropped');
    await write(id, length, body, options);
    admitted.push(id);
  };
  const hub: Hub = await serveHub(origin, { tokens: TOKENS });
  cleanups.push(async () => {
    release?.(false);
    await hub.close(0);
    await store.close();
  });
  return {
    hub,
    store,
    admitted,
    hold(n: number) {
      holdAfter = n;
      started = admitted.length;
    },
    drop() {
      release?.(false);
    },
  };
}

/** A single-file model: 12 tensors of 96 KiB. */
function model(): string {
  const dir = tempDir('tfs-model-');
  const tensors = Array.from({ length: 12 }, (_, i) => ({ name: `layer.${i}.weight`, data: noise(96 * 1024, i + 1) }));
  writeFileSync(join(dir, 'model.safetensors'), safetensorsBytes(tensors));
  return join(dir, 'model.safetensors');
}

function convert(src: string, store: string, hub: string, token: string, extra: string[] = []) {
  return [
    'convert',
    src,
    '--store',
    store,
    '--to',
    hub,
    '--threads',
    '1',
    '--json',
    ...extra,
    // env
    token,
  ];
}

function run(args: string[]) {
  const token = args.pop()!;
  return tfs(args, { TENSORFS_TOKEN: token });
}

describe('tfs convert --to', () => {
  it('publishes to a hub draft, authored by the token, and a drafts-only token cannot move main (exit 8)', async () => {
    const h = await countingHub();
    const src = model();
    const local = join(tempDir('tfs-local-'), 'store');
    const ok = await run(convert(src, local, h.hub.url, WRITER, ['--repo', 'acme/m', '--message', 'first']));
    expect(ok.code, ok.stderr).toBe(0);
    const out = JSON.parse(ok.stdout);
    expect(out.published).toMatchObject({ repo: 'acme/m', branch: 'draft', path: 'model.cozytensors' });
    const r = await resolveRevision(h.store, 'acme/m', 'draft');
    expect(r).toMatchObject({ commit: out.published.revision, target: out.published.tree });
    expect(r.document).toMatchObject({ author: ownerOf(WRITER), message: 'first' });
    const tree = decodeManifest(await h.store.readObject(out.published.tree));
    expect(tree.entries.map((e) => [e.path, e.kind === 'file' ? e.records[0]!.digest : null])).toEqual([
      ['model.cozytensors', out.id],
    ]);
    // The local checkpoint: at the local acme/m@draft ref.
    const ls = await LocalStore.open(local);
    expect(await ls.getRef(branchRefName('acme/m', 'draft'))).toBe(out.id);
    await ls.close();

    // A drafts-only token: main is refused, nothing changes on the hub.
    const refsBefore = (await h.store.listRefs()).map((x) => `${x.name}=${x.id}`);
    const denied = await run(
      convert(src, local, h.hub.url, DRAFTS, ['--repo', 'acme/m@main', '--variant', 'int8', '--name', 'x/y']),
    );
    expect(denied.code).toBe(8);
    expect(JSON.parse(denied.stderr).error).toMatchObject({ code: 'denied', details: { rule: 'hub.scope' } });
    expect((await h.store.listRefs()).map((x) => `${x.name}=${x.id}`)).toEqual(refsBefore);
    // A tags-only token moves no branch at all.
    const tagsOnly = await run(convert(src, local, h.hub.url, TAGS, ['--repo', 'acme/m@draft', '--name', 'x/z']));
    expect(tagsOnly.code).toBe(8);
    expect(JSON.parse(tagsOnly.stderr).error).toMatchObject({ code: 'denied', details: { rule: 'hub.scope' } });
    expect((await h.store.listRefs()).map((x) => `${x.name}=${x.id}`)).toEqual(refsBefore);
    // The old-form writer still pushes main the pre-repository way (a bare id).
    const pushed = await run(['push', h.hub.url, 'x/y', '--name', 'acme/m', '--store', local, '--json', WRITER]);
    expect(pushed.code, pushed.stderr).toBe(0);
    // The refused conversion kept its checkpoint locally (at --name), which is what was pushed.
    const kept = JSON.parse(denied.stderr).error.details.checkpoint;
    expect(kept).toBe(out.id);
    expect(await h.store.getRef('acme/m')).toBe(kept);
    // Its own draft it may move.
    const draft = await run(convert(src, local, h.hub.url, DRAFTS, ['--repo', 'acme/m', '--variant', 'int8']));
    expect(draft.code, draft.stderr).toBe(0);
    const d = await resolveRevision(h.store, 'acme/m', 'draft');
    expect(d.document).toMatchObject({ author: ownerOf(DRAFTS) });
    const t2 = decodeManifest(await h.store.readObject(d.target));
    expect(t2.entries.map((e) => e.path)).toEqual(['model.cozytensors', 'model.int8.cozytensors']);
  });

  it('a conversion killed with SIGKILL continues with --resume: no object sent twice, the same tree as one run', async () => {
    const src = model();
    // The uninterrupted run, to another hub.
    const straight = await countingHub();
    const one = await run(
      convert(src, join(tempDir('tfs-a-'), 'store'), straight.hub.url, WRITER, ['--repo', 'acme/m']),
    );
    expect(one.code, one.stderr).toBe(0);
    const expected = JSON.parse(one.stdout);

    const h = await countingHub();
    const local = join(tempDir('tfs-local-'), 'store');
    const resume = tempDir('tfs-resume-');
    // Uploads past the fifth are held; the process is killed while it waits on one.
    h.hold(5);
    const args = convert(src, local, h.hub.url, WRITER, ['--repo', 'acme/m', '--resume', resume]);
    const token = args.pop()!;
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, TENSORFS_TOKEN: token },
      stdio: 'ignore',
    });
    const exited = new Promise<NodeJS.Signals | null>((r) => child.once('exit', (_c, s) => r(s)));
    for (let i = 0; i < 3000 && h.admitted.length < 5; i++) await new Promise((r) => setTimeout(r, 10));
    expect(h.admitted.length).toBe(5);
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    h.drop(); // the held upload never completes
    expect(await h.store.getRef(branchRefName('acme/m', 'draft'))).toBeNull();
    const first = [...h.admitted];

    h.hold(Number.POSITIVE_INFINITY);
    const again = await run(convert(src, local, h.hub.url, WRITER, ['--repo', 'acme/m', '--resume', resume]));
    expect(again.code, again.stderr).toBe(0);
    const out = JSON.parse(again.stdout);
    // The import was journaled too: the source was not read again.
    expect(out.resumed).toEqual({ import: true });
    // Every object admitted once across both runs; the first run's were not sent again.
    expect(new Set(h.admitted).size).toBe(h.admitted.length);
    expect(h.admitted.slice(0, first.length)).toEqual(first);
    expect(out.published.sent.objects).toBe(expected.published.sent.objects - first.length);
    // The same checkpoint and tree as the uninterrupted run.
    expect(out.id).toBe(expected.id);
    expect(out.published.tree).toBe(expected.published.tree);
    expect(h.admitted.length).toBe(straight.admitted.length);
  }, 60_000);
});
