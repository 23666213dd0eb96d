/**
 * Type checks at the store's public methods: a caller passing the wrong kind of value gets
 * `invalid_argument` (rule `store.argument`, `details.argument` naming it), never a `TypeError`
 * from inside. One check per call, before any I/O.
 * @internal
 */
import { requireCallOptions, wrongArgument } from '@tensorfs/format';

function wrong(what: string, expected: string, value: unknown): never {
  return wrongArgument('store', what, expected, value);
}

/** An options bag: `undefined` or an object, with `signal` an AbortSignal and callbacks functions when given. */
export function checkOptions(value: unknown, what = 'options'): void {
  requireCallOptions(value, what, 'store');
}

/** A string argument (a ref name, a path, an id before its own validation). */
export function checkString(value: unknown, what: string): asserts value is string {
  if (typeof value !== 'string') wrong(what, 'a string', value);
}

/** An array of non-null objects (records, batch items). */
export function checkObjects(value: unknown, what: string): void {
  if (!Array.isArray(value)) wrong(what, 'an array', value);
  for (const item of value) if (typeof item !== 'object' || item === null) wrong(`${what}[]`, 'an object', item);
}

/** `undefined` or a boolean. */
export function checkOptionalBoolean(value: unknown, what: string): void {
  if (value !== undefined && typeof value !== 'boolean') wrong(what, 'a boolean', value);
}

/** A non-null object. */
export function checkObject(value: unknown, what: string): void {
  if (typeof value !== 'object' || value === null) wrong(what, 'an object', value);
}

/** Bytes to store: a Uint8Array or an array of them. */
export function checkChunks(value: unknown, what: string): void {
  if (value instanceof Uint8Array) return;
  if (!Array.isArray(value)) wrong(what, 'a Uint8Array or an array of them', value);
  for (const item of value) if (!(item instanceof Uint8Array)) wrong(`${what}[]`, 'a Uint8Array', item);
}

/** Something `for await` can walk. */
export function checkAsyncIterable(value: unknown, what: string): void {
  const v = value as { [Symbol.asyncIterator]?: unknown; [Symbol.iterator]?: unknown } | null;
  if (
    typeof v !== 'object' ||
    v === null ||
    (typeof v[Symbol.asyncIterator] !== 'function' && typeof v[Symbol.iterator] !== 'function')
  ) {
    wrong(what, 'an async iterable of Uint8Array', value);
  }
}
