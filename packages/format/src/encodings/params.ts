/**
 * Reading declared facts out of `params` and `parts`, refusing anything missing or inconsistent.
 * Every refusal is `malformed` naming the param or part (and the index where one is at fault).
 */
import { TensorFSError } from '../errors.js';
import { E4M3FN, E5M2, LITTLE_ENDIAN_HOST, f16Table32 } from './floats.js';
import type { DecodedDtype, Encoded, EncodedPart, JsonValue } from './types.js';
import { malformed } from './types.js';

/** Largest element count a decoder accepts for one tensor (2^40: far beyond any real tensor). */
const MAX_ELEMENTS = 2 ** 40;

/** Nesting depth of {@link describingOnly} checks (the preparation is synchronous, so a counter is safe). */
let describing = 0;

/**
 * Runs `f` (a scheme's `prepare`) in the structure-only mode: a part without bytes is checked by
 * its declared dtype and shape alone (its length is the declared one) and comes back with
 * `described: true` and no bytes; each `prepare` returns before it reads bytes (see
 * {@link describingOnly}). One set of checks then serves both the decoder and a writer that has
 * only the parts' shapes (`tfs convert`).
 */
export function withoutBytes<T>(f: () => T): T {
  describing++;
  try {
    return f();
  } finally {
    describing--;
  }
}

/** True inside {@link withoutBytes}: a scheme's `prepare` returns once its structural checks pass. */
export function describingOnly(): boolean {
  return describing > 0;
}

const NO_BYTES = new Uint8Array(0);

/** Reads params of one encoding, with the scheme named in every error. */
export class Params {
  readonly scheme: string;
  readonly obj: Record<string, JsonValue>;
  readonly shape: number[];
  readonly dtype: DecodedDtype;
  readonly count: number;

  constructor(enc: Encoded) {
    this.scheme = enc.scheme;
    const p = enc.params;
    if (p === null || typeof p !== 'object' || Array.isArray(p)) {
      throw malformed(enc.scheme, 'params', 'params must be a JSON object', { param: 'params' });
    }
    this.obj = p;
    this.shape = this.dims('shape');
    const dt = this.obj.dtype;
    if (dt !== 'F32' && dt !== 'F16' && dt !== 'BF16') {
      throw malformed(enc.scheme, 'dtype', 'params.dtype must be F32, F16 or BF16', { param: 'dtype', actual: dt });
    }
    this.dtype = dt;
    let n = 1;
    for (const d of this.shape) n *= d;
    if (n > MAX_ELEMENTS) throw malformed(enc.scheme, 'shape', 'logical shape too large', { param: 'shape' });
    this.count = n;
  }

  has(name: string): boolean {
    return this.obj[name] !== undefined;
  }

  dims(name: string): number[] {
    const v = this.obj[name];
    if (!Array.isArray(v) || v.length > 8 || !v.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)) {
      throw malformed(this.scheme, name, `params.${name} must be an array of at most 8 non-negative integers`, {
        param: name,
      });
    }
    return v as number[];
  }

  int(name: string, opts: { min?: number; max?: number; oneOf?: readonly number[] } = {}): number {
    const v = this.obj[name];
    if (v === undefined) throw malformed(this.scheme, name, `params.${name} is required`, { param: name });
    if (!Number.isSafeInteger(v))
      throw malformed(this.scheme, name, `params.${name} must be an integer`, { param: name });
    const n = v as number;
    if ((opts.min !== undefined && n < opts.min) || (opts.max !== undefined && n > opts.max)) {
      throw malformed(this.scheme, name, `params.${name} out of range`, { param: name, actual: n });
    }
    if (opts.oneOf && !opts.oneOf.includes(n)) {
      throw malformed(this.scheme, name, `params.${name} must be one of ${opts.oneOf.join(', ')}`, {
        param: name,
        actual: n,
      });
    }
    return n;
  }

  num(name: string): number {
    const v = this.obj[name];
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      throw malformed(this.scheme, name, `params.${name} must be a finite number`, { param: name });
    }
    return v;
  }

  bool(name: string): boolean {
    const v = this.obj[name];
    if (typeof v !== 'boolean') throw malformed(this.scheme, name, `params.${name} must be a boolean`, { param: name });
    return v;
  }

  oneOf<T extends string>(name: string, values: readonly T[]): T {
    const v = this.obj[name];
    if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) {
      throw malformed(this.scheme, name, `params.${name} must be one of ${values.join(', ')}`, {
        param: name,
        actual: v === undefined ? null : v,
      });
    }
    return v as T;
  }

  /** Refuses params this scheme does not define (a fact we would silently ignore). */
  only(names: readonly string[]): void {
    for (const k of Object.keys(this.obj)) {
      if (!names.includes(k) && k !== 'shape' && k !== 'dtype') {
        throw malformed(this.scheme, 'unknown_param', `params.${k} is not defined for this scheme`, { param: k });
      }
    }
  }

  /** The logical shape as a matrix: rows (all dims but the last) × cols (the last dim). */
  matrix(): { rows: number; cols: number } {
    if (this.shape.length === 0) return { rows: 1, cols: 1 };
    const cols = this.shape[this.shape.length - 1] as number;
    return { rows: cols === 0 ? 0 : this.count / cols, cols };
  }
}

