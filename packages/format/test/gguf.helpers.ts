// Hand-built GGUF bytes for the hostile corpus: nothing here validates, so any rule can be broken.
import { TensorFSError } from '../src/index.js';

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

/** Runs `fn` and returns the TensorFSError it throws (fails the test on anything else). */
export function catchError(fn: () => unknown): TensorFSError {
  try {
    fn();
  } catch (err) {
    if (err instanceof TensorFSError) return err;
    throw new Error(`expected a TensorFSError, got ${String(err)}`);
  }
  throw new Error('expected a throw');
}
