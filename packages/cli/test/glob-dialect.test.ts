/**
 * One glob dialect (issue 23 item 7): `compose --trim` drops exactly the tensors `pull --tensors`
 * keeps, for every pattern of a table that uses each feature of the dialect (picomatch, `dot`:
 * `*`, `?`, `[…]`, `{a,b}`, `**`). `--trim` had a hand-written matcher that knew only `*` and `?`.
 */
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { safetensorsBytes } from '@tensorfs/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tfs } from './helpers.js';

const NAMES = [
  'lm_head.weight',
  'model.layers.0.attn.q.weight',
  'model.layers.0.mlp.up.weight',
  'model.layers.1.attn.q.weight',
  'model.layers.12.mlp.up.weight',
  'model.norm.weight',
];

/** Pattern → the tensors it matches. */
const TABLE: [string, string[]][] = [
  ['*.attn.*', ['model.layers.0.attn.q.weight', 'model.layers.1.attn.q.weight']],
  ['model.layers.?.mlp.*', ['model.layers.0.mlp.up.weight']],
  ['model.layers.[01].attn.q.weight', ['model.layers.0.attn.q.weight', 'model.layers.1.attn.q.weight']],
  ['{lm_head,model.norm}.weight', ['lm_head.weight', 'model.norm.weight']],
  ['model.layers.1*', ['model.layers.1.attn.q.weight', 'model.layers.12.mlp.up.weight']],
  ['**.up.weight', ['model.layers.0.mlp.up.weight', 'model.layers.12.mlp.up.weight']],
];

let dir: string;
let store: string;
let folder: string;

beforeAll(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-cli-glob-'));
  const src = path.join(dir, 'src');
  await fsp.mkdir(src);
  await fsp.writeFile(
    path.join(src, 'model.safetensors'),
    safetensorsBytes(
      NAMES.map((name, i) => ({
        name,
        dtype: 'F32',
        shape: [2],
        data: new Uint8Array(new Float32Array([i, -i]).buffer),
      })),
    ),
  );
  store = path.join(dir, 'store');
  expect((await tfs(['import', src, '--name', 'team/m', '--store', store])).code).toBe(0);
  folder = path.join(dir, 'origin');
  const p = await tfs(['push', folder, 'team/m', '--store', store]);
  expect(p.code, p.stderr).toBe(0);
});
afterAll(async () => {
  await fsp.rm(dir, { recursive: true, force: true });
});

async function names(ref: string, at: string): Promise<string[]> {
  const t = await tfs(['tensors', ref, '--json', '--store', at]);
  expect(t.code, t.stderr).toBe(0);
  return JSON.parse(t.stdout)
    .tensors.map((x: { name: string }) => x.name)
    .sort();
}

describe('--trim and --tensors speak one glob dialect', () => {
  it.each(TABLE.map(([p, m], i) => [p, m, i] as const))('%s', async (pattern, matched, i) => {
    const c = await tfs(['compose', 'team/m', '--trim', pattern, '--name', `trimmed-${i}`, '--store', store]);
    expect(c.code, c.stderr).toBe(0);
    expect(await names(`trimmed-${i}`, store)).toEqual(NAMES.filter((n) => !matched.includes(n)));
    const pulled = path.join(dir, `pulled-${i}`);
    const p = await tfs(['pull', folder, 'team/m', '--tensors', pattern, '--store', pulled]);
    expect(p.code, p.stderr).toBe(0);
    expect(await names('team/m', pulled)).toEqual(matched);
  });
});