/** The byte width of the dtypes parts may use. */
const WIDTH: Readonly<Record<string, number>> = {
  U8: 1,
  I8: 1,
  F8_E4M3: 1,
  F8_E5M2: 1,
  F8_E8M0: 1,
  BOOL: 1,
  I16: 2,
  U16: 2,
  F16: 2,
  BF16: 2,
  I32: 4,
  U32: 4,
  F32: 4,
  I64: 8,
  U64: 8,
  F64: 8,
};

/** A checked part: declared dtype and shape, bytes present and of the declared length. */
export interface Part {
  readonly role: string;
  readonly dtype: string;
  readonly shape: readonly number[];
  readonly count: number;
  /** The bytes; empty when `described`. */
  readonly bytes: Uint8Array;
  /** The byte length: `count × width`, whether or not the bytes are here. */
  readonly byteLength: number;
  /** True when only the dtype and shape were checked (structure-only mode, no bytes given). */
  readonly described: boolean;
}

/**
 * The part `role`, required: its dtype must be one of `dtypes`, its bytes present and exactly
 * `count(shape) × width(dtype)` long.
 */
export function part(enc: Encoded, role: string, dtypes: readonly string[]): Part {
  const parts = enc.parts as Record<string, EncodedPart | undefined> | null | undefined;
  const p = parts && typeof parts === 'object' ? parts[role] : undefined;
  if (!p || typeof p !== 'object') {
    throw malformed(enc.scheme, 'missing_part', `the declared part "${role}" is missing`, { part: role });
  }
  if (!dtypes.includes(p.dtype)) {
    throw malformed(enc.scheme, 'part_dtype', `part "${role}" must be ${dtypes.join(' or ')}`, {
      part: role,
      actual: String(p.dtype),
    });
  }
  const shape = p.shape;
  if (!Array.isArray(shape) || shape.length > 8 || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw malformed(enc.scheme, 'part_shape', `part "${role}" has an invalid shape`, { part: role });
  }
  let count = 1;
  for (const d of shape) count *= d;
  const width = WIDTH[p.dtype] as number;
  if (!(p.bytes instanceof Uint8Array)) {
    if (describingOnly() && p.bytes === undefined && count <= MAX_ELEMENTS) {
      return { role, dtype: p.dtype, shape, count, bytes: NO_BYTES, byteLength: count * width, described: true };
    }
    throw malformed(enc.scheme, 'missing_bytes', `part "${role}" has no bytes`, { part: role });
  }
  if (count > MAX_ELEMENTS || p.bytes.length !== count * width) {
    throw malformed(enc.scheme, 'part_length', `part "${role}" is not ${count * width} bytes long`, {
      part: role,
      expected: count * width,
      actual: p.bytes.length,
    });
  }
  return { role, dtype: p.dtype, shape, count, bytes: p.bytes, byteLength: p.bytes.length, described: false };
}

/** An optional part (absent → undefined); present → checked as {@link part}. */
export function optionalPart(enc: Encoded, role: string, dtypes: readonly string[]): Part | undefined {
  const parts = enc.parts as Record<string, EncodedPart | undefined> | null | undefined;
  if (!parts || typeof parts !== 'object' || parts[role] === undefined) return undefined;
  return part(enc, role, dtypes);
}

