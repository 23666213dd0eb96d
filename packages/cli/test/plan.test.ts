import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { idOf, SAMPLES } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { tfs } from './helpers.js';

const VECTORS = fileURLToPath(new URL('../../../vectors/v1/', import.meta.url));
const sha = (b: Uint8Array) => idOf(b);

describe('tfs plan', () => {
  it('cuts the reference-written sample at the header and at every non-empty tensor', async () => {
    const file = path.join(SAMPLES, 'tiny-model/model.safetensors');
    const bytes = fs.readFileSync(file);
    // Independent oracle: the header and tensor ranges as Python's json module read them.
    const exp = JSON.parse(fs.readFileSync(path.join(SAMPLES, 'expected/model.safetensors.json'), 'utf8'));
    const dataStart = 8 + exp.header_size;
    const records = [{ digest: sha(bytes.subarray(0, dataStart)), length: dataStart }];
    const tensors: Record<string, [number, number]> = {};
    for (const t of exp.tensors) {
      const [b, e] = t.data_offsets;
      if (e === b) continue;
      tensors[t.name] = [records.length, records.length];
      records.push({ digest: sha(bytes.subarray(dataStart + b, dataStart + e)), length: e - b });
    }
    const r = await tfs(['plan', file, '--json', '--threads', '1']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ profile: 'safetensors-v1', size: bytes.length, records, tensors });
  });

  it('reproduces every committed small vector', async () => {
    const vectors = JSON.parse(fs.readFileSync(path.join(VECTORS, 'plans.json'), 'utf8'));
    let checked = 0;
    for (const v of vectors) {
      const file = path.join(VECTORS, 'files', v.file ?? '');
      if (!v.file || !fs.existsSync(file) || v.seams) continue;
      const r = await tfs(['plan', file, '--json']);
      expect(r.code, v.name).toBe(0);
      expect(JSON.parse(r.stdout), v.name).toEqual(v.plan);
      checked++;
    }
    expect(checked).toBeGreaterThanOrEqual(6);
  });

  it('applies seams given inline and refuses bad ones', async () => {
    const file = path.join(SAMPLES, 'tiny-model/model.safetensors');
    const r = await tfs(['plan', file, '--json', '--seams', '{"embed.weight":[128,256]}']);
    expect(r.code).toBe(0);
    const plan = JSON.parse(r.stdout);
    const [first, last] = plan.tensors['embed.weight'];
    expect(plan.records.slice(first, last + 1).map((x: { length: number }) => x.length)).toEqual([128, 128, 256]);
    expect((await tfs(['plan', file, '--seams', '{"embed.weight":[-1]}'])).code).toBe(2);
    expect((await tfs(['plan', file, '--seams', '{"nope":[4]}'])).code).toBe(2);
    expect((await tfs(['plan', file, '--seams', 'not json'])).code).toBe(2);
  });

  it('treats an unparseable file as one blob', async () => {
    const r = await tfs(['plan', path.join(SAMPLES, 'README.md'), '--json']);
    expect(r.code).toBe(0);
    const bytes = fs.readFileSync(path.join(SAMPLES, 'README.md'));
    expect(JSON.parse(r.stdout)).toEqual({
      profile: 'blob-v1',
      size: bytes.length,
      records: [{ digest: sha(bytes), length: bytes.length }],
    });
  });
});
