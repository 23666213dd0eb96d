/**
 * JSON text output shared by the safetensors writers (internal): string escaping in the two
 * styles we reproduce byte-for-byte, and key order by UTF-8 bytes.
 * @internal
 */
import { TensorFSError } from '../errors.js';

const NEEDS_ESCAPE_SERDE = /["\\\u0000-\u001f]/;
const NEEDS_ESCAPE_ASCII = /["\\\u0000-\u001f\u007f-\uffff]/;

const SHORT_ESCAPES: Readonly<Record<number, string>> = {
  34: '\\"',
  92: '\\\\',
  10: '\\n',
  13: '\\r',
  9: '\\t',
  8: '\\b',
  12: '\\f',
};

function unicodeEscape(c: number): string {
  return `\\u${c.toString(16).padStart(4, '0')}`;
}

/**
 * A JSON string literal exactly as serde_json writes it: raw UTF-8, `"` `\\` `\n` `\r` `\t` `\b` `\f`
 * escaped, other controls as `\u00XX` (lowercase hex), `/` and DEL unescaped.
 */
export function serdeJsonString(value: string): string {
  if (!NEEDS_ESCAPE_SERDE.test(value)) return `"${value}"`;
  let out = '"';
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c) out += value[i];
    else out += SHORT_ESCAPES[c] ?? unicodeEscape(c);
  }
  return `${out}"`;
}

/**
 * A JSON string literal exactly as Python's `json.dumps` writes it with its default
 * `ensure_ascii=True`: the serde escapes, plus every code unit from U+007F up as `\uXXXX`
 * (lowercase hex; astral characters as their surrogate pair).
 */
export function pythonJsonString(value: string): string {
  if (!NEEDS_ESCAPE_ASCII.test(value)) return `"${value}"`;
  let out = '"';
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0x20 && c < 0x7f && c !== 0x22 && c !== 0x5c) out += value[i];
    else out += SHORT_ESCAPES[c] ?? unicodeEscape(c);
  }
  return `${out}"`;
}

/**
 * Throws `invalid_argument` unless `value` is a string with no lone surrogate (it must have an
 * exact UTF-8 encoding).
 */
export function checkWellFormed(value: unknown, what: string, rule: string): asserts value is string {
  if (typeof value !== 'string') {
    throw new TensorFSError('invalid_argument', `${what} must be a string`, {
      details: { rule: `safetensors.${rule}`, actual: typeof value },
    });
  }
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    const next = value.charCodeAt(i + 1);
    if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      i++;
      continue;
    }
    throw new TensorFSError('invalid_argument', `${what} contains a lone surrogate`, {
      details: { rule: `safetensors.${rule}`, index: i },
    });
  }
}
