// The `tfs inspect --json` forms (moved here from @tensorfs/format with the printers themselves).
import { type GgufKV, parseSafetensorsHeader, writeGgufHeader } from '@tensorfs/format';
import { describe, expect, it } from 'vitest';
import { describeGguf } from '../src/describe-gguf.js';
import { describeSafetensors } from '../src/describe-safetensors.js';

/** A safetensors file of `header` JSON text followed by `data` zero bytes. */
function file(header: string, data = 0): Uint8Array {
  const text = new TextEncoder().encode(header);
  const out = new Uint8Array(8 + text.length + data);
  new DataView(out.buffer).setBigUint64(0, BigInt(text.length), true);
  out.set(text, 8);
  return out;
}

const desc = (dtype: string, shape: (number | bigint)[], begin: number, end: number) =>
  `{"dtype":"${dtype}","shape":[${shape.join(',')}],"data_offsets":[${begin},${end}]}`;

describe('describeSafetensors', () => {
  it('is exactly the inspect --json form, tensors in data order, big integers as strings', () => {
    const h = parseSafetensorsHeader(
      file(
        `{"__metadata__":{"format":"pt","__proto__":"x"},"b":${desc('U8', [1], 2, 3)},"a":${desc('F16', [1], 0, 2)},"z":${desc('U8', [2n ** 53n, 0], 3, 3)}}`,
        3,
      ),
    );
    const d = describeSafetensors(h);
    expect(JSON.stringify(d)).toBe(
      `{"format":"safetensors","header_size":${h.headerSize},"metadata":{"format":"pt","__proto__":"x"},"tensors":[` +
        '{"name":"a","dtype":"F16","shape":[1],"data_offsets":[0,2]},' +
        '{"name":"b","dtype":"U8","shape":[1],"data_offsets":[2,3]},' +
        '{"name":"z","dtype":"U8","shape":["9007199254740992",0],"data_offsets":[3,3]}]}',
    );
    expect(describeSafetensors(parseSafetensorsHeader(file('{}'))).metadata).toBeNull();
  });
});

describe('describeGguf', () => {
  it('describes a header in the exact `tfs inspect --json` form', () => {
    const h = writeGgufHeader({
      metadata: [
        { key: 'general.architecture', type: 'string', value: 'llama' },
        { key: 'llama.block_count', type: 'uint32', value: 2 },
        { key: 'tokenizer.ggml.scores', type: 'array', value: { itemType: 'float32', items: [0.5, -1] } },
      ],
      tensors: [
        { name: 'a', type: 'F32', dims: [4n, 2n] },
        { name: 'blk.0.q', type: 'Q4_0', dims: [32n] },
      ],
    }).header;
    expect(JSON.parse(JSON.stringify(describeGguf(h)))).toEqual({
      format: 'gguf',
      version: 3,
      endianness: 'little',
      alignment: 32,
      data_start: h.dataStart,
      metadata: { 'general.architecture': 'llama', 'llama.block_count': 2, 'tokenizer.ggml.scores': [0.5, -1] },
      tensors: [
        { name: 'a', type: 'F32', dims: [4, 2], shape: [2, 4], offset: 0, byte_length: 32 },
        { name: 'blk.0.q', type: 'Q4_0', dims: [32], shape: [32], offset: 32, byte_length: 18 },
      ],
    });
    expect(Object.keys(describeGguf(h))).toEqual([
      'format',
      'version',
      'endianness',
      'alignment',
      'data_start',
      'metadata',
      'tensors',
    ]);
  });

  it('describes 64-bit values, non-finite floats, arrays in full and a `__proto__` key', () => {
    const metadata: GgufKV[] = [
      { key: '__proto__', type: 'uint64', value: (1n << 53n) - 1n },
      { key: 'big', type: 'int64', value: -(1n << 60n) },
      { key: 'nan', type: 'float32', value: Number.NaN },
      { key: 'inf', type: 'array', value: { itemType: 'float64', items: [Number.POSITIVE_INFINITY, -0.5] } },
      { key: 'many', type: 'array', value: { itemType: 'string', items: Array.from({ length: 5000 }, String) } },
    ];
    const h = writeGgufHeader({
      endianness: 'big',
      metadata,
      tensors: [{ name: 'huge', type: 'Q4_0', dims: [1n << 54n, 0n] }],
    }).header;
    const d = JSON.parse(JSON.stringify(describeGguf(h)));
    expect(Object.keys(d.metadata)).toEqual(['__proto__', 'big', 'nan', 'inf', 'many']);
    expect(Object.getOwnPropertyDescriptor(d.metadata, '__proto__')?.value).toBe(2 ** 53 - 1);
    expect(d.metadata.big).toBe('-1152921504606846976');
    expect(d.metadata.nan).toBe('NaN');
    expect(d.metadata.inf).toEqual(['Infinity', -0.5]);
    expect(d.metadata.many).toHaveLength(5000);
    expect(d.endianness).toBe('big');
    expect(d.tensors[0]).toMatchObject({ name: 'huge', type: 'Q4_0', dims: ['18014398509481984', 0] });
  });
});
