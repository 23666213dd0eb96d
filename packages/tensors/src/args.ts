/**
 * Type checks at the public functions: a caller passing the wrong kind of value gets
 * `invalid_argument` (rule `tensors.argument`, `details.argument` naming it), never a `TypeError`
 * from inside. One check per call, before any read.
 * @internal
 */
import { requireCallOptions, wrongArgument } from '@tensorfs/format';

function wrong(what: string, expected: string, value: unknown): never {
  return wrongArgument('tensors', what, expected, value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** A store: an object with the port's read methods (`resolve`, `readObject`, `getManifest`). */
export function checkStore(value: unknown, what = 'store'): void {
  if (!isObject(value)) wrong(what, 'a Store', value);
  for (const m of ['resolve', 'readObject', 'getManifest'] as const) {
    if (typeof value[m] !== 'function') wrong(`${what}.${m}`, 'a function', value[m]);
  }
}

/** An options bag: `undefined` or an object, its `signal`, `onProgress` and `lease` of their kinds when given. */
export function checkOptions(value: unknown, what = 'options'): void {
  requireCallOptions(value, what, 'tensors');
}

/** A string argument (a ref, a path, a name). */
export function checkString(value: unknown, what: string): void {
  if (typeof value !== 'string') wrong(what, 'a string', value);
}

/** A non-null object of the given kind. */
export function checkObject(value: unknown, what: string, expected = 'an object'): void {
  if (!isObject(value)) wrong(what, expected, value);
}

/** A tensor view (as `openTensors` or `openCheckpoint` give): an object with a dtype, a shape and digests. */
export function checkView(value: unknown, what = 'view'): void {
  if (!isObject(value) || typeof value.dtype !== 'string' || !Array.isArray(value.shape)) {
    wrong(what, 'a TensorView', value);
  }
}

/** An opened tensor set: iterable, with `files`. */
export function checkTensorSet(value: unknown, what: string): void {
  if (
    !isObject(value) ||
    typeof value[Symbol.iterator as unknown as string] !== 'function' ||
    !Array.isArray(value.files)
  ) {
    wrong(what, 'a TensorSet (from openTensors)', value);
  }
}

/** An opened checkpoint: an object with a `components` Map and a `component` function. */
export function checkCheckpoint(value: unknown, what = 'checkpoint'): void {
  if (!isObject(value) || !(value.components instanceof Map) || typeof value.component !== 'function') {
    wrong(what, 'a Checkpoint (from openCheckpoint)', value);
  }
}

/** An array of non-null objects. */
export function checkObjects(value: unknown, what: string): void {
  if (!Array.isArray(value)) wrong(what, 'an array', value);
  for (const item of value) if (!isObject(item)) wrong(`${what}[]`, 'an object', item);
}

/** A byte buffer. */
export function checkBytes(value: unknown, what: string): void {
  if (!(value instanceof Uint8Array)) wrong(what, 'a Uint8Array', value);
}

/** A safe integer ≥ 0. */
export function checkCount(value: unknown, what: string): void {
  if (!Number.isSafeInteger(value) || (value as number) < 0) wrong(what, 'an integer ≥ 0', value);
}
