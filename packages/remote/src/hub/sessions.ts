/** Upload sessions: the files of resumable uploads, owned by a token, appended one part at a time. */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { type ObjectId, TensorFSError, isTensorFSError } from '@tensorfs/format';
import type { HubStore } from './types.js';

/** Bounds on what one token may hold open. */
export interface SessionLimits {
  /** Open sessions per token. */
  sessions: number;
  /** Sum of the declared lengths of a token's open sessions. */
  bytes: number;
}

interface Session {
  path: string;
  length: number;
  /** Bytes held: the offset the next part must start at. */
  size: number;
}

const NAME = /^([0-9a-f]{64})-(\d+)-([0-9a-f]{16})\.upload$/;

/**
 * Upload sessions (spec/v1/remote.md "Resumable uploads"): one file per object and token being
 * received, `<hex>-<length>-<owner>.upload` (`owner`: 16 hex digits of the token's SHA-256), whose
 * size is the offset the next part must start at. A session belongs to the token that opened it:
 * another token never sees, appends to, completes or drops it, and opens its own. Parts of one
 * session are appended one at a time; `complete` hands the whole file to the backend, which
 * verifies length and digest before the object is visible, then the session is gone. Each token
 * holds at most {@link SessionLimits} open.
 */
export class UploadSessions {
  private readonly locks = new Map<string, Promise<unknown>>();
  constructor(
    readonly dir: string,
    private readonly limits: SessionLimits,
  ) {}

  private file(id: ObjectId, length: number, owner: string): string {
    return join(this.dir, `${id.slice(7)}-${length}-${owner}.upload`);
  }

  /** Every session of `owner`, by object hex. */
  private async sessionsOf(owner: string): Promise<Map<string, Session>> {
    const out = new Map<string, Session>();
    let names: string[];
    try {
      names = await fsp.readdir(this.dir);
    } catch {
      return out;
    }
    for (const n of names) {
      const m = NAME.exec(n);
      if (!m || m[3] !== owner) continue;
      const path = join(this.dir, n);
      const size = await fsp.stat(path).then(
        (st) => st.size,
        () => -1,
      );
      if (size >= 0) out.set(m[1]!, { path, length: Number(m[2]), size });
    }
    return out;
  }

  /** `owner`'s session for `id`, or null. */
  private async find(id: ObjectId, owner: string): Promise<Session | null> {
    return (await this.sessionsOf(owner)).get(id.slice(7)) ?? null;
  }

  /** Runs `fn` after every earlier call for the same object and owner. */
  private serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => {});
    this.locks.set(key, tail);
    void tail.then(() => {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    });
    return next;
  }

  /**
   * Creates (or finds) `owner`'s session; returns the offset to send from, or null when the object
   * is stored (another upload of it completed while this request waited for the session).
   */
  open(id: ObjectId, length: number, owner: string, store: HubStore, signal: AbortSignal): Promise<number | null> {
    return this.serial(`${id}:${owner}`, async () => {
      const all = await this.sessionsOf(owner);
      const cur = all.get(id.slice(7));
      if (cur && cur.length === length && cur.size <= length) return cur.size;
      if ((await store.lacks([id], { signal })).length === 0) return null;
      all.delete(id.slice(7));
      if (all.size >= this.limits.sessions) {
        throw new TensorFSError('limit_exceeded', 'this token holds as many upload sessions as the hub allows', {
          details: { rule: 'hub.upload_sessions', limit: this.limits.sessions, count: all.size },
        });
      }
      let declared = length;
      for (const s of all.values()) declared += s.length;
      if (declared > this.limits.bytes) {
        throw new TensorFSError(
          'limit_exceeded',
          "the token's open uploads would declare more bytes than the hub allows",
          {
            details: { rule: 'hub.upload_bytes', limit: this.limits.bytes, actual: declared },
          },
        );
      }
      if (cur) await fsp.rm(cur.path, { force: true });
      await fsp.mkdir(this.dir, { recursive: true });
      await (await fsp.open(this.file(id, length, owner), 'w')).close();
      return 0;
    });
  }

  /**
   * Appends a part that starts at `offset` to `owner`'s session; `conflict` (with the session's
   * offset) otherwise. Without a session: `conflict` with `expected` the whole length when the
   * object is stored meanwhile (another upload of it completed), `not_found` otherwise.
   */
  append(
    id: ObjectId,
    owner: string,
    offset: number,
    len: number,
    body: AsyncIterable<Uint8Array>,
    store: HubStore,
    signal: AbortSignal,
  ): Promise<number> {
    return this.serial(`${id}:${owner}`, async () => {
      const cur = await this.find(id, owner);
      if (!cur) return noSession(id, store, signal);
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

  /**
   * Hands `owner`'s whole session to the backend (verified there), then ends the session. When
   * there is none but the object is stored (another upload of it completed first), that is success.
   */
  complete(id: ObjectId, owner: string, store: HubStore, signal: AbortSignal): Promise<void> {
    return this.serial(`${id}:${owner}`, async () => {
      const cur = await this.find(id, owner);
      if (!cur) {
        if ((await store.lacks([id], { signal })).length === 0) return;
        throw new TensorFSError('not_found', 'no upload session for this object', {
          details: { rule: 'hub.no_upload', digest: id },
        });
      }
      if (cur.size !== cur.length) {
        // A concurrent upload of the object completed it first and another began a new session.
        if ((await store.lacks([id], { signal })).length === 0) return;
        throw new TensorFSError('conflict', 'the upload is not complete', {
          details: { rule: 'hub.upload_incomplete', expected: cur.length, actual: cur.size },
        });
      }
      try {
        await store.write(id, cur.length, () => fs.createReadStream(cur.path, { highWaterMark: 1 << 20 }), {
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

  /** Drops `owner`'s session for `id` (another token's is untouched). */
  abort(id: ObjectId, owner: string): Promise<void> {
    return this.serial(`${id}:${owner}`, async () => {
      const cur = await this.find(id, owner);
      if (cur) await fsp.rm(cur.path, { force: true });
    });
  }
}

async function noSession(id: ObjectId, store: HubStore, signal: AbortSignal): Promise<never> {
  if ((await store.lacks([id], { signal })).length === 0) {
    throw new TensorFSError('conflict', 'the object is stored: nothing more to send', {
      details: { rule: 'hub.upload_offset', digest: id },
    });
  }
  throw new TensorFSError('not_found', 'no upload session for this object', {
    details: { rule: 'hub.no_upload', digest: id },
  });
}
