import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, expectCode, expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import {
  type ByteSource,
  bytesSource,
  MAX_SAFETENSORS_HEADER_SIZE,
  parseSafetensorsHeader,
  readSafetensorsHeader,
  SAFETENSORS_DTYPES,
  type SafetensorsParseOptions,
  safetensorsByteLength,
  safetensorsDtype,
  writeSafetensorsHeader,
} from '../src/index.js';
import { COZYTENSORS_MAGIC } from '../src/cozytensors/index.js';
import { GGUF_MAGIC } from '../src/gguf/parse-header.js';
import { TFM1_MAGIC } from '../src/manifest/index.js';
import { desc, file } from './safetensors-helpers.js';

const P64 = 2n ** 64n;
const U64_MAX = P64 - 1n;

const parse = (bytes: Uint8Array, options?: SafetensorsParseOptions) => parseSafetensorsHeader(bytes, options);
const one = (d: string, data = 0) => file(`{"t":${d}}`, data);

describe('dtype table', () => {
  it('has the 22 reference dtypes with bits and ordinals, in ordinal order', () => {
    expect(SAFETENSORS_DTYPES.map((d) => `${d.ordinal}:${d.name}:${d.bits}`)).toEqual([
      '0:BOOL:8',
      '1:F4:4',
      '2:F6_E2M3:6',
      '3:F6_E3M2:6',
      '4:U8:8',
      '5:I8:8',
      '6:F8_E5M2:8',
      '7:F8_E4M3:8',
      '8:F8_E8M0:8',
      '9:F8_E4M3FNUZ:8',
      '10:F8_E5M2FNUZ:8',
      '11:I16:16',
      '12:U16:16',
      '13:F16:16',
      '14:BF16:16',
      '15:I32:32',
      '16:U32:32',
      '17:F32:32',
      '18:C64:64',
      '19:F64:64',
      '20:I64:64',
      '21:U64:64',
    ]);
    expect(Object.isFrozen(SAFETENSORS_DTYPES)).toBe(true);
    expect(Object.isFrozen(SAFETENSORS_DTYPES[0])).toBe(true);
  });
  it('looks names up case-sensitively and knows nothing else', () => {
    expect(safetensorsDtype('BF16')).toBe(SAFETENSORS_DTYPES[14]);
    for (const name of ['bf16', 'f32', 'FLOAT32', 'C128', 'F8_E4M3FN', 'E8M0', 'NF4', '__proto__', 'toString', '']) {
      expect(safetensorsDtype(name), name).toBeUndefined();
    }
  });
  it('computes exact byte lengths with zero short-circuit and the overflow rules', () => {
    expect(safetensorsByteLength('F32', [])).toBe(4n);
    expect(safetensorsByteLength('F4', [3, 2])).toBe(3n);
    expect(safetensorsByteLength('F6_E2M3', [4])).toBe(3n);
    expect(safetensorsByteLength('U8', [U64_MAX, 2n, 0])).toBe(0n);
    expect(safetensorsByteLength('U8', [2n ** 61n - 1n])).toBe(2n ** 61n - 1n);
    expect(safetensorsByteLength('U64', [2n ** 58n - 1n])).toBe(2n ** 61n - 8n);
    expectCodeSync(() => safetensorsByteLength('U8', [2n ** 61n]), 'invalid_argument', 'safetensors.R14');
    expectCodeSync(() => safetensorsByteLength('U8', [U64_MAX, 2]), 'invalid_argument', 'safetensors.R13');
    expectCodeSync(() => safetensorsByteLength('U16', [U64_MAX]), 'invalid_argument', 'safetensors.R14');
    expectCodeSync(() => safetensorsByteLength('F4', [3]), 'invalid_argument', 'safetensors.R15');
    expectCodeSync(() => safetensorsByteLength('f32', [1]), 'invalid_argument', 'safetensors.R7');
    for (const bad of [-1, 1.5, Number.NaN, 2 ** 53, -1n, P64]) {
      expectCodeSync(() => safetensorsByteLength('U8', [bad]), 'invalid_argument', 'safetensors.R8');
    }
  });
});

