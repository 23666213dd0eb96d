import { type CborValue, decodeCbor, encodeCbor, fromHex, isTensorFSError, toHex } from '@tensorfs/format';
import { Decoder } from 'cbor-x';
import fc from 'fast-check';
import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

/** TENSORFS_SLOW=1 runs the property tests 20 times longer. */
const SCALE = process.env.TENSORFS_SLOW ? 20 : 1;

/** RFC 8949 Appendix A vectors that are canonical in this codec's data model. */
const RFC_VECTORS: [CborValue, string][] = [
  [0, '00'],
  [1, '01'],
  [10, '0a'],
  [23, '17'],
  [24, '1818'],
  [25, '1819'],
  [100, '1864'],
  [1000, '1903e8'],
  [1000000, '1a000f4240'],
  [1000000000000, '1b000000e8d4a51000'],
  [18446744073709551615n, '1bffffffffffffffff'],
  [-18446744073709551616n, '3bffffffffffffffff'],
  [-1, '20'],
  [-10, '29'],
  [-100, '3863'],
  [-1000, '3903e7'],
  [1.1, 'fb3ff199999999999a'],
  [1.5, 'f93e00'],
  [3.4028234663852886e38, 'fa7f7fffff'],
  [1.0e300, 'fb7e37e43c8800759c'],
  [2 ** -24, 'f90001'],
  [0.00006103515625, 'f90400'],
  [-4.1, 'fbc010666666666666'],
  [Number.POSITIVE_INFINITY, 'f97c00'],
  [Number.NaN, 'f97e00'],
  [Number.NEGATIVE_INFINITY, 'f9fc00'],
  [false, 'f4'],
  [true, 'f5'],
  [null, 'f6'],
  [new Uint8Array(0), '40'],
  [new Uint8Array([1, 2, 3, 4]), '4401020304'],
  ['', '60'],
  ['a', '6161'],
  ['IETF', '6449455446'],
  ['"\\', '62225c'],
  ['\u00fc', '62c3bc'],
  ['\u6c34', '63e6b0b4'],
  ['\ud800\udd51', '64f0908591'],
  [[], '80'],
  [[1, 2, 3], '83010203'],
  [[1, [2, 3], [4, 5]], '8301820203820405'],
  [Array.from({ length: 25 }, (_, i) => i + 1), '98190102030405060708090a0b0c0d0e0f101112131415161718181819'],
  [new Map(), 'a0'],
  [
    new Map([
      [1, 2],
      [3, 4],
    ]),
    'a201020304',
  ],
  [
    new Map<string, CborValue>([
      ['a', 1],
      ['b', [2, 3]],
    ]),
    'a26161016162820203',
  ],
  [['a', new Map([['b', 'c']])], '826161a161626163'],
  [new Map(['a', 'b', 'c', 'd', 'e'].map((k) => [k, k.toUpperCase()])), 'a56161614161626142616361436164614461656145'],
];

