import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeSafetensors } from '@tensorfs/format';
import { noise } from '@tensorfs/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { convertSnapshot, diffSnapshots, type TensorDiff } from '../src/index.js';
import { importTree, STORE_KINDS, type TestStore, tempStore } from './helpers.js';

const SAMPLE = fileURLToPath(new URL('../../../samples/tiny-model/', import.meta.url));

type Spec = { name: string; bytes: Uint8Array };
const ones = new Uint8Array(32).fill(0x3f);
const MODEL: Spec[] = [
  { name: 'embed.weight', bytes: noise(64, 1) },
  { name: 'layers.0.norm.weight', bytes: ones },
  { name: 'layers.0.attn.weight', bytes: noise(64, 2) },
  { name: 'layers.1.norm.weight', bytes: ones },
  { name: 'layers.1.attn.weight', bytes: noise(64, 3) },
  { name: 'final.norm.weight', bytes: ones },
];

const file = (specs: readonly Spec[]) =>
  writeSafetensors(
    specs.map((s) => ({ name: s.name, dtype: 'F32', shape: [BigInt(s.bytes.length / 4)], data: s.bytes })),
  );

/** The counts a `tfs diff` prints. */
const counts = (d: TensorDiff) => ({
  changed: d.changed.length,
  renamed: d.renamed.length,
  removed: d.removed.length,
  added: d.added.length,
  unchanged: d.unchanged,
});

