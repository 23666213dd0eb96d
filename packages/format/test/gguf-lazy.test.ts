// Large GGUF arrays are validated up front and decoded on access: the lazy path must give exactly
// what eager decoding gives, the same errors included.
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { isUtf8, setLazyArrayItems } from '../src/gguf/_lazy-array.js';
import {
  type ByteSource,
  type GgufKV,
  type GgufValueType,
  isTensorFSError,
  parseGgufHeader,
  readGgufHeader,
  writeGgufHeader,
} from '../src/index.js';

const DEFAULT = 256;
afterEach(() => setLazyArrayItems(DEFAULT));

function outcome(fn: () => unknown): unknown {
  try {
    return fn();
  } catch (err) {
    if (!isTensorFSError(err)) throw err;
    return { code: err.code, message: err.message, details: err.details };
  }
}

async function outcomeAsync(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    return await fn();
  } catch (err) {
    if (!isTensorFSError(err)) throw err;
    return { code: err.code, message: err.message, details: err.details };
  }
}

const bytesSource = (bytes: Uint8Array): ByteSource => ({
  size: bytes.length,
  read: async (offset, length) => bytes.slice(offset, offset + length),
});

const token = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.string({ unit: 'grapheme', maxLength: 4 }),
  fc.constantFrom('\u2581the', '的', '\ufeff', '<0x0A>', ''),
);
const arrayKv = (key: string): fc.Arbitrary<GgufKV> =>
  fc
    .oneof(
      fc.array(token, { minLength: 1, maxLength: 12 }).map((items) => ({ itemType: 'string' as GgufValueType, items })),
      fc
        .array(fc.boolean(), { minLength: 1, maxLength: 12 })
        .map((items) => ({ itemType: 'bool' as GgufValueType, items })),
      fc
        .array(fc.float({ noNaN: true }), { minLength: 1, maxLength: 12 })
        .map((items) => ({ itemType: 'float32' as GgufValueType, items })),
      fc
        .array(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { minLength: 1, maxLength: 12 })
        .map((items) => ({ itemType: 'int32' as GgufValueType, items })),
      fc
        .array(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), { minLength: 1, maxLength: 6 })
        .map((items) => ({ itemType: 'uint64' as GgufValueType, items })),
    )
    .map((value) => ({ key, type: 'array' as GgufValueType, value }));

const file = fc
  .tuple(arrayKv('a.tokens'), arrayKv('b.scores'), fc.constantFrom('little' as const, 'big' as const))
  .map(([a, b, endianness]) => {
    const { bytes, header } = writeGgufHeader({
      version: 3,
      endianness,
      metadata: [a, b, { key: 'c.after', type: 'uint32', value: 7 }],
      tensors: [{ name: 't', type: 'F32', dims: [4n] }],
    });
    const out = new Uint8Array(header.fileSize);
    out.set(bytes);
    return out;
  });
const mutation = fc.array(
  fc.tuple(
    fc.nat(),
    fc.oneof(
      fc.integer({ min: 0, max: 255 }),
      fc.constantFrom(0, 1, 2, 0x80, 0xbf, 0xc0, 0xc3, 0xe2, 0xed, 0xf0, 0xff),
    ),
  ),
  { maxLength: 3 },
);

