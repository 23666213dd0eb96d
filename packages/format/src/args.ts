/**
 * Type checks at the public entry points: a caller passing the wrong kind of value gets
 * `invalid_argument` (rule `<area>.argument`), never a `TypeError` from deep inside a parser.
 * @internal
 */
import { TensorFSError } from './errors.js';

/** The areas whose functions check their arguments here; each has the rule `<area>.argument`. */
export type ArgumentArea =
  | 'cbor'
  | 'codec'
  | 'cozytensors'
  | 'encodings'
  | 'gguf'
  | 'glob'
  | 'ids'
  | 'json'
  | 'lanes'
  | 'manifest'
  | 'planner'
  | 'progress'
  | 'records'
  | 'references'
  | 'repo'
  | 'safetensors'
  | 'source'
  | 'store'
  | 'tensors';

/**
 * Throws the error of a wrong argument: `invalid_argument`, rule `<area>.argument`, naming the
 * argument (`details.argument`) and what it was (`details.actual`: a type name or the number).
 * For the type checks at the public entry points of this package and the ones above it.
 */
export function wrongArgument(area: ArgumentArea, what: string, expected: string, value: unknown): never {
  // Never a TypeError from here, whatever the caller passed (a symbol, an object without a prototype).
  const text = (v: unknown): string => (typeof v === 'string' ? v : String(describe(v)));
  const name = text(what);
  const rule = `${text(area) as ArgumentArea}.argument` as const;
  throw new TensorFSError('invalid_argument', `${name} must be ${text(expected)}`, {
    details: { rule, argument: name, actual: describe(value) },
  });
}

const fail = wrongArgument;

/** What a wrong argument was, for `details.actual`: a type name, or the number itself. @internal */
export function describe(value: unknown): string | number {
  if (value === null) return 'null';
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** `invalid_argument` unless `value` is a `Uint8Array`. @internal */
export function requireBytes(value: unknown, what: string, area: ArgumentArea): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) fail(area, what, 'a Uint8Array', value);
}

/** `invalid_argument` unless `value` is a non-null object. @internal */
export function requireObject(value: unknown, what: string, area: ArgumentArea): asserts value is object {
  if (typeof value !== 'object' || value === null) fail(area, what, 'an object', value);
}

/** `invalid_argument` unless `value` is an array. @internal */
export function requireArray(value: unknown, what: string, area: ArgumentArea): asserts value is readonly unknown[] {
  if (!Array.isArray(value)) fail(area, what, 'an array', value);
}

/** `invalid_argument` unless `value` is an array of non-null objects. @internal */
export function requireObjects(value: unknown, what: string, area: ArgumentArea): asserts value is readonly object[] {
  requireArray(value, what, area);
  for (const item of value) if (typeof item !== 'object' || item === null) fail(area, `${what}[]`, 'an object', item);
}

/** `invalid_argument` unless `value` is a string. @internal */
export function requireString(value: unknown, what: string, area: ArgumentArea): asserts value is string {
  if (typeof value !== 'string') fail(area, what, 'a string', value);
}

/** `invalid_argument` unless `value` is a function. @internal */
export function requireFunction(
  value: unknown,
  what: string,
  area: ArgumentArea,
): asserts value is (...args: never[]) => unknown {
  if (typeof value !== 'function') fail(area, what, 'a function', value);
}

/** `invalid_argument` unless `value` is a number (NaN and infinities included: the kernels define them). @internal */
export function requireNumber(value: unknown, what: string, area: ArgumentArea): asserts value is number {
  if (typeof value !== 'number') fail(area, what, 'a number', value);
}

/** `invalid_argument` unless `value` is a safe integer ≥ 0. @internal */
export function requireCount(value: unknown, what: string, area: ArgumentArea): asserts value is number {
  if (!Number.isSafeInteger(value) || (value as number) < 0) fail(area, what, 'an integer ≥ 0', value);
}

/** `invalid_argument` unless `value` is `undefined` or a non-null object (an options bag). @internal */
export function requireOptions(value: unknown, what: string, area: ArgumentArea): void {
  if (value !== undefined && (typeof value !== 'object' || value === null)) fail(area, what, 'an object', value);
}

/**
 * `invalid_argument` unless `value` is the options bag of a call: `undefined` or an object whose
 * `signal` (an AbortSignal), `onProgress` (a function) and `lease` (an object with a string `id`)
 * have their kinds when given. The one check of call options of every package.
 */
export function requireCallOptions(value: unknown, what: string, area: ArgumentArea): void {
  if (value === undefined) return;
  if (typeof value !== 'object' || value === null) fail(area, what, 'an object', value);
  const o = value as Record<string, unknown>;
  const signal = o.signal as { aborted?: unknown } | null | undefined;
  if (signal !== undefined && (typeof signal !== 'object' || signal === null || typeof signal.aborted !== 'boolean')) {
    fail(area, `${what}.signal`, 'an AbortSignal', signal);
  }
  if (o.onProgress !== undefined && typeof o.onProgress !== 'function') {
    fail(area, `${what}.onProgress`, 'a function', o.onProgress);
  }
  const lease = o.lease as { id?: unknown } | null | undefined;
  if (lease !== undefined && (typeof lease !== 'object' || lease === null || typeof lease.id !== 'string')) {
    fail(area, `${what}.lease`, 'a Lease', lease);
  }
}

/** `invalid_argument` unless `value` is a bigint. @internal */
export function requireBigint(value: unknown, what: string, area: ArgumentArea): asserts value is bigint {
  if (typeof value !== 'bigint') fail(area, what, 'a bigint', value);
}
