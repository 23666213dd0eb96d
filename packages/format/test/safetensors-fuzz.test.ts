// Property tests: any bytes either parse or throw a TensorFSError (never anything else, never a
// hang); mutated valid files too; and write/parse round trips over arbitrary tensor lists.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isTensorFSError,
  parseSafetensorsHeader,
  parseShardIndex,
  SAFETENSORS_DTYPES,
  type SafetensorsHeader,
  safetensorsByteLength,
  writeSafetensors,
  writeSafetensorsHeader,
} from '../src/index.js';
import { file } from './safetensors-helpers.js';

const RUNS = process.env.TENSORFS_SLOW ? 20_000 : 400;

/** Parses, returning the header or the TensorFSError; rethrows anything else (a bug). */
function attempt(run: () => SafetensorsHeader, strict?: boolean): SafetensorsHeader | undefined {
  try {
    const h = run();
    checkInvariants(h);
    return h;
  } catch (error) {
    if (!isTensorFSError(error)) throw error;
    expect(['malformed', 'limit_exceeded'], String(strict)).toContain(error.code);
    return undefined;
  }
}

/** What every accepted header guarantees. */
function checkInvariants(h: SafetensorsHeader): void {
  let end = h.dataStart;
  for (const t of h.tensors) {
    expect(t.byteOffset).toBe(end);
    expect(BigInt(t.byteLength)).toBe(safetensorsByteLength(t.dtype, t.shape));
    expect(t.dataOffsets[1] - t.dataOffsets[0]).toBe(BigInt(t.byteLength));
    expect(h.byName.get(t.name)).toBe(t);
    end += t.byteLength;
  }
  expect(end).toBe(h.fileSize);
  expect(h.byName.size).toBe(h.tensors.length);
}

/** JSON-ish fragments, to reach deeper than random bytes do. */
const token = fc.constantFrom(
  '{',
  '}',
  '[',
  ']',
  ',',
  ':',
  ' ',
  '"',
  '\\',
  '\\u',
  'd800',
  'dc00',
  '"dtype"',
  '"shape"',
  '"data_offsets"',
  '"__metadata__"',
  '"F32"',
  '"F4"',
  '"t"',
  '0',
  '1',
  '4',
  '-',
  '.',
  'e',
  '18446744073709551615',
  '18446744073709551616',
  'null',
  'true',
  '\n',
  '\u0000',
  'é',
  '😊',
);
const headerish = fc.array(token, { maxLength: 60 }).map((parts) => parts.join(''));

const dtypeName = fc.constantFrom(...SAFETENSORS_DTYPES.map((d) => d.name));
/** A tensor spec whose byte length is small and whole. */
const tensorSpec = fc
  .record({
    name: fc.string({ unit: 'binary', maxLength: 12 }),
    dtype: dtypeName,
    shape: fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 4 }),
  })
  .map((t) => {
    const bits = SAFETENSORS_DTYPES.find((d) => d.name === t.dtype)!.bits;
    const count = t.shape.reduce((a, b) => a * b, 1);
    // Sub-byte dtypes need count × bits divisible by 8: append a dimension that makes it so.
    return (count * bits) % 8 === 0 ? t : { ...t, shape: [...t.shape, 8] };
  });
const tensorList = fc
  .uniqueArray(tensorSpec, { selector: (t) => t.name, maxLength: 8 })
  .map((ts) => ts.filter((t) => t.name !== '__metadata__'));
const metadata = fc.option(
  fc.dictionary(fc.string({ unit: 'binary', maxLength: 8 }), fc.string({ unit: 'binary', maxLength: 8 })),
  {
    nil: null,
  },
);

function withData(tensors: { name: string; dtype: string; shape: number[] }[]) {
  return tensors.map((t, i) => ({
    ...t,
    data: new Uint8Array(Number(safetensorsByteLength(t.dtype, t.shape))).fill(i + 1),
  }));
}