describe('canonical CBOR encoding', () => {
  it.each(RFC_VECTORS.map(([v, h]) => [h, v] as const))('encodes and decodes RFC 8949 vector %s', (hex, value) => {
    expect(toHex(encodeCbor(value))).toBe(hex);
    expect(decodeCbor(fromHex(hex))).toEqual(value);
  });

  it('sorts map keys by their encoded bytes (shorter keys first, integers before text)', () => {
    const bytes = encodeCbor({ bb: 1, a: 2, c: 3, 10: 4 } as Record<string, CborValue>);
    // Object.entries gives string keys, so "10" is a text key: a (61 61) < c (61 63) < "10" (62 31 30) < bb (62 62 62).
    expect(toHex(bytes)).toBe('a46161026163036231300462626201');
    const mixed = encodeCbor(
      new Map<string | number, CborValue>([
        ['a', 1],
        [-1, 2],
        [100, 3],
        [0, 4],
      ]),
    );
    expect(toHex(mixed)).toBe('a400041864032002616101');
  });

  it('encodes integral numbers and -0 as integers and 2^53.. as the same integers as bigints', () => {
    expect(toHex(encodeCbor(-0))).toBe('00');
    expect(toHex(encodeCbor(2.0))).toBe('02');
    expect(toHex(encodeCbor(2 ** 53))).toBe(toHex(encodeCbor(2n ** 53n)));
    expect(decodeCbor(encodeCbor(2 ** 53))).toBe(2n ** 53n);
    expect(decodeCbor(encodeCbor(2 ** 53 - 1))).toBe(2 ** 53 - 1);
  });

  it('rejects values outside the data model with invalid_argument', () => {
    const bad: unknown[] = [
      undefined,
      () => 1,
      Symbol('x'),
      2n ** 64n,
      -(2n ** 64n) - 1n,
      '\ud800',
      new Map([[{}, 1]]),
    ];
    for (const value of bad) {
      expect(() => encodeCbor(value as CborValue)).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    }
    // A lone surrogate is not UTF-8: the rule is spec/errors.md's `cbor.utf8` (it was misspelled `cbor-utf8`).
    expect(() => encodeCbor('\ud800')).toThrow(
      expect.objectContaining({ code: 'invalid_argument', details: { rule: 'cbor.utf8' } }),
    );
    const cyclic: CborValue[] = [];
    cyclic.push(cyclic);
    expect(() => encodeCbor(cyclic)).toThrow(
      expect.objectContaining({ code: 'invalid_argument', details: { rule: 'cbor.depth' } }),
    );
    // What the encoder accepts, the default decoder accepts: 64 levels encode, 65 do not.
    const nest = (n: number): CborValue => (n === 0 ? 0 : [nest(n - 1)]);
    expect(decodeCbor(encodeCbor(nest(64)))).toEqual(nest(64));
    expect(() => encodeCbor(nest(65))).toThrow(expect.objectContaining({ details: { rule: 'cbor.depth' } }));
    const dup = new Map<string | number, CborValue>([
      [1, 1],
      [1n as unknown as number, 2],
    ]);
    expect(() => encodeCbor(dup)).toThrow(expect.objectContaining({ details: { rule: 'cbor.duplicate_key' } }));
  });
});

describe('strict CBOR decoding', () => {
  it.each([
    ['1800', 'cbor.non_shortest'],
    ['190017', 'cbor.non_shortest'],
    ['19 00ff'.replace(' ', ''), 'cbor.non_shortest'],
    ['1a0000ffff', 'cbor.non_shortest'],
    ['1b00000000ffffffff', 'cbor.non_shortest'],
    ['5800', 'cbor.non_shortest'],
    ['9800', 'cbor.non_shortest'],
    ['5f40ff', 'cbor.head'],
    ['9fff', 'cbor.head'],
    ['bfff', 'cbor.head'],
    ['1c', 'cbor.head'],
    ['c001', 'cbor.tag'],
    ['d8184101', 'cbor.tag'],
    ['f7', 'cbor.simple'],
    ['f0', 'cbor.simple'],
    ['f820', 'cbor.simple'],
    ['fa3fc00000', 'cbor.float'],
    ['fb3ff8000000000000', 'cbor.float'],
    ['f93c00', 'cbor.float'],
    ['f98000', 'cbor.float'],
    ['fb7ff8000000000000', 'cbor.float'],
    ['f97e01', 'cbor.float'],
    ['a202010102', 'cbor.key_order'],
    ['a201010102', 'cbor.key_order'],
    ['a2626262016161 02'.replace(' ', ''), 'cbor.key_order'],
    ['a1400102', 'cbor.key_type'],
    ['a1f501', 'cbor.key_type'],
    ['62c328', 'cbor.utf8'],
    ['63eda080', 'cbor.utf8'],
    ['0000', 'cbor.trailing'],
    ['', 'cbor.truncated'],
    ['1a0000', 'cbor.truncated'],
    ['5affffffff00', 'cbor.truncated'],
    ['9bffffffffffffffff', 'cbor.truncated'],
    ['bbffffffffffffffff', 'cbor.truncated'],
    ['83 0102'.replace(' ', ''), 'cbor.truncated'],
    ['f9', 'cbor.truncated'],
  ])('rejects %s (%s)', (hex, rule) => {
    expectCodeSync(() => decodeCbor(fromHex(hex)), 'malformed', rule);
  });

  it('rejects depth bombs without overflowing the stack', () => {
    const bomb = new Uint8Array(100_000).fill(0x81);
    expectCodeSync(() => decodeCbor(bomb), 'malformed', 'cbor.depth');
    const ok = new Uint8Array(65).fill(0x81);
    ok[64] = 0;
    expect(() => decodeCbor(ok)).not.toThrow();
    expect(() => decodeCbor(ok, { maxDepth: 63 })).toThrow(expect.objectContaining({ code: 'malformed' }));
  });

  it('reports the offset of the offending item', () => {
    expectCodeSync(() => decodeCbor(fromHex('820118')), 'malformed', 'cbor.truncated', { offset: 2 });
  });
});

