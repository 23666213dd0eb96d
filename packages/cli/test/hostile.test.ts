/**
 * `tfs` under a hostile user (issue 11): special files as outputs and inputs, refs and manifests
 * that are not what the store wrote, interrupted commands, failing stdout, control characters.
 * Tests that spawn `tfs` run the built `dist/bin.js` (`pnpm build` first).
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalStore } from '@tensorfs/cas';
import type { ObjectId } from '@tensorfs/format';
import { afterEach, describe, expect, it } from 'vitest';
import { capture, tfs as run } from './helpers.js';
import { defaultRefName } from '../src/commands/store.js';
import { run as runIo } from '../src/index.js';

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../../tensors/test/fixtures/', import.meta.url));

const dirs: string[] = [];
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), 'tfs-cli-hostile-'));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function tfs(store: string, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const r = await run([...argv, '--store', store]);
  return { code: r.code, out: r.stdout, err: r.stderr };
}

/** Runs the built `tfs` as a process. */
function proc(store: string, args: string[], input?: string) {
  const r = spawnSync(process.execPath, [BIN, ...args, '--store', store], { encoding: 'utf8', input });
  return { code: r.status, out: r.stdout, err: r.stderr, signal: r.signal };
}

function objectFile(root: string, id: string): string {
  const hex = id.slice(7);
  return join(root, 'objects', 'sha256', hex.slice(0, 2), hex.slice(2, 4), hex);
}

/** A store holding the tiny safetensors fixture as `local/m`. */
async function tinyStore(): Promise<{ store: string; snapshot: string }> {
  const store = join(temp(), 'store');
  const tree = join(temp(), 'tree');
  mkdirSync(tree);
  writeFileSync(join(tree, 'm.safetensors'), readFileSync(join(FIXTURES, 'tiny.safetensors')));
  const s = await LocalStore.open(store);
  const r = await s.importPath(tree, { name: 'local/m', threads: 1 });
  await s.close();
  return { store, snapshot: r.snapshot };
}

const expected = () =>
  JSON.parse(readFileSync(join(FIXTURES, 'expected.json'), 'utf8'))['tiny.safetensors'].find(
    (x: { name: string }) => x.name === 'embed.weight',
  ) as { sha256: string; length: number };
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

describe('tfs cat -o onto special files', () => {
  it('writes straight into a FIFO and a character device, never replacing the node', async () => {
    const { store } = await tinyStore();
    const d = temp();
    const fifo = join(d, 'pipe');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const out = join(d, 'got');
    const reader = spawn('sh', ['-c', 'cat "$1" > "$2"', 'sh', fifo, out]);
    const done = new Promise((r) => reader.on('exit', r));
    const r = await tfs(store, 'cat', 'local/m', 'embed.weight', '-o', fifo);
    expect(r.code, r.err).toBe(0);
    await done;
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    expect(sha(readFileSync(out))).toBe(expected().sha256);
    // /dev/null: unprivileged, the old temp-beside-it in /dev failed (io); as root it replaced it.
    const n = await tfs(store, 'cat', 'local/m', 'embed.weight', '-o', '/dev/null');
    expect(n.code, n.err).toBe(0);
    expect(lstatSync('/dev/null').isCharacterDevice()).toBe(true);
  }, 10_000);

  it('refuses a socket and a folder, leaving them alone', async () => {
    const { store } = await tinyStore();
    const d = temp();
    const sock = join(d, 's.sock');
    const server = createServer();
    await new Promise<void>((r) => server.listen(sock, r));
    try {
      const r = await tfs(store, 'cat', 'local/m', 'embed.weight', '-o', sock, '--json');
      expect(r.code).toBe(2);
      expect(JSON.parse(r.err).error.details.rule).toBe('cli.output_type');
      expect(lstatSync(sock).isSocket()).toBe(true);
    } finally {
      server.close();
    }
    const f = await tfs(store, 'cat', 'local/m', 'embed.weight', '-o', d, '--json');
    expect(f.code).toBe(7);
    expect(lstatSync(d).isDirectory()).toBe(true);
  });
});

