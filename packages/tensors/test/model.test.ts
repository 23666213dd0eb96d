import { isTensorFSError, writeSafetensors } from '@tensorfs/format';
import { noise } from '@tensorfs/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointWriter, convertSnapshot, modelKind, openCheckpoint, openModel, openTensors } from '../src/index.js';
import { importTree, STORE_KINDS, type TestStore, tempStore } from './helpers.js';

/** The TensorFSError `fn` throws (fails the test if it throws anything else, or nothing). */
async function errorOf(fn: () => unknown) {
  try {
    await fn();
  } catch (error) {
    if (!isTensorFSError(error)) throw error;
    return { code: error.code, rule: error.details.rule, message: error.message };
  }
  throw new Error('expected a TensorFSError');
}

const f32 = (name: string, seed: number, n = 4) => ({
  name,
  dtype: 'F32' as const,
  shape: [BigInt(n)],
  data: noise(n * 4, seed),
});

describe.each(STORE_KINDS)('openModel (%s store)', (kind) => {
  let t: TestStore;
  beforeEach(async () => {
    t = await tempStore(kind);
  });
  afterEach(() => t.close());

  it('opens a snapshot: components from top folders (model at the root), get returns or throws not_found', async () => {
    await importTree(
      t,
      {
        'model.safetensors': writeSafetensors([f32('a', 1), f32('b', 2)]),
        'unet/diffusion.safetensors': writeSafetensors([f32('a', 3)]),
        'config.json': new TextEncoder().encode('{}'),
      },
      'snap',
    );
    const m = await openModel(t.store, 'snap');
    expect(m.kind).toBe('snapshot');
    expect(await modelKind(t.store, 'snap')).toEqual({ id: m.id, kind: 'snapshot' });
    expect(m.checkpoint).toBeNull();
    expect(m.snapshot?.files.map((f) => f.path)).toEqual(['model.safetensors', 'unet/diffusion.safetensors']);
    expect([...m.components.keys()]).toEqual(['model', 'unet']);
    expect(m.size).toBe(3);
    expect(m.names()).toEqual(['a', 'b']);
    expect([...m].map((v) => [v.component, v.name, v.storage, v.encoding, v.parts])).toEqual([
      ['model', 'a', 'plain', null, {}],
      ['model', 'b', 'plain', null, {}],
      ['unet', 'a', 'plain', null, {}],
    ]);
    expect(m.get('b').file).toBe('model.safetensors');
    expect(m.get('a', 'unet').file).toBe('unet/diffusion.safetensors');
    expect(m.component('unet').tensors.get('a').file).toBe('unet/diffusion.safetensors');
    expect(await errorOf(() => m.get('a'))).toMatchObject({
      code: 'invalid_argument',
      rule: 'tensors.ambiguous_tensor',
    });
    expect(await errorOf(() => m.get('nope'))).toMatchObject({ code: 'not_found', rule: 'tensors.no_tensor' });
    expect(await errorOf(() => m.component('unet').tensors.get('b'))).toMatchObject({
      code: 'not_found',
      rule: 'tensors.no_tensor',
    });
    expect(await errorOf(() => m.component('vae'))).toMatchObject({ code: 'not_found', rule: 'tensors.no_component' });
    expect(await errorOf(() => m.get('b').part('x'))).toMatchObject({ code: 'not_found', rule: 'tensors.no_part' });
    expect(await m.get('b').read()).toEqual(noise(16, 2));
  });

  it('opens a checkpoint: encoded tensors report scheme, logical dtype and shape, parts and lengths; plain reads name decode', async () => {
    const q = noise(16, 5);
    const s = noise(4, 6);
    const w = new CheckpointWriter(t.store);
    w.component('text_encoder', { cls: 'CLIP', config: {} });
    await w.put('w', noise(8, 1), { dtype: 'U8', shape: [8] });
    w.component('unet', { cls: 'UNet', config: null });
    await w.putEncoded('q', {
      dtype: 'F16',
      shape: [4, 8],
      scheme: 'acme.int4',
      params: { group: 16 },
      parts: { qweight: { dtype: 'U8', shape: [16], data: q }, scales: { dtype: 'F16', shape: [2], data: s } },
    });
    await w.put('w', noise(8, 2), { dtype: 'U8', shape: [8] });
    const { id } = await w.commit({ name: 'cp' });

    const m = await openModel(t.store, 'cp');
    expect(m.kind).toBe('checkpoint');
    expect(m.id).toBe(id);
    expect(m.snapshot).toBeNull();
    expect(m.checkpoint?.id).toBe(id);
    expect(await modelKind(t.store, id)).toEqual({ id, kind: 'checkpoint' });
    expect([...m.components.keys()]).toEqual(['text_encoder', 'unet']);
    expect([...m].map((v) => `${v.component}/${v.name}:${v.storage}`)).toEqual([
      'text_encoder/w:plain',
      'unet/q:encoded',
      'unet/w:plain',
    ]);
    const enc = m.get('q');
    expect(enc.dtype).toBe('F16');
    expect(enc.shape).toEqual([4n, 8n]);
    expect(enc.encoding).toEqual({
      scheme: 'acme.int4',
      params: { group: 16 },
      parts: { qweight: { dtype: 'U8', shape: [16n] }, scales: { dtype: 'F16', shape: [2n] } },
    });
    const records = (await openCheckpoint(t.store, id)).header.components[1]!.tensors[0]!.encoding!.parts;
    expect(enc.parts).toEqual({
      qweight: { dtype: 'U8', shape: [16n], records: records.qweight!.records, byteLength: 16 },
      scales: { dtype: 'F16', shape: [2n], records: records.scales!.records, byteLength: 4 },
    });
    expect(enc.byteLength).toBe(20);
    // Parts in the header's (canonical) role order, their records concatenated in that order.
    expect(Object.keys(enc.parts)).toEqual(['scales', 'qweight']);
    expect(enc.records).toEqual([...records.scales!.records, ...records.qweight!.records]);
    expect(enc.digests).toEqual(enc.records.map((r) => r.digest));
    const refused = {
      code: 'unsupported',
      rule: 'tensors.encoded',
      message:
        'tensor "q" is encoded (acme.int4): its values need decode (read({ decode: true }), tfs cat --decode); its stored form is its parts (part(role), name#role)',
    };
    expect(await errorOf(() => enc.read())).toEqual(refused);
    expect(await errorOf(() => enc.readInto(new Uint8Array(64)))).toEqual(refused);
    expect(
      await errorOf(async () => {
        for await (const _ of enc.pieces()) break;
      }),
    ).toEqual(refused);
    const part = enc.part('qweight');
    expect([part.storage, part.component, part.dtype, part.byteLength]).toEqual(['plain', 'unet', 'U8', 16]);
    expect(await part.read()).toEqual(q);
    expect(await errorOf(() => m.get('w'))).toMatchObject({
      code: 'invalid_argument',
      rule: 'tensors.ambiguous_tensor',
    });
    expect(await m.get('w', 'unet').read()).toEqual(noise(8, 2));
    expect(await errorOf(() => m.get('nope'))).toMatchObject({ code: 'not_found' });
    // The narrow door agrees: a component's tensors.get throws not_found, never undefined.
    const cp = await openCheckpoint(t.store, 'cp');
    expect(await errorOf(() => cp.component('unet').tensors.get('nope'))).toMatchObject({
      code: 'not_found',
      rule: 'tensors.no_tensor',
    });
  });

  it('openTensors on a checkpoint says it is a checkpoint (invalid_argument), not a malformed manifest', async () => {
    const sid = await importTree(t, { 'model.safetensors': writeSafetensors([f32('a', 1)]) }, 'snap');
    const cp = await convertSnapshot(t.store, 'snap', { name: 'cp' });
    expect(await errorOf(() => openTensors(t.store, 'cp'))).toEqual({
      code: 'invalid_argument',
      rule: 'tensors.not_snapshot',
      message: 'this ref names a checkpoint, not a snapshot (open it with openModel or openCheckpoint)',
    });
    // Both doors give the same tensor, named as the model names it, in component `model`.
    const [a, b] = [await openModel(t.store, sid), await openModel(t.store, cp.id)];
    expect([a.get('a').component, b.get('a').component]).toEqual(['model', 'model']);
    expect(a.get('a').digests).toEqual(b.get('a').digests);
  });
});
