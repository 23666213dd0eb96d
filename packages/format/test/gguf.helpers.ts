// Hand-built GGUF bytes for the hostile corpus: nothing here validates, so any rule can be broken.
import fc from 'fast-check';
import { GGML_TYPES, GGUF_VALUE_TYPES, type GgufKV, type GgufScalar, type GgufValueType } from '../src/index.js';

const enc = new TextEncoder();

/** Appends little- or big-endian fields; `done()` returns the bytes. */
export class RawGguf {
  private parts: number[] = [];
  constructor(readonly little = true) {}

  raw(bytes: ArrayLike<number>): this {
    for (let i = 0; i < bytes.length; i++) this.parts.push(bytes[i]!);
    return this;
  }
  private num(size: number, set: (dv: DataView) => void): this {
    const b = new Uint8Array(size);
    set(new DataView(b.buffer));
    return this.raw(b);
  }
  u8(v: number): this {
    return this.raw([v]);
  }
  u32(v: number): this {
    return this.num(4, (dv) => dv.setUint32(0, v, this.little));
  }
  i32(v: number): this {
    return this.num(4, (dv) => dv.setInt32(0, v, this.little));
  }
  u64(v: bigint | number): this {
    return this.num(8, (dv) => dv.setBigUint64(0, BigInt(v), this.little));
  }
  str(s: string | Uint8Array): this {
    const b = typeof s === 'string' ? enc.encode(s) : s;
    return this.u64(b.length).raw(b);
  }
  /** magic + version + counts. */
  header(tensors: bigint | number, kvs: bigint | number, version = 3): this {
    return this.raw([0x47, 0x47, 0x55, 0x46]).u32(version).u64(tensors).u64(kvs);
  }
  kvU32(key: string, v: number): this {
    return this.str(key).u32(4).u32(v);
  }
  kvStr(key: string, v: string | Uint8Array): this {
    return this.str(key).u32(8).str(v);
  }
  tensor(name: string | Uint8Array, dims: (bigint | number)[], type: number, offset: bigint | number): this {
    this.str(name).u32(dims.length);
    for (const d of dims) this.u64(d);
    return this.u32(type).u64(offset);
  }
  get length(): number {
    return this.parts.length;
  }
  /** Zero bytes up to a multiple of `alignment`. */
  pad(alignment = 32): this {
    while (this.parts.length % alignment) this.parts.push(0);
    return this;
  }
  zeros(n: number): this {
    for (let i = 0; i < n; i++) this.parts.push(0);
    return this;
  }
  done(): Uint8Array {
    return Uint8Array.from(this.parts);
  }
}

/** A valid scalar of each GGUF value type. */
export function scalarArbitrary(type: GgufValueType): fc.Arbitrary<GgufScalar> {
  switch (type) {
    case 'uint8':
      return fc.integer({ min: 0, max: 0xff });
    case 'int8':
      return fc.integer({ min: -0x80, max: 0x7f });
    case 'uint16':
      return fc.integer({ min: 0, max: 0xffff });
    case 'int16':
      return fc.integer({ min: -0x8000, max: 0x7fff });
    case 'uint32':
      return fc.integer({ min: 0, max: 0xffffffff });
    case 'int32':
      return fc.integer({ min: -0x80000000, max: 0x7fffffff });
    case 'float32':
      return fc.float();
    case 'bool':
      return fc.boolean();
    case 'string':
      return fc.string({ unit: 'binary', maxLength: 12 });
    case 'uint64':
      return fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });
    case 'int64':
      return fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n });
    default:
      return fc.double();
  }
}

const SCALAR_TYPES = GGUF_VALUE_TYPES.filter((t) => t !== 'array');

/** Any valid KV (scalar or array), `general.alignment` excluded. */
export const kvArbitrary: fc.Arbitrary<GgufKV> = fc
  .tuple(
    fc
      .string({ unit: 'binary', minLength: 1, maxLength: 12 })
      .filter((k) => k !== 'general.alignment' && !k.includes('\0')),
    fc.constantFrom(...GGUF_VALUE_TYPES),
    fc.constantFrom(...SCALAR_TYPES),
  )
  .chain(([key, type, itemType]) =>
    type === 'array'
      ? fc
          .array(scalarArbitrary(itemType), { maxLength: 6 })
          .map((items): GgufKV => ({ key, type, value: { itemType, items } }))
      : scalarArbitrary(type).map((value): GgufKV => ({ key, type, value })),
  );

const TENSOR_TYPES = GGML_TYPES.filter((t) => !t.removed);

/** A valid tensor declaration: a known type, up to 4 small dims, the first a whole number of blocks. */
export const tensorArbitrary = fc
  .tuple(
    fc.string({ unit: 'binary', maxLength: 15 }).filter((name) => !name.includes('\0')),
    fc.constantFrom(...TENSOR_TYPES),
    fc.integer({ min: 0, max: 3 }),
    fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 3 }),
    fc.boolean(),
  )
  .map(([name, t, blocks, rest, noDims]) => ({
    name,
    type: t.id,
    dims: noDims && t.blockSize === 1 ? [] : [BigInt(blocks * t.blockSize), ...rest.map(BigInt)],
  }));

/** Options for a valid writer call. */
export const writeOptionsArbitrary = fc.record({
  version: fc.constantFrom(2 as const, 3 as const),
  endianness: fc.constantFrom('little' as const, 'big' as const),
  alignment: fc.constantFrom(undefined, 1, 8, 32, 64),
  metadata: fc.uniqueArray(kvArbitrary, { selector: (kv) => kv.key, maxLength: 8 }),
  tensors: fc.uniqueArray(tensorArbitrary, { selector: (t) => t.name, maxLength: 5 }),
});