describe('tfs gc and ls with refs or manifests the store did not write', () => {
  it('gc and gc --dry-run refuse (exit 4) while a ref names a missing manifest; nothing removed', async () => {
    const { store, snapshot } = await tinyStore();
    const parked = join(temp(), 'm');
    renameSync(objectFile(store, snapshot), parked);
    const objectsBefore = spawnSync('find', [join(store, 'objects'), '-type', 'f']).stdout.toString();
    for (const extra of [['--dry-run'], []]) {
      const r = proc(store, ['gc', '--grace', '0', ...extra]);
      expect(r.code, r.err).toBe(4);
      expect(r.err).toContain('GC refuses to run: a ref or root names an object that is missing');
    }
    expect(spawnSync('find', [join(store, 'objects'), '-type', 'f']).stdout.toString()).toBe(objectsBefore);
    renameSync(parked, objectFile(store, snapshot));
    expect(proc(store, ['verify', '--data']).code).toBe(0);
  });

  it('a symlinked ref: ls, ls <ref>, gc and verify refuse naming it (exit 4); ref rm removes it', async () => {
    const { store, snapshot } = await tinyStore();
    const elsewhere = join(temp(), 'r');
    writeFileSync(elsewhere, `${snapshot}\n`);
    symlinkSync(elsewhere, join(store, 'refs', 'local', 'link'));
    for (const args of [['ls'], ['ls', 'local/link'], ['gc', '--grace', '0'], ['gc', '--dry-run'], ['verify']]) {
      const r = proc(store, [...args, '--json']);
      expect(r.code, `${args.join(' ')}: ${r.err}`).toBe(4);
      expect(JSON.parse(r.err).error.details).toMatchObject({ rule: 'ref.not_regular', ref: 'local/link' });
    }
    expect(proc(store, ['ref', 'rm', 'local/link']).code).toBe(0);
    expect(existsSync(elsewhere)).toBe(true);
    expect(proc(store, ['gc', '--grace', '0']).code).toBe(0);
  });
});

describe('tfs ls and du with bad refs: every good ref listed, each bad one named', () => {
  it('warnings on stderr (escaped) or a problems array with --json; exit 4; gc still refuses', async () => {
    const { store, snapshot } = await tinyStore();
    const s = await LocalStore.open(store);
    await s.setRef('local/n', snapshot as ObjectId);
    const tree = join(temp(), 'other');
    mkdirSync(tree);
    writeFileSync(join(tree, 'x.bin'), 'other bytes');
    const gone = (await s.importPath(tree, { name: 'local/gone' })).snapshot;
    await s.close();
    renameSync(objectFile(store, gone), join(temp(), 'parked'));
    writeFileSync(join(store, 'refs', 'local', 'garbage'), 'not an id\n');
    const evil = 'x\u001b[2J\rerror[corrupt]: forged';
    symlinkSync(join(temp(), 'nowhere'), join(store, 'refs', evil));
    const bad = [
      { name: 'local/garbage', code: 'corrupt', rule: 'ref.content' },
      { name: 'local/gone', id: gone, code: 'corrupt', rule: 'ref.target_missing' },
      { name: evil, code: 'corrupt', rule: 'ref.not_regular' },
    ];

    const ls = await tfs(store, 'ls');
    expect(ls.code, ls.err).toBe(4);
    expect(ls.out).toBe(`${snapshot}  local/m\n${snapshot}  local/n\n`);
    const lines = ls.err.trimEnd().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines.slice(0, 3).map((l) => l.slice(0, l.indexOf(':')))).toEqual(['warning', 'warning', 'warning']);
    expect(lines[0]).toMatch(
      /^warning: refs\/local\/garbage: ref file does not hold an object id \[corrupt, ref\.content\]$/,
    );
    expect(lines[1]).toContain(
      `refs/local/gone: the object this ref names is missing (${gone}) [corrupt, ref.target_missing]`,
    );
    expect(lines[2]).toContain('refs/x\\x1b[2J\\x0derror[corrupt]: forged: ');
    expect(ls.err).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    expect(lines[3]).toBe('error[corrupt]: 3 refs could not be read or measured (2 listed) (ref local/garbage)');

    const lj = await tfs(store, 'ls', '--json');
    expect(lj.code, lj.err).toBe(4);
    const listing = JSON.parse(lj.out);
    expect(listing.refs).toEqual([
      { name: 'local/m', id: snapshot, kind: 'snapshot' },
      { name: 'local/n', id: snapshot, kind: 'snapshot' },
    ]);
    expect(listing.problems.map(({ message: _, ...p }: { message: string }) => p)).toEqual(bad);
    const err = JSON.parse(lj.err);
    expect(err.error).toMatchObject({
      code: 'corrupt',
      details: { rule: 'ref.content', ref: 'local/garbage', refs: bad.map((b) => b.name) },
    });

    const du = await tfs(store, 'du');
    expect(du.code, du.err).toBe(4);
    const duLines = du.out.trimEnd().split('\n');
    const perRepo = duLines.indexOf('per repository (its branches and tags together):');
    expect(perRepo).toBeGreaterThan(0);
    expect(duLines.slice(1, perRepo).map((l) => l.trim().split(/\s+/).pop())).toEqual(['local/m', 'local/n']);
    // Each good ref is its repository's main: one repository each, the bad refs in none.
    expect(duLines.slice(perRepo + 1).map((l) => l.trim().split(/\s+/).slice(-3).join(' '))).toEqual([
      'local/m (1 ref)',
      'local/n (1 ref)',
    ]);
    expect(du.err.split('\n').filter((l) => l.startsWith('warning: '))).toHaveLength(3);
    const dj = await tfs(store, 'du', '--json');
    expect(dj.code, dj.err).toBe(4);
    const usage = JSON.parse(dj.out);
    expect(usage.refs.map((r: { name: string }) => r.name)).toEqual(['local/m', 'local/n']);
    expect(usage.problems.map(({ message: _, ...p }: { message: string }) => p)).toEqual(bad);
    expect(JSON.parse(dj.err).error.code).toBe('corrupt');

    // GC must not run while a root cannot be read.
    for (const extra of [['--dry-run'], []]) expect((await tfs(store, 'gc', '--grace', '0', ...extra)).code).toBe(4);
    expect(existsSync(objectFile(store, snapshot))).toBe(true);
  });
});

