// The safetensors parser's fast paths against their slow equivalents, so a fast path cannot
// silently diverge: the word-at-a-time scan for backslashes and control bytes (which lets string
// reads skip the escape search) against a byte-by-byte check, at every alignment; and whole parses
// of headers that take the fast path against the same headers forced onto the slow one.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTensorFSError, parseSafetensorsHeader, type SafetensorsHeader } from '../src/index.js';
import { hasBackslashOrControlByte } from '../src/safetensors/json-cursor.js';
import { desc, file } from './safetensors-helpers.js';

const RUNS = process.env.TENSORFS_SLOW ? 20_000 : 500;

const naive = (bytes: Uint8Array): boolean => bytes.some((b) => b < 0x20 || b === 0x5c);

/** `bytes` copied to offset `at` of a larger buffer (so the view starts at any alignment). */
function placed(bytes: Uint8Array, at: number): Uint8Array {
  const backing = new Uint8Array(at + bytes.length + 5).fill(0x41);
  backing.set(bytes, at);
  return backing.subarray(at, at + bytes.length);
}

/** Bytes around every edge of the test: each side of 0x20, 0x5c, and bytes with the top bit set. */
const edgeByte = fc.constantFrom(
  0x00,
  0x01,
  0x09,
  0x0a,
  0x1f,
  0x20,
  0x21,
  0x5b,
  0x5c,
  0x5d,
  0x7f,
  0x80,
  0x9f,
  0xa0,
  0xdc,
  0xdd,
  0xe0,
  0xff,
);
const anyByte = fc.oneof(fc.integer({ min: 0, max: 255 }), edgeByte, fc.integer({ min: 0x20, max: 0x7e }));

describe('hasBackslashOrControlByte', () => {
  it('agrees with a byte-by-byte check on random bytes at every alignment', () => {
    fc.assert(
      fc.property(fc.array(anyByte, { maxLength: 48 }), fc.integer({ min: 0, max: 7 }), (values, at) => {
        const bytes = placed(Uint8Array.from(values), at);
        expect(hasBackslashOrControlByte(bytes)).toBe(naive(bytes));
      }),
      { numRuns: RUNS * 4 },
    );
  });

  it('finds any single byte value at any position, among plain or top-bit-set neighbours', () => {
    for (const fill of [0x61, 0xff, 0x80, 0xdc, 0x20]) {
      for (let length = 1; length <= 13; length++) {
        for (let at = 0; at < 4; at++) {
          for (let pos = 0; pos < length; pos++) {
            for (let v = 0; v < 256; v++) {
              const bytes = new Uint8Array(length).fill(fill);
              bytes[pos] = v;
              const view = placed(bytes, at);
              if (hasBackslashOrControlByte(view) !== naive(view)) {
                throw new Error(`fill ${fill} length ${length} offset ${at} byte ${v} at ${pos}`);
              }
            }
          }
        }
      }
    }
  });

  it('is false for an empty view and for clean text, true for the first and last byte', () => {
    expect(hasBackslashOrControlByte(new Uint8Array(0))).toBe(false);
    const clean = new TextEncoder().encode('{"é model.layers.0.weight":{"dtype":"BF16"}}');
    for (let at = 0; at < 8; at++) {
      expect(hasBackslashOrControlByte(placed(clean, at))).toBe(false);
      for (const edge of [0, clean.length - 1]) {
        for (const bad of [0x5c, 0x00, 0x0a, 0x1f]) {
          const dirty = clean.slice();
          dirty[edge] = bad;
          expect(hasBackslashOrControlByte(placed(dirty, at))).toBe(true);
        }
      }
    }
  });
});

/**
 * What a parse reports, for comparing two parses of headers that differ only in whitespace: the
 * tensors without their absolute offsets (the whitespace moves the data section), or the error's
 * code and details without its byte offset (the whitespace before it moves it).
 */
function outcome(run: () => SafetensorsHeader): unknown {
  try {
    const h = run();
    return {
      metadata: h.metadata && [...h.metadata],
      tensors: h.tensors.map(({ byteOffset, ...t }) => ({ ...t, relative: byteOffset - h.dataStart })),
      names: [...h.byName.keys()],
    };
  } catch (error) {
    if (!isTensorFSError(error)) throw error;
    const { offset, ...details } = error.details;
    return { code: error.code, details, offset };
  }
}

const withoutOffset = (o: unknown): unknown => {
  if (typeof o === 'object' && o !== null && 'offset' in o) {
    const { offset, ...rest } = o as { offset: unknown };
    return rest;
  }
  return o;
};

/**
 * Names that may need escapes. Without an escape or a raw control character in the header the
 * parser takes the fast path; a tab placed between two tokens (which is JSON whitespace and parses
 * the same) forces the slow path on the same header.
 */
const nameChar = fc.oneof(
  fc.constantFrom('a', '.', '0', 'é', '\u{1f600}', '"', '\\', '/', '\u0001', '\n', '\u007f', '\u2028'),
  fc.string({ maxLength: 3 }),
);
const names = fc.uniqueArray(
  fc.array(nameChar, { minLength: 1, maxLength: 6 }).map((parts) => parts.join('')),
  { minLength: 1, maxLength: 4 },
);

