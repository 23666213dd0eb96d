/**
 * Bounded descriptors (issue 24 §1): every command works under a low open-file limit whatever the
 * number of tensors or objects. Each command runs as a child of `bash -c 'ulimit -n N; …'` (the
 * built CLI), and the result is checked exactly.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { HttpClient } from '@tensorfs/remote';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalStore } from '@tensorfs/cas';
import { tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const SIZE = 16;

/**
 * `tfs ARGS` under `ulimit -n limit`; stdout, stderr and the exit status. Asynchronous: a command
 * that runs a minute must not block the test worker (vitest's own calls time out behind it).
 */
async function tfsLimited(limit: number, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const quoted = [process.execPath, BIN, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const child = spawn('bash', ['-c', `ulimit -n ${limit} && exec ${quoted}`], {
    env: { ...process.env, TENSORFS_HOME: undefined, NO_COLOR: '1' },
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (d: Buffer) => out.push(d));
  child.stderr.on('data', (d: Buffer) => err.push(d));
  const code = await new Promise<number>((resolve) => child.once('close', (c) => resolve(c ?? -1)));
  return { code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
}

/** The data of tensor `i`: SIZE bytes, distinct for every i. */
function tensorBytes(i: number): Uint8Array {
  const b = Buffer.alloc(SIZE);
  b.writeUInt32LE(i, 0);
  b.writeUInt32LE((0x9e3779b9 ^ i) >>> 0, 4);
  b.writeUInt32LE((i * 2654435761) >>> 0, 8);
  b.writeUInt32LE(0xfeedbeef, 12);
  return b;
}

/**
 * A safetensors file of U8 tensors `<prefix><i>` for i in [from, from + n) (written here by hand,
 * not by the code under test).
 */
function manyTensors(file: string, n: number, from = 0, prefix = 't.'): void {
  const header: Record<string, unknown> = {};
  for (let k = 0; k < n; k++)
    header[`${prefix}${from + k}`] = { dtype: 'U8', shape: [SIZE], data_offsets: [k * SIZE, (k + 1) * SIZE] };
  let json = JSON.stringify(header);
  while ((json.length + 8) % 8) json += ' ';
  const jb = Buffer.from(json);
  const out = Buffer.alloc(8 + jb.length + n * SIZE);
  out.writeBigUInt64LE(BigInt(jb.length), 0);
  jb.copy(out, 8);
  for (let k = 0; k < n; k++) out.set(tensorBytes(from + k), 8 + jb.length + k * SIZE);
  writeFileSync(file, out);
}

/** A new store holding `n` tensors of one file as ref `many`, imported by `tfs` under `ulimit -n 256`. */
async function importedMany(n: number): Promise<{ dir: string; file: string; store: string }> {
  const dir = tempDir();
  const file = join(dir, 'many.safetensors');
  manyTensors(file, n);
  const store = join(dir, 'store');
  expect((await tfsLimited(256, ['--store', store, 'import', file, '--name', 'many'])).code).toBe(0);
  return { dir, file, store };
}

const sha = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

describe('under a low open-file limit', () => {
  it('imports a 100,000-tensor file under ulimit -n 256, exactly', { timeout: 600_000 }, async () => {
    const dir = tempDir();
    const file = join(dir, 'many.safetensors');
    const N = 100_000;
    manyTensors(file, N);
    const store = join(dir, 'store');
    const imp = await tfsLimited(256, ['--store', store, 'import', file, '--name', 'many', '--json']);
    expect(imp.stderr).toBe('');
    expect(imp.code).toBe(0);
    const result = JSON.parse(imp.stdout);
    // The header object and one object per tensor, all new.
    expect(result.objectsWritten).toBe(N + 1);

    const refs = JSON.parse((await tfsLimited(256, ['--store', store, 'ls', '--json'])).stdout);
    expect(refs.refs).toEqual([{ name: 'many', id: result.snapshot, kind: 'snapshot' }]);
    const tensors = JSON.parse((await tfsLimited(256, ['--store', store, 'tensors', 'many', '--json'])).stdout);
    expect(tensors.files[0].tensors.length).toBe(N);
    expect(tensors.files[0].tensors.slice(0, 3)).toEqual(['t.0', 't.1', 't.2']);

    const s = await LocalStore.open(store, { readOnly: true });
    try {
      const manifest = await s.getManifest(result.snapshot);
      const records = (manifest.entries[0] as { records: { digest: string; length: number }[] }).records;
      expect(records.length).toBe(N + 1);
      // Record 0 is the header; record 1 + i is tensor i.
      for (const i of [0, 1, 4_095, 16_383, 16_384, 65_536, 99_999]) {
        expect(records[1 + i]).toEqual({ digest: sha(tensorBytes(i)), length: SIZE });
        expect(Buffer.from(await s.readObject(records[1 + i]!.digest as never, { verify: true }))).toEqual(
          Buffer.from(tensorBytes(i)),
        );
      }
    } finally {
      await s.close();
    }
    // Nothing left in tmp/, and verify rehashes every object clean under the same limit.
    expect(readdirSync(join(store, 'tmp'))).toEqual([]);
    const v = await tfsLimited(256, ['--store', store, 'verify', '--data', '--json']);
    expect(v.stderr).toBe('');
    expect(v.code).toBe(0);
    // N tensors, the header and the manifest (no whole-file SHA-256 list without --file-sha256)
    expect(JSON.parse(v.stdout)).toMatchObject({ objects: N + 2, missing: [], corrupt: [], unreadable: [] });

    // Export rebuilds the file byte for byte; gc of an unchanged store removes nothing.
    const out = join(dir, 'out');
    const ex = await tfsLimited(256, ['--store', store, 'export', 'many', out]);
    expect(ex.stderr).toBe('');
    expect(ex.code).toBe(0);
    expect(Buffer.compare(readFileSync(join(out, 'many.safetensors')), readFileSync(file))).toBe(0);
    const gc = await tfsLimited(256, ['--store', store, 'gc', '--json']);
    expect(gc.stderr).toBe('');
    expect(gc.code).toBe(0);
    expect(JSON.parse(gc.stdout)).toMatchObject({ removed: 0 });
  });

  it('converts a Transformers folder of 20,000 tensors in 300 shards under ulimit -n 256, exactly', {
    timeout: 600_000,
  }, async () => {
    const dir = tempDir();
    const model = join(dir, 'model');
    mkdirSync(model);
    const SHARDS = 300;
    const N = 20_000;
    const weightMap: Record<string, string> = {};
    for (let s = 0; s < SHARDS; s++) {
      const from = Math.floor((s * N) / SHARDS);
      const to = Math.floor(((s + 1) * N) / SHARDS);
      const shard = `model-${String(s + 1).padStart(5, '0')}-of-${String(SHARDS).padStart(5, '0')}.safetensors`;
      manyTensors(join(model, shard), to - from, from, 'model.w.');
      for (let i = from; i < to; i++) weightMap[`model.w.${i}`] = shard;
    }
    writeFileSync(
      join(model, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: { total_size: N * SIZE }, weight_map: weightMap }),
    );
    writeFileSync(
      join(model, 'config.json'),
      JSON.stringify({ model_type: 'llama', architectures: ['LlamaForCausalLM'] }),
    );
    const store = join(dir, 'store');
    const conv = await tfsLimited(256, ['--store', store, 'convert', model, '--name', 'ck', '--json']);
    expect(conv.stderr).toBe('');
    expect(conv.code).toBe(0);
    const tensors = JSON.parse((await tfsLimited(256, ['--store', store, 'tensors', 'ck', '--json'])).stdout);
    const names = tensors.tensors.map((t: { name: string }) => t.name);
    expect(names.length).toBe(N);
    expect(new Set(tensors.tensors.map((t: { component: string }) => t.component))).toEqual(new Set(['model']));
    expect(new Set(names)).toEqual(new Set(Object.keys(weightMap)));
    for (const i of [0, 66, 67, 9_999, 19_999]) {
      const cat = spawnSync(process.execPath, [BIN, '--store', store, 'cat', 'ck', `model.w.${i}`], {
        env: { ...process.env, TENSORFS_HOME: undefined },
      });
      expect(cat.status).toBe(0);
      expect(Buffer.compare(cat.stdout, Buffer.from(tensorBytes(i)))).toBe(0);
    }
    expect(readdirSync(join(store, 'tmp'))).toEqual([]);
    const v = await tfsLimited(256, ['--store', store, 'verify', '--data', '--json']);
    expect(v.code).toBe(0);
    expect(JSON.parse(v.stdout)).toMatchObject({ missing: [], corrupt: [], unreadable: [] });
  });

  it('serves 300 clients at once under ulimit -n 256: every body exact, no EMFILE, descriptors given back', {
    timeout: 300_000,
  }, async () => {
    const N = 300;
    const { store } = await importedMany(N);
    const quoted = [process.execPath, BIN, '--store', store, 'serve', '--port', '0', '--json']
      .map((a) => `'${a}'`)
      .join(' ');
    // `exec`: the hub is the child itself, so its descriptors are /proc/<pid>/fd.
    const hub = spawn('bash', ['-c', `ulimit -n 256 && exec ${quoted}`], {
      env: { ...process.env, TENSORFS_HOME: undefined, NO_COLOR: '1' },
    });
    let stderr = '';
    hub.stderr.on('data', (d) => (stderr += d));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        hub.stdout.on('data', (d) => {
          out += d;
          if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]!).url);
        });
        hub.once('exit', (code) => reject(new Error(`tfs serve exited ${code}: ${stderr}`)));
      });
      const descriptors = () => readdirSync(`/proc/${hub.pid}/fd`).length;
      const client = new HttpClient({ baseDelayMs: 100 });
      const get = async (path: string): Promise<Buffer> => {
        const res = await client.send({ method: 'GET', url: `${url}${path}` });
        const parts: Uint8Array[] = [];
        for await (const c of res.body) parts.push(c);
        return Buffer.concat(parts);
      };
      expect(JSON.parse((await get('/v1/refs/many')).toString())).toMatchObject({ name: 'many' });
      const before = descriptors();
      // 300 requests at once on the default pool: 300 connections, past what the limit leaves.
      const bodies = await Promise.all(
        Array.from({ length: N }, (_, i) => get(`/v1/objects/${sha(tensorBytes(i)).slice('sha256:'.length)}`)),
      );
      for (let i = 0; i < N; i++) expect(Buffer.compare(bodies[i]!, Buffer.from(tensorBytes(i)))).toBe(0);
      // What stays open is the connections the client keeps alive, within the hub's budget
      // (connectionBudget(256, 64) = 256 - 48 - 2 * 64).
      expect(descriptors() - before).toBeLessThanOrEqual(80);
      expect(stderr).toBe('');
    } finally {
      hub.kill('SIGTERM');
      await new Promise((r) => hub.once('exit', r));
    }
  });

  it('pushes and pulls a many-object snapshot through a folder origin under ulimit -n 256', {
    timeout: 600_000,
  }, async () => {
    const N = 3_000;
    const { dir, file, store } = await importedMany(N);
    const origin = join(dir, 'origin');
    mkdirSync(origin);
    const push = await tfsLimited(256, ['--store', store, 'push', origin, 'many']);
    expect(push.stderr).toBe('');
    expect(push.code).toBe(0);
    const other = join(dir, 'other');
    const pull = await tfsLimited(256, ['--store', other, 'pull', origin, 'many']);
    expect(pull.stderr).toBe('');
    expect(pull.code).toBe(0);
    const v = await tfsLimited(256, ['--store', other, 'verify', '--data', '--json']);
    expect(v.code).toBe(0);
    // N tensors, the header and the manifest, all pulled
    expect(JSON.parse(v.stdout)).toMatchObject({ objects: N + 2, missing: [], corrupt: [], unreadable: [] });
    const out = join(dir, 'out');
    expect((await tfsLimited(256, ['--store', other, 'export', 'many', out])).code).toBe(0);
    expect(Buffer.compare(readFileSync(join(out, 'many.safetensors')), readFileSync(file))).toBe(0);
  });
});