describe('parseSafetensorsHeader: valid files', () => {
  it('parses the reference example and reports exact positions', () => {
    const f = file('{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}', 16);
    const h = parse(f);
    expect(h.headerSize).toBe(60);
    expect(h.dataStart).toBe(68);
    expect(h.fileSize).toBe(84);
    expect(h.metadata).toBeNull();
    expect(h.tensors).toEqual([
      { name: 'test', dtype: 'I32', shape: [2n, 2n], dataOffsets: [0n, 16n], byteOffset: 68, byteLength: 16 },
    ]);
    expect(h.byName.get('test')).toBe(h.tensors[0]);
  });

  it('accepts the empty archive {} and whitespace-only padding', () => {
    expect(parse(file('{}')).tensors).toEqual([]);
    expect(parse(file('{}      ')).headerSize).toBe(8);
    expect(parse(file('{}      '), { strict: true }).headerSize).toBe(8);
  });

  it('sorts tensors into data order; ties keep header order', () => {
    const h = parse(
      file(
        `{"c":${desc('U8', [1], 2, 3)},"z1":${desc('U8', [0], 2, 2)},"a":${desc('U8', [2], 0, 2)},"z0":${desc('U8', [0], 2, 2)},"e":${desc('U8', [0], 3, 3)}}`,
        3,
      ),
    );
    expect(h.tensors.map((t) => t.name)).toEqual(['a', 'z1', 'z0', 'c', 'e']);
    expect(h.tensors.map((t) => t.byteOffset - h.dataStart)).toEqual([0, 2, 2, 2, 3]);
  });

  it('accepts zero-size tensors sharing an offset, scalars and zero dims', () => {
    const h = parse(
      file(
        `{"s":${desc('F64', [], 0, 8)},"e1":${desc('F32', [0, 5], 8, 8)},"e2":${desc('BF16', [3, 0], 8, 8)},"x":${desc('U8', [1], 8, 9)}}`,
        9,
      ),
    );
    expect(h.tensors.map((t) => [t.name, t.byteLength])).toEqual([
      ['s', 8],
      ['e1', 0],
      ['e2', 0],
      ['x', 1],
    ]);
    expect(h.tensors[0]!.shape).toEqual([]);
  });

  it('accepts every dtype', () => {
    let offset = 0;
    const parts: string[] = [];
    for (const d of SAFETENSORS_DTYPES) {
      const bytes = d.bits === 6 ? 3 : d.bits === 4 ? 1 : d.bits / 8;
      const count = d.bits === 6 ? 4 : d.bits === 4 ? 2 : 1;
      parts.push(`"${d.name}":${desc(d.name, [count], offset, offset + bytes)}`);
      offset += bytes;
    }
    const h = parse(file(`{${parts.join(',')}}`, offset));
    expect(h.tensors.map((t) => t.dtype)).toEqual(SAFETENSORS_DTYPES.map((d) => d.name));
  });

  it('keeps names exactly: __proto__, empty, unicode, escapes and surrogate pairs', () => {
    const names = ['__proto__', '', 'é😊', 'constructor'];
    const h = parse(
      file(
        `{"__proto__":${desc('U8', [1], 0, 1)},"":${desc('U8', [1], 1, 2)},"\\u00e9\\ud83d\\ude0a":${desc('U8', [1], 2, 3)},"constructor":${desc('U8', [0], 3, 3)}}`,
        3,
      ),
    );
    expect(h.tensors.map((t) => t.name)).toEqual(names);
    expect([...h.byName.keys()]).toEqual(names);
    expect(Object.getPrototypeOf(h.byName.get('__proto__'))).toBe(Object.prototype);
    const escapes = parse(file(`{"q\\"\\\\\\/\\b\\f\\n\\r\\t":${desc('U8', [0], 0, 0)}}`));
    expect(escapes.tensors[0]!.name).toBe('q"\\/\b\f\n\r\t');
    const raw = parse(file(`{"é😊":${desc('U8', [0], 0, 0)}}`));
    expect(raw.tensors[0]!.name).toBe('é😊');
  });

  it('accepts a 4096-rank shape', () => {
    const h = parse(one(desc('U8', new Array(4096).fill(1), 0, 1), 1));
    expect(h.tensors[0]!.shape).toHaveLength(4096);
  });

  it('parses metadata as a string map; null and absent are null; {} is empty', () => {
    const h = parse(file('{"__metadata__":{"format":"pt","b":"x\\ny","__proto__":"p"}}'));
    expect([...h.metadata!]).toEqual([
      ['format', 'pt'],
      ['b', 'x\ny'],
      ['__proto__', 'p'],
    ]);
    expect(parse(file('{"__metadata__":null}')).metadata).toBeNull();
    expect(parse(file('{"__metadata__":{}}')).metadata).toEqual(new Map());
    expect(parse(file('{"\\u005f_metadata__":{"a":"b"}}')).metadata).toEqual(new Map([['a', 'b']]));
  });

  it('accepts JSON whitespace everywhere in default mode and inside the object in strict mode', () => {
    const h = `{ "t" :\n{\t"dtype" : "U8" ,\r"shape" : [ 1 ] , "data_offsets" : [ 0 , 1 ] } }`;
    expect(parse(file(` \t\r\n${h}\n\t\r `, 1)).tensors).toHaveLength(1);
    expect(parse(file(`${h}   `, 1), { strict: true }).tensors).toHaveLength(1);
  });

  it('ignores unknown descriptor fields (any valid JSON) in default mode', () => {
    const extra = '"x":{"k":[1,-2.5e3,true,false,null,"s",{}],"j":[]},"y":-0,"z":12345678901234567890123';
    const h = parse(one(`{"dtype":"U8",${extra},"shape":[1],"data_offsets":[0,1]}`, 1));
    expect(h.tensors[0]!.dtype).toBe('U8');
  });

  it('handles integer boundaries exactly: 2^31, 2^32, 2^53, 2^63, 2^64−1', () => {
    for (const big of [2n ** 31n, 2n ** 32n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 63n, U64_MAX]) {
      const h = parse(one(desc('U8', [big, 0], 0, 0)));
      expect(h.tensors[0]!.shape).toEqual([big, 0n]);
    }
    // [2^64−1, 2, 0]: the zero makes the count 0 before any overflow check (TensorFS; the reference overflows).
    expect(parse(one(desc('U8', [U64_MAX, 2n, 0], 0, 0))).tensors[0]!.byteLength).toBe(0);
    // A real tensor of 2^31 + 1 bytes: offsets past 2^31 / 2^32 are exact numbers.
    const src: ByteSource = { size: 0, read: async () => new Uint8Array() };
    expect(src.size).toBe(0);
    const hdr = `{"a":${desc('U8', [2n ** 32n + 1n], 0, 2n ** 32n + 1n)},"b":${desc('U8', [1], 2n ** 32n + 1n, 2n ** 32n + 2n)}}`;
    const bytes = file(hdr);
    const h = parse(bytes, { fileSize: bytes.length + 2 ** 32 + 2 });
    expect(h.tensors.map((t) => [t.byteOffset - h.dataStart, t.byteLength])).toEqual([
      [0, 2 ** 32 + 1],
      [2 ** 32 + 1, 1],
    ]);
  });

  it('reads views at any byteOffset (a Buffer from the pool) and leaves the bytes untouched', () => {
    const f = file(`{"t":${desc('U16', [2], 0, 4)}}`, 4);
    const pooled = Buffer.concat([Buffer.from([1, 2, 3]), Buffer.from(f)]).subarray(3);
    expect(pooled.byteOffset).not.toBe(0);
    expect(parse(pooled)).toEqual(parse(f));
    expect(Buffer.compare(pooled, Buffer.from(f))).toBe(0);
  });

  it('errors serialise to JSON with exact big integers', () => {
    const e = expectCodeSync(() => parse(one(desc('U8', [1], 2n ** 64n - 1n, 0))), 'malformed', 'safetensors.R12');
    expect(JSON.parse(JSON.stringify(e))).toEqual({
      code: 'malformed',
      message: e.message,
      details: { rule: 'safetensors.R12', tensor: 't', offset: 9, expected: 0, actual: ['18446744073709551615', 0] },
    });
  });

  it('accepts N exactly at maxHeaderSize', () => {
    expect(parse(file('{}      '), { maxHeaderSize: 8 }).headerSize).toBe(8);
  });
});

