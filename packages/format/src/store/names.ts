/**
 * The naming rules every store and origin shares: what a ref name may be, and what an object id
 * is. One copy, here, so a name a local store accepts is one every origin accepts.
 */
import { TensorFSError } from '../errors.js';

export { isObjectId, parseObjectId } from '../ids.js';

/** Longest accepted ref name. */
export const MAX_REF_NAME = 200;
const SEGMENT_RE = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

/**
 * Validates a ref name: `/`-separated segments of `[A-Za-z0-9._-]`, each starting with a letter,
 * digit or `_`, none `..`-like, none ending in `.lock` or `.tmp`, at most {@link MAX_REF_NAME}
 * characters. So a name can never leave `refs/` nor collide with a temp. `invalid_argument`
 * (rule `store.ref_<why>`) otherwise; returns the name.
 */
export function validateRefName(name: string): string {
  const bad = (rule: string): never => {
    throw new TensorFSError('invalid_argument', `invalid ref name (${rule})`, {
      details: {
        rule: `store.ref_${rule}`,
        actual: typeof name === 'string' ? name.slice(0, MAX_REF_NAME + 1) : name === null ? 'null' : typeof name,
      },
    });
  };
  if (typeof name !== 'string' || name.length === 0) bad('empty');
  if (name.length > MAX_REF_NAME) bad('too_long');
  for (const seg of name.split('/')) {
    if (!SEGMENT_RE.test(seg)) bad(seg === '' ? 'empty_segment' : 'charset');
    if (seg.includes('..')) bad('dot_dot');
    if (seg.endsWith('.lock') || seg.endsWith('.tmp')) bad('reserved_suffix');
  }
  return name;
}

/** True if `name` is a valid ref name (see {@link validateRefName}). */
export function isRefName(name: string): boolean {
  try {
    validateRefName(name);
    return true;
  } catch {
    return false;
  }
}