describe('cancellation through the CLI exits 12', () => {
  it('verify, verify --data, gc, du, import, export with an aborted signal (any reason) exit 12', async () => {
    const { store, snapshot } = await tinyStore();
    const src = join(temp(), 'src');
    mkdirSync(src);
    writeFileSync(join(src, 'a.bin'), 'a');
    for (const argv of [
      ['verify'],
      ['verify', '--data'],
      ['gc'],
      ['gc', '--dry-run'],
      ['du'],
      ['import', src],
      ['export', snapshot, join(temp(), 'out')],
      ['cat', 'local/m', 'embed.weight'],
    ]) {
      const c = new AbortController();
      c.abort(new Error('interrupted'));
      const io = capture();
      const code = await runIo([...argv, '--store', store], { ...io.io, signal: c.signal });
      expect(code, `${argv.join(' ')}: ${io.text().stderr}`).toBe(12);
      expect(io.text().stderr).toMatch(/^error\[cancelled\]/);
    }
  });
});

/** A safetensors file of `n` one-float tensors (a long `inspect` listing). */
function manyTensors(file: string, n: number): void {
  const header: Record<string, unknown> = {};
  for (let i = 0; i < n; i++)
    header[`layer.${i}.weight`] = { dtype: 'F32', shape: [1], data_offsets: [4 * i, 4 * i + 4] };
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(file, Buffer.concat([len, json, Buffer.alloc(4 * n)]));
}

/** Runs the built `tfs` in bash with pipefail, so the pipeline's status is tfs's own. */
function piped(cmdline: string) {
  const r = spawnSync('bash', ['-c', `set -o pipefail; ${cmdline}`], { encoding: 'utf8' });
  return { code: r.status, err: r.stderr };
}

describe('a failing stdout', () => {
  it('a closed pipe ends quietly (exit 0, nothing on stderr); a full disk is io, exit 11', async () => {
    const { store } = await tinyStore();
    const d = temp();
    manyTensors(join(d, 'many.safetensors'), 3000);
    const tfsCmd = `"${process.execPath}" "${BIN}"`;
    for (const cmd of [
      `${tfsCmd} inspect "${join(d, 'many.safetensors')}" | head -1 > /dev/null`,
      `${tfsCmd} ls --store "${store}" | true`,
      `${tfsCmd} cat local/m embed.weight --store "${store}" | head -c 1 > /dev/null`,
    ]) {
      const r = piped(cmd);
      expect(r, cmd).toEqual({ code: 0, err: '' });
    }
    for (const args of [['ls'], ['cat', 'local/m', 'embed.weight'], ['ls', 'local/m', '--json']]) {
      const r = piped(`${tfsCmd} ${args.join(' ')} --store "${store}" > /dev/full`);
      expect(r.code, args.join(' ')).toBe(11);
      expect(r.err, args.join(' ')).toMatch(
        args.includes('--json') ? /"code":"io"/ : /^error\[io\]: cannot write to stdout \(ENOSPC\)\n$/,
      );
    }
  });
});