describe('parseSafetensorsHeader: framing (R1–R4)', () => {
  it('R1: fewer than 8 bytes', () => {
    for (let n = 0; n < 8; n++)
      expectCodeSync(() => parse(new Uint8Array(n)), 'malformed', 'safetensors.R1', { actual: n, offset: 0 });
  });
  it('R3: N above the limit is limit_exceeded (100,000,000 + 1, 2^32, 2^64−1)', () => {
    for (const n of [100_000_001n, 2n ** 32n, U64_MAX]) {
      const e = expectCodeSync(() => parse(file('{}', 0, n)), 'limit_exceeded', 'safetensors.R3', {
        limit: MAX_SAFETENSORS_HEADER_SIZE,
      });
      expect(BigInt(e.details.actual as number | bigint)).toBe(n);
    }
    expectCodeSync(() => parse(file('{}      '), { maxHeaderSize: 7 }), 'limit_exceeded', 'safetensors.R3', {
      limit: 7,
      actual: 8,
    });
  });
  it('the bytes of a GGUF file, a cozytensors header or a TFM1 manifest are named, not R3', async () => {
    const gguf = new Uint8Array(readFileSync(join(REPO_ROOT, 'samples', 'tiny-model', 'model.gguf')));
    const cases: [Uint8Array, string, string][] = [
      [gguf, 'gguf', 'this is a GGUF file (magic "GGUF"), not a safetensors file'],
      [
        Uint8Array.from([...COZYTENSORS_MAGIC, 1, 0, 0, 0, ...new Uint8Array(24)]),
        'cozytensors',
        'this is a cozytensors checkpoint header (magic "TFC1"), not a safetensors file',
      ],
      [
        Uint8Array.from([...TFM1_MAGIC, 0, 0, 0, 0, ...new Uint8Array(24)]),
        'tfm1',
        'this is a TFM1 snapshot manifest (magic "TFM1"), not a safetensors file',
      ],
    ];
    expect([...gguf.subarray(0, 4)]).toEqual([...GGUF_MAGIC]);
    for (const [bytes, format, message] of cases) {
      const e = expectCodeSync(() => parse(bytes), 'unsupported', 'safetensors.other_format', { format, offset: 0 });
      expect(e.message).toBe(message);
      const r = await expectCode(
        () => readSafetensorsHeader(bytesSource(bytes)),
        'unsupported',
        'safetensors.other_format',
        {
          format,
        },
      );
      expect(r.message).toBe(message);
    }
  });
  it('R4: N past the end of the file; N = 0 and whitespace-only are R6', () => {
    expectCodeSync(() => parse(file('{}', 0, 3n)), 'malformed', 'safetensors.R4', { actual: 3 });
    expectCodeSync(() => parse(file('', 0, 0n)), 'malformed', 'safetensors.R6', { offset: 8 });
    expectCodeSync(() => parse(file('    ')), 'malformed', 'safetensors.R6', { offset: 12 });
  });
  it('rejects bad options and bytes that stop inside the header', () => {
    expectCodeSync(() => parse(file('{}'), { maxHeaderSize: 100_000_001 }), 'invalid_argument');
    expectCodeSync(() => parse(file('{}'), { maxHeaderSize: -1 }), 'invalid_argument');
    expectCodeSync(() => parse(file('{}'), { fileSize: 3 }), 'invalid_argument');
    expectCodeSync(() => parse(file('{}').subarray(0, 9), { fileSize: 10 }), 'invalid_argument');
    expectCodeSync(() => parse(file('{}').subarray(0, 4), { fileSize: 10 }), 'invalid_argument');
  });
});

