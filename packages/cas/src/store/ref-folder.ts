/**
 * Refs without objects: a folder holding only `refs/`, `tmp/` and the metadata database, with the
 * local store's compare-and-swap (SQLite `BEGIN IMMEDIATE` around an atomic replace). What a hub
 * whose objects live elsewhere (an S3 bucket without conditional writes) keeps its refs in.
 */
import { resolve } from 'node:path';
import { type ObjectId, TensorFSError, isTensorFSError, parseObjectId } from '@tensorfs/format';
import { type Db, openDb } from './db.js';
import { ioError, mkdirDurable } from './fsutil.js';
import { type Layout, layoutOf } from './layout.js';
import { type RefEntry, readRef, scanRefs, writeRef } from './refs.js';

/** A ref that could not be read, with why (its family and rule). */
export interface RefFolderProblem {
  name: string;
  code: TensorFSError['code'];
  rule: string;
}

/**
 * Refs kept in a folder (`refs/<name>` files, the store's layout), moved by compare-and-swap that
 * is race-free across processes. It holds no objects: the caller checks that a ref's target exists
 * wherever the objects are before moving it.
 */
export class RefFolder {
  /** The folder. */
  readonly root: string;
  private constructor(
    private readonly layout: Layout,
    private readonly db: Db,
  ) {
    this.root = layout.root;
  }

  /** Opens (creating it durably) the refs folder at `root`. */
  static async open(root: string): Promise<RefFolder> {
    if (typeof root !== 'string' || root.length === 0) {
      throw new TensorFSError('invalid_argument', 'a refs folder needs a path', { details: { rule: 'refs.no_path' } });
    }
    const layout = layoutOf(resolve(root));
    try {
      for (const d of [layout.tmp, layout.refs]) await mkdirDurable(d);
    } catch (err) {
      throw ioError(err, 'create refs folder');
    }
    return new RefFolder(layout, openDb(layout.db, false));
  }

  /** The id a ref names, or null. */
  getRef(name: string): Promise<ObjectId | null> {
    return readRef(this.layout, name);
  }

  /**
   * Moves a ref: `expected` an id → it must hold it; null → it must not exist; undefined →
   * unconditional. `conflict` otherwise.
   */
  async setRef(name: string, id: ObjectId, expected: ObjectId | null | undefined): Promise<void> {
    parseObjectId(id);
    if (expected !== undefined && expected !== null) parseObjectId(expected);
    writeRef(this.db, this.layout, name, id, expected, () => {});
  }

  /** The readable refs, sorted by name, and every entry of `refs/` that is not one. */
  async scanRefs(): Promise<{ refs: RefEntry[]; problems: RefFolderProblem[] }> {
    const scan = await scanRefs(this.layout);
    return {
      refs: scan.refs,
      problems: scan.bad.map((b) => ({
        name: b.name,
        code: b.error.code,
        rule:
          isTensorFSError(b.error) && typeof b.error.details.rule === 'string'
            ? b.error.details.rule
            : 'ref.unreadable',
      })),
    };
  }

  /** Closes the database. */
  async close(): Promise<void> {
    this.db.close();
  }
}