describe('lazy GGUF arrays', () => {
  it('parse exactly as eager decoding does, values and errors, on mutated files', () => {
    fc.assert(
      fc.property(file, mutation, fc.nat(), (bytes, edits, cut) => {
        const b = bytes.slice(0, Math.max(24, bytes.length - (cut % 16)));
        for (const [at, v] of edits) b[24 + (at % (b.length - 24))] = v;
        setLazyArrayItems(Number.POSITIVE_INFINITY);
        const eager = outcome(() => parseGgufHeader(b));
        setLazyArrayItems(1);
        const lazy = outcome(() => parseGgufHeader(b));
        expect(lazy).toEqual(eager);
      }),
      { numRuns: 1500 },
    );
  });

  it('read through a source in small pieces exactly as eager decoding does', async () => {
    await fc.assert(
      fc.asyncProperty(file, mutation, fc.integer({ min: 1, max: 200 }), async (bytes, edits, initialReadBytes) => {
        const b = bytes.slice();
        for (const [at, v] of edits) b[24 + (at % (b.length - 24))] = v;
        setLazyArrayItems(Number.POSITIVE_INFINITY);
        const eager = await outcomeAsync(() => readGgufHeader(bytesSource(b), { initialReadBytes }));
        setLazyArrayItems(1);
        const lazy = await outcomeAsync(() => readGgufHeader(bytesSource(b), { initialReadBytes }));
        expect(lazy).toEqual(eager);
      }),
      { numRuns: 300 },
    );
  });

  it('keep a large vocabulary as bytes of their own until read, then as a plain array', () => {
    const tokens = Array.from({ length: 5000 }, (_, i) => (i % 3 ? `tok${i}` : `\u2581词${i}`));
    const flags = Array.from({ length: 5000 }, (_, i) => i % 2 === 0);
    const { bytes, header } = writeGgufHeader({
      version: 3,
      endianness: 'little',
      metadata: [
        { key: 'tokenizer.ggml.tokens', type: 'array', value: { itemType: 'string', items: tokens } },
        { key: 'flags', type: 'array', value: { itemType: 'bool', items: flags } },
      ],
      tensors: [],
    });
    const input = bytes.slice(0, header.fileSize);
    const h = parseGgufHeader(input);
    input.fill(0); // the caller may reuse its buffer: the arrays copied what they need
    const value = h.metadataMap.get('tokenizer.ggml.tokens')!.value as { itemType: string; items: string[] };
    expect(Object.keys(value)).toEqual(['itemType', 'items']);
    expect(value.items).toEqual(tokens);
    expect(Array.isArray(value.items)).toBe(true);
    expect(value.items).toBe(value.items); // decoded once
    expect(h.metadataMap.get('flags')!.value).toEqual({ itemType: 'bool', items: flags });
  });

  it.each([
    ['a bool byte of 2', 'bool', 2, 'gguf.bool_value'],
    ['a lead byte ending a string', 'string', 0xe2, 'gguf.utf8'],
    ['a lone continuation byte ending a string', 'string', 0x80, 'gguf.utf8'],
  ] as const)('reports %s like eager decoding does', (_name, itemType, byte, rule) => {
    const items =
      itemType === 'bool' ? Array.from({ length: 300 }, () => true) : Array.from({ length: 300 }, () => 'ab');
    const { bytes } = writeGgufHeader({
      version: 3,
      endianness: 'little',
      metadata: [{ key: 'k', type: 'array', value: { itemType, items } }],
      tensors: [],
    });
    // Item 250: the bool itself, or the last byte ('b') of the string.
    const at = itemType === 'bool' ? bytes.lastIndexOf(1) - 49 : bytes.lastIndexOf(0x62) - 50 * 10;
    const bad = bytes.slice();
    bad[at] = byte;
    setLazyArrayItems(Number.POSITIVE_INFINITY);
    const eager = outcome(() => parseGgufHeader(bad));
    setLazyArrayItems(DEFAULT);
    expect(outcome(() => parseGgufHeader(bad))).toEqual(eager);
    expect(eager).toMatchObject({ code: 'malformed', details: { rule } });
  });

  it('reports a bad string or bool deep in a large array at its own offset', () => {
    const tokens = Array.from({ length: 1000 }, (_, i) => `t${i}`);
    const { bytes } = writeGgufHeader({
      version: 3,
      endianness: 'little',
      metadata: [{ key: 'v', type: 'array', value: { itemType: 'string', items: tokens } }],
      tensors: [],
    });
    const bad = bytes.slice();
    const at = new TextDecoder().decode(bad).indexOf('t700') + 1; // the '7'
    bad[at] = 0xc0; // an overlong lead byte
    setLazyArrayItems(Number.POSITIVE_INFINITY);
    const eager = outcome(() => parseGgufHeader(bad));
    setLazyArrayItems(DEFAULT);
    const lazy = outcome(() => parseGgufHeader(bad));
    expect(lazy).toEqual(eager);
    expect(lazy).toMatchObject({ code: 'malformed', details: { rule: 'gguf.utf8', offset: at - 1, key: 'v' } });
  });
});

describe('reading a large string array through several prefixes', () => {
  const tokens = Array.from({ length: 5000 }, (_, i) => (i % 7 ? `tok${i}` : `\u2581词${i}`));
  const { bytes, header } = writeGgufHeader({
    version: 3,
    endianness: 'little',
    metadata: [
      { key: 'tokenizer.ggml.tokens', type: 'array', value: { itemType: 'string', items: tokens } },
      { key: 'tokenizer.ggml.merges', type: 'array', value: { itemType: 'string', items: tokens.slice(0, 3000) } },
      { key: 'after', type: 'uint32', value: 7 },
    ],
    tensors: [],
  });
  const whole = bytes.slice(0, header.fileSize);
  // Byte offsets (one char per byte), where a bad byte goes.
  const text = String.fromCharCode(...whole);
  // A source with readInto (filled in place) and one with read only (copied).
  const intoSource = (b: Uint8Array): ByteSource & { reads: number } => {
    const s = {
      size: b.length,
      reads: 0,
      read: async (offset: number, length: number) => b.slice(offset, offset + length),
      readInto: async (offset: number, target: Uint8Array) => {
        s.reads++;
        target.set(b.subarray(offset, offset + target.length));
      },
    };
    return s;
  };

  it.each([
    ['no fault', -1],
    ['a bad byte in string 3', text.indexOf('tok3') + 1],
    ['a bad byte in string 2600', text.indexOf('tok2600') + 1],
    ['a bad byte in the last token', text.indexOf('tok4999') + 1],
    ['a bad byte in merge 2999', text.lastIndexOf('tok2999') + 1],
  ])('resumes where each prefix ended, with what one parse gives: %s', async (_name, at) => {
    const b = whole.slice();
    if (at >= 0) b[at] = 0xc0; // an overlong lead byte
    const once = outcome(() => parseGgufHeader(b));
    if (at >= 0) expect(once).toMatchObject({ code: 'malformed', details: { rule: 'gguf.utf8', offset: at - 1 } });
    for (const initialReadBytes of [64, 1000, 7777]) {
      expect(await outcomeAsync(() => readGgufHeader(bytesSource(b), { initialReadBytes }))).toEqual(once);
      const s = intoSource(b);
      expect(await outcomeAsync(() => readGgufHeader(s, { initialReadBytes }))).toEqual(once);
      // Every prefix was read in place; a fault past the first prefix takes more than one.
      if (at < 0 || at >= initialReadBytes) expect(s.reads).toBeGreaterThan(1);
    }
  });
});

describe('isUtf8', () => {
  const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const valid = (b: Uint8Array) => {
    try {
      strict.decode(b);
      return true;
    } catch {
      return false;
    }
  };
  it('agrees with the fatal TextDecoder on any bytes', () => {
    const byte = fc.oneof(
      fc.integer({ min: 0, max: 255 }),
      fc.constantFrom(0x80, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0x9f, 0xa0, 0x8f, 0x90),
    );
    fc.assert(
      fc.property(fc.array(byte, { maxLength: 12 }), (xs) => {
        const b = Uint8Array.from(xs);
        expect(isUtf8(b, 0, b.length)).toBe(valid(b));
      }),
      { numRuns: 20000 },
    );
  });
});