describe('parseSafetensorsHeader: UTF-8 and JSON syntax (R5, R6)', () => {
  const withHeader = (bytes: number[]) => file(new Uint8Array(bytes));
  const enc = (s: string) => [...new TextEncoder().encode(s)];
  it('R5: invalid UTF-8 anywhere in the header, with the byte offset', () => {
    const cases: [number[], number][] = [
      [[...enc('{"'), 0xff, ...enc('":1}')], 10],
      [[...enc('{"a'), 0xc0, 0x80, ...enc('":1}')], 11], // overlong
      [[...enc('{"'), 0xed, 0xa0, 0x80, ...enc('":1}')], 10], // UTF-16 surrogate
      [[...enc('{"'), 0xf4, 0x90, 0x80, 0x80, ...enc('":1}')], 10], // above U+10FFFF
      [[...enc('{}'), 0xe2, 0x82], 10], // truncated sequence
      [[...enc('{}  '), 0x80], 12], // lone continuation in the padding
    ];
    for (const [bytes, offset] of cases)
      expectCodeSync(() => parse(withHeader(bytes)), 'malformed', 'safetensors.R5', { offset });
  });
  it('R6: a BOM is not whitespace', () => {
    expectCodeSync(() => parse(withHeader([0xef, 0xbb, 0xbf, ...enc('{}')])), 'malformed', 'safetensors.R6', {
      offset: 8,
    });
  });
  it('R6: trailing characters, NUL and VT padding, second values, non-objects', () => {
    for (const h of ['{}\0', '{}\x0b', '{}{}', '{} x', '[]', '"a"', '1', 'null', '{', '{"a"}', '{"a":}', '{,}']) {
      expectCodeSync(() => parse(file(h)), 'malformed', 'safetensors.R6');
    }
    expectCodeSync(() => parse(file(`{"t":${desc('U8', [0], 0, 0)},}`)), 'malformed', 'safetensors.R6');
    const text = `{"t":${desc('U8', [0], 0, 0)}}`;
    expectCodeSync(() => parse(file(`${text}\0`)), 'malformed', 'safetensors.R6', { offset: 8 + text.length });
  });
  it('R6: raw control characters, bad escapes and lone surrogates in strings', () => {
    for (const name of [
      'a\x01',
      'a\n',
      'a\x7f\x00',
      '\\x41',
      '\\u12',
      '\\u12G4',
      '\\ud800',
      '\\ud800x',
      '\\udc00',
      '\\ud800\\u0041',
      '\\ud800\\n',
      '\\',
    ]) {
      const e = expectCodeSync(
        () => parse(file(`{"${name}":${desc('U8', [0], 0, 0)}}`)),
        'malformed',
        'safetensors.R6',
      );
      expect(e.details.offset as number).toBeGreaterThanOrEqual(10);
    }
    expectCodeSync(() => parse(file('{"ab')), 'malformed', 'safetensors.R6', { offset: 12 });
  });
  it('error offsets count UTF-8 bytes, not UTF-16 units', () => {
    // "é😊" is 2 + 4 bytes; the error is at the "!" after the closing quote.
    expectCodeSync(() => parse(file('{"é😊"!}')), 'malformed', 'safetensors.R6', { offset: 8 + 2 + 6 + 1 });
  });
});

