/**
 * Decoded reads of GGUF tensors: the fixture's Q8_0, Q4_K and F16 tensors decode to exactly what
 * gguf-py's `gguf.quants.dequantize` gives (sha256 of its float32 / float16 output, computed with
 * gguf 0.19 from test/fixtures/tiny.gguf), through a real store.
 */
import { expectCode, sha256Hex } from '@tensorfs/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type TensorSet,
  convertSnapshot,
  decodedByteLength,
  openTensors,
  readDecoded,
  readDecodedInto,
  viewEncoding,
} from '../src/index.js';
import { type TestStore, importTree, tempStore } from './helpers.js';

const GGUF_PY: Record<string, { F32: string; F16: string }> = {
  'blk.0.attn_q.weight': {
    F32: 'eabfda0a55563fa3b7d8c14081db1d959111787ba695cb1980d5e1905b2e69d3',
    F16: '3a484a967cfcaa1a9211ebc42963c6360be77559eaa8408586de2dc717d546d1',
  },
  'output.weight': {
    F32: '36d286e237c709e0756c285f837313b3786239a8016731e0e0b2a96e65507388',
    F16: 'e25b13e452ce4f9b4f25aedb594e08cfb2a2e8ac4ca9a14b040b4917a59b9544',
  },
  'blk.0.ffn.weight': {
    F32: '63cc26c4d0d016b6743446ae6196e4bc938f2871a10d8058c9fd1aac81a1f23e',
    F16: 'e4e3893c39fd54871bc975f110b0397b75918b037d3744bf0e8428bb63b937bc',
  },
};

describe('decoded reads', () => {
  let t: TestStore;
  let set: TensorSet;
  beforeAll(async () => {
    t = await tempStore('local');
    await importTree(t, { 'm.gguf': 'tiny.gguf', 'be.gguf': 'tiny-be.gguf' }, 'm');
    set = await openTensors(t.store, 'm');
  });
  afterAll(() => t.close());

  for (const [name, want] of Object.entries(GGUF_PY)) {
    it(`${name} decodes as gguf-py does, to F32 and F16`, async () => {
      const view = set.get(name, 'm.gguf');
      expect(sha256Hex(await readDecoded(view, { dtype: 'F32' }))).toBe(want.F32);
      expect(sha256Hex(await readDecoded(view, { dtype: 'F16', verify: true }))).toBe(want.F16);
    });
  }

  it('declares the ggml type as the encoding of a GGUF block tensor, none for plain dtypes', () => {
    expect(viewEncoding(set.get('output.weight', 'm.gguf'))).toMatchObject({
      scheme: 'ggml',
      params: { shape: [1, 256], type: 'Q4_K' },
    });
    expect(viewEncoding(set.get('blk.0.ffn.weight', 'm.gguf'))).toBeNull();
    expect(decodedByteLength(set.get('output.weight', 'm.gguf'))).toBe(1024);
    expect(decodedByteLength(set.get('output.weight', 'm.gguf'), 'BF16')).toBe(512);
  });

  it('view.read({ decode: true }) and readInto({ decode: true }) are the decoded reads', async () => {
    const view = set.get('output.weight', 'm.gguf');
    expect(sha256Hex(await view.read({ decode: true }))).toBe(GGUF_PY['output.weight']?.F32);
    const buf = new Uint8Array(4 + 512);
    const got = await view.readInto(buf, 4, { decode: true, dtype: 'F16' });
    expect(sha256Hex(got)).toBe(GGUF_PY['output.weight']?.F16);
    expect((await view.read()).length).toBe(view.byteLength);
  });

  it('swaps the plain elements of a big-endian GGUF file and refuses its blocks', async () => {
    // numpy: GGUFReader(tiny-be.gguf) data (>f2 / >f4) .astype('<f4') / .astype('<f2'), sha256
    const f16 = set.get('blk.0.ffn.weight', 'be.gguf');
    expect(f16.byteOrder).toBe('big');
    expect(sha256Hex(await readDecoded(f16, { dtype: 'F32' }))).toBe(
      '25ed3f1104381b74ec869439febbfeb45f3116c6326440582eff19198a4d0779',
    );
    expect(sha256Hex(await readDecoded(f16))).toBe('f10f5b20584cce3cb28663ec41e8ab127f4dea56e5a3f962b2716af7d53f427b');
    const f32 = set.get('token_embd.weight', 'be.gguf');
    expect(sha256Hex(await readDecoded(f32))).toBe('4f98b344af6001d5a7344a1b3a793fa5ab782e5a8e90782107dd3ea809decb74');
    const blocks = set.get('output.weight', 'be.gguf');
    // The refusal names the ggml type and the fact (the byte order).
    await expectCode(() => readDecoded(blocks), 'unsupported', 'tensors.decode_byte_order', {
      type: blocks.dtype,
      fact: 'byte_order',
    });
    expect(blocks.blockSize).toBeGreaterThan(1);
  });

  it('converting a big-endian GGUF file refuses its block types, naming the type', async () => {
    const only = await tempStore();
    try {
      await importTree(only, { 'be.gguf': 'tiny-be.gguf' }, 'be');
      const be = await openTensors(only.store, 'be');
      const err = await expectCode(
        () => convertSnapshot(only.store, 'be', { name: 'x' }),
        'unsupported',
        'convert.byte_order',
        {
          fact: 'byte_order',
        },
      );
      const tensor = be.get(String(err.details.tensor));
      expect(tensor.blockSize).toBeGreaterThan(1);
      expect(err.details.type).toBe(tensor.dtype);
      expect(err.message).toContain(tensor.dtype);
      expect(await only.refNames()).not.toContain('x');
    } finally {
      await only.close();
    }
  });

  it('reads into a caller buffer at an offset, and refuses one too small', async () => {
    const view = set.get('blk.0.attn_q.weight', 'm.gguf');
    const buf = new Uint8Array(8 + 64 * 4);
    const got = await readDecodedInto(view, buf, 8, { dtype: 'F32' });
    expect(got.byteOffset).toBe(8);
    expect(sha256Hex(got)).toBe(GGUF_PY['blk.0.attn_q.weight']?.F32);
    await expectCode(() => readDecodedInto(view, new Uint8Array(10), 0, { dtype: 'F32' }), 'invalid_argument');
  });
});
