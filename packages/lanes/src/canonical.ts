/**
 * Canonical JSON and document digests. A lane document's identity is the SHA-256 of its
 * canonical JSON: object keys sorted by UTF-16 code units, no insignificant whitespace, strings
 * as `JSON.stringify` writes them, numbers only as safe integers (no floats, so no formatting
 * ambiguity), `true`/`false`/`null`. Anything else is `invalid_argument` (`lanes.canonical`).
 */
import { TensorFSError, toHex } from '@tensorfs/format';
import { sha256 } from './sha256.js';

const utf8 = /* @__PURE__ */ new TextEncoder();

function fail(path: string, why: string): never {
  throw new TensorFSError('invalid_argument', `not canonical JSON at ${path || '/'}: ${why}`, {
    details: { rule: 'lanes.canonical', path: path || '/' },
  });
}

// `path` is built only when reporting: the parent path and the key are passed down instead.
function write(value: unknown, parent: () => string): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) fail(parent(), 'numbers must be safe integers');
    return Object.is(value, -0) ? '0' : String(value);
  }
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i) out += ',';
      out += write(value[i], () => `${parent()}/${i}`);
    }
    return `${out}]`;
  }
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const keys = Object.keys(value as object).sort();
    let out = '{';
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i] as string;
      if (i) out += ',';
      out += `${JSON.stringify(k)}:${write((value as Record<string, unknown>)[k], () => `${parent()}/${k}`)}`;
    }
    return `${out}}`;
  }
  return fail(parent(), `unsupported value of type ${typeof value}`);
}

/** The canonical JSON text of `value` (see the module comment for the rules). */
export function canonicalJson(value: unknown): string {
  return write(value, () => '');
}

/** `sha256:<hex>` of the canonical JSON of `value`: the digest that pins a lane document. */
export function documentDigest(value: unknown): `sha256:${string}` {
  return `sha256:${toHex(sha256(utf8.encode(canonicalJson(value))))}`;
}