describe('parseSafetensorsHeader: descriptors (R7–R10)', () => {
  it('R7: missing fields', () => {
    expectCodeSync(() => parse(one('{"shape":[],"data_offsets":[0,1]}', 1)), 'malformed', 'safetensors.R7', {
      tensor: 't',
      field: 'dtype',
      offset: 9,
    });
    expectCodeSync(() => parse(one('{"dtype":"U8","data_offsets":[0,1]}', 1)), 'malformed', 'safetensors.R7', {
      field: 'shape',
    });
    expectCodeSync(() => parse(one('{"dtype":"U8","shape":[]}', 1)), 'malformed', 'safetensors.R7', {
      field: 'data_offsets',
    });
    expectCodeSync(() => parse(one('{}')), 'malformed', 'safetensors.R7', { field: 'dtype' });
  });
  it('R7: duplicate descriptor fields, including escaped spellings', () => {
    for (const d of [
      '{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}',
      '{"dtype":"U8","\\u0064type":"U8","shape":[1],"data_offsets":[0,1]}',
      '{"dtype":"U8","shape":[1],"sh\\u0061pe":[1],"data_offsets":[0,1]}',
      '{"dtype":"U8","shape":[1],"data_offsets":[0,1],"data_offsets":[0,1]}',
    ]) {
      expectCodeSync(() => parse(one(d, 1)), 'malformed', 'safetensors.R7', { tensor: 't' });
    }
  });
  it('R7: wrong types, wrong offset arity, unknown or miscased dtypes', () => {
    for (const d of [
      '[]',
      '"x"',
      'null',
      desc('u8', [1], 0, 1),
      desc('FLOAT32', [1], 0, 1),
      desc('C128', [1], 0, 1),
      '{"dtype":8,"shape":[1],"data_offsets":[0,1]}',
      '{"dtype":"U8","shape":1,"data_offsets":[0,1]}',
      '{"dtype":"U8","shape":["1"],"data_offsets":[0,1]}',
      '{"dtype":"U8","shape":[null],"data_offsets":[0,1]}',
      '{"dtype":"U8","shape":[1],"data_offsets":[0]}',
      '{"dtype":"U8","shape":[1],"data_offsets":[]}',
      '{"dtype":"U8","shape":[1],"data_offsets":[0,1,1]}',
      '{"dtype":"U8","shape":[1],"data_offsets":{"0":0}}',
    ]) {
      expectCodeSync(() => parse(one(d, 1)), 'malformed', 'safetensors.R7');
    }
  });
  it('R8: only exact unsigned integers', () => {
    for (const v of [
      '-1',
      '-0',
      '1.0',
      '1e0',
      '1E0',
      '1.5',
      '01',
      '00',
      '18446744073709551616',
      '99999999999999999999999',
    ]) {
      expectCodeSync(() => parse(one(desc('U8', [v], 0, 0))), 'malformed', 'safetensors.R8');
      expectCodeSync(() => parse(one(desc('U8', [0], v, 0))), 'malformed', 'safetensors.R8');
    }
    // 2^64 − 1 is the largest accepted value; 2^64 overflows (offset of the number).
    const text = `{"t":${desc('U8', [0], 0, P64)}}`;
    expectCodeSync(() => parse(file(text)), 'malformed', 'safetensors.R8', { offset: 8 + text.indexOf(String(P64)) });
  });
  it('R9: __metadata__ must be a string map or null, once', () => {
    for (const m of ['{"a":1}', '{"a":{"b":"c"}}', '{"a":null}', '{"a":["x"]}', '[]', '"x"', '1', 'true']) {
      expectCodeSync(() => parse(file(`{"__metadata__":${m}}`)), 'malformed', 'safetensors.R9');
    }
    expectCodeSync(() => parse(file('{"__metadata__":{},"__metadata__":{}}')), 'malformed', 'safetensors.R9', {
      offset: 8 + 19,
    });
    expectCodeSync(() => parse(file('{"__metadata__":null,"\\u005f_metadata__":null}')), 'malformed', 'safetensors.R9');
  });
  it('R10: nesting inside ignored fields stops where serde_json stops (125 arrays ok, 126 not)', () => {
    const nested = (k: number) =>
      one(`{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":${'['.repeat(k)}${']'.repeat(k)}}`, 1);
    expect(parse(nested(125)).tensors).toHaveLength(1);
    expectCodeSync(() => parse(nested(126)), 'malformed', 'safetensors.R10', { limit: 127 });
    expectCodeSync(() => parse(nested(100_000)), 'malformed', 'safetensors.R10');
    const objects = (k: number) =>
      one(`{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":${'{"a":'.repeat(k)}1${'}'.repeat(k)}}`, 1);
    expect(parse(objects(125)).tensors).toHaveLength(1);
    expectCodeSync(() => parse(objects(126)), 'malformed', 'safetensors.R10');
  });
});

