import { decodeCheckpoint, isTensorFSError } from '@tensorfs/format';
import { noise } from '@tensorfs/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointWriter, composeCheckpoint, openCheckpoint, selectCheckpoint } from '../src/index.js';
import { STORE_KINDS, type TestStore, tempStore } from './helpers.js';

async function errorOf(fn: () => unknown) {
  try {
    await fn();
  } catch (error) {
    if (!isTensorFSError(error)) throw error;
    return { code: error.code, rule: error.details.rule };
  }
  throw new Error('expected a TensorFSError');
}

describe.each(STORE_KINDS)('composeCheckpoint and selectCheckpoint (%s store)', (kind) => {
  let t: TestStore;
  beforeEach(async () => {
    t = await tempStore(kind);
    const w = new CheckpointWriter(t.store);
    w.pipeline({ cls: 'Pipe', config: { steps: 2 } });
    w.setSource(null);
    const te = w.component('text_encoder', { cls: 'CLIP', config: { n: 1 } });
    await te.put('a.weight', noise(8, 1), { dtype: 'U8', shape: [8] });
    await te.put('b.weight', noise(8, 2), { dtype: 'U8', shape: [8] });
    await te.asset('vocab.json', new TextEncoder().encode('{}'));
    const unet = w.component('unet', { cls: 'UNet', config: null });
    await unet.putEncoded('q', {
      dtype: 'F16',
      shape: [4, 8],
      scheme: 'acme.int4',
      params: { group: 16 },
      parts: {
        qweight: { dtype: 'U8', shape: [16], data: noise(16, 3) },
        scales: { dtype: 'F16', shape: [2], data: noise(4, 4) },
      },
    });
    w.component('scheduler', { cls: 'DDIM', config: {} });
    await w.asset('scheduler_config.json', new TextEncoder().encode('{}'));
    await w.commit({ name: 'cp' });
  });
  afterEach(() => t.close());

  it('trims and renames over the same objects; assets, configs, pipeline and order kept', async () => {
    const before = await openCheckpoint(t.store, 'cp');
    const r = await composeCheckpoint(
      t.store,
      'cp',
      { drop: ['b.weight'], rename: { q: 'q2' } },
      { ref: 'small', expected: null },
    );
    expect(r.base).toBe(before.id);
    expect(r.components).toEqual([
      { name: 'text_encoder', before: 2, after: 1 },
      { name: 'unet', before: 1, after: 1 },
      { name: 'scheduler', before: 0, after: 0 },
    ]);
    const after = await openCheckpoint(t.store, 'small');
    expect(after.id).toBe(r.id);
    expect(after.pipeline).toEqual(before.pipeline);
    expect([...after.components.keys()]).toEqual(['text_encoder', 'unet', 'scheduler']);
    expect([...after.component('text_encoder').tensors.keys()]).toEqual(['a.weight']);
    expect(after.component('text_encoder').tensors.get('a.weight').records).toEqual(
      before.component('text_encoder').tensors.get('a.weight').records,
    );
    const q2 = after.component('unet').tensors.get('q2');
    expect([q2.storage, q2.encoding?.scheme, q2.records]).toEqual([
      'encoded',
      'acme.int4',
      before.component('unet').tensors.get('q').records,
    ]);
    expect(after.component('text_encoder').header.assets).toEqual(before.component('text_encoder').header.assets);
    // Only unet, by component.
    const u = await composeCheckpoint(t.store, 'cp', { drop: /^q$/ }, { component: 'unet' });
    expect(u.components).toEqual([{ name: 'unet', before: 1, after: 0 }]);
    expect(await errorOf(() => composeCheckpoint(t.store, 'cp', { drop: ['nope'] }))).toMatchObject({
      code: 'not_found',
    });
    expect(await errorOf(() => composeCheckpoint(t.store, 'cp', { rename: { 'a.weight': 'b.weight' } }))).toEqual({
      code: 'invalid_argument',
      rule: 'tensors.compose_duplicate',
    });
    expect(await errorOf(() => composeCheckpoint(t.store, 'cp', {}, { component: 'vae' }))).toMatchObject({
      code: 'not_found',
    });
  });

  it('selects components and tensors from the header alone; the source is cleared when anything changes', async () => {
    const cp = await openCheckpoint(t.store, 'cp');
    const header = { ...decodeCheckpoint(cp.bytes), source: cp.id };
    expect(selectCheckpoint(header, {})).toBe(header);
    const unet = selectCheckpoint(header, { components: ['unet'] });
    expect(unet.components.map((c) => c.name)).toEqual(['unet']);
    expect(unet.source).toBeNull();
    const some = selectCheckpoint(header, { tensors: (n) => n.startsWith('a.') });
    expect(some.components.map((c) => [c.name, c.tensors.map((x) => x.name)])).toEqual([
      ['text_encoder', ['a.weight']],
      ['scheduler', []],
    ]);
    expect(selectCheckpoint(header, { components: ['unet'], tensors: () => true }).components).toEqual(unet.components);
    expect(await errorOf(() => selectCheckpoint(header, { components: ['vae'] }))).toEqual({
      code: 'not_found',
      rule: 'tensors.no_component',
    });
    expect(await errorOf(() => selectCheckpoint(header, { tensors: () => false }))).toEqual({
      code: 'not_found',
      rule: 'tensors.no_tensor_selected',
    });
  });
});
