import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import {
  parseSafetensorsHeader,
  SAFETENSORS_DTYPES,
  type SafetensorsWriteTensor,
  writeSafetensors,
  writeSafetensorsHeader,
} from '../src/index.js';

const decoder = new TextDecoder();
/** The header text (without padding) and N of a written prefix. */
function headerOf(bytes: Uint8Array): { text: string; n: number; padding: number } {
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  const text = decoder.decode(bytes.subarray(8, 8 + n));
  const trimmed = text.replace(/ +$/, '');
  return { text: trimmed, n, padding: text.length - trimmed.length };
}

describe('writeSafetensorsHeader: bytes', () => {
  it('writes the reference serializer examples exactly', () => {
    const empty = writeSafetensorsHeader([]).bytes;
    expect([...empty]).toEqual([8, 0, 0, 0, 0, 0, 0, 0, 0x7b, 0x7d, 32, 32, 32, 32, 32, 32]);
    const meta = writeSafetensorsHeader([], { metadata: { framework: 'pt' } }).bytes;
    expect(headerOf(meta)).toEqual({ text: '{"__metadata__":{"framework":"pt"}}', n: 40, padding: 5 });
    const i32 = writeSafetensorsHeader([{ name: 'test', dtype: 'I32', shape: [2, 2] }]);
    expect(headerOf(i32.bytes).text).toBe('{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}');
    expect(i32.bytes.length % 8).toBe(0);
  });

  it('writes "__metadata__":{} for an empty map and nothing for null', () => {
    expect(headerOf(writeSafetensorsHeader([], { metadata: new Map() }).bytes).text).toBe('{"__metadata__":{}}');
    expect(headerOf(writeSafetensorsHeader([], { metadata: null }).bytes).text).toBe('{}');
    const t = [{ name: 'a', dtype: 'U8', shape: [1] }];
    expect(headerOf(writeSafetensorsHeader(t, { metadata: {} }).bytes).text).toBe(
      '{"__metadata__":{},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
    );
  });

  it('escapes like serde_json: short escapes, lowercase \\u00XX, raw UTF-8, "/" and DEL raw', () => {
    const name = 'q"\\\n\r\t\b\f\u0001\u001f/\u007fé😊';
    const { text } = headerOf(writeSafetensorsHeader([{ name, dtype: 'U8', shape: [0] }]).bytes);
    expect(text).toBe(
      '{"q\\"\\\\\\n\\r\\t\\b\\f\\u0001\\u001f/\u007fé😊":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}',
    );
  });

  it('sorts metadata keys by UTF-8 bytes (astral after U+FFxx)', () => {
    const metadata = new Map([
      ['😊', '1'],
      ['\uff01', '2'],
      ['b', '3'],
      ['a', '4'],
      ['é', '5'],
    ]);
    expect(headerOf(writeSafetensorsHeader([], { metadata }).bytes).text).toBe(
      '{"__metadata__":{"a":"4","b":"3","é":"5","\uff01":"2","😊":"1"}}',
    );
  });

  it('order "reference": descending dtype ordinal, then name by UTF-8 bytes', () => {
    const tensors = [
      'f4:F4',
      'a_u8:U8',
      'f16:F16',
      'u64:U64',
      'z_f64:F64',
      'c64:C64',
      'bf16:BF16',
      'f32:F32',
      'b_u8:U8',
    ].map((s) => {
      const [name, dtype] = s.split(':') as [string, string];
      return { name, dtype, shape: [2] };
    });
    const { tensors: out } = writeSafetensorsHeader(tensors, { order: 'reference' });
    expect(out.map((t) => t.name)).toEqual(['u64', 'z_f64', 'c64', 'f32', 'bf16', 'f16', 'a_u8', 'b_u8', 'f4']);
    const unicode = writeSafetensorsHeader(
      ['😊', '\uffff', 'z', 'é'].map((name) => ({ name, dtype: 'U8', shape: [1] })),
      { order: 'reference' },
    );
    expect(unicode.tensors.map((t) => t.name)).toEqual(['z', 'é', '\uffff', '😊']);
    // Every tensor is naturally aligned in reference order.
    for (const t of out) {
      const bits = SAFETENSORS_DTYPES.find((d) => d.name === t.dtype)!.bits;
      expect((t.byteOffset - out[0]!.byteOffset) % Math.max(1, bits / 8)).toBe(0);
    }
  });

  it('order "given" keeps the caller order and offsets are cumulative', () => {
    const { tensors, bytes } = writeSafetensorsHeader([
      { name: 'b', dtype: 'U8', shape: [3] },
      { name: 'a', dtype: 'F64', shape: [] },
      { name: 'c', dtype: 'F4', shape: [2, 3] },
    ]);
    expect(tensors.map((t) => [t.name, t.dataOffsets, t.byteOffset - bytes.length])).toEqual([
      ['b', [0n, 3n], 0],
      ['a', [3n, 11n], 3],
      ['c', [11n, 14n], 11],
    ]);
  });

  it('writes exact big dimensions (no rounding above 2^53)', () => {
    const big = 2n ** 64n - 1n;
    const { bytes, tensors } = writeSafetensorsHeader([{ name: 'z', dtype: 'U8', shape: [big, 2n ** 53n + 1n, 0] }]);
    expect(headerOf(bytes).text).toContain('"shape":[18446744073709551615,9007199254740993,0]');
    expect(tensors[0]!.shape).toEqual([big, 2n ** 53n + 1n, 0n]);
  });
});

