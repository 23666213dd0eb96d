/**
 * JSON values as a cozytensors header stores them (configs and encoding params).
 *
 * The data model is I-JSON's: objects with unique string keys, arrays, strings, `true`, `false`,
 * `null`, and numbers that are finite IEEE-754 doubles. In the header a value is plain canonical
 * CBOR (objects become maps with text keys in canonical order; numbers follow the CBOR codec:
 * an integral double in [−2^64, 2^64) is an integer item, any other the shortest exact float).
 */
import { requireBytes } from '../args.js';
import { type ErrorCode, TensorFSError } from '../errors.js';
import type { CborKey, CborValue } from '../manifest/cbor.js';
import { decodeUtf8Strict, type ExactJsonValue, JsonCursor, JsonNumberText } from '../safetensors/json-cursor.js';

/** A JSON value: what a checkpoint's configs and encoding params hold. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Deepest nesting of arrays and objects accepted in one config or params value. */
export const MAX_CONFIG_DEPTH = 48;

const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Parses a config file (UTF-8 JSON text) into a {@link JsonValue}, strictly: invalid UTF-8,
 * duplicate keys, nesting deeper than {@link MAX_CONFIG_DEPTH}, a number that is not a finite
 * double, and an integer that a double does not hold exactly are refused.
 * @throws {TensorFSError} `malformed` with `details.rule` `cozytensors.config_json` (syntax,
 *   UTF-8, duplicate keys, depth) or `cozytensors.config_number`, and `details.offset`.
 */
export function parseConfigJson(bytes: Uint8Array): JsonValue {
  requireBytes(bytes, 'bytes', 'cozytensors');
  let exact: ExactJsonValue;
  try {
    const text = decodeUtf8Strict(bytes, 0, 'config_json');
    const cursor = new JsonCursor(text, 0, 'config_json');
    cursor.ws();
    exact = cursor.value(0, 'config_json', 'config_json');
    cursor.ws();
    if (!cursor.atEnd()) cursor.fail('trailing characters after the JSON value');
  } catch (error) {
    // The shared JSON reader names its rules for safetensors; a config's are cozytensors'.
    if (!(error instanceof TensorFSError)) throw error;
    throw new TensorFSError(error.code, `config JSON: ${error.message}`, {
      details: { ...error.details, rule: 'cozytensors.config_json' },
      cause: error,
    });
  }
  return fromExact(exact, 0);
}

function fromExact(value: ExactJsonValue, depth: number): JsonValue {
  if (depth > MAX_CONFIG_DEPTH) {
    throw new TensorFSError('malformed', 'config nesting too deep', {
      details: { rule: 'cozytensors.config_json', limit: MAX_CONFIG_DEPTH },
    });
  }
  if (typeof value === 'bigint') {
    const n = Number(value);
    if (BigInt(n) !== value) numberFail('malformed', 'an integer a double does not hold exactly', value.toString());
    return n === 0 ? 0 : n;
  }
  if (value instanceof JsonNumberText) {
    const n = Number(value.text);
    if (!Number.isFinite(n)) numberFail('malformed', 'a number beyond the double range', value.text);
    if (Number.isInteger(n) && /^-?\d+$/.test(value.text) && BigInt(value.text) !== BigInt(n)) {
      numberFail('malformed', 'an integer a double does not hold exactly', value.text);
    }
    return n === 0 ? 0 : n;
  }
  if (Array.isArray(value)) return value.map((v) => fromExact(v, depth + 1));
  if (value instanceof Map) {
    const out: { [key: string]: JsonValue } = {};
    for (const [k, v] of value) defineKey(out, k, fromExact(v, depth + 1));
    return out;
  }
  return value;
}

function numberFail(code: ErrorCode, message: string, actual: string): never {
  throw new TensorFSError(code, `config number: ${message}`, {
    details: { rule: 'cozytensors.config_number', actual: actual.length > 40 ? `${actual.slice(0, 40)}…` : actual },
  });
}

/** Sets `key` as an own data property (also for `__proto__`, which plain assignment would not). */
function defineKey(out: { [key: string]: JsonValue }, key: string, value: JsonValue): void {
  Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
}

/** The rules a config value breaks: not JSON, nested too deep, a number that is not finite. */
type ConfigRule = 'cozytensors.config' | 'cozytensors.config_depth' | 'cozytensors.config_number';

/**
 * Checks that `value` is a {@link JsonValue} and returns the CBOR value to encode.
 * @internal
 */
export function jsonToCbor(value: unknown, code: ErrorCode, where: string, depth = 0): CborValue {
  const fail = (message: string, rule: ConfigRule = 'cozytensors.config'): never => {
    throw new TensorFSError(code, `${where}: ${message}`, { details: { rule } });
  };
  if (depth > MAX_CONFIG_DEPTH) fail('nesting too deep', 'cozytensors.config_depth');
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'string') {
    if (LONE_SURROGATE.test(value)) fail('a string holds a lone surrogate');
    return value;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) fail('numbers must be finite', 'cozytensors.config_number');
    return value === 0 ? 0 : value;
  }
  if (Array.isArray(value)) return value.map((v) => jsonToCbor(v, code, where, depth + 1));
  if (typeof value === 'object' && isPlainObject(value)) {
    const out = new Map<CborKey, CborValue>();
    for (const [k, v] of Object.entries(value)) out.set(k, jsonToCbor(v, code, where, depth + 1));
    return out;
  }
  return fail(`${typeof value === 'object' ? 'a non-plain object' : `a ${typeof value}`} is not a JSON value`);
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * The JSON value a decoded CBOR item holds; refuses what is outside the JSON data model.
 * @internal
 */
export function cborToJson(value: CborValue, where: string, depth = 0): JsonValue {
  const fail = (message: string, rule: ConfigRule = 'cozytensors.config'): never => {
    throw new TensorFSError('malformed', `${where}: ${message}`, { details: { rule } });
  };
  if (depth > MAX_CONFIG_DEPTH) fail('nesting too deep', 'cozytensors.config_depth');
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) fail('numbers must be finite', 'cozytensors.config_number');
    return value;
  }
  if (typeof value === 'bigint') {
    const n = Number(value);
    if (BigInt(n) !== value) fail('an integer a double does not hold exactly', 'cozytensors.config_number');
    return n;
  }
  if (value instanceof Uint8Array) return fail('byte strings are not JSON');
  if (Array.isArray(value)) return value.map((v) => cborToJson(v, where, depth + 1));
  if (value instanceof Map) {
    const out: { [key: string]: JsonValue } = {};
    for (const [k, v] of value) {
      if (typeof k !== 'string') fail('object keys must be text');
      defineKey(out, k as string, cborToJson(v, where, depth + 1));
    }
    return out;
  }
  return fail('not a JSON value');
}