describe('the no-escape fast path parses exactly like the escape search', () => {
  it('gives the same header or the same error, raw or escaped names, at every alignment', () => {
    fc.assert(
      fc.property(
        names,
        fc.boolean(),
        fc.integer({ min: 0, max: 7 }),
        fc.boolean(),
        (list, rawControls, at, strict) => {
          // JSON.stringify escapes quotes, backslashes and controls; `rawControls` then puts some raw
          // control characters back (which the parser must reject with the same error either way).
          const key = (n: string) => {
            const json = JSON.stringify(n);
            return rawControls ? json.replace(/\\n/g, '\n').replace(/\\u0001/g, '\u0001') : json;
          };
          const members = list.map((n, i) => `${key(n)}:${desc('U8', [1], i, i + 1)}`);
          const fast = `{${members.join(',')}}`;
          const slow = `{${members.join(',\t')}}`;
          const parse = (header: string) => {
            const bytes = file(header, list.length);
            return () => parseSafetensorsHeader(placed(bytes, at), { strict: false });
          };
          const a = outcome(parse(fast));
          const b = outcome(parse(slow));
          // One member has no separator: then both headers are the same bytes, offsets included.
          if (list.length === 1) expect(b).toEqual(a);
          else expect(withoutOffset(b)).toEqual(withoutOffset(a));
          if (!rawControls && strict) {
            // Strict mode (no whitespace allowed around the object) reads the fast header alike.
            const s = outcome(() => parseSafetensorsHeader(placed(file(fast, list.length), at), { strict: true }));
            expect(s).toEqual(a);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('reports a raw control character at its exact byte offset whatever the alignment', () => {
    const header = `{"ab\u0001c":${desc('U8', [1], 0, 1)}}`;
    for (let at = 0; at < 8; at++) {
      const bytes = placed(file(header, 1), at);
      expect(outcome(() => parseSafetensorsHeader(bytes))).toEqual({
        code: 'malformed',
        details: { rule: 'safetensors.R6' },
        offset: 8 + 4,
      });
    }
  });
});

/**
 * Integers as written in a descriptor, valid and not: what the compact-descriptor reader must
 * either read exactly or leave to the general reader (leading zeros, signs, fractions, exponents,
 * 15/16/20/21 digits, beyond 2^64 − 1, other JSON values).
 */
const numberText = fc.oneof(
  fc.integer({ min: 0, max: 4 }).map(String),
  fc.constantFrom('0', '1', '2', '8', '16', '00', '01', '-1', '-0', '1.0', '1e3', '2E0', '"1"', 'null', '[]'),
  fc.constantFrom('999999999999999', '1000000000000000', '9007199254740993', '18446744073709551615'),
  fc.constantFrom('18446744073709551616', '100000000000000000000'),
);
const dtypeText = fc.constantFrom(
  '"U8"',
  '"F32"',
  '"BF16"',
  '"F16"',
  '"I64"',
  '"BOOL"',
  '"F8_E4M3"',
  '"F4"',
  '"X"',
  '"BF1"',
  '"bf16"',
  '7',
);
const descriptorText = fc.record({
  dtype: dtypeText,
  shape: fc.array(numberText, { maxLength: 3 }),
  begin: numberText,
  end: numberText,
  fields: fc.constantFrom('dsd', 'sdo', 'extra', 'missing', 'dup'),
});

describe('the compact-descriptor reader parses exactly like the general reader', () => {
  it('gives the same header or error for compact descriptors and the same ones spaced out', () => {
    fc.assert(
      fc.property(fc.array(descriptorText, { minLength: 1, maxLength: 4 }), fc.boolean(), (list, strict) => {
        // `s` goes after every ':' and ',' inside a descriptor: "" keeps the compact layout, a space
        // sends the same descriptor to the general reader.
        const render = (s: string) =>
          list.map((d, i) => {
            const dtype = `"dtype":${s}${d.dtype}`;
            const shape = `"shape":${s}[${d.shape.join(`,${s}`)}]`;
            const offsets = `"data_offsets":${s}[${d.begin},${s}${d.end}]`;
            const fields =
              d.fields === 'sdo'
                ? [shape, dtype, offsets]
                : d.fields === 'extra'
                  ? [dtype, shape, offsets, `"x":${s}1`]
                  : d.fields === 'missing'
                    ? [dtype, shape]
                    : d.fields === 'dup'
                      ? [dtype, shape, offsets, offsets]
                      : [dtype, shape, offsets];
            return `"t${i}":{${fields.join(`,${s}`)}}`;
          });
        // A data section as long as the last end says (when it is a small integer), so that
        // headers with consistent offsets parse.
        const last = list[list.length - 1]!.end;
        const data = /^\d{1,6}$/.test(last) ? Number(last) : 64;
        const parse = (s: string) => () => parseSafetensorsHeader(file(`{${render(s).join(',')}}`, data), { strict });
        expect(withoutOffset(outcome(parse(' ')))).toEqual(withoutOffset(outcome(parse(''))));
      }),
      { numRuns: RUNS * 4 },
    );
  });

  it('reads valid compact headers with every dtype, big offsets and empty shapes', () => {
    const header = [
      `"a":${desc('F64', [], 0, 8)}`,
      `"b":${desc('BF16', [0, 7], 8, 8)}`,
      `"c":${desc('U8', [3], 8, 11)}`,
      `"d":${desc('F8_E5M2', [5], 11, 16)}`,
    ].join(',');
    const h = parseSafetensorsHeader(file(`{${header}}`, 16), { strict: true });
    expect(h.tensors.map((t) => [t.name, t.dtype, t.shape, t.dataOffsets])).toEqual([
      ['a', 'F64', [], [0n, 8n]],
      ['b', 'BF16', [0n, 7n], [8n, 8n]],
      ['c', 'U8', [3n], [8n, 11n]],
      ['d', 'F8_E5M2', [5n], [11n, 16n]],
    ]);
    // A 16-digit end goes to the general reader and is read exactly.
    const wide = `{"w":${desc('U8', [1000000000000001], 0, 1000000000000001)}}`;
    const w = parseSafetensorsHeader(file(wide, 0), { fileSize: 8 + wide.length + 1000000000000001 });
    expect(w.tensors[0]!.dataOffsets).toEqual([0n, 1000000000000001n]);
  });
});
