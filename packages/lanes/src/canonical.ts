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

function write(value: unknown, path: string, out: string[]): void {
  if (value === null) out.push('null');
  else if (typeof value === 'boolean') out.push(value ? 'true' : 'false');
  else if (typeof value === 'string') out.push(JSON.stringify(value));
  else if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) fail(path, 'numbers must be safe integers');
    out.push(Object.is(value, -0) ? '0' : String(value));
  } else if (Array.isArray(value)) {
    out.push('[');
    for (let i = 0; i < value.length; i++) {
      if (i) out.push(',');
      write(value[i], `${path}/${i}`, out);
    }
    out.push(']');
  } else if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const keys = Object.keys(value as object).sort();
    out.push('{');
    keys.forEach((k, i) => {
      if (i) out.push(',');
      out.push(JSON.stringify(k), ':');
      write((value as Record<string, unknown>)[k], `${path}/${k}`, out);
    });
    out.push('}');
  } else fail(path, `unsupported value of type ${typeof value}`);
}

/** The canonical JSON text of `value` (see the module comment for the rules). */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  write(value, '', out);
  return out.join('');
}

/** `sha256:<hex>` of the canonical JSON of `value`: the digest that pins a lane document. */
export function documentDigest(value: unknown): `sha256:${string}` {
  return `sha256:${toHex(sha256(utf8.encode(canonicalJson(value))))}`;
}
