/** Upload sessions: the files of resumable uploads, appended one part at a time per object. */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { type ObjectId, TensorFSError, isTensorFSError } from '@tensorfs/format';
import type { HubStore } from './types.js';

/**
 * Upload sessions (spec/v1/remote.md "Resumable uploads"): one file per object being received,
 * `<hex>-<length>.upload`, whose size is the offset the next part must start at. Parts of one
 * object are appended one at a time; `complete` hands the whole file to the backend, which
 * verifies length and digest before the object is visible, then the session is gone.
 */
export class UploadSessions {
  private readonly locks = new Map<string, Promise<unknown>>();
  constructor(readonly dir: string) {}

  private file(id: ObjectId, length: number): string {
    return join(this.dir, `${id.slice(7)}-${length}.upload`);
  }

  /** The session's length, or null when there is none. */
  private async find(id: ObjectId): Promise<{ path: string; length: number; size: number } | null> {
    const hex = id.slice(7);
    let names: string[];
    try {
      names = await fsp.readdir(this.dir);
    } catch {
      return null;
    }
    for (const n of names) {
      const m = /^([0-9a-f]{64})-(\d+)\.upload$/.exec(n);
      if (m && m[1] === hex) {
        const path = join(this.dir, n);
        const size = await fsp.stat(path).then(
          (st) => st.size,
          () => -1,
        );
        if (size >= 0) return { path, length: Number(m[2]), size };
      }
    }
    return null;
  }

  /** Runs `fn` after every earlier call for the same object. */
  private serial<T>(id: ObjectId, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(id) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => {});
    this.locks.set(id, tail);
    void tail.then(() => {
      if (this.locks.get(id) === tail) this.locks.delete(id);
    });
    return next;
  }

  /** Creates (or finds) the session; returns the offset to send from. */
  open(id: ObjectId, length: number): Promise<number> {
    return this.serial(id, async () => {
      const cur = await this.find(id);
      if (cur && cur.length === length && cur.size <= length) return cur.size;
      if (cur) await fsp.rm(cur.path, { force: true });
      await fsp.mkdir(this.dir, { recursive: true });
      await (await fsp.open(this.file(id, length), 'w')).close();
      return 0;
    });
  }

  /** Appends a part that starts at `offset`; `conflict` (with the session's offset) otherwise. */
  append(
    id: ObjectId,
    offset: number,
    len: number,
    body: AsyncIterable<Uint8Array>,
    signal: AbortSignal,
  ): Promise<number> {
    return this.serial(id, async () => {
      const cur = await this.find(id);
      if (!cur) {
        throw new TensorFSError('not_found', 'no upload session for this object', {
          details: { rule: 'hub.no_upload', digest: id },
        });
      }
      if (offset !== cur.size) {
        throw new TensorFSError('conflict', 'the part does not start where the upload stands', {
          details: { rule: 'hub.upload_offset', expected: cur.size, actual: offset },
        });
      }
      if (offset + len > cur.length) {
        throw new TensorFSError('invalid_argument', 'the part runs past the object', {
          details: { rule: 'hub.part_too_long', limit: cur.length },
        });
      }
      const fh = await fsp.open(cur.path, 'a');
      let n = 0;
      try {
        for await (const c of body) {
          if (signal.aborted) break;
          n += c.length;
          if (n > len) break;
          await fh.write(c);
        }
      } finally {
        await fh.close();
      }
      // A part cut short stays as far as it got: the client asks the offset and goes on from there.
      if (n > len) {
        await fsp.truncate(cur.path, offset + len);
        throw new TensorFSError('invalid_argument', 'the part is longer than its Content-Length', {
          details: { rule: 'hub.bad_part' },
        });
      }
      return offset + n;
    });
  }

  /** Hands the whole session to the backend (verified there), then ends the session. */
  complete(id: ObjectId, backend: HubStore, signal: AbortSignal): Promise<void> {
    return this.serial(id, async () => {
      const cur = await this.find(id);
      if (!cur) {
        throw new TensorFSError('not_found', 'no upload session for this object', {
          details: { rule: 'hub.no_upload', digest: id },
        });
      }
      if (cur.size !== cur.length) {
        throw new TensorFSError('conflict', 'the upload is not complete', {
          details: { rule: 'hub.upload_incomplete', expected: cur.length, actual: cur.size },
        });
      }
      try {
        await backend.write(id, cur.length, () => fs.createReadStream(cur.path, { highWaterMark: 1 << 20 }), {
          signal,
        });
      } catch (err) {
        // Bytes that do not hash to the id are never kept; anything else may be retried.
        if (isTensorFSError(err) && err.code === 'corrupt') await fsp.rm(cur.path, { force: true });
        throw err;
      }
      await fsp.rm(cur.path, { force: true });
    });
  }

  abort(id: ObjectId): Promise<void> {
    return this.serial(id, async () => {
      const cur = await this.find(id);
      if (cur) await fsp.rm(cur.path, { force: true });
    });
  }
}
