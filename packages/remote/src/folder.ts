/**
 * A folder origin (`file://` or a path): the portable layout of spec/v1/remote.md —
 * `chunks/<hex>`, `refs/<name>` holding `sha256:<hex>\n`, `tmp/` for uploads in flight.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  type ObjectId,
  TensorFSError,
  isObjectId,
  isTensorFSError,
  parseObjectId,
  throwIfAborted,
  cancelledError,
} from '@tensorfs/format';
import {
  type Capability,
  casConflict,
  type DeleteRefOptions,
  type RefListing,
  type SetRefOptions,
  validateRefName,
} from '@tensorfs/format/store';
import { freshenFolder } from './gc-folder.js';
import { sleep } from './http.js';
import { type CallOptions, type ObjectRead, OriginBase } from './origin.js';
import { verified } from './verify-stream.js';

const LOCK_STALE_MS = 30_000;

function ioErr(err: unknown, op: string): TensorFSError {
  const code = (err as { code?: string })?.code;
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS')
    return new TensorFSError('denied', `folder origin: ${op} not permitted`, {
      details: { rule: 'folder.denied', errno: code },
    });
  if (code === 'ENOTDIR')
    return new TensorFSError(
      'conflict',
      `folder origin: ${op} failed: a file stands where a folder should (is the origin a file?)`,
      {
        details: { rule: 'folder.not_a_folder', errno: code },
      },
    );
  return new TensorFSError('io', `folder origin: ${op} failed`, {
    details: { rule: 'folder.io', errno: code ?? 'unknown' },
  });
}

/** Parses a ref file's text (`sha256:<hex>` and an optional newline); `malformed` otherwise. */
export function parseRefText(text: string): ObjectId {
  const t = text.trim();
  if (!isObjectId(t))
    throw new TensorFSError('malformed', 'a ref does not hold an object id', { details: { rule: 'remote.bad_ref' } });
  return t;
}

/** The folder origin at `root`. */
export class FolderOrigin extends OriginBase {
  readonly kind = 'folder' as const;
  readonly writable = true;
  readonly display: string;
  readonly capabilities: ReadonlySet<Capability> = new Set<Capability>([
    'objects.write',
    'refs.write',
    'refs.delete',
    'refs.list',
  ]);

  constructor(readonly root: string) {
    super();
    this.display = 'folder origin';
  }

  private chunk(id: ObjectId): string {
    return join(this.root, 'chunks', parseObjectId(id).slice(7));
  }

  private refPath(name: string): string {
    validateRefName(name);
    return join(this.root, 'refs', ...name.split('/'));
  }

