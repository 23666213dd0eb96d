/** The {@link Sweeper} of a folder origin: `chunks/<hex>` files, aged by their mtime. */
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
    async remove(ids: readonly ObjectId[]): Promise<void> {
      for (const id of ids) {
        try {
          await fsp.unlink(join(chunks, id.slice(7)));
        } catch (err) {
          if ((err as { code?: string }).code !== 'ENOENT') throw ioErr(err, 'remove object');
        }
      }
    },
  };
}