describe('writeSafetensorsHeader: validation before any byte', () => {
  const t = (over: Partial<SafetensorsWriteTensor>): SafetensorsWriteTensor => ({
    name: 'x',
    dtype: 'U8',
    shape: [1],
    ...over,
  });
  it('rejects bad names', () => {
    expectCodeSync(() => writeSafetensorsHeader([t({}), t({})]), 'invalid_argument', 'safetensors.S1', { tensor: 'x' });
    expectCodeSync(() => writeSafetensorsHeader([t({ name: '__metadata__' })]), 'invalid_argument', 'safetensors.R9');
    expectCodeSync(() => writeSafetensorsHeader([t({ name: 'a\ud800' })]), 'invalid_argument', 'safetensors.R7');
    expectCodeSync(() => writeSafetensorsHeader([t({ name: '\udc00b' })]), 'invalid_argument', 'safetensors.R7');
    expectCodeSync(
      () => writeSafetensorsHeader([t({ name: 3 as unknown as string })]),
      'invalid_argument',
      'safetensors.R7',
    );
  });
  it('rejects unknown dtypes, bad dimensions and impossible sizes', () => {
    expectCodeSync(() => writeSafetensorsHeader([t({ dtype: 'f32' })]), 'invalid_argument', 'safetensors.R7');
    expectCodeSync(() => writeSafetensorsHeader([t({ dtype: 'F6' })]), 'invalid_argument', 'safetensors.R7');
    for (const d of [-1, 1.5, Number.NaN, 2 ** 53, -1n, 2n ** 64n]) {
      expectCodeSync(() => writeSafetensorsHeader([t({ shape: [d] })]), 'invalid_argument', 'safetensors.R8');
    }
    expectCodeSync(
      () => writeSafetensorsHeader([t({ shape: 5 as unknown as number[] })]),
      'invalid_argument',
      'safetensors.R7',
    );
    expectCodeSync(
      () => writeSafetensorsHeader([t({ shape: [2n ** 64n - 1n, 2] })]),
      'invalid_argument',
      'safetensors.R13',
    );
    expectCodeSync(
      () => writeSafetensorsHeader([t({ dtype: 'U16', shape: [2n ** 63n] })]),
      'invalid_argument',
      'safetensors.R14',
    );
    expectCodeSync(
      () => writeSafetensorsHeader([t({ dtype: 'F4', shape: [3] })]),
      'invalid_argument',
      'safetensors.R15',
    );
    expectCodeSync(() => writeSafetensorsHeader([t({ byteLength: 2 })]), 'invalid_argument', 'safetensors.R16', {
      expected: 1,
    });
    expectCodeSync(() => writeSafetensorsHeader([t({ byteLength: 1.5 })]), 'invalid_argument', 'safetensors.R16');
    expect(writeSafetensorsHeader([t({ byteLength: 1n })]).tensors[0]!.byteLength).toBe(1);
  });
  it('rejects bad metadata and options', () => {
    expectCodeSync(
      () => writeSafetensorsHeader([], { metadata: { a: 1 } as never }),
      'invalid_argument',
      'safetensors.R9',
    );
    expectCodeSync(
      () => writeSafetensorsHeader([], { metadata: new Map([['a\ud800', 'x']]) }),
      'invalid_argument',
      'safetensors.R9',
    );
    expectCodeSync(
      () => writeSafetensorsHeader([], { metadata: [['a', 'b']] as never }),
      'invalid_argument',
      'safetensors.R9',
    );
    expectCodeSync(() => writeSafetensorsHeader([], { order: 'sorted' } as never), 'invalid_argument');
    expectCodeSync(() => writeSafetensorsHeader('x' as never), 'invalid_argument');
  });
  it('rejects files past 2^53 − 1 bytes (offsets would not be exact numbers)', () => {
    expectCodeSync(() => writeSafetensorsHeader([t({ shape: [2n ** 53n] })]), 'limit_exceeded');
  });
});