describe('safetensors parser under hostile input', () => {
  it('any bytes: parse or TensorFSError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.boolean(), (bytes, strict) => {
        attempt(() => parseSafetensorsHeader(bytes, { strict }), strict);
      }),
      { numRuns: RUNS },
    );
  });

  it('a valid prefix over JSON-ish fragments: parse or TensorFSError', () => {
    fc.assert(
      fc.property(headerish, fc.nat(64), fc.boolean(), (header, data, strict) => {
        attempt(() => parseSafetensorsHeader(file(header, data), { strict }), strict);
      }),
      { numRuns: RUNS },
    );
  });

  it('R5 offsets point at the first byte where strict UTF-8 decoding fails', () => {
    const fatal = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    const decodes = (b: Uint8Array) => {
      try {
        fatal.decode(b);
        return true;
      } catch {
        return false;
      }
    };
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 24 }), fc.string({ unit: 'binary', maxLength: 6 }), (raw, text) => {
        const header = new Uint8Array([...new TextEncoder().encode(`{"${text}`), ...raw, 0x22, 0x7d]);
        const bytes = file(header);
        try {
          parseSafetensorsHeader(bytes);
        } catch (error) {
          if (!isTensorFSError(error)) throw error;
          if (error.details.rule !== 'safetensors.R5') return;
          const at = (error.details.offset as number) - 8;
          expect(decodes(header.subarray(0, at))).toBe(true);
          expect(decodes(header.subarray(0, Math.min(header.length, at + 4)))).toBe(false);
          return;
        }
        expect(decodes(header)).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('mutated valid files: parse or TensorFSError', () => {
    const mutation = fc.record({
      kind: fc.constantFrom('set', 'insert', 'delete'),
      at: fc.nat(),
      value: fc.integer({ min: 0, max: 255 }),
    });
    fc.assert(
      fc.property(
        tensorList,
        metadata,
        fc.array(mutation, { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        (tensors, meta, mutations, strict) => {
          let bytes = writeSafetensors(withData(tensors), { metadata: meta });
          for (const m of mutations) {
            const at = m.at % (bytes.length + 1);
            if (m.kind === 'set' && at < bytes.length) bytes[at] = m.value;
            else if (m.kind === 'insert')
              bytes = new Uint8Array([...bytes.subarray(0, at), m.value, ...bytes.subarray(at)]);
            else if (m.kind === 'delete') bytes = new Uint8Array([...bytes.subarray(0, at), ...bytes.subarray(at + 1)]);
          }
          attempt(() => parseSafetensorsHeader(bytes, { strict }), strict);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('shard indexes from any bytes: parse or TensorFSError', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 200 }),
          headerish.map((s) => new TextEncoder().encode(s)),
        ),
        (bytes) => {
          try {
            parseShardIndex(bytes);
          } catch (error) {
            if (!isTensorFSError(error)) throw error;
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('pathological inputs stay fast (linear, bounded depth)', () => {
    const t0 = performance.now();
    const deep = `{"t":{"dtype":"U8","shape":[],"data_offsets":[0,1],"x":${'['.repeat(1_000_000)}`;
    expect(attempt(() => parseSafetensorsHeader(file(deep, 1)))).toBeUndefined();
    const escapes = `{"${'\\u0041'.repeat(200_000)}":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}`;
    expect(attempt(() => parseSafetensorsHeader(file(escapes, 1)))!.tensors[0]!.name).toHaveLength(200_000);
    const digits = `{"t":{"dtype":"U8","shape":[${'9'.repeat(1_000_000)}],"data_offsets":[0,1]}}`;
    expect(attempt(() => parseSafetensorsHeader(file(digits, 1)))).toBeUndefined();
    const unknownNumber = `{"t":{"dtype":"U8","shape":[],"data_offsets":[0,1],"x":${'9'.repeat(1_000_000)}}}`;
    expect(attempt(() => parseSafetensorsHeader(file(unknownNumber, 1)))!.tensors).toHaveLength(1);
    // ~0.3 s on an idle machine; the bound only catches super-linear behaviour, not load.
    expect(performance.now() - t0).toBeLessThan(15_000);
  });
});

describe('write/parse round trip over arbitrary tensor lists', () => {
  it('parse(write(x)) = x and write(parse(f)) = f', () => {
    fc.assert(
      fc.property(
        tensorList,
        metadata,
        fc.constantFrom('given', 'reference') as fc.Arbitrary<'given' | 'reference'>,
        (tensors, meta, order) => {
          const bytes = writeSafetensors(withData(tensors), { metadata: meta, order });
          const h = parseSafetensorsHeader(bytes, { strict: true });
          const planned = writeSafetensorsHeader(tensors, { metadata: meta, order });
          expect(h.tensors).toEqual(planned.tensors);
          if (order === 'given') expect(h.tensors.map((t) => t.name)).toEqual(tensors.map((t) => t.name));
          expect(h.metadata === null ? null : Object.fromEntries(h.metadata)).toEqual(
            meta === null ? null : { ...meta },
          );
          const again = writeSafetensorsHeader(h.tensors, { metadata: h.metadata });
          expect(again.bytes).toEqual(bytes.subarray(0, h.dataStart));
          for (const t of h.tensors) {
            const i = tensors.findIndex((x) => x.name === t.name);
            expect(bytes.subarray(t.byteOffset, t.byteOffset + t.byteLength).every((b) => b === i + 1)).toBe(true);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('our parse agrees with JSON.parse on every header we write (no duplicates, small integers)', () => {
    fc.assert(
      fc.property(tensorList, metadata, (tensors, meta) => {
        const { bytes } = writeSafetensorsHeader(tensors, { metadata: meta });
        const n = bytes.length - 8;
        const json = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))) as Record<string, unknown>;
        const h = parseSafetensorsHeader(bytes, {
          fileSize: bytes.length + tensors.reduce((a, t) => a + Number(safetensorsByteLength(t.dtype, t.shape)), 0),
        });
        const fromJson = Object.entries(json)
          .filter(([k]) => k !== '__metadata__')
          .map(([name, d]) => {
            const { dtype, shape, data_offsets } = d as { dtype: string; shape: number[]; data_offsets: number[] };
            return { name, dtype, shape: shape.map(BigInt), dataOffsets: data_offsets.map(BigInt) };
          });
        const ours = h.tensors.map(({ name, dtype, shape, dataOffsets }) => ({ name, dtype, shape, dataOffsets }));
        const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
        expect(ours.sort(byName)).toEqual(fromJson.sort(byName));
      }),
      { numRuns: RUNS },
    );
  });
});
