/**
 * The {@link Sweeper} of a folder origin: `chunks/<hex>` files, aged by their mtime, which
 * {@link freshenFolder} (a push's skip) restarts.
 */
import { randomBytes } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { type ObjectId, TensorFSError } from '@tensorfs/format';
import type { SweepableObject, Sweeper } from './gc-sweeper.js';

const HEX64 = /^[0-9a-f]{64}$/;

function ioErr(err: unknown, op: string): TensorFSError {
  const code = (err as { code?: string }).code ?? 'EIO';
  return new TensorFSError('io', `${op} failed (${code})`, {
    details: { rule: 'folder.io', op, errno: code },
    cause: err,
  });
}

/** Lists and deletes the objects of the folder origin at `root` (upload temps are not objects). */
export function sweeperOfFolder(root: string): Sweeper {
  const chunks = join(root, 'chunks');
  return {
    async *list(signal?: AbortSignal): AsyncIterable<SweepableObject> {
      let dir: import('node:fs').Dir;
      try {
        dir = await fsp.opendir(chunks, { bufferSize: 256 });
      } catch (err) {
        if ((err as { code?: string }).code === 'ENOENT') return;
        throw ioErr(err, 'list objects');
      }
      for await (const d of dir) {
        if (signal?.aborted) break;
        if (!d.isFile() || !HEX64.test(d.name)) continue;
        let st: import('node:fs').Stats;
        try {
          st = await fsp.lstat(join(chunks, d.name));
        } catch (err) {
          if ((err as { code?: string }).code === 'ENOENT') continue; // removed meanwhile
          throw ioErr(err, 'stat object');
        }
        yield { id: `sha256:${d.name}` as ObjectId, size: st.size, modifiedMs: st.mtimeMs };
      }
    },
    async remove(ids: readonly ObjectId[], cutoffMs: number, signal?: AbortSignal): Promise<ObjectId[]> {
      // Each object is first renamed aside (atomic: a push's freshen after it finds no file and
      // sends the object again), then its mtime read: one freshened before the rename is put
      // back (unless the push re-sent it meanwhile), an old one is unlinked.
      const removed: ObjectId[] = [];
      const tag = `${process.pid}-${randomBytes(4).toString('hex')}`;
      for (const id of ids) {
        if (signal?.aborted) break;
        const hex = id.slice(7);
        const file = join(chunks, hex);
        const aside = join(chunks, `.gc-${hex}-${tag}`);
        try {
          await fsp.rename(file, aside);
        } catch (err) {
          if ((err as { code?: string }).code === 'ENOENT') continue;
          throw ioErr(err, 'remove object');
        }
        let young: boolean;
        try {
          young = (await fsp.lstat(aside)).mtimeMs >= cutoffMs;
        } catch (err) {
          throw ioErr(err, 'stat object');
        }
        if (young) {
          try {
            await fsp.link(aside, file);
          } catch (err) {
            if ((err as { code?: string }).code !== 'EEXIST') throw ioErr(err, 'restore object');
          }
        } else {
          removed.push(id);
        }
        try {
          await fsp.unlink(aside);
        } catch (err) {
          if ((err as { code?: string }).code !== 'ENOENT') throw ioErr(err, 'remove object');
        }
      }
      return removed;
    },
  };
}

/**
 * A folder origin's `freshen`: the ids it lacks, and every chunk it holds gets a new mtime (a
 * remote GC's grace window restarts for what a push skips).
 */
export async function freshenFolder(root: string, ids: readonly ObjectId[], signal?: AbortSignal): Promise<ObjectId[]> {
  const out: ObjectId[] = [];
  const now = new Date();
  for (const id of ids) {
    if (signal?.aborted) throw new TensorFSError('cancelled', 'cancelled', { details: { rule: 'remote.cancelled' } });
    try {
      await fsp.utimes(join(root, 'chunks', id.slice(7)), now, now);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'ENOENT') out.push(id);
      else if (code === 'EPERM' || code === 'EACCES') {
        // Another user's file: look for it only (it is not freshened).
        try {
          await fsp.access(join(root, 'chunks', id.slice(7)));
        } catch {
          out.push(id);
        }
      } else throw ioErr(err, 'freshen object');
    }
  }
  return out;
}