describe('special files as inputs', () => {
  it('inspect and plan refuse a FIFO at once (invalid_argument), also as a shard of an index', async () => {
    const d = temp();
    const fifo = join(d, 'p.safetensors');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    for (const cmd of ['inspect', 'plan']) {
      const r = spawnSync(process.execPath, [BIN, cmd, fifo, '--json'], { encoding: 'utf8', timeout: 10_000 });
      expect(r.status, `${cmd}: ${r.stderr}`).toBe(2);
      expect(JSON.parse(r.stderr).error.details.rule).toBe('store.file_type');
    }
    writeFileSync(
      join(d, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: {}, weight_map: { 'a.weight': 'p.safetensors' } }),
    );
    const r = spawnSync(process.execPath, [BIN, 'inspect', join(d, 'model.safetensors.index.json'), '--json'], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    expect(r.status, r.stderr).toBe(2);
    expect(JSON.parse(r.stderr).error.details).toMatchObject({ rule: 'store.file_type', shard: 'p.safetensors' });
  }, 30_000);
});

describe('compose after its commit', () => {
  it('trimming every tensor of a shard sets the ref and exits 0 (it must not fail after committing)', async () => {
    const store = join(temp(), 'store');
    const s = await LocalStore.open(store);
    await s.importPath(join(FIXTURES, 'sharded'), { name: 'local/sharded', threads: 1 });
    await s.close();
    const shard = 'model-00001-of-00002.safetensors';
    const r = await tfs(
      store,
      'compose',
      'local/sharded',
      '--file',
      shard,
      '--trim',
      'a.*',
      '--name',
      'local/y',
      '--json',
    );
    expect(r.code, r.err).toBe(0);
    const out = JSON.parse(r.out);
    expect(out).toMatchObject({ ref: 'local/y', file: shard, tensors: 0, removed: [shard] });
    expect((await tfs(store, 'ref', 'get', 'local/y')).out.trim()).toBe(out.snapshot);
    const human = await tfs(store, 'compose', 'local/sharded', '--file', shard, '--trim', 'a.*', '--name', 'local/y2');
    expect(human.code, human.err).toBe(0);
    expect(human.out).toContain(`${shard}: removed (no tensors left)`);
  });
});

describe('damaged metadata through the CLI', () => {
  it('ls, verify and gc exit 4 naming the damaged part, not internal with raw SQLite text', async () => {
    const { store } = await tinyStore();
    writeFileSync(join(store, 'metadata.sqlite3'), Buffer.alloc(4096, 7));
    for (const f of ['-wal', '-shm']) rmSync(join(store, `metadata.sqlite3${f}`), { force: true });
    for (const args of [['ls'], ['verify'], ['gc']]) {
      const r = await tfs(store, ...args);
      expect(r.code, `${args}: ${r.err}`).toBe(4);
      expect(r.err).toMatch(/^error\[corrupt\]: metadata\.sqlite3 is damaged \(not a database\); objects and refs/);
    }
  });
});

describe('control characters in human output', () => {
  it('tensor names and metadata cannot forge lines or drive the terminal; JSON keeps them exact', async () => {
    const d = temp();
    const evil = 'w\u001b[2J\nerror[corrupt]: forged\r\u202e';
    const header = {
      __metadata__: { note: 'x\u001b]0;title\u0007' },
      [evil]: { dtype: 'F32', shape: [1], data_offsets: [0, 4] },
    };
    let json = Buffer.from(JSON.stringify(header));
    json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(json.length));
    const file = join(d, 'evil.safetensors');
    writeFileSync(file, Buffer.concat([len, json, Buffer.alloc(4)]));
    const r = await run(['inspect', file]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f\u202e]/);
    expect(r.stdout.split('\n').some((l) => l.startsWith('error['))).toBe(false);
    expect(r.stdout).toContain('w\\x1b[2J\\x0aerror[corrupt]: forged\\x0d\\u{202e}');
    expect(r.stdout).toContain('note=x\\x1b]0;title\\x07');
    const j = await run(['inspect', file, '--json']);
    expect(JSON.parse(j.stdout).tensors[0].name).toBe(evil);
    const { store } = await tinyStore();
    const miss = await run(['cat', 'local/m', 'a\u001b[31mb\nerror[x]: y', '--store', store]);
    expect(miss.code).toBe(6);
    expect(miss.stderr).not.toContain('\u001b');
    expect(miss.stderr.split('\n').filter((l) => l.startsWith('error['))).toHaveLength(1);
  });
});

