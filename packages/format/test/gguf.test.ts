import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import {
  bytesSource,
  type ErrorCode,
  GGML_TYPES,
  type GgufHeader,
  type GgufKV,
  ggmlType,
  ggmlTypeByName,
  parseGgufHeader,
  readGgufHeader,
  writeGguf,
  writeGgufHeader,
} from '../src/index.js';
import { RawGguf } from './gguf.helpers.js';

const U64_MAX = (1n << 64n) - 1n;

/** A hand-built valid file: 3 KVs, an F32 [4,2] tensor and a Q4_0 [32] tensor. */
function handBuilt(little = true): Uint8Array {
  const g = new RawGguf(little)
    .header(2, 3)
    .kvStr('general.architecture', 'llama')
    .kvU32('llama.block_count', 2)
    .str('tokenizer.ggml.scores')
    .u32(9)
    .u32(6)
    .u64(2)
    .raw(f32s([0.5, -1], little))
    .tensor('a', [4, 2], 0, 0)
    .tensor('blk.0.q', [32], 2, 32)
    .pad();
  return g.zeros(32 + 32).done();
}

function f32s(values: number[], little: boolean): Uint8Array {
  const b = new Uint8Array(values.length * 4);
  const dv = new DataView(b.buffer);
  values.forEach((v, i) => {
    dv.setFloat32(i * 4, v, little);
  });
  return b;
}

describe('GGML type table', () => {
  it('has the 43 ids of ggml HEAD with their block geometry', () => {
    expect(GGML_TYPES).toHaveLength(43);
    expect(GGML_TYPES.map((t) => t.id)).toEqual(Array.from({ length: 43 }, (_, i) => i));
    const geometry = (name: string) => {
      const t = ggmlTypeByName(name)!;
      return [t.id, t.blockSize, t.typeSize];
    };
    expect(geometry('F32')).toEqual([0, 1, 4]);
    expect(geometry('Q4_0')).toEqual([2, 32, 18]);
    expect(geometry('Q8_1')).toEqual([9, 32, 36]);
    expect(geometry('Q4_K')).toEqual([12, 256, 144]);
    expect(geometry('Q6_K')).toEqual([14, 256, 210]);
    expect(geometry('IQ4_XS')).toEqual([23, 256, 136]);
    expect(geometry('BF16')).toEqual([30, 1, 2]);
    expect(geometry('TQ1_0')).toEqual([34, 256, 54]);
    expect(geometry('MXFP4')).toEqual([39, 32, 17]);
    expect(geometry('NVFP4')).toEqual([40, 64, 36]);
    expect(geometry('Q1_0')).toEqual([41, 128, 18]);
    expect(geometry('Q2_0')).toEqual([42, 64, 18]);
    expect(GGML_TYPES.filter((t) => t.removed).map((t) => t.id)).toEqual([4, 5, 31, 32, 33, 36, 37, 38]);
    expect(GGML_TYPES.filter((t) => t.removed).every((t) => t.blockSize === 0 && t.typeSize === 0)).toBe(true);
  });
  it('looks types up by id and by name, case-insensitively', () => {
    expect(ggmlType(12)?.name).toBe('Q4_K');
    expect(ggmlType(43)).toBeUndefined();
    expect(ggmlType(-1)).toBeUndefined();
    expect(ggmlType(1.5)).toBeUndefined();
    expect(ggmlTypeByName('q4_k')?.id).toBe(12);
    expect(ggmlTypeByName('Q4_2')?.removed).toBe(true);
    expect(ggmlTypeByName('Q9_9')).toBeUndefined();
  });
});

describe('parseGgufHeader on a hand-built file', () => {
  for (const little of [true, false]) {
    it(`reads every field (${little ? 'little' : 'big'}-endian)`, () => {
      const bytes = handBuilt(little);
      const h = parseGgufHeader(bytes);
      expect(h.version).toBe(3);
      expect(h.endianness).toBe(little ? 'little' : 'big');
      expect(h.alignment).toBe(32);
      expect(h.metadata).toEqual([
        { key: 'general.architecture', type: 'string', value: 'llama' },
        { key: 'llama.block_count', type: 'uint32', value: 2 },
        { key: 'tokenizer.ggml.scores', type: 'array', value: { itemType: 'float32', items: [0.5, -1] } },
      ]);
      expect(h.metadataMap.get('llama.block_count')?.value).toBe(2);
      expect(h.metadataBlock.offset).toBe(24);
      const infoStart = h.metadataBlock.offset + h.metadataBlock.length;
      expect(h.tensorInfoBlock.offset).toBe(infoStart);
      const infoBytes = 8 + 1 + 4 + 16 + 4 + 8 + (8 + 7 + 4 + 8 + 4 + 8);
      expect(h.tensorInfoBlock.length).toBe(infoBytes);
      expect(h.dataStart).toBe(Math.ceil((infoStart + infoBytes) / 32) * 32);
      expect(h.fileSize).toBe(bytes.length);
      expect(h.tensors).toEqual([
        {
          name: 'a',
          type: 0,
          typeName: 'F32',
          dims: [4n, 2n],
          shape: [2n, 4n],
          offset: 0n,
          byteOffset: h.dataStart,
          byteLength: 32,
          paddedLength: 32,
          elementCount: 8n,
          blockSize: 1,
          typeSize: 4,
        },
        {
          name: 'blk.0.q',
          type: 2,
          typeName: 'Q4_0',
          dims: [32n],
          shape: [32n],
          offset: 32n,
          byteOffset: h.dataStart + 32,
          byteLength: 18,
          paddedLength: 32,
          elementCount: 32n,
          blockSize: 32,
          typeSize: 18,
        },
      ]);
    });
  }

  it('accepts version 2 and a file with no tensors, padded or ending at the tensor infos', () => {
    const v2 = new RawGguf().header(0, 1, 2).kvStr('k', 'v').pad().done();
    expect(parseGgufHeader(v2)).toMatchObject({ version: 2, tensors: [], dataStart: 64, fileSize: 64 });
    const unpadded = new RawGguf().header(0, 1).kvStr('k', 'v').done();
    expect(parseGgufHeader(unpadded)).toMatchObject({
      tensors: [],
      dataStart: unpadded.length,
      fileSize: unpadded.length,
    });
  });

  it('parses a prefix given the real file size, and asks for more when the prefix is too short', () => {
    const bytes = handBuilt();
    const h = parseGgufHeader(bytes);
    expect(parseGgufHeader(bytes.subarray(0, h.dataStart), { fileSize: bytes.length })).toEqual(h);
    expectCodeSync(
      () => parseGgufHeader(bytes.subarray(0, 40), { fileSize: bytes.length }),
      'invalid_argument',
      'gguf.need_more_bytes',
      { length: 40 },
    );
    expectCodeSync(() => parseGgufHeader(bytes, { fileSize: 3 }), 'invalid_argument');
  });
});

