/** Where things live under a store root (docs/store.md), and ref name rules. */
import { join, sep } from 'node:path';
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

// Joined by hand: `layout.objects` is already normalized and an id's hex holds no separator, so
// this is what `join` returns, at a fraction of its cost (a path per object per pass: a fifth of
// a `verify --data` of 100,000 small objects went to `join`).

/** `objects/sha256/xx/yy` for an id. */
export function objectDir(layout: Layout, id: ObjectId): string {
  return `${layout.objects}${sep}${id.slice(7, 9)}${sep}${id.slice(9, 11)}`;
}

/** `objects/sha256/xx/yy/<hex>` for an id. */
export function objectPath(layout: Layout, id: ObjectId): string {
  return `${layout.objects}${sep}${id.slice(7, 9)}${sep}${id.slice(9, 11)}${sep}${id.slice(7)}`;
}

/** Store-relative path of an object, safe to put in error details. */
export function objectRel(id: ObjectId): string {
  const hex = id.slice(7);
  return `objects/sha256/${hex.slice(0, 2)}/${hex.slice(2, 4)}/${hex}`;
}

export { MAX_REF_NAME, isRefName, validateRefName } from '@tensorfs/format/store';

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