describe('parseSafetensorsHeader: stricter than the reference (S1–S3)', () => {
  it('S1: duplicate tensor names, including escape-equivalent spellings', () => {
    const text = `{"a":${desc('U8', [1], 0, 1)},"a":${desc('U8', [1], 0, 1)}}`;
    expectCodeSync(() => parse(file(text, 1)), 'malformed', 'safetensors.S1', {
      tensor: 'a',
      offset: 8 + text.lastIndexOf('"a"'),
    });
    expectCodeSync(
      () => parse(file(`{"a":${desc('U8', [1], 0, 1)},"\\u0061":${desc('U8', [1], 0, 1)}}`, 1)),
      'malformed',
      'safetensors.S1',
    );
    expectCodeSync(
      () => parse(file(`{"__proto__":${desc('U8', [0], 0, 0)},"__proto__":${desc('U8', [0], 0, 0)}}`)),
      'malformed',
      'safetensors.S1',
    );
  });
  it('S1: duplicate metadata keys and duplicate unknown fields (and keys inside them)', () => {
    expectCodeSync(() => parse(file('{"__metadata__":{"a":"x","\\u0061":"y"}}')), 'malformed', 'safetensors.S1', {
      key: 'a',
    });
    expectCodeSync(
      () => parse(one('{"dtype":"U8","x":1,"x":2,"shape":[1],"data_offsets":[0,1]}', 1)),
      'malformed',
      'safetensors.S1',
    );
    expectCodeSync(
      () => parse(one('{"dtype":"U8","x":{"k":1,"k":2},"shape":[1],"data_offsets":[0,1]}', 1)),
      'malformed',
      'safetensors.S1',
    );
  });
  it('S2: strict mode wants "{" first and only spaces after', () => {
    for (const h of [' {}', '\n{}', '{}\n', '{}\t', '{} \r']) {
      expectCodeSync(() => parse(file(h), { strict: true }), 'malformed', 'safetensors.S2');
      expect(parse(file(h)).tensors).toEqual([]);
    }
  });
  it('S3: strict mode rejects unknown descriptor fields', () => {
    const f = one('{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":0}', 1);
    expect(parse(f).tensors).toHaveLength(1);
    expectCodeSync(() => parse(f, { strict: true }), 'malformed', 'safetensors.S3', { tensor: 't', field: 'x' });
  });
});