interface Case {
  name: string;
  bytes: Uint8Array;
  code: ErrorCode;
  rule: string;
  offset?: number;
  extra?: Record<string, unknown>;
}

function hostileCases(): Case[] {
  const kv = (key: string) => new RawGguf().header(0, 1).str(key);
  const oneTensor = (name: string | Uint8Array, dims: (number | bigint)[], type: number, offset = 0, data = 32) =>
    new RawGguf().header(1, 0).tensor(name, dims, type, offset).pad().zeros(data).done();
  const kvHeaderEnd = 24;
  return [
    { name: 'empty file', bytes: new Uint8Array(0), code: 'malformed', rule: 'gguf.truncated' },
    {
      name: 'bad magic',
      bytes: new RawGguf().raw([0x47, 0x47, 0x55, 0x58]).u32(3).u64(0).u64(0).done(),
      code: 'malformed',
      rule: 'gguf.magic',
      offset: 0,
    },
    {
      name: 'version 0',
      bytes: new RawGguf().header(0, 0, 0).pad().done(),
      code: 'unsupported',
      rule: 'gguf.version',
      offset: 4,
    },
    {
      name: 'version 1',
      bytes: new RawGguf().header(0, 0, 1).pad().done(),
      code: 'unsupported',
      rule: 'gguf.version',
      offset: 4,
      extra: { version: 1 },
    },
    {
      name: 'version 4',
      bytes: new RawGguf().header(0, 0, 4).pad().done(),
      code: 'unsupported',
      rule: 'gguf.version',
      offset: 4,
      extra: { version: 4 },
    },
    {
      name: 'big-endian version 1',
      bytes: new RawGguf(false).header(0, 0, 1).pad().done(),
      code: 'unsupported',
      rule: 'gguf.version',
      extra: { endianness: 'big', version: 1 },
    },
    {
      name: 'truncated fixed header',
      bytes: new RawGguf().header(0, 0).done().subarray(0, 20),
      code: 'malformed',
      rule: 'gguf.truncated',
    },
    {
      name: 'tensor count 2^64-1',
      bytes: new RawGguf().header(U64_MAX, 0).pad().done(),
      code: 'malformed',
      rule: 'gguf.tensor_count',
      offset: 8,
      extra: { actual: U64_MAX },
    },
    {
      name: 'kv count 2^64-1',
      bytes: new RawGguf().header(0, U64_MAX).pad().done(),
      code: 'malformed',
      rule: 'gguf.kv_count',
      offset: 16,
      extra: { actual: U64_MAX },
    },
    {
      name: 'kv count beyond the bytes left',
      bytes: new RawGguf().header(0, 10).kvStr('a', 'b').pad().done(),
      code: 'malformed',
      rule: 'gguf.kv_count',
      offset: 16,
    },
    {
      name: 'key length 2^64-1',
      bytes: new RawGguf().header(0, 1).u64(U64_MAX).zeros(40).done(),
      code: 'malformed',
      rule: 'gguf.string_length',
      offset: kvHeaderEnd,
      extra: { length: U64_MAX },
    },
    {
      name: 'value string past EOF',
      bytes: kv('k').u32(8).u64(1000).zeros(20).done(),
      code: 'malformed',
      rule: 'gguf.string_length',
      offset: kvHeaderEnd + 13,
      extra: { key: 'k' },
    },
    {
      name: 'key of 65,536 bytes',
      bytes: new RawGguf().header(0, 1).kvU32('k'.repeat(65536), 1).pad().done(),
      code: 'malformed',
      rule: 'gguf.key_length',
      offset: kvHeaderEnd,
      extra: { limit: 65535, length: 65536n },
    },
    {
      name: 'empty key',
      bytes: kv('').u32(4).u32(1).pad().done(),
      code: 'malformed',
      rule: 'gguf.key_empty',
      offset: kvHeaderEnd,
    },
    {
      name: 'duplicate key',
      bytes: new RawGguf().header(0, 2).kvU32('k', 1).kvU32('k', 2).pad().done(),
      code: 'malformed',
      rule: 'gguf.key_duplicate',
      offset: kvHeaderEnd + 17,
      extra: { key: 'k' },
    },
    {
      name: 'key not UTF-8',
      bytes: kv('\u0000')
        .u32(4)
        .u32(1)
        .pad()
        .done()
        .map((b, i) => (i === kvHeaderEnd + 8 ? 0xff : b)),
      code: 'malformed',
      rule: 'gguf.utf8',
      offset: kvHeaderEnd + 8,
    },
    {
      name: 'value not UTF-8 (overlong NUL)',
      bytes: new RawGguf().header(0, 1).kvStr('k', Uint8Array.of(0xc0, 0x80)).pad().done(),
      code: 'malformed',
      rule: 'gguf.utf8',
      offset: kvHeaderEnd + 21,
      extra: { key: 'k' },
    },
    {
      name: 'value a lone surrogate',
      bytes: new RawGguf()
        .header(0, 1)
        .kvStr('k', Uint8Array.of(0xed, 0xa0, 0x80))
        .pad()
        .done(),
      code: 'malformed',
      rule: 'gguf.utf8',
    },
    {
      name: 'unknown value type',
      bytes: kv('k').u32(13).u32(0).pad().done(),
      code: 'malformed',
      rule: 'gguf.value_type',
      offset: kvHeaderEnd + 9,
      extra: { type: 13 },
    },
    {
      name: 'nested array',
      bytes: kv('k').u32(9).u32(9).u64(0).pad().done(),
      code: 'unsupported',
      rule: 'gguf.nested_array',
      offset: kvHeaderEnd + 13,
    },
    {
      name: 'array count 2^64-1',
      bytes: kv('k').u32(9).u32(0).u64(U64_MAX).pad().done(),
      code: 'malformed',
      rule: 'gguf.array_count',
      offset: kvHeaderEnd + 17,
    },
    {
      name: 'string array count past EOF',
      bytes: kv('k').u32(9).u32(8).u64(1000).pad().done(),
      code: 'malformed',
      rule: 'gguf.array_count',
    },
    {
      name: 'bool value 2',
      bytes: kv('k').u32(7).u8(2).pad().done(),
      code: 'malformed',
      rule: 'gguf.bool_value',
      offset: kvHeaderEnd + 13,
    },
    {
      name: 'alignment typed int32',
      bytes: new RawGguf().header(0, 1).str('general.alignment').u32(5).i32(32).pad().done(),
      code: 'malformed',
      rule: 'gguf.alignment_type',
      offset: kvHeaderEnd,
    },
    {
      name: 'alignment typed uint64',
      bytes: new RawGguf().header(0, 1).str('general.alignment').u32(10).u64(32).pad().done(),
      code: 'malformed',
      rule: 'gguf.alignment_type',
    },
    {
      name: 'alignment 0',
      bytes: new RawGguf().header(0, 1).kvU32('general.alignment', 0).pad().done(),
      code: 'malformed',
      rule: 'gguf.alignment_value',
      extra: { actual: 0 },
    },
    {
      name: 'alignment 48',
      bytes: new RawGguf().header(0, 1).kvU32('general.alignment', 48).pad().done(),
      code: 'malformed',
      rule: 'gguf.alignment_value',
      extra: { actual: 48 },
    },
    {
      name: 'tensor name of 64 bytes',
      bytes: oneTensor('x'.repeat(64), [1], 0),
      code: 'malformed',
      rule: 'gguf.tensor_name_length',
      offset: 24,
    },
    {
      name: 'tensor name not UTF-8',
      bytes: oneTensor(Uint8Array.of(0x80), [1], 0),
      code: 'malformed',
      rule: 'gguf.utf8',
      offset: 32,
    },
    {
      name: 'duplicate tensor name',
      bytes: new RawGguf().header(2, 0).tensor('t', [8], 0, 0).tensor('t', [8], 0, 32).pad().zeros(64).done(),
      code: 'malformed',
      rule: 'gguf.tensor_name_duplicate',
      offset: 24 + 33,
      extra: { tensor: 't' },
    },
    {
      name: 'NUL in a key',
      bytes: new RawGguf().header(0, 1).kvU32('a\u0000b', 1).pad().done(),
      code: 'malformed',
      rule: 'gguf.key_nul',
      offset: 24,
    },
    {
      name: 'NUL in a tensor name',
      bytes: oneTensor('a\u0000b', [1], 0),
      code: 'malformed',
      rule: 'gguf.tensor_name_nul',
      offset: 24,
    },
    {
      name: '5 dims',
      bytes: oneTensor('t', [1, 1, 1, 1, 1], 0),
      code: 'malformed',
      rule: 'gguf.tensor_dims_count',
      offset: 33,
      extra: { tensor: 't', actual: 5 },
    },
    {
      name: 'dim 2^63',
      bytes: oneTensor('t', [1n << 63n], 0),
      code: 'malformed',
      rule: 'gguf.tensor_dim_range',
      extra: { tensor: 't', dim: 0 },
    },
    { name: 'dim 2^64-1', bytes: oneTensor('t', [U64_MAX, 0], 0), code: 'malformed', rule: 'gguf.tensor_dim_range' },
    {
      name: 'element count overflow',
      bytes: oneTensor('t', [1n << 32n, 1n << 31n], 0),
      code: 'malformed',
      rule: 'gguf.tensor_element_count',
      extra: { actual: 1n << 63n },
    },
    {
      name: 'unknown type 43',
      bytes: oneTensor('t', [1], 43),
      code: 'unsupported',
      rule: 'gguf.tensor_type_unknown',
      offset: 24,
      extra: { type: 43, tensor: 't' },
    },
    {
      name: 'unknown type 2^32-1',
      bytes: oneTensor('t', [1], 0xffffffff),
      code: 'unsupported',
      rule: 'gguf.tensor_type_unknown',
    },
    {
      name: 'removed type Q4_2',
      bytes: oneTensor('t', [32], 4),
      code: 'unsupported',
      rule: 'gguf.tensor_type_removed',
      extra: { type: 4 },
    },
    {
      name: 'removed type Q4_0_4_4',
      bytes: oneTensor('t', [32], 31),
      code: 'unsupported',
      rule: 'gguf.tensor_type_removed',
    },
    {
      name: 'block misaligned',
      bytes: oneTensor('t', [16, 2], 2),
      code: 'malformed',
      rule: 'gguf.tensor_block_alignment',
      extra: { blockSize: 32, actual: 16n },
    },
    {
      name: 'first offset not 0',
      bytes: oneTensor('t', [8], 0, 32, 64),
      code: 'malformed',
      rule: 'gguf.tensor_offset',
      offset: 24 + 9 + 4 + 8 + 4,
      extra: { expected: 0n, actual: 32n },
    },
    {
      name: 'offsets overlapping',
      bytes: new RawGguf().header(2, 0).tensor('a', [8], 0, 0).tensor('b', [8], 0, 16).pad().zeros(64).done(),
      code: 'malformed',
      rule: 'gguf.tensor_offset',
      extra: { tensor: 'b', expected: 32n, actual: 16n },
    },
    {
      name: 'offsets unaligned',
      bytes: new RawGguf().header(2, 0).tensor('a', [5], 0, 0).tensor('b', [8], 0, 20).pad().zeros(64).done(),
      code: 'malformed',
      rule: 'gguf.tensor_offset',
      extra: { tensor: 'b', expected: 32n, actual: 20n },
    },
    {
      name: 'offsets out of order',
      bytes: new RawGguf().header(2, 0).tensor('a', [8], 0, 32).tensor('b', [8], 0, 0).pad().zeros(64).done(),
      code: 'malformed',
      rule: 'gguf.tensor_offset',
      extra: { tensor: 'a' },
    },
    {
      name: 'offset past the end',
      bytes: new RawGguf()
        .header(2, 0)
        .tensor('a', [8], 0, 0)
        .tensor('b', [8], 0, 1n << 40n)
        .pad()
        .zeros(64)
        .done(),
      code: 'malformed',
      rule: 'gguf.tensor_offset',
      extra: { tensor: 'b' },
    },
    {
      name: 'data one byte short',
      bytes: oneTensor('t', [8], 0, 0, 31),
      code: 'malformed',
      rule: 'gguf.data_truncated',
      offset: 24,
      extra: { tensor: 't' },
    },
    {
      name: 'huge tensor past the end',
      bytes: oneTensor('t', [1n << 40n], 0, 0),
      code: 'malformed',
      rule: 'gguf.data_truncated',
      extra: { tensor: 't' },
    },
    {
      name: 'trailing byte',
      bytes: oneTensor('t', [8], 0, 0, 33),
      code: 'malformed',
      rule: 'gguf.trailing_bytes',
      offset: 96,
      extra: { fileSize: 97 },
    },
    {
      name: 'truncated in the tensor infos',
      bytes: new RawGguf().header(1, 0).tensor('t', [8], 0, 0).done().subarray(0, 50),
      code: 'malformed',
      rule: 'gguf.truncated',
    },
  ];
}