  async getRef(name: string, options: CallOptions = {}): Promise<ObjectId | null> {
    throwIfAborted(options.signal);
    try {
      return parseRefText(await fsp.readFile(this.refPath(name), 'utf8'));
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'ENOENT') return null;
      // A folder where a ref file should be: what the hub and the local store call it.
      if (code === 'EISDIR') {
        throw new TensorFSError('corrupt', `refs/${name} is a folder, not a ref file`, {
          details: { rule: 'ref.not_regular', ref: name, actual: 'folder' },
        });
      }
      // `team/model/v2` below a ref `team/model` is absent too; a root that is a file is not.
      if (code === 'ENOTDIR' && (await fsp.stat(this.root).catch(() => null))?.isDirectory()) return null;
      if (isTensorFSError(err)) throw err;
      throw ioErr(err, 'read ref');
    }
  }

  /**
   * Every ref under `refs/`, sorted by name, and every entry there that is not a readable ref (a
   * symlink, a FIFO, a file not holding one id) named with why: one bad entry never fails the
   * listing. Lock files and upload temps are not refs and are skipped.
   */
  override async scanRefs(options: CallOptions = {}): Promise<RefListing> {
    throwIfAborted(options.signal);
    const out: RefListing = { refs: [], problems: [] };
    const base = join(this.root, 'refs');
    const walk = async (dir: string, prefix: string) => {
      let names: fs.Dirent[];
      try {
        names = await fsp.readdir(dir, { withFileTypes: true });
      } catch (err) {
        if ((err as { code?: string }).code === 'ENOENT') return;
        throw ioErr(err, 'list refs');
      }
      for (const d of names) {
        throwIfAborted(options.signal);
        if (d.name.endsWith('.lock') || d.name.includes('.tmp-')) continue;
        const name = `${prefix}${d.name}`;
        if (d.isDirectory()) await walk(join(dir, d.name), `${name}/`);
        else if (!d.isFile()) {
          out.problems.push({ name, code: 'corrupt', rule: 'ref.not_regular', message: 'not a regular file' });
        } else {
          try {
            const id = await this.getRef(name);
            if (id) out.refs.push({ name, id });
          } catch (err) {
            const e = isTensorFSError(err) ? err : ioErr(err, 'read ref');
            out.problems.push({
              name,
              code: e.code,
              rule: String(e.details?.rule ?? 'ref.unreadable'),
              message: e.message,
            });
          }
        }
      }
    };
    await walk(base, '');
    const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    out.refs.sort(byName);
    out.problems.sort(byName);
    return out;
  }

  /** Every ref whose file reads (the refs of {@link scanRefs}). */
  async listRefs(options: CallOptions = {}): Promise<RefListing['refs']> {
    return (await this.scanRefs(options)).refs;
  }

  async setRef(name: string, id: ObjectId, options: SetRefOptions = {}): Promise<void> {
    parseObjectId(id);
    const expected = options.expected;
    if (expected !== undefined && expected !== null) parseObjectId(expected);
    throwIfAborted(options.signal);
    await this.locked(name, options.signal, async (path) => {
      const current = await this.getRef(name);
      if (expected !== undefined && current !== expected) {
        throw new TensorFSError('conflict', 'the remote ref moved', {
          details: { rule: 'remote.ref_moved', ref: name, expected, actual: current },
        });
      }
      const tmp = `${path}.tmp-${randomBytes(6).toString('hex')}`;
      try {
        const fh = await fsp.open(tmp, 'wx');
        await fh.writeFile(`${id}\n`);
        await fh.datasync();
        await fh.close();
        await fsp.rename(tmp, path);
      } catch (err) {
        await fsp.rm(tmp, { force: true });
        throw ioErr(err, 'write ref');
      }
    });
  }

  /** Removes a ref under its lock (`not_found` if absent, `conflict` if it does not hold `expected`). */
  override async deleteRef(name: string, options: DeleteRefOptions = {}): Promise<void> {
    if (options.expected !== undefined) parseObjectId(options.expected);
    throwIfAborted(options.signal);
    await this.locked(name, options.signal, async (path) => {
      const current = await this.getRef(name);
      if (current === null) {
        throw new TensorFSError('not_found', 'no such ref', { details: { rule: 'remote.no_ref', ref: name } });
      }
      if (options.expected !== undefined && current !== options.expected) {
        throw casConflict(name, options.expected, current);
      }
      await fsp.rm(path).catch((err) => {
        throw ioErr(err, 'remove ref');
      });
    });
  }

  /** Runs `fn` holding `refs/<name>.lock` (taken over when stale, `unavailable` after 10 s). */
  private async locked(
    name: string,
    signal: AbortSignal | undefined,
    fn: (path: string) => Promise<void>,
  ): Promise<void> {
    const path = this.refPath(name);
    const lock = `${path}.lock`;
    await fsp.mkdir(dirname(path), { recursive: true }).catch((err) => {
      throw ioErr(err, 'create refs folder');
    });
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (signal?.aborted) throw cancelledError();
      try {
        await (await fsp.open(lock, 'wx')).close();
        break;
      } catch (err) {
        if ((err as { code?: string }).code !== 'EEXIST') throw ioErr(err, 'lock ref');
        const st = await fsp.stat(lock).catch(() => null);
        if (st && Date.now() - st.mtimeMs > LOCK_STALE_MS) {
          await fsp.rm(lock, { force: true });
          continue;
        }
        if (Date.now() > deadline)
          throw new TensorFSError('unavailable', 'the ref is locked by another writer', {
            details: { rule: 'folder.ref_locked', ref: name },
          });
        await sleep(20, signal);
      }
    }
    try {
      await fn(path);
    } finally {
      await fsp.rm(lock, { force: true });
    }
  }

  async lacks(ids: readonly ObjectId[], options: CallOptions = {}): Promise<ObjectId[]> {
    const out: ObjectId[] = [];
    for (const id of ids) {
      throwIfAborted(options.signal);
      try {
        await fsp.access(this.chunk(id));
      } catch {
        out.push(id);
      }
    }
    return out;
  }

  /** {@link lacks}, and each chunk held gets a new mtime (its retention age restarts). */
  freshen(ids: readonly ObjectId[], options: CallOptions = {}): Promise<ObjectId[]> {
    for (const id of ids) parseObjectId(id);
    return freshenFolder(this.root, ids, options.signal);
  }

  /** The chunk file's size (`not_found` when absent). */
  override async objectSize(id: ObjectId, options: CallOptions = {}): Promise<number> {
    throwIfAborted(options.signal);
    const path = this.chunk(id);
    try {
      return (await fsp.stat(path)).size;
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') {
        throw new TensorFSError('not_found', 'the origin does not hold this object', {
          details: { rule: 'remote.no_object', digest: id },
        });
      }
      throw ioErr(err, 'stat object');
    }
  }

  async read(id: ObjectId, offset: number, options: CallOptions = {}): Promise<ObjectRead> {
    throwIfAborted(options.signal);
    let fh: fsp.FileHandle;
    try {
      fh = await fsp.open(this.chunk(id), 'r');
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT')
        throw new TensorFSError('not_found', 'the origin does not hold this object', {
          details: { rule: 'remote.no_object', digest: id },
        });
      throw ioErr(err, 'open object');
    }
    const size = (await fh.stat()).size;
    const stream = fh.createReadStream({ start: Math.min(offset, size), highWaterMark: 1 << 20, autoClose: true });
    return { offset, size, body: stream, cancel: () => stream.destroy() };
  }

  async write(id: ObjectId, length: number, body: () => AsyncIterable<Uint8Array>): Promise<void> {
    const dest = this.chunk(id);
    if (fs.existsSync(dest)) return;
    const tmpDir = join(this.root, 'tmp');
    await fsp.mkdir(tmpDir, { recursive: true }).catch((err) => {
      throw ioErr(err, 'create tmp');
    });
    await fsp.mkdir(dirname(dest), { recursive: true }).catch((err) => {
      throw ioErr(err, 'create chunks');
    });
    const tmp = join(tmpDir, `up-${id.slice(7, 23)}-${randomBytes(6).toString('hex')}`);
    const fh = await fsp.open(tmp, 'wx').catch((err) => {
      throw ioErr(err, 'create temp');
    });
    try {
      for await (const c of verified(body(), id, length)) await fh.write(c);
      await fh.datasync();
      await fh.close();
      await fsp.rename(tmp, dest);
    } catch (err) {
      await fh.close().catch(() => {});
      await fsp.rm(tmp, { force: true });
      if (isTensorFSError(err)) throw err;
      throw ioErr(err, 'write object');
    }
  }

  async close(): Promise<void> {}
}
