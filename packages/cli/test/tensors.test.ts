import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '@tensorfs/cas';
import { fixturesOf, sha256Hex } from '@tensorfs/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tfs as run } from './helpers.js';

const FIXTURES = fixturesOf('tensors');

interface Ran {
  code: number;
  stdout: Buffer;
  stderr: string;
}

async function tfs(argv: string[], storeDir: string): Promise<Ran> {
  const r = await run([...argv, '--store', storeDir]);
  return { code: r.code, stdout: r.bytes, stderr: r.stderr };
}

const sha = sha256Hex;

describe('tfs tensors / cat / compose', () => {
  let dir: string;
  let storeDir: string;
  let expected: Record<string, { name: string; dtype: string; shape: number[]; length: number; sha256: string }[]>;

  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-cli-tensors-'));
    storeDir = path.join(dir, 'store');
    const tree = path.join(dir, 'tree');
    await fsp.mkdir(tree);
    await fsp.copyFile(path.join(FIXTURES, 'tiny.safetensors'), path.join(tree, 'm.safetensors'));
    await fsp.copyFile(path.join(FIXTURES, 'tiny.gguf'), path.join(tree, 'm.gguf'));
    const shards = path.join(dir, 'shards');
    await fsp.mkdir(shards);
    for (const f of await fsp.readdir(path.join(FIXTURES, 'sharded'))) {
      await fsp.copyFile(path.join(FIXTURES, 'sharded', f), path.join(shards, f));
    }
    const store = await LocalStore.open(storeDir);
    await store.importPath(tree, { name: 'local/m', threads: 1 });
    await store.importPath(shards, { name: 'local/sharded', threads: 1 });
    await store.close();
    expected = JSON.parse(await fsp.readFile(path.join(FIXTURES, 'expected.json'), 'utf8'));
  });
  afterAll(() => fsp.rm(dir, { recursive: true, force: true }));

  it('tfs tensors --json lists name, dtype, shape, bytes and objects of every tensor', async () => {
    const r = await tfs(['tensors', 'local/m', '--json'], storeDir);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout.toString());
    const byKey = new Map(out.tensors.map((x: { file: string; name: string }) => [`${x.file}:${x.name}`, x]));
    for (const [file, list] of [
      ['m.safetensors', expected['tiny.safetensors']!],
      ['m.gguf', expected['tiny.gguf']!],
    ] as const) {
      for (const e of list) {
        expect(byKey.get(`${file}:${e.name}`)).toEqual({
          file,
          name: e.name,
          dtype: e.dtype,
          shape: e.shape,
          bytes: e.length,
          objects: e.length === 0 ? [] : [`sha256:${e.sha256}`],
          aligned: true,
        });
      }
    }
    const human = await tfs(['tensors', 'local/m', '--file', 'm.gguf'], storeDir);
    expect(human.code).toBe(0);
    expect(human.stdout.toString()).toContain('output.weight');
    expect(human.stdout.toString()).toContain('Q4_K');
    expect(human.stdout.toString()).not.toContain('embed.weight');
  });

  it('tfs cat writes the raw bytes to stdout, or atomically to a file', async () => {
    const e = expected['tiny.safetensors']!.find((x) => x.name === 'embed.weight')!;
    const r = await tfs(['cat', 'local/m', 'embed.weight'], storeDir);
    expect(r.code).toBe(0);
    expect(sha(r.stdout)).toBe(e.sha256);
    const dest = path.join(dir, 'embed.bin');
    const w = await tfs(['cat', 'local/m', 'embed.weight', '-o', dest, '--verify'], storeDir);
    expect(w.code).toBe(0);
    expect(sha(await fsp.readFile(dest))).toBe(e.sha256);
    expect((await fsp.readdir(dir)).filter((f) => f.startsWith('.embed.bin.'))).toEqual([]); // no temp left
  });

  it('tfs cat --decode writes the values a GGUF block type decodes to (as gguf-py dequantizes them)', async () => {
    // sha256 of gguf.quants.dequantize(output.weight, Q4_K) as float32 / float16 (gguf 0.19, tiny.gguf)
    const dest = path.join(dir, 'q4k.f32');
    const w = await tfs(['cat', 'local/m', 'output.weight', '--decode', '-o', dest, '--json'], storeDir);
    expect(w.code).toBe(0);
    expect(JSON.parse(w.stdout.toString())).toMatchObject({ decoded: true, dtype: 'F32', bytes: 1024 });
    expect(sha(await fsp.readFile(dest))).toBe('36d286e237c709e0756c285f837313b3786239a8016731e0e0b2a96e65507388');
    const r = await tfs(['cat', 'local/m', 'output.weight', '--decode', '--dtype', 'F16'], storeDir);
    expect(r.code).toBe(0);
    expect(sha(r.stdout)).toBe('e25b13e452ce4f9b4f25aedb594e08cfb2a2e8ac4ca9a14b040b4917a59b9544');
    const bad = await tfs(['cat', 'local/m', 'output.weight', '--dtype', 'F16', '--json'], storeDir);
    expect(bad.code).not.toBe(0);
    expect(JSON.parse(bad.stderr).error.code).toBe('invalid_argument');
  });

  it('tfs cat of a missing tensor fails with not_found and writes no file', async () => {
    const dest = path.join(dir, 'none.bin');
    const r = await tfs(['cat', 'local/m', 'no.such', '-o', dest, '--json'], storeDir);
    expect(r.code).not.toBe(0);
    expect(JSON.parse(r.stderr).error.code).toBe('not_found');
    await expect(fsp.access(dest)).rejects.toThrow();
  });

  it('tfs compose renames and drops tensors into a new ref', async () => {
    const map = path.join(dir, 'map.json');
    await fsp.writeFile(map, JSON.stringify({ 'embed.weight': 'tok_embeddings.weight' }));
    const r = await tfs(
      [
        'compose',
        'local/m',
        '--file',
        'm.safetensors',
        '--rekey',
        map,
        '--trim',
        'layer.0.attn.*',
        '--name',
        'local/c',
        '--json',
      ],
      storeDir,
    );
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout.toString());
    expect(out.ref).toBe('local/c');
    expect(out.tensors).toBe(expected['tiny.safetensors']!.length - 2);
    const list = JSON.parse(
      (await tfs(['tensors', 'local/c', '--file', 'm.safetensors', '--json'], storeDir)).stdout.toString(),
    );
    const names = list.tensors.map((x: { name: string }) => x.name);
    expect(names).toContain('tok_embeddings.weight');
    expect(names.some((n: string) => n.startsWith('layer.0.attn.'))).toBe(false);
    // The target ref must not exist yet.
    const again = await tfs(
      ['compose', 'local/m', '--file', 'm.safetensors', '--trim', 'mask', '--name', 'local/c'],
      storeDir,
    );
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('error[conflict]');
    // Several tensor files and no --file: say which.
    const which = await tfs(['compose', 'local/m', '--trim', 'mask', '--name', 'local/d'], storeDir);
    expect(which.stderr).toContain('error[invalid_argument]');
  });

  it('tfs compose refuses names that collide', async () => {
    const map = path.join(dir, 'collide.json');
    await fsp.writeFile(map, JSON.stringify({ mask: 'positions' }));
    const r = await tfs(
      ['compose', 'local/m', '--file', 'm.safetensors', '--rekey', map, '--name', 'local/x'],
      storeDir,
    );
    expect(r.stderr).toContain('error[invalid_argument]');
    const store = await LocalStore.open(storeDir);
    expect(await store.getRef('local/x')).toBeNull();
    await store.close();
  });

  it('reads and composes a sharded model through its index', async () => {
    const index = 'model.safetensors.index.json';
    const e = expected['sharded/model-00002-of-00002.safetensors']!.find((x) => x.name === 'c.weight')!;
    const cat = await tfs(['cat', 'local/sharded', 'c.weight', '--file', index], storeDir);
    expect(cat.code).toBe(0);
    expect(sha(cat.stdout)).toBe(e.sha256);
    const r = await tfs(
      ['compose', 'local/sharded', '--file', index, '--trim', 'c.*', '--name', 'local/s2', '--json'],
      storeDir,
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout.toString()).tensors).toBe(3);
    const list = JSON.parse((await tfs(['tensors', 'local/s2', '--json'], storeDir)).stdout.toString());
    expect(list.indexes).toEqual([index]);
    expect(list.tensors.map((x: { name: string }) => x.name).sort()).toEqual(['a.bias', 'a.weight', 'b.weight']);
  });
});
