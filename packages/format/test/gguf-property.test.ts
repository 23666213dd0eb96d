// Property tests: any bytes parse or throw a TensorFSError; mutated valid files too; the writer round-trips.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bytesSource,
  type GgufHeader,
  isTensorFSError,
  parseGgufHeader,
  readGgufHeader,
  writeGgufHeader,
} from '../src/index.js';
import { RawGguf, writeOptionsArbitrary } from './gguf.helpers.js';

/** Parses, returning the header or the TensorFSError; anything else thrown fails the property. */
function attempt(bytes: Uint8Array): GgufHeader | { code: string; details: unknown } {
  try {
    return parseGgufHeader(bytes);
  } catch (err) {
    if (!isTensorFSError(err)) throw err;
    return { code: err.code, details: err.details };
  }
}

/** A valid file (header + zero data) from writer options. */
const validFile = writeOptionsArbitrary.map((options) => {
  const { bytes, header } = writeGgufHeader(options);
  const file = new Uint8Array(header.fileSize);
  file.set(bytes);
  return file;
});

const mutation = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('maxU64' as const), at: fc.nat() }),
);

type Mutation = typeof mutation extends fc.Arbitrary<infer M> ? M : never;

function mutate(file: Uint8Array, m: Mutation): Uint8Array {
  const at = file.length ? m.at % file.length : 0;
  const out = file.slice();
  switch (m.kind) {
    case 'set':
      out[at] = m.value;
      return out;
    case 'truncate':
      return out.subarray(0, at);
    case 'insert':
      return Uint8Array.from([...file.subarray(0, at), m.value, ...file.subarray(at)]);
    default:
      out.fill(0xff, at, at + 8);
      return out;
  }
}

describe('GGUF parser properties', () => {
  it('any bytes either parse or throw a TensorFSError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
        attempt(bytes);
      }),
      { numRuns: 1500 },
    );
  });

  it('any bytes after a GGUF v3 prefix (either endianness) either parse or throw a TensorFSError', () => {
    const prefix = fc.constantFrom(new RawGguf().header(0, 0).done(), new RawGguf(false).header(0, 0).done());
    fc.assert(
      fc.property(prefix, fc.uint8Array({ maxLength: 400 }), fc.nat({ max: 23 }), (p, tail, cut) => {
        attempt(Uint8Array.from([...p.subarray(0, 8 + (cut % 16)), ...tail]));
      }),
      { numRuns: 1500 },
    );
  });

  it('mutations of valid files parse or throw a TensorFSError; accepted ones re-write to the same header', () => {
    fc.assert(
      fc.property(validFile, fc.array(mutation, { minLength: 1, maxLength: 3 }), (file, ms) => {
        const bytes = ms.reduce(mutate, file);
        const result = attempt(bytes);
        if (!('tensors' in result)) return;
        const { offset, length } = result.metadataBlock;
        const again = writeGgufHeader({
          version: result.version,
          endianness: result.endianness,
          metadata: { raw: bytes.subarray(offset, offset + length), count: result.metadata.length },
          tensors: result.tensors.map((t) => ({ name: t.name, type: t.type, dims: t.dims })),
        });
        const infoEnd = result.tensorInfoBlock.offset + result.tensorInfoBlock.length;
        expect(again.bytes.subarray(0, infoEnd)).toEqual(bytes.subarray(0, infoEnd));
      }),
      { numRuns: 400 },
    );
  });

  it('readGgufHeader agrees with parseGgufHeader on mutated files, whatever its first read size', async () => {
    await fc.assert(
      fc.asyncProperty(validFile, mutation, fc.integer({ min: 1, max: 300 }), async (file, m, initialReadBytes) => {
        const bytes = mutate(file, m);
        const sync = attempt(bytes);
        const viaSource = await readGgufHeader(bytesSource(bytes), { initialReadBytes }).catch((err: unknown) => {
          if (!isTensorFSError(err)) throw err;
          return { code: err.code, details: err.details };
        });
        expect(viaSource).toEqual(sync);
      }),
      { numRuns: 300 },
    );
  });

  it('whatever the writer accepts parses back to the same values and re-writes byte for byte', () => {
    fc.assert(
      fc.property(writeOptionsArbitrary, (options) => {
        const { bytes, header } = writeGgufHeader(options);
        const file = new Uint8Array(header.fileSize);
        file.set(bytes);
        const h = parseGgufHeader(file);
        expect(h).toEqual(header);
        const alignmentKv = options.alignment !== undefined && options.alignment !== 32 ? 1 : 0;
        expect(h.metadata.slice(0, h.metadata.length - alignmentKv)).toEqual(options.metadata);
        expect(h.alignment).toBe(options.alignment ?? 32);
        expect(h.tensors.map((t) => [t.name, t.type, t.dims])).toEqual(
          options.tensors.map((t) => [t.name, t.type, t.dims]),
        );
        const again = writeGgufHeader({
          version: h.version,
          endianness: h.endianness,
          metadata: h.metadata,
          tensors: h.tensors.map((t) => ({ name: t.name, type: t.typeName, dims: t.dims })),
        });
        expect(again.bytes).toEqual(bytes);
      }),
      { numRuns: 300 },
    );
  });
});