describe('rough edges of the CLI', () => {
  it('human errors name the ref or file at fault; --json=true and --json true give JSON errors', async () => {
    const { store } = await tinyStore();
    const r = await tfs(store, 'ls', 'local/nope');
    expect(r.err).toBe('error[not_found]: no such ref (ref local/nope)\n');
    for (const flag of [['--json=true'], ['--json', 'true']]) {
      const j = await tfs(store, 'ls', 'local/nope', ...flag);
      expect(j.code).toBe(6);
      expect(JSON.parse(j.err).error.details.ref).toBe('local/nope');
    }
    const bad = await tfs(store, 'ref', 'frob', 'x');
    expect(bad.code).toBe(2);
    expect(bad.err.trimEnd().split('\n')).toHaveLength(1);
  });

  it('a ref set with --expected none on an existing ref says it exists', async () => {
    const { store, snapshot } = await tinyStore();
    const r = await tfs(store, 'ref', 'set', 'local/m', snapshot, '--expected', 'none');
    expect(r.code).toBe(7);
    expect(r.err).toMatch(/^error\[conflict\]: ref already exists/);
  });

  it('a mistyped --store is not_found for every command but import; an empty store path is refused', async () => {
    const { store } = await tinyStore();
    const typo = `${store}-typo`;
    for (const args of [
      ['verify'],
      ['gc'],
      ['ls'],
      ['du'],
      ['cat', 'local/m', 'embed.weight'],
      ['export', 'local/m', join(temp(), 'o')],
    ]) {
      const r = await tfs(typo, ...args, '--json');
      expect(r.code, args.join(' ')).toBe(6);
      expect(JSON.parse(r.err).error.details.rule).toBe('cli.no_store');
    }
    expect(existsSync(typo)).toBe(false);
    const e1 = await run(['verify', '--store', '']);
    expect(e1.code).toBe(2);
    const e2 = await run(['verify'], { TENSORFS_HOME: '' });
    expect(e2.code).toBe(2);
    expect(e2.stderr).toMatch(/TENSORFS_HOME is empty/);
  });
});

describe('rough edges of import, ref set and compose', () => {
  it('different non-ASCII names get different default refs', () => {
    const a = defaultRefName('/x/模型.safetensors');
    const b = defaultRefName('/x/权重.safetensors');
    expect(a).toMatch(/^local\/__-[0-9a-f]{8}\.safetensors$/);
    expect(b).toMatch(/^local\/__-[0-9a-f]{8}\.safetensors$/);
    expect(a).not.toBe(b);
    expect(defaultRefName('/x/Llama 3.1 (8B)')).toBe('local/Llama_3.1__8B_');
  });

  it('ref set refuses an object that is not a snapshot', async () => {
    const { store } = await tinyStore();
    const t = await tfs(store, 'tensors', 'local/m', '--json');
    const tensorObject = JSON.parse(t.out).tensors.find((x: { objects: string[] }) => x.objects.length > 0).objects[0];
    const r = await tfs(store, 'ref', 'set', 'local/t', tensorObject, '--json');
    expect(r.code).toBe(2);
    expect(JSON.parse(r.err).error.details.rule).toBe('cli.not_a_snapshot');
    expect((await tfs(store, 'ref', 'get', 'local/t')).code).toBe(6);
  });

  it('a --trim that matches nothing fails unless --allow-empty; a rekey map with a duplicate key is refused', async () => {
    const { store } = await tinyStore();
    const r = await tfs(store, 'compose', 'local/m', '--trim', 'nothing.*', '--name', 'local/c', '--json');
    expect(r.code).toBe(6);
    expect(JSON.parse(r.err).error.details).toMatchObject({ rule: 'cli.trim_no_match', patterns: ['nothing.*'] });
    expect((await tfs(store, 'ref', 'get', 'local/c')).code).toBe(6);
    const ok = await tfs(store, 'compose', 'local/m', '--trim', 'nothing.*', '--name', 'local/c', '--allow-empty');
    expect(ok.code, ok.err).toBe(0);
    const map = join(temp(), 'map.json');
    writeFileSync(map, '{"embed.weight": "a", "x": {"embed.weight": 1}, "embed.weight": "b"}');
    const d = await tfs(store, 'compose', 'local/m', '--rekey', map, '--name', 'local/d', '--json');
    expect(d.code).toBe(2);
    expect(JSON.parse(d.err).error.details).toMatchObject({ rule: 'cli.rekey_duplicate', tensor: 'embed.weight' });
  });
});

describe('operands after --', () => {
  it('tfs import -- -file imports a file whose name starts with a dash', async () => {
    const d = temp();
    writeFileSync(join(d, '-file'), 'dash');
    const store = join(temp(), 's');
    const prev = process.cwd();
    process.chdir(d);
    try {
      const r = await run(['import', '--store', store, '--name', 'local/dash', '--json', '--', '-file']);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ ref: 'local/dash', files: 1, bytes: 4 });
    } finally {
      process.chdir(prev);
    }
  });
});