describe('parseSafetensorsHeader: coverage and sizes (R12–R17)', () => {
  it('R12: gaps, overlaps, backwards offsets, a first tensor not at 0', () => {
    const cases = [
      `{"a":${desc('U8', [1], 0, 1)},"b":${desc('U8', [1], 2, 3)}}`,
      `{"a":${desc('U8', [2], 0, 2)},"b":${desc('U8', [1], 1, 2)}}`,
      `{"a":${desc('U8', [1], 1, 2)}}`,
      `{"a":${desc('U8', [1], 1, 0)}}`,
    ];
    const names = ['b', 'b', 'a', 'a'];
    cases.forEach((h, i) => {
      expectCodeSync(() => parse(file(h, 3)), 'malformed', 'safetensors.R12', { tensor: names[i] });
    });
  });
  it('R12 reports the offset of the failing tensor key', () => {
    const text = `{"a":${desc('U8', [1], 0, 1)},"b":${desc('U8', [1], 2, 3)}}`;
    expectCodeSync(() => parse(file(text, 3)), 'malformed', 'safetensors.R12', { offset: 8 + text.indexOf('"b"') });
  });
  it('R13/R14: overflowing element and bit counts', () => {
    expectCodeSync(() => parse(one(desc('U8', [U64_MAX, 2], 0, 0))), 'malformed', 'safetensors.R13', { tensor: 't' });
    expectCodeSync(() => parse(one(desc('U8', [2n ** 32n, 2n ** 32n], 0, 0))), 'malformed', 'safetensors.R13');
    expectCodeSync(() => parse(one(desc('U16', [2n ** 63n], 0, 0))), 'malformed', 'safetensors.R14');
    expectCodeSync(() => parse(one(desc('U64', [2n ** 61n], 0, 0))), 'malformed', 'safetensors.R14');
    expectCodeSync(() => parse(one(desc('U8', [2n ** 61n], 0, 0))), 'malformed', 'safetensors.R14');
    // 2^58 U64 elements is 2^64 bits (overflow); 2^58 − 1 is fine as far as arithmetic goes (R16 then).
    expectCodeSync(() => parse(one(desc('U64', [2n ** 58n], 0, 0))), 'malformed', 'safetensors.R14');
    expectCodeSync(() => parse(one(desc('U64', [2n ** 58n - 1n], 0, 0))), 'malformed', 'safetensors.R16', {
      expected: 2n ** 61n - 8n,
    });
  });
  it('R15: sub-byte tensors must fill whole bytes', () => {
    expectCodeSync(() => parse(one(desc('F4', [3], 0, 2), 2)), 'malformed', 'safetensors.R15');
    expectCodeSync(() => parse(one(desc('F6_E3M2', [2], 0, 2), 2)), 'malformed', 'safetensors.R15');
    expect(parse(one(desc('F6_E3M2', [8], 0, 6), 6)).tensors[0]!.byteLength).toBe(6);
  });
  it('R16: span must equal shape × dtype size', () => {
    expectCodeSync(() => parse(one(desc('F32', [2], 0, 4), 4)), 'malformed', 'safetensors.R16', {
      tensor: 't',
      expected: 8,
      actual: 4,
    });
    expectCodeSync(() => parse(one(desc('F32', [], 0, 8), 8)), 'malformed', 'safetensors.R16');
  });
  it('R17: the data section must end exactly at the last tensor', () => {
    expectCodeSync(() => parse(one(desc('U8', [1], 0, 1), 2)), 'malformed', 'safetensors.R17', {
      expected: 2,
      actual: 1,
    });
    expectCodeSync(() => parse(file('{}', 1)), 'malformed', 'safetensors.R17');
    expectCodeSync(() => parse(one(desc('U8', [2], 0, 2), 1)), 'malformed', 'safetensors.R17');
    expectCodeSync(() => parse(one(desc('U8', [2n ** 61n - 1n], 0, 2n ** 61n - 1n))), 'malformed', 'safetensors.R17', {
      actual: 2n ** 61n - 1n,
    });
  });
  it('offsets beyond 2^53 never round: 2^53 + 1 stays exact in errors', () => {
    expectCodeSync(() => parse(one(desc('U8', [2n ** 53n + 1n], 0, 2n ** 53n + 1n))), 'malformed', 'safetensors.R17', {
      actual: 2n ** 53n + 1n,
    });
  });
});