const cborValue = fc.letrec<{ value: CborValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.integer(),
    fc.maxSafeInteger(),
    fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n - 1n }),
    fc.double(),
    fc.string({ unit: 'grapheme' }),
    fc.uint8Array({ maxLength: 40 }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 5 }),
    fc
      .array(fc.tuple(fc.oneof(fc.string(), fc.integer()), tie('value')), { maxLength: 5 })
      .map((pairs) => new Map(pairs)),
  ),
})).value;

/** The value decodeCbor gives back for `v`: integers normalised, -0 as 0. */
function normalise(v: CborValue): unknown {
  if (typeof v === 'number' && Number.isInteger(v) && Math.abs(v) >= 2 ** 64 && v !== -(2 ** 64)) return v;
  if (typeof v === 'bigint') return v >= -(2n ** 53n - 1n) && v <= 2n ** 53n - 1n ? Number(v) : v;
  if (typeof v === 'number') {
    if (Object.is(v, -0)) return 0;
    if (Number.isInteger(v) && !Number.isSafeInteger(v)) return BigInt(v);
    return v;
  }
  if (Array.isArray(v)) return v.map(normalise);
  if (v instanceof Map) return new Map([...v].map(([k, x]) => [normalise(k as CborValue), normalise(x)]));
  return v;
}

describe('CBOR properties', () => {
  it('decode(encode(v)) is v and re-encodes to the same bytes', () => {
    fc.assert(
      fc.property(cborValue, (v) => {
        const bytes = encodeCbor(v);
        const back = decodeCbor(bytes);
        expect(back).toEqual(normalise(v));
        expect(toHex(encodeCbor(back))).toBe(toHex(bytes));
      }),
      { numRuns: 500 * SCALE },
    );
  });

  it('any bytes either decode to a value that re-encodes to exactly those bytes, or throw malformed', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        let value: CborValue;
        try {
          value = decodeCbor(bytes);
        } catch (err) {
          expect(isTensorFSError(err) && err.code === 'malformed').toBe(true);
          return;
        }
        expect(toHex(encodeCbor(value))).toBe(toHex(bytes));
      }),
      { numRuns: 5000 * SCALE },
    );
  });

  it('cbor-x decodes our bytes to the same values (differential)', () => {
    const peer = new Decoder({ mapsAsObjects: false, useRecords: false });
    fc.assert(
      fc.property(cborValue, (v) => {
        const bytes = encodeCbor(v);
        const theirs = peer.decode(bytes) as unknown;
        expect(fromPeer(theirs)).toEqual(decodeCbor(bytes));
      }),
      { numRuns: 500 * SCALE },
    );
  });
});

/** cbor-x gives Buffers for byte strings and bigint only past 2^53; align representations. */
function fromPeer(v: unknown): unknown {
  if (v instanceof Uint8Array) return new Uint8Array(v);
  if (typeof v === 'bigint') return v >= -(2n ** 53n - 1n) && v <= 2n ** 53n - 1n ? Number(v) : v;
  if (Array.isArray(v)) return v.map(fromPeer);
  if (v instanceof Map) return new Map([...v].map(([k, x]) => [fromPeer(k), fromPeer(x)]));
  return v;
}