describe.each(STORE_KINDS)('diff pairs tensors by the model names (%s store)', (kind) => {
  let t: TestStore;
  beforeEach(async () => {
    t = await tempStore(kind);
  });
  afterEach(() => t.close());

  it('the same model saved as base.safetensors and tuned.safetensors: no change; a tuned tensor is changed', async () => {
    await importTree(t, { 'base.safetensors': file(MODEL) }, 'a');
    await importTree(t, { 'tuned.safetensors': file(MODEL) }, 'same');
    const tuned = MODEL.map((s) => (s.name === 'layers.1.attn.weight' ? { ...s, bytes: noise(64, 9) } : s));
    await importTree(t, { 'tuned.safetensors': file(tuned) }, 'tuned');
    const same = await diffSnapshots(t.store, 'a', 'same');
    expect(counts(same.tensors)).toEqual({ changed: 0, renamed: 0, removed: 0, added: 0, unchanged: 6 });
    // The files themselves were renamed.
    expect(same.files.map((f) => [f.path, f.status])).toEqual([
      ['base.safetensors', 'removed'],
      ['tuned.safetensors', 'added'],
    ]);
    const d = await diffSnapshots(t.store, 'a', 'tuned');
    expect(counts(d.tensors)).toEqual({ changed: 1, renamed: 0, removed: 0, added: 0, unchanged: 5 });
    expect(d.tensors.changed.map((c) => [c.name, c.before.file, c.after.file])).toEqual([
      ['layers.1.attn.weight', 'base.safetensors', 'tuned.safetensors'],
    ]);
  });

  it('unsharded against three shards: no change', async () => {
    await importTree(t, { 'model.safetensors': file(MODEL) }, 'one');
    const shards = [MODEL.slice(0, 2), MODEL.slice(2, 4), MODEL.slice(4)];
    const names = shards.map((_, i) => `model-0000${i + 1}-of-00003.safetensors`);
    const index = {
      metadata: { total_size: MODEL.reduce((n, s) => n + s.bytes.length, 0) },
      weight_map: Object.fromEntries(shards.flatMap((s, i) => s.map((x) => [x.name, names[i]]))),
    };
    await importTree(
      t,
      {
        'model.safetensors.index.json': new TextEncoder().encode(JSON.stringify(index)),
        ...Object.fromEntries(shards.map((s, i) => [names[i]!, file(s)])),
      },
      'three',
    );
    const d = await diffSnapshots(t.store, 'one', 'three');
    expect(counts(d.tensors)).toEqual({ changed: 0, renamed: 0, removed: 0, added: 0, unchanged: 6 });
    expect(counts((await diffSnapshots(t.store, 'three', 'one')).tensors)).toEqual(counts(d.tensors));
  });

  it('tensors of identical bytes never chain into renames; one unambiguous rename is a rename', async () => {
    await importTree(t, { 'model.safetensors': file(MODEL) }, 'a');
    // Every norm renamed (three all-ones tensors): which became which cannot be told.
    const norms = MODEL.map((s) => (s.bytes === ones ? { ...s, name: s.name.replace('norm', 'ln') } : s));
    await importTree(t, { 'model.safetensors': file(norms) }, 'norms');
    const d = await diffSnapshots(t.store, 'a', 'norms');
    expect(counts(d.tensors)).toEqual({ changed: 0, renamed: 0, removed: 3, added: 3, unchanged: 3 });
    // One attention weight renamed, and one norm removed while another is added: both unambiguous.
    const one = MODEL.filter((s) => s.name !== 'final.norm.weight').map((s) =>
      s.name === 'layers.0.attn.weight' ? { ...s, name: 'layers.0.self_attn.weight' } : s,
    );
    await importTree(t, { 'renamed.safetensors': file([...one, { name: 'out.norm.weight', bytes: ones }]) }, 'one');
    const r = await diffSnapshots(t.store, 'a', 'one');
    expect(counts(r.tensors)).toEqual({ changed: 0, renamed: 2, removed: 0, added: 0, unchanged: 4 });
    expect(r.tensors.renamed.map((x) => [x.from.name, x.to.name])).toEqual([
      ['layers.0.attn.weight', 'layers.0.self_attn.weight'],
      ['final.norm.weight', 'out.norm.weight'],
    ]);
    // Two all-ones tensors gone and one added: ambiguous, so removed + added.
    const fewer = MODEL.filter((s) => s.name !== 'final.norm.weight' && s.name !== 'layers.1.norm.weight');
    await importTree(t, { 'model.safetensors': file([...fewer, { name: 'out.norm.weight', bytes: ones }]) }, 'fewer');
    const f = await diffSnapshots(t.store, 'a', 'fewer');
    expect(counts(f.tensors)).toEqual({ changed: 0, renamed: 0, removed: 2, added: 1, unchanged: 4 });
  });

  it('a snapshot against the checkpoint converted from it: 0 changed (safetensors; GGUF with Q8_0 and Q4_K blocks)', async () => {
    const cases: [Record<string, string | Uint8Array>, number][] = [
      [{ 'model.safetensors': file(MODEL) }, 6],
      [{ 'model.gguf': 'tiny.gguf' }, 5],
    ];
    for (const [i, [tree, unchanged]] of cases.entries()) {
      await importTree(t, tree, `s${i}`);
      await convertSnapshot(t.store, `s${i}`, { name: `c${i}` });
      const d = await diffSnapshots(t.store, `s${i}`, `c${i}`);
      expect(d.kinds).toEqual(['snapshot', 'checkpoint']);
      expect(counts(d.tensors)).toEqual({ changed: 0, renamed: 0, removed: 0, added: 0, unchanged });
      expect(counts((await diffSnapshots(t.store, `c${i}`, `s${i}`)).tensors)).toEqual(counts(d.tensors));
    }
  });
});

describe('diff of the sample Diffusers snapshot and its conversion', () => {
  let t: TestStore;
  beforeEach(async () => {
    t = await tempStore('local');
  });
  afterEach(() => t.close());

  it('the sample Diffusers snapshot against its conversion: 0 changed, 6 unchanged', async () => {
    await t.local!.importPath(path.join(SAMPLE, 'diffusers'), { threads: 1, name: 'sd' });
    await convertSnapshot(t.store, 'sd', { name: 'sd-ckpt' });
    const d = await diffSnapshots(t.store, 'sd', 'sd-ckpt');
    expect(counts(d.tensors)).toEqual({ changed: 0, renamed: 0, removed: 0, added: 0, unchanged: 6 });
  });
});