describe('round trips', () => {
  it('parse(write(x)) gives back the tensors and metadata', () => {
    const tensors = [
      { name: 'w', dtype: 'BF16', shape: [3, 5] },
      { name: '__proto__', dtype: 'F4', shape: [4] },
      { name: 'é😊', dtype: 'C64', shape: [] },
      { name: 'empty', dtype: 'F32', shape: [0, 7] },
    ];
    for (const order of ['given', 'reference'] as const) {
      const written = writeSafetensors(
        tensors.map((t, i) => ({ ...t, data: new Uint8Array(Number(bytesFor(t))).fill(i) })),
        { metadata: { format: 'pt', 'k\n': 'v"' }, order },
      );
      const h = parseSafetensorsHeader(written, { strict: true });
      const header = writeSafetensorsHeader(tensors, { metadata: { format: 'pt', 'k\n': 'v"' }, order });
      expect(h.tensors).toEqual(header.tensors);
      expect([...h.metadata!]).toEqual([
        ['format', 'pt'],
        ['k\n', 'v"'],
      ]);
      for (const info of h.tensors) {
        const i = tensors.findIndex((t) => t.name === info.name);
        expect(written.subarray(info.byteOffset, info.byteOffset + info.byteLength).every((b) => b === i)).toBe(true);
      }
      // write(parse(f)) reproduces f's header bytes.
      const again = writeSafetensorsHeader(h.tensors, { metadata: h.metadata, order: 'given' });
      expect(again.bytes).toEqual(written.subarray(0, h.dataStart));
    }
  });
  it('writeSafetensors checks data lengths', () => {
    expectCodeSync(
      () => writeSafetensors([{ name: 'a', dtype: 'F32', shape: [2], data: new Uint8Array(7) }]),
      'invalid_argument',
      'safetensors.R16',
    );
    expectCodeSync(
      () => writeSafetensors([{ name: 'a', dtype: 'U8', shape: [2], data: new Uint8Array(2), byteLength: 3 }]),
      'invalid_argument',
      'safetensors.R16',
    );
    expectCodeSync(
      () => writeSafetensors([{ name: 'a', dtype: 'U8', shape: [2], data: [1, 2] as unknown as Uint8Array }]),
      'invalid_argument',
    );
  });
});

function bytesFor(t: { dtype: string; shape: number[] }): number {
  const bits = SAFETENSORS_DTYPES.find((d) => d.name === t.dtype)!.bits;
  return (t.shape.reduce((a, b) => a * b, 1) * bits) / 8;
}
