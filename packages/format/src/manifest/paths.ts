import { requireString } from '../args.js';
import { type ErrorCode, TensorFSError } from '../errors.js';
export { comparePaths } from '../order.js';

/** Longest entry path or symlink target, in UTF-8 bytes. */
export const MAX_PATH_BYTES = 4096;
/** Longest path segment, in UTF-8 bytes (the common file-system name limit). */
export const MAX_SEGMENT_BYTES = 255;

const utf8 = new TextEncoder();
/** C0 controls, DEL, backslash and lone surrogates (not UTF-8). */
const FORBIDDEN = /[\u0000-\u001f\u007f\\]|\p{Cs}/u;

/**
 * Validates a manifest entry path: relative, `/`-separated, 1–4096 UTF-8 bytes, segments of
 * 1–255 bytes that are not `.` or `..`, no leading or trailing `/`, no empty segment, no control
 * character (U+0000–U+001F, U+007F), no backslash, and valid Unicode (no lone surrogate).
 * Paths are compared and sorted as raw UTF-8 bytes; no Unicode normalisation is applied.
 * @throws {TensorFSError} `invalid_argument` with `details.rule` naming the broken rule.
 */
export function validatePath(path: string): void {
  requireString(path, 'path', 'manifest');
  checkPath(path, 'invalid_argument', false);
}

/**
 * Validates a symlink target: like a path, except that `.` and `..` segments are allowed, as long
 * as resolving the target against the link's directory never leaves the tree.
 * @throws {TensorFSError} `invalid_argument` with `details.rule` naming the broken rule.
 */
export function validateSymlinkTarget(linkPath: string, target: string): void {
  requireString(linkPath, 'linkPath', 'manifest');
  requireString(target, 'target', 'manifest');
  checkSymlinkTarget(linkPath, target, 'invalid_argument');
}

/** @internal A manifest rule's full name: `entries-order` → `manifest.entries_order`. */
export function manifestRule(rule: string): `manifest.${string}` {
  return `manifest.${rule.replaceAll('-', '_')}`;
}

const NON_ASCII = /[^\x00-\x7f]/;

/** @internal Path check with a chosen error code (`invalid_argument` on encode, `malformed` on decode). */
export function checkPath(path: string, code: ErrorCode, dotsAllowed: boolean): string[] {
  const fail = (rule: string, message: string): never => {
    throw new TensorFSError(code, message, { details: { rule: manifestRule(rule), path: shorten(path) } });
  };
  if (typeof path !== 'string') fail('path-type', 'path must be a string');
  if (path.length === 0) fail('path-empty', 'path is empty');
  if (FORBIDDEN.test(path)) fail('path-chars', 'path has a control character, a backslash or a lone surrogate');
  // ASCII paths (nearly all) need no encoding to count their bytes.
  const ascii = !NON_ASCII.test(path);
  const bytes = (s: string): number => (ascii ? s.length : utf8.encode(s).length);
  if (bytes(path) > MAX_PATH_BYTES) fail('path-length', `path is longer than ${MAX_PATH_BYTES} bytes`);
  if (path.startsWith('/')) fail('path-absolute', 'path must be relative');
  const segments = path.split('/');
  for (const segment of segments) {
    if (segment.length === 0) fail('path-empty-segment', 'path has an empty segment');
    if (!dotsAllowed && (segment === '.' || segment === '..')) fail('path-dot-segment', 'path has a . or .. segment');
    if (bytes(segment) > MAX_SEGMENT_BYTES) {
      fail('path-segment-length', `path segment is longer than ${MAX_SEGMENT_BYTES} bytes`);
    }
  }
  return segments;
}

/** @internal Symlink target check with a chosen error code. */
export function checkSymlinkTarget(linkPath: string, target: string, code: ErrorCode): void {
  const segments = checkPath(target, code, true);
  // Resolve lexically from the link's directory; the depth below the root must never go negative.
  let depth = linkPath.split('/').length - 1;
  for (const segment of segments) {
    if (segment === '..') depth--;
    else if (segment !== '.') depth++;
    if (depth < 0) {
      throw new TensorFSError(code, 'symlink target leaves the tree', {
        details: { rule: 'manifest.symlink_escape', path: shorten(linkPath), target: shorten(target) },
      });
    }
  }
}

function shorten(s: unknown): unknown {
  return typeof s === 'string' && s.length > 200 ? `${s.slice(0, 200)}…` : s;
}