describe('the hostile corpus', () => {
  for (const c of hostileCases()) {
    it(`rejects: ${c.name}`, async () => {
      const e = expectCodeSync(() => parseGgufHeader(c.bytes), c.code, c.rule);
      expect(e.details.format).toBe('gguf');
      expect(typeof e.details.offset).toBe('number');
      if (c.offset !== undefined) expect(e.details.offset).toBe(c.offset);
      if (c.extra) expect(e.details).toMatchObject(c.extra);
      // The incremental reader fails the same way.
      await expect(readGgufHeader(bytesSource(c.bytes))).rejects.toMatchObject({ code: c.code, details: e.details });
    });
  }

  it('fails fast on a count of 2^64-1 without allocating', () => {
    const bytes = new RawGguf().header(U64_MAX, U64_MAX).pad().done();
    const t0 = performance.now();
    for (let i = 0; i < 1000; i++) expectCodeSync(() => parseGgufHeader(bytes), 'malformed');
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it('rejects a header above maxHeaderBytes as limit_exceeded', async () => {
    const bytes = new RawGguf().header(0, 1).kvStr('k', 'x'.repeat(200)).pad().done();
    expectCodeSync(() => parseGgufHeader(bytes, { maxHeaderBytes: 100 }), 'limit_exceeded', 'gguf.header_size', {
      limit: 100,
    });
    await expect(readGgufHeader(bytesSource(bytes), { maxHeaderBytes: 100 })).rejects.toMatchObject({
      code: 'limit_exceeded',
    });
    const many = new RawGguf().header(0, 20).pad(512).done();
    expectCodeSync(() => parseGgufHeader(many, { maxHeaderBytes: 200 }), 'limit_exceeded');
  });

  it('caps the items of all metadata arrays together (maxArrayItems), across re-reads too', async () => {
    const arr = (key: string, n: number): GgufKV => ({
      key,
      type: 'array',
      value: { itemType: 'uint8', items: new Array(n).fill(7) },
    });
    const file = writeGguf({ metadata: [arr('a', 6), arr('b', 4)], tensors: [] });
    expect(parseGgufHeader(file, { maxArrayItems: 10 }).metadata).toHaveLength(2);
    const e = expectCodeSync(() => parseGgufHeader(file, { maxArrayItems: 9 }), 'limit_exceeded', 'gguf.array_items', {
      key: 'b',
      limit: 3,
      actual: 4n,
    });
    for (const initialReadBytes of [1, 40, 70]) {
      await expect(readGgufHeader(bytesSource(file), { maxArrayItems: 9, initialReadBytes })).rejects.toMatchObject({
        details: e.details,
      });
      expect((await readGgufHeader(bytesSource(file), { maxArrayItems: 10, initialReadBytes })).metadata).toEqual(
        parseGgufHeader(file).metadata,
      );
    }
    expectCodeSync(() => parseGgufHeader(file, { maxArrayItems: -1 }), 'invalid_argument');
  });

  it('caps the KV and tensor counts (maxKvCount, maxTensorCount) before reading any item', () => {
    const kvs = Array.from({ length: 6 }, (_, i): GgufKV => ({ key: `k${i}`, type: 'uint8', value: i }));
    const tensors = Array.from({ length: 3 }, (_, i) => ({
      name: `t${i}`,
      type: 'F32',
      dims: [1],
      data: new Uint8Array(4),
    }));
    const file = writeGguf({ metadata: kvs, tensors });
    expect(parseGgufHeader(file, { maxKvCount: 6, maxTensorCount: 3 }).tensors).toHaveLength(3);
    expectCodeSync(() => parseGgufHeader(file, { maxKvCount: 5 }), 'limit_exceeded', 'gguf.kv_count_limit', {
      offset: 16,
      actual: 6n,
    });
    expectCodeSync(() => parseGgufHeader(file, { maxTensorCount: 2 }), 'limit_exceeded', 'gguf.tensor_count_limit', {
      offset: 8,
    });
    expectCodeSync(() => parseGgufHeader(file, { maxTensorCount: 1.5 }), 'invalid_argument');
  });

  it('accepts alignments 1 and 64 (non-zero powers of two), placing data accordingly', () => {
    for (const alignment of [1, 64]) {
      const g = new RawGguf().header(1, 1).kvU32('general.alignment', alignment).tensor('t', [3], 0, 0);
      const bytes = g
        .pad(alignment)
        .zeros(Math.ceil(12 / alignment) * alignment)
        .done();
      const h = parseGgufHeader(bytes);
      expect(h.alignment).toBe(alignment);
      expect(h.dataStart % alignment).toBe(0);
      expect(h.tensors[0]!.paddedLength).toBe(Math.ceil(12 / alignment) * alignment);
    }
  });

  it('accepts a key of 65,535 bytes', () => {
    const key = 'k'.repeat(65535);
    expect(parseGgufHeader(new RawGguf().header(0, 1).kvU32(key, 1).pad().done()).metadataMap.has(key)).toBe(true);
  });

  it('accepts a 63-byte tensor name, zero-sized tensors and zero dims', () => {
    const bytes = new RawGguf()
      .header(3, 0)
      .tensor('x'.repeat(63), [0, 5], 2, 0)
      .tensor('scalar', [], 0, 0)
      .tensor('e', [256, 0, 7], 12, 32)
      .pad()
      .zeros(32)
      .done();
    const h = parseGgufHeader(bytes);
    expect(h.tensors.map((t) => [t.byteLength, t.elementCount, t.shape])).toEqual([
      [0, 0n, [5n, 0n]],
      [4, 1n, []],
      [0, 0n, [7n, 0n, 256n]],
    ]);
  });
});

describe('readGgufHeader', () => {
  it('equals parseGgufHeader and reads a small file once', async () => {
    const bytes = handBuilt();
    const reads: [number, number][] = [];
    const source = {
      size: bytes.length,
      read: async (offset: number, length: number) => {
        reads.push([offset, length]);
        return bytes.slice(offset, offset + length);
      },
    };
    expect(await readGgufHeader(source)).toEqual(parseGgufHeader(bytes));
    expect(reads).toEqual([[0, bytes.length]]);
  });

  it('grows its read for a header beyond 1 MiB, in few reads, without reading far into the data', async () => {
    const tokens = Array.from({ length: 120_000 }, (_, i) => `token_${i}_${'ab'.repeat(i % 5)}`);
    const metadata: GgufKV[] = [
      { key: 'tokenizer.ggml.tokens', type: 'array', value: { itemType: 'string', items: tokens } },
    ];
    const file = writeGguf({
      metadata,
      tensors: [{ name: 'w', type: 'F32', dims: [1 << 20], data: new Uint8Array(4 << 20) }],
    });
    const reads: [number, number][] = [];
    const source = {
      size: file.length,
      read: async (offset: number, length: number) => {
        reads.push([offset, length]);
        return file.slice(offset, offset + length);
      },
    };
    const h = await readGgufHeader(source);
    expect(h.metadataMap.get('tokenizer.ggml.tokens')?.value).toEqual({ itemType: 'string', items: tokens });
    expect(h.dataStart).toBeGreaterThan(1 << 20);
    expect(reads.length).toBeLessThanOrEqual(3);
    expect(reads[0]).toEqual([0, 1 << 20]);
    const total = reads.reduce((n, [, l]) => n + l, 0);
    expect(total).toBeLessThan(h.dataStart * 1.2);
  });

  it('refuses a fileSize that differs from the source, and maps source failures to io', async () => {
    const bytes = handBuilt();
    await expect(readGgufHeader(bytesSource(bytes), { fileSize: 5 })).rejects.toMatchObject({
      code: 'invalid_argument',
    });
    await expect(readGgufHeader(bytesSource(bytes), { initialReadBytes: 0 })).rejects.toMatchObject({
      code: 'invalid_argument',
    });
    const nan = { size: Number.NaN, read: async () => new Uint8Array(0) };
    await expect(readGgufHeader(nan)).rejects.toMatchObject({ code: 'invalid_argument' });
    const failing = { size: 100, read: async () => Promise.reject(new Error('disk on fire')) };
    await expect(readGgufHeader(failing)).rejects.toMatchObject({ code: 'io' });
    const short = { size: 100, read: async () => new Uint8Array(3) };
    await expect(readGgufHeader(short)).rejects.toMatchObject({ code: 'io' });
    const ac = new AbortController();
    ac.abort();
    await expect(readGgufHeader(bytesSource(bytes), { signal: ac.signal })).rejects.toMatchObject({
      code: 'cancelled',
    });
  });
});

/** Every metadata value type, with edge values. */
export function everyTypeMetadata(): GgufKV[] {
  return [
    { key: 'general.architecture', type: 'string', value: 'llama' },
    { key: 'u8', type: 'uint8', value: 255 },
    { key: 'i8', type: 'int8', value: -128 },
    { key: 'u16', type: 'uint16', value: 65535 },
    { key: 'i16', type: 'int16', value: -32768 },
    { key: 'u32', type: 'uint32', value: 4294967295 },
    { key: 'i32', type: 'int32', value: -2147483648 },
    { key: 'f32', type: 'float32', value: Math.fround(0.1) },
    { key: 'f32.nan', type: 'float32', value: Number.NaN },
    { key: 'f32.inf', type: 'float32', value: Number.NEGATIVE_INFINITY },
    { key: 'b.true', type: 'bool', value: true },
    { key: 'b.false', type: 'bool', value: false },
    { key: 'str.utf8', type: 'string', value: 'é😊\u0000\ufeffx' },
    { key: 'str.empty', type: 'string', value: '' },
    { key: 'u64', type: 'uint64', value: U64_MAX },
    { key: 'i64', type: 'int64', value: -(1n << 63n) },
    { key: 'f64', type: 'float64', value: 1e308 },
    { key: 'arr.u8', type: 'array', value: { itemType: 'uint8', items: [0, 1, 255] } },
    { key: 'arr.i8', type: 'array', value: { itemType: 'int8', items: [-1, 127] } },
    { key: 'arr.u16', type: 'array', value: { itemType: 'uint16', items: [65535] } },
    { key: 'arr.i16', type: 'array', value: { itemType: 'int16', items: [-2] } },
    { key: 'arr.u32', type: 'array', value: { itemType: 'uint32', items: [7, 8] } },
    { key: 'arr.i32', type: 'array', value: { itemType: 'int32', items: [-7] } },
    { key: 'arr.f32', type: 'array', value: { itemType: 'float32', items: [1.5, -0] } },
    { key: 'arr.bool', type: 'array', value: { itemType: 'bool', items: [true, false] } },
    { key: 'arr.str', type: 'array', value: { itemType: 'string', items: ['a', '', 'ñ'] } },
    { key: 'arr.u64', type: 'array', value: { itemType: 'uint64', items: [0n, U64_MAX] } },
    { key: 'arr.i64', type: 'array', value: { itemType: 'int64', items: [-1n] } },
    { key: 'arr.f64', type: 'array', value: { itemType: 'float64', items: [Math.PI] } },
    { key: 'arr.empty', type: 'array', value: { itemType: 'string', items: [] } },
  ];
}

const QUANT_TENSORS = [
  { name: 'token_embd.weight', type: 'Q4_K', dims: [256, 3] },
  { name: 'blk.0.attn_q.weight', type: 'Q8_0', dims: [64, 2] },
  { name: 'blk.0.ffn.weight', type: 'MXFP4', dims: [32] },
  { name: 'blk.0.norm', type: 'F32', dims: [5] },
  { name: 'blk.0.q6', type: 'Q6_K', dims: [256] },
  { name: 'blk.0.bf', type: 'BF16', dims: [3, 1, 1, 2] },
];

describe('writer round trip', () => {
  for (const endianness of ['little', 'big'] as const) {
    for (const version of [2, 3] as const) {
      it(`writes, parses back and re-writes byte for byte (${endianness}, v${version})`, () => {
        const metadata = everyTypeMetadata();
        const { bytes, tensors, header } = writeGgufHeader({ version, endianness, metadata, tensors: QUANT_TENSORS });
        const file = withData(bytes, header);
        const h = parseGgufHeader(file);
        expect(h).toEqual(header);
        expect(h.version).toBe(version);
        expect(h.endianness).toBe(endianness);
        expect(h.metadata).toEqual(metadata);
        expect(tensors.map((t) => [t.name, t.typeName, t.dims.map(Number)])).toEqual(
          QUANT_TENSORS.map((t) => [t.name, t.type, t.dims]),
        );
        expect(tensors.map((t) => t.byteLength)).toEqual([144 * 3, 34 * 4, 17, 20, 210, 12]);
        const again = writeGgufHeader({ version, endianness, metadata: h.metadata, tensors: rewriteTensors(h) });
        expect(again.bytes).toEqual(bytes);
        const verbatim = writeGgufHeader({
          version,
          endianness,
          metadata: {
            raw: file.subarray(h.metadataBlock.offset, h.metadataBlock.offset + h.metadataBlock.length),
            count: h.metadata.length,
          },
          tensors: rewriteTensors(h),
        });
        expect(verbatim.bytes).toEqual(bytes);
      });
    }
  }

  it('writeGguf places data at the offsets and pads with zeros', () => {
    const data = [Uint8Array.from({ length: 20 }, (_, i) => i + 1), Uint8Array.from({ length: 18 }, () => 0xee)];
    const file = writeGguf({
      metadata: [{ key: 'general.alignment', type: 'uint32', value: 16 }],
      tensors: [
        { name: 'a', type: 0, dims: [5], data: data[0]! },
        { name: 'b', type: 'q4_0', dims: [32n], data: data[1]! },
      ],
    });
    const h = parseGgufHeader(file);
    expect(h.alignment).toBe(16);
    expect(h.tensors.map((t) => [t.offset, t.paddedLength])).toEqual([
      [0n, 32],
      [32n, 32],
    ]);
    expect(file.subarray(h.tensors[0]!.byteOffset, h.tensors[0]!.byteOffset + 32)).toEqual(
      Uint8Array.from({ length: 32 }, (_, i) => (i < 20 ? i + 1 : 0)),
    );
    expect(file.subarray(h.tensors[1]!.byteOffset)).toEqual(
      Uint8Array.from({ length: 32 }, (_, i) => (i < 18 ? 0xee : 0)),
    );
  });
});

describe('writer errors', () => {
  const write =
    (metadata: GgufKV[], tensors: { name: string; type: number | string; dims: number[] }[] = []) =>
    () =>
      writeGgufHeader({ metadata, tensors });
  const kv = (type: GgufKV['type'], value: unknown): GgufKV => ({ key: 'k', type, value: value as GgufKV['value'] });

  it('refuses values that do not fit their type, naming the key', () => {
    for (const [type, value] of [
      ['uint8', 256],
      ['int8', -129],
      ['uint16', 1.5],
      ['int32', 2 ** 31],
      ['uint32', -1],
      ['uint64', -1n],
      ['int64', 1n << 63n],
      ['uint64', 2 ** 60],
      ['float32', '1'],
      ['bool', 1],
      ['string', 5],
      ['string', 'lone \ud800'],
    ] as const) {
      expectCodeSync(write([kv(type, value)]), 'invalid_argument', undefined, { key: 'k' });
    }
    expectCodeSync(write([kv('array', { itemType: 'int8', items: [1, 300] })]), 'invalid_argument', 'gguf.value', {
      key: 'k',
      index: 1,
    });
    expectCodeSync(write([kv('array', { itemType: 'array', items: [] })]), 'invalid_argument', 'gguf.nested_array');
    expectCodeSync(write([kv('array', [1, 2])]), 'invalid_argument', 'gguf.value');
  });

  it('refuses what the reader would reject, as invalid_argument with the reader rule', () => {
    const cases: [GgufKV[], { name: string; type: number | string; dims: number[] }[], string][] = [
      [[kv('uint32', 1), kv('uint32', 2)], [], 'gguf.key_duplicate'],
      [[{ key: '', type: 'uint32', value: 1 }], [], 'gguf.key_empty'],
      [[{ key: 'general.alignment', type: 'uint32', value: 3 }], [], 'gguf.alignment_value'],
      [[{ key: 'general.alignment', type: 'int32', value: 32 }], [], 'gguf.alignment_type'],
      [[], [{ name: 'x'.repeat(64), type: 0, dims: [1] }], 'gguf.tensor_name_length'],
      [
        [],
        [
          { name: 't', type: 0, dims: [1] },
          { name: 't', type: 0, dims: [1] },
        ],
        'gguf.tensor_name_duplicate',
      ],
      [[], [{ name: 't', type: 'Q4_K', dims: [100] }], 'gguf.tensor_block_alignment'],
      [[], [{ name: 't', type: 0, dims: [1, 1, 1, 1, 1] }], 'gguf.tensor_dims_count'],
      [[], [{ name: 't', type: 0, dims: [-1] }], 'gguf.tensor_dim_range'],
      [[], [{ name: 't', type: 'nope', dims: [1] }], 'gguf.tensor_type_unknown'],
      [[], [{ name: 't', type: 0, dims: [1.5] }], 'gguf.tensor_dim_range'],
    ];
    for (const [metadata, tensors, rule] of cases) {
      expectCodeSync(write(metadata, tensors), 'invalid_argument', rule);
    }
    expectCodeSync(write([], [{ name: 't', type: 4, dims: [32] }]), 'unsupported');
  });

  it('checks the alignment option against general.alignment and appends it when missing', () => {
    const withKey = [{ key: 'general.alignment', type: 'uint32', value: 64 } as GgufKV];
    expect(writeGgufHeader({ metadata: withKey, tensors: [], alignment: 64 }).header.alignment).toBe(64);
    expectCodeSync(
      () => writeGgufHeader({ metadata: withKey, tensors: [], alignment: 16 }),
      'invalid_argument',
      'gguf.alignment_value',
    );
    const added = writeGgufHeader({ metadata: [kv('uint8', 1)], tensors: [], alignment: 16 }).header;
    expect(added.metadata.map((m) => [m.key, m.value])).toEqual([
      ['k', 1],
      ['general.alignment', 16],
    ]);
    expect(added.dataStart % 16).toBe(0);
    const raw = writeGgufHeader({ metadata: [kv('uint8', 1)], tensors: [] });
    const block = raw.bytes.subarray(24, 24 + raw.header.metadataBlock.length);
    const viaRaw = writeGgufHeader({ metadata: { raw: block, count: 1 }, tensors: [], alignment: 16 });
    expect(viaRaw.bytes).toEqual(writeGgufHeader({ metadata: [kv('uint8', 1)], tensors: [], alignment: 16 }).bytes);
    expect(writeGgufHeader({ metadata: [kv('uint8', 1)], tensors: [], alignment: 32 }).header.metadata).toHaveLength(1);
  });

  it('refuses a raw block that does not hold exactly `count` KVs, or is in the other byte order', () => {
    const { bytes, header } = writeGgufHeader({
      metadata: [kv('uint8', 1), { key: 'j', type: 'uint8', value: 2 }],
      tensors: [],
    });
    const block = bytes.subarray(24, 24 + header.metadataBlock.length);
    expectCodeSync(
      () => writeGgufHeader({ metadata: { raw: block, count: 1 }, tensors: [] }),
      'invalid_argument',
      'gguf.metadata_raw',
    );
    expectCodeSync(() => writeGgufHeader({ metadata: { raw: block, count: 3 }, tensors: [] }), 'invalid_argument');
    expectCodeSync(
      () => writeGgufHeader({ endianness: 'big', metadata: { raw: block, count: 2 }, tensors: [] }),
      'invalid_argument',
    );
  });

  it('refuses tensor data of the wrong length', () => {
    expectCodeSync(
      () => writeGguf({ metadata: [], tensors: [{ name: 't', type: 'F32', dims: [2], data: new Uint8Array(7) }] }),
      'invalid_argument',
      'gguf.tensor_data_length',
      { tensor: 't' },
    );
  });
});

/** The tensor list that re-creates `h`. */
export function rewriteTensors(h: GgufHeader) {
  return h.tensors.map((t) => ({ name: t.name, type: t.type, dims: t.dims }));
}

/** A header's bytes followed by zero data for every tensor. */
export function withData(bytes: Uint8Array, h: GgufHeader): Uint8Array {
  const out = new Uint8Array(h.fileSize);
  out.set(bytes);
  return out;
}

describe('vocabulary-only files (no tensors)', () => {
  const kvs: GgufKV[] = [
    { key: 'general.architecture', type: 'string', value: 'llama' },
    { key: 'tokenizer.ggml.tokens', type: 'array', value: { itemType: 'string', items: ['<s>', 'a', 'bc'] } },
  ];
  const padded = writeGguf({ metadata: kvs, tensors: [] });
  const h = parseGgufHeader(padded);
  const infoEnd = h.tensorInfoBlock.offset + h.tensorInfoBlock.length;

  it('accept a file that ends right after the tensor infos, as llama.cpp writes them', async () => {
    expect(h.dataStart).toBe(padded.length);
    expect(infoEnd).toBeLessThan(padded.length); // the writer did pad; cut it off like write_vocab()
    const bare = padded.subarray(0, infoEnd);
    for (const parsed of [parseGgufHeader(bare), await readGgufHeader(bytesSource(bare))]) {
      expect(parsed.dataStart).toBe(infoEnd);
      expect(parsed.tensors).toEqual([]);
      expect(parsed.metadata).toEqual(h.metadata);
    }
  });

  it('still reject padding that is only partly there', () => {
    expectCodeSync(() => parseGgufHeader(padded.subarray(0, infoEnd + 1)), 'malformed', 'gguf.data_truncated');
  });
});