describe('header size limit at its exact boundary', () => {
  // The full 100,000,000-byte case allocates ~300 MB; it runs under TENSORFS_SLOW, and the same
  // boundary runs by default at 1,000,000 through maxHeaderSize.
  const limit = process.env.TENSORFS_SLOW ? MAX_SAFETENSORS_HEADER_SIZE : 1_000_000;
  const options = limit === MAX_SAFETENSORS_HEADER_SIZE ? {} : { maxHeaderSize: limit };
  it(`N = ${limit} is accepted, N = ${limit} + 1 is limit_exceeded (reader and writer)`, () => {
    const value = 'x'.repeat(limit - '{"__metadata__":{"p":""}}'.length);
    const { bytes } = writeSafetensorsHeader([], { metadata: { p: value }, ...options });
    expect(bytes.length).toBe(8 + limit);
    expect(parseSafetensorsHeader(bytes, options).headerSize).toBe(limit);
    const over = new Uint8Array(bytes.length + 1).fill(0x20);
    over.set(bytes);
    new DataView(over.buffer).setUint32(0, limit + 1, true);
    expectCodeSync(() => parse(over, options), 'limit_exceeded', 'safetensors.R3', { limit, actual: limit + 1 });
    expectCodeSync(
      () => writeSafetensorsHeader([], { metadata: { p: `${value}x` }, ...options }),
      'limit_exceeded',
      'safetensors.R3',
      { limit, actual: limit + 8 },
    );
  });
});

describe('readSafetensorsHeader', () => {
  const recording = (bytes: Uint8Array, size = bytes.length) => {
    const reads: [number, number][] = [];
    const source: ByteSource = {
      size,
      async read(offset, length) {
        reads.push([offset, length]);
        return bytes.subarray(offset, offset + length);
      },
    };
    return { source, reads };
  };
  it('reads the prefix and the header only', async () => {
    const f = file(`{"t":${desc('F32', [1000], 0, 4000)}}`, 4000);
    const { source, reads } = recording(f);
    const h = await readSafetensorsHeader(source);
    expect(h).toEqual(parse(f));
    expect(reads).toEqual([
      [0, 8],
      [8, h.headerSize],
    ]);
  });
  it('checks the limit from the prefix alone (a source claiming > 100 MB)', async () => {
    const prefix = file('', 0, 100_000_001n).subarray(0, 8);
    const { source, reads } = recording(prefix, 8 + 100_000_001);
    await expectCode(readSafetensorsHeader(source), 'limit_exceeded', 'safetensors.R3', {
      actual: 100_000_001,
    });
    expect(reads).toEqual([[0, 8]]);
  });
  it('accepts N = 100,000,000 exactly: the header read is attempted', async () => {
    const prefix = file('', 0, 100_000_000n).subarray(0, 8);
    const reads: [number, number][] = [];
    const source: ByteSource = {
      size: 8 + 100_000_000,
      async read(offset, length) {
        reads.push([offset, length]);
        if (offset === 0) return prefix;
        throw new Error('not reading 100 MB in a unit test');
      },
    };
    await expectCode(readSafetensorsHeader(source), 'io');
    expect(reads).toEqual([
      [0, 8],
      [8, 100_000_000],
    ]);
  });
  it('R1 and R4 against the source size', async () => {
    await expectCode(readSafetensorsHeader(bytesSource(new Uint8Array(7))), 'malformed', 'safetensors.R1');
    await expectCode(readSafetensorsHeader(bytesSource(file('{}', 0, 40n))), 'malformed', 'safetensors.R4');
  });
  it('short reads are io; source TensorFSErrors pass through; aborts are cancelled', async () => {
    const f = file('{}');
    const short: ByteSource = { size: f.length, read: async (o, l) => f.subarray(o, o + l - 1) };
    await expectCode(readSafetensorsHeader(short), 'io');
    const controller = new AbortController();
    controller.abort();
    await expectCode(readSafetensorsHeader(bytesSource(f), { signal: controller.signal }), 'cancelled');
    await expectCode(readSafetensorsHeader(bytesSource(f), { fileSize: 3 }), 'invalid_argument');
  });
  it('strict mode and limits apply through the source too', async () => {
    await expectCode(readSafetensorsHeader(bytesSource(file(' {}')), { strict: true }), 'malformed', 'safetensors.S2');
    await expectCode(
      readSafetensorsHeader(bytesSource(file('{}  ')), { maxHeaderSize: 3 }),
      'limit_exceeded',
      'safetensors.R3',
    );
  });
});
