/**
 * A folder origin (`file://` or a path): the portable layout of spec/v1/remote.md —
 * `chunks/<hex>`, `refs/<name>` holding `sha256:<hex>\n`, `tmp/` for uploads in flight.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { validateRefName } from '@tensorfs/cas';
import { type ObjectId, TensorFSError, isObjectId, isTensorFSError, parseObjectId } from '@tensorfs/format';
import { cancelled, sleep } from './http.js';
import type { CallOptions, ObjectRead, Origin, OriginRef } from './origin.js';
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
export class FolderOrigin implements Origin {
  readonly kind = 'folder' as const;
  readonly writable = true;
  readonly display: string;

  constructor(readonly root: string) {
    this.display = 'folder origin';
  }

  private chunk(id: ObjectId): string {
    return join(this.root, 'chunks', parseObjectId(id).slice(7));
  }

  private refPath(name: string): string {
    validateRefName(name);
    return join(this.root, 'refs', ...name.split('/'));
  }

  async getRef(name: string): Promise<ObjectId | null> {
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

  async listRefs(): Promise<OriginRef[]> {
    const out: OriginRef[] = [];
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
        if (d.name.endsWith('.lock') || d.name.includes('.tmp-')) continue;
        if (d.isDirectory()) await walk(join(dir, d.name), `${prefix}${d.name}/`);
        else if (d.isFile()) {
          const id = await this.getRef(`${prefix}${d.name}`).catch(() => null);
          if (id) out.push({ name: `${prefix}${d.name}`, id });
        }
      }
    };
    await walk(base, '');
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async setRef(
    name: string,
    id: ObjectId,
    expected: ObjectId | null | undefined,
    options: CallOptions = {},
  ): Promise<void> {
    parseObjectId(id);
    const path = this.refPath(name);
    const lock = `${path}.lock`;
    await fsp.mkdir(dirname(path), { recursive: true }).catch((err) => {
      throw ioErr(err, 'create refs folder');
    });
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (options.signal?.aborted) throw cancelled();
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
        await sleep(20, options.signal);
      }
    }
    try {
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
    } finally {
      await fsp.rm(lock, { force: true });
    }
  }

  async lacks(ids: readonly ObjectId[]): Promise<ObjectId[]> {
    const out: ObjectId[] = [];
    for (const id of ids) {
      try {
        await fsp.access(this.chunk(id));
      } catch {
        out.push(id);
      }
    }
    return out;
  }

  async read(id: ObjectId, offset: number): Promise<ObjectRead> {
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