/** Refuses parts this scheme does not define. */
export function onlyParts(enc: Encoded, roles: readonly string[]): void {
  const parts = enc.parts;
  if (parts === null || typeof parts !== 'object' || Array.isArray(parts)) {
    throw malformed(enc.scheme, 'parts', 'parts must be an object', { part: null });
  }
  for (const k of Object.keys(parts)) {
    if (!roles.includes(k)) {
      throw malformed(enc.scheme, 'unknown_part', `part "${k}" is not defined for this scheme`, { part: k });
    }
  }
}

/** Refuses a part whose shape is not one of `allowed`. */
export function expectShape(scheme: string, p: Part, allowed: ReadonlyArray<readonly number[]>): void {
  for (const s of allowed) {
    if (s.length === p.shape.length && s.every((d, i) => d === p.shape[i])) return;
  }
  throw malformed(
    scheme,
    'part_shape',
    `part "${p.role}" must have shape ${allowed.map((s) => `[${s}]`).join(' or ')}`,
    {
      part: p.role,
      expected: allowed.map((s) => [...s]),
      actual: [...p.shape],
    },
  );
}

/** Refuses a part whose element count is not `n`. */
export function expectCount(scheme: string, p: Part, n: number): void {
  if (p.count !== n) {
    throw malformed(scheme, 'part_shape', `part "${p.role}" must hold ${n} elements`, {
      part: p.role,
      expected: n,
      actual: p.count,
    });
  }
}

function aligned(bytes: Uint8Array, width: number): ArrayBuffer {
  if (!LITTLE_ENDIAN_HOST)
    throw new TensorFSError('unsupported', 'decoding needs a little-endian host', {
      details: { rule: 'encodings.big_endian_host' },
    });
  if (bytes.byteOffset % width === 0 && bytes.buffer instanceof ArrayBuffer) return bytes.buffer;
  return bytes.slice().buffer;
}

function offsetOf(bytes: Uint8Array, width: number): number {
  return bytes.byteOffset % width === 0 && bytes.buffer instanceof ArrayBuffer ? bytes.byteOffset : 0;
}

/** The part's values as float32 (F32, F16, BF16, F8 and integer parts), one array. */
export function floats(p: Part): Float32Array {
  const b = p.bytes;
  switch (p.dtype) {
    case 'F32':
      return new Float32Array(aligned(b, 4), offsetOf(b, 4), p.count);
    case 'F16': {
      const h = new Uint16Array(aligned(b, 2), offsetOf(b, 2), p.count);
      const f16 = f16Table32();
      const out = new Float32Array(p.count);
      for (let i = 0; i < h.length; i++) out[i] = f16[h[i] as number] as number;
      return out;
    }
    case 'BF16': {
      const h = new Uint16Array(aligned(b, 2), offsetOf(b, 2), p.count);
      const out = new Float32Array(p.count);
      const o32 = new Uint32Array(out.buffer);
      for (let i = 0; i < h.length; i++) o32[i] = (h[i] as number) << 16;
      return out;
    }
    case 'F8_E4M3':
    case 'F8_E5M2': {
      const t = p.dtype === 'F8_E4M3' ? E4M3FN : E5M2;
      const out = new Float32Array(p.count);
      for (let i = 0; i < b.length; i++) out[i] = t[b[i] as number] as number;
      return out;
    }
    case 'I8':
      return Float32Array.from(new Int8Array(b.buffer, b.byteOffset, b.length));
    case 'U8':
      return Float32Array.from(b);
    default:
      throw new TensorFSError('internal', `no float view for ${p.dtype}`, {
        details: { rule: 'encodings.float_view' },
      });
  }
}

/** The part's bytes as a typed array of `ctor` (copied only if misaligned). */
export function view<T extends Int32Array | Uint32Array | Uint16Array | Int8Array>(
  p: Part,
  ctor: { new (buffer: ArrayBuffer, offset: number, length: number): T; BYTES_PER_ELEMENT: number },
): T {
  const w = ctor.BYTES_PER_ELEMENT;
  return new ctor(aligned(p.bytes, w), offsetOf(p.bytes, w), p.bytes.length / w);
}

/** Number of elements of a dims list. */
export function product(dims: readonly number[]): number {
  let n = 1;
  for (const d of dims) n *= d;
  return n;
}

/** `ceil(a / b)` for positive integers. */
export function ceilDiv(a: number, b: number): number {
  return Math.floor((a + b - 1) / b);
}

/** `a` rounded up to a multiple of `m`. */
export function roundUp(a: number, m: number): number {
  return ceilDiv(a, m) * m;
}
