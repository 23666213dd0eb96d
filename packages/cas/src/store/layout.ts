/** Where things live under a store root (docs/store.md), and ref name rules. */
import { join } from 'node:path';
import { type ObjectId, TensorFSError, parseObjectId } from '@tensorfs/format';

/** Paths of one store. */
export interface Layout {
  readonly root: string;
  readonly objects: string;
  readonly tmp: string;
  readonly refs: string;
  readonly db: string;
}

/** The layout under `root`. */
export function layoutOf(root: string): Layout {
  return {
    root,
    objects: join(root, 'objects', 'sha256'),
    tmp: join(root, 'tmp'),
    refs: join(root, 'refs'),
    db: join(root, 'metadata.sqlite3'),
  };
}

/** `objects/sha256/xx/yy` for an id. */
export function objectDir(layout: Layout, id: ObjectId): string {
  const hex = id.slice(7);
  return join(layout.objects, hex.slice(0, 2), hex.slice(2, 4));
}

/** `objects/sha256/xx/yy/<hex>` for an id. */
export function objectPath(layout: Layout, id: ObjectId): string {
  return join(objectDir(layout, id), id.slice(7));
}

/** Store-relative path of an object, safe to put in error details. */
export function objectRel(id: ObjectId): string {
  const hex = id.slice(7);
  return `objects/sha256/${hex.slice(0, 2)}/${hex.slice(2, 4)}/${hex}`;
}

/** Longest accepted ref name. */
export const MAX_REF_NAME = 200;
const SEGMENT_RE = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

/**
 * Validates a ref name: `/`-separated segments of `[A-Za-z0-9._-]`, each starting with a letter,
 * digit or `_`, none `..`-like, none ending in `.lock` or `.tmp`, at most {@link MAX_REF_NAME}
 * characters. So a name can never leave `refs/` nor collide with a temp. `invalid_argument` otherwise.
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

/** Parses one ref file's content (`<id>\n`); `corrupt` if it is not exactly that. */
export function parseRefContent(name: string, text: string): ObjectId {
  if (!text.endsWith('\n') || text.indexOf('\n') !== text.length - 1) {
    throw new TensorFSError('corrupt', 'ref file is not one id and a newline', {
      details: { rule: 'ref.content', ref: name },
    });
  }
  try {
    return parseObjectId(text.slice(0, -1));
  } catch (err) {
    throw new TensorFSError('corrupt', 'ref file does not hold an object id', {
      details: { rule: 'ref.content', ref: name },
      cause: err,
    });
  }
}
