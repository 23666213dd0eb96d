/**
 * Receiving objects without copying them twice (docs/store.md "Admission", docs/remote.md
 * "Throughput"):
 * - {@link ObjectPart}: a named, resumable file in `tmp/` that the store hashes while the caller
 *   writes it; {@link ObjectPart.commit} checks length and digest, fdatasyncs and ADOPTS the file
 *   as the object by link()/rename() — the bytes are written once, and never published before
 *   they are verified and durable.
 * - {@link putBatch}: many in-memory objects admitted with their temps written first, synced in
 *   parallel, then published, with one fsync per object directory for the whole batch (instead
 *   of two syncs per object, one after another).
 * Both keep the admission rules of {@link Objects}: the dedup decision under the write lock, the
 * lease claimed before the object is looked for, an existing good object never touched.
 */
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { type ObjectId, TensorFSError, objectIdFromDigest, parseObjectId, throwIfAborted } from '@tensorfs/format';
import { type FileFollower, followFile } from '../hash/follow.js';
import { fsyncDir, ioError } from './fsutil.js';
import { objectDir } from './layout.js';
import type { Lease } from './leases.js';
import {
  type Chunks,
  type Objects,
  type OpenTemp,
  type PutResult,
  chunkList,
  hashChunks,
  writeAllv,
} from './objects.js';

/** Part names: what callers pass as `key` (the file is `tmp/<key>.part`). */
const PART_KEY = /^[a-z0-9][a-z0-9_-]{0,119}$/;

/** Buffered bytes written to a part file at once. */
const FLUSH_BYTES = 4 << 20;

/**
 * A partial object in the store's `tmp/`, kept across runs so a transfer can resume where it
 * stopped. The store hashes the file as it is written, reading each flushed range back on a
 * hashing thread (a resumed part's prefix too), so {@link commit} waits only for the tail and the
 * caller's thread never hashes. Not for concurrent use by two writers.
 */
export interface ObjectPart {
  /** Bytes held so far (written or buffered). */
  readonly length: number;
  /** Appends bytes; `corrupt` past `expectedLength`. */
  write(chunk: Uint8Array): Promise<void>;
  /** Empties the part (the origin restarted from byte 0, or sent wrong bytes). */
  reset(): Promise<void>;
  /** Writes what is buffered and closes the file, keeping it for a later resume. */
  close(): Promise<void>;
  /**
   * Verifies the part (`expectedLength` bytes hashing to `expected`: `corrupt` otherwise, and the
   * part is removed), fdatasyncs it and publishes it as the object by link/rename — an existing
   * good copy wins. With a lease the object is claimed first. The part is gone afterwards.
   */
  commit(options: { expected: ObjectId; lease?: Lease; signal?: AbortSignal }): Promise<PutResult>;
  /** Closes and removes the part. */
  discard(): Promise<void>;
}

/**
 * Opens (or resumes) the part `tmp/<key>.part` of an object of `expectedLength` bytes. A part
 * longer than that is discarded. `invalid_argument` for a key outside `[a-z0-9_-]{1,120}`.
 */
export async function openPart(
  objects: Objects,
  key: string,
  expectedLength: number,
  signal?: AbortSignal,
): Promise<ObjectPart> {
  objects.assertWritable();
  if (!PART_KEY.test(key)) {
    throw new TensorFSError('invalid_argument', 'a part key is 1-120 characters of [a-z0-9_-]', {
      details: { rule: 'store.bad_part_key' },
    });
  }
  if (!Number.isSafeInteger(expectedLength) || expectedLength < 0) {
    throw new TensorFSError('invalid_argument', 'a part needs a length', {
      details: { rule: 'store.bad_part_length' },
    });
  }
  const path = join(objects.layout.tmp, `${key}.part`);
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(path, 'a+', 0o644);
  } catch (err) {
    throw ioError(err, 'open part', 'tmp/');
  }
  let length = 0;
  try {
    throwIfAborted(signal);
    const size = (await fh.stat()).size;
    if (size > expectedLength) await fh.truncate(0);
    else length = size;
  } catch (err) {
    await fh.close().catch(() => {});
    throw ioError(err, 'resume part', 'tmp/');
  }
  // The hash state of an earlier run is gone: its prefix is hashed again from the file (read once).
  const follower = followFile(path);
  follower.advance(length);
  return new Part(objects, path, fh, follower, length, expectedLength);
}

class Part implements ObjectPart {
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private closed = false;

  constructor(
    private readonly objects: Objects,
    private readonly path: string,
    private fh: fsp.FileHandle,
    private readonly follower: FileFollower,
    public length: number,
    private readonly expectedLength: number,
  ) {
    this.flushed = length;
  }

  /** Bytes in the file (what the follower may hash). */
  private flushed: number;

  async write(chunk: Uint8Array): Promise<void> {
    if (this.length + chunk.length > this.expectedLength) {
      throw new TensorFSError('corrupt', 'more bytes than the object has', {
        details: { rule: 'store.part_too_long', expected: this.expectedLength, actual: this.length + chunk.length },
      });
    }
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    this.length += chunk.length;
    if (this.pendingBytes >= FLUSH_BYTES) await this.flush();
  }

  private async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const parts = this.pending;
    const bytes = this.pendingBytes;
    this.pending = [];
    this.pendingBytes = 0;
    try {
      await writeAllv(this.fh, parts);
    } catch (err) {
      throw ioError(err, 'write part', 'tmp/');
    }
    this.flushed += bytes;
    this.follower.advance(this.flushed);
  }

  async reset(): Promise<void> {
    this.pending = [];
    this.pendingBytes = 0;
    this.length = 0;
    this.flushed = 0;
    try {
      await this.fh.truncate(0);
    } catch (err) {
      throw ioError(err, 'truncate part', 'tmp/');
    }
    this.follower.reset();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.follower.close();
    try {
      await this.flush();
    } finally {
      await this.fh.close().catch(() => {});
    }
  }

  async discard(): Promise<void> {
    this.pending = [];
    this.pendingBytes = 0;
    this.follower.close();
    if (!this.closed) {
      this.closed = true;
      await this.fh.close().catch(() => {});
    }
    await fsp.rm(this.path, { force: true });
  }

  async commit(options: { expected: ObjectId; lease?: Lease; signal?: AbortSignal }): Promise<PutResult> {
    const expected = parseObjectId(options.expected);
    throwIfAborted(options.signal);
    if (this.length !== this.expectedLength) {
      // Not a verdict on the bytes: the caller commits only a complete part.
      throw new TensorFSError('invalid_argument', 'the part is not complete', {
        details: { rule: 'store.part_incomplete', expected: this.expectedLength, actual: this.length },
      });
    }
    let actual: ObjectId;
    try {
      await this.flush();
      actual = objectIdFromDigest(await this.follower.digest(this.length));
    } catch (err) {
      await this.discard();
      throw ioError(err, 'read part back', 'tmp/');
    }
    if (actual !== expected) {
      await this.discard();
      throw new TensorFSError('corrupt', 'bytes do not hash to the expected id', {
        details: { rule: 'store.digest_mismatch', expected, actual },
      });
    }
    if (this.objects.present(expected, options.lease?.id, this.length) >= 0) {
      await this.discard();
      return { id: expected, length: this.length, written: false };
    }
    try {
      await this.fh.chmod(0o444);
      await this.fh.datasync();
      this.closed = true;
      await this.fh.close();
    } catch (err) {
      await this.discard();
      throw ioError(err, 'sync part', 'tmp/');
    }
    // publish() links (or renames) the synced file into objects/, removes the part name, fsyncs the folder.
    return {
      id: expected,
      length: this.length,
      written: await this.objects.publish({ path: this.path, length: this.length }, expected),
    };
  }
}

/** One object of a {@link putBatch}. */
export interface BatchItem {
  bytes: Chunks;
  /** The id the bytes must hash to (`corrupt` for that item otherwise). */
  expected?: ObjectId;
}

/** The outcome of one item: its result, or the error that refused it. */
export type BatchOutcome = { ok: true; result: PutResult } | { ok: false; error: TensorFSError };

/**
 * Admits many in-memory objects with batched durability: each is hashed (an item whose bytes do
 * not match `expected` is refused `corrupt`, the others go on), present ones are claimed and
 * skipped, the rest are written to temps, fdatasynced in parallel, published by link(), and
 * each object directory touched is fsynced once. An object is visible only after its bytes are
 * durable; the directory entries are durable when this resolves.
 */
export async function putBatch(
  objects: Objects,
  items: readonly BatchItem[],
  options: { lease?: Lease; signal?: AbortSignal } = {},
): Promise<BatchOutcome[]> {
  objects.assertWritable();
  const out: BatchOutcome[] = new Array(items.length);
  const toWrite: { i: number; id: ObjectId; chunks: readonly Uint8Array[]; length: number }[] = [];
  for (const [i, item] of items.entries()) {
    const chunks = chunkList(item.bytes);
    const { id, length } = hashChunks(chunks);
    if (item.expected !== undefined && parseObjectId(item.expected) !== id) {
      out[i] = {
        ok: false,
        error: new TensorFSError('corrupt', 'bytes do not hash to the expected id', {
          details: { rule: 'store.digest_mismatch', expected: item.expected, actual: id },
        }),
      };
      continue;
    }
    if (objects.present(id, options.lease?.id, length) >= 0) {
      out[i] = { ok: true, result: { id, length, written: false } };
      continue;
    }
    // Two items of one batch with the same bytes: write once.
    if (toWrite.some((w) => w.id === id)) {
      out[i] = { ok: true, result: { id, length, written: false } };
      continue;
    }
    toWrite.push({ i, id, chunks, length });
  }
  const temps: (OpenTemp | undefined)[] = [];
  try {
    for (const w of toWrite) {
      throwIfAborted(options.signal);
      temps.push(
        await objects.fillTemp(async (fh) => {
          await writeAllv(fh, w.chunks);
          return w.length;
        }),
      );
    }
    // Durability of the bytes, all at once (the thread pool runs the syncs side by side).
    await Promise.all(
      temps.map(async (t) => {
        try {
          await t!.fh.datasync();
          await t!.fh.close();
        } catch (err) {
          throw ioError(err, 'sync temp', 'tmp/');
        }
      }),
    );
  } catch (err) {
    await Promise.all(
      temps.map(async (t) => {
        await t?.fh.close().catch(() => {});
        if (t) await fsp.rm(t.path, { force: true });
      }),
    );
    throw err;
  }
  const dirs = new Set<string>();
  let failure: unknown;
  for (const [k, w] of toWrite.entries()) {
    const t = temps[k]!;
    if (failure !== undefined) {
      await fsp.rm(t.path, { force: true });
      continue;
    }
    try {
      const written = await objects.publish({ path: t.path, length: t.length }, w.id, { syncDir: false });
      if (written) dirs.add(objectDir(objects.layout, w.id));
      out[w.i] = { ok: true, result: { id: w.id, length: w.length, written } };
    } catch (err) {
      failure = err;
    }
  }
  // One directory sync per folder for the whole batch, then the links are durable.
  await Promise.all(
    [...dirs].map((d) =>
      fsyncDir(d).catch((err) => {
        failure ??= ioError(err, 'fsync', 'objects/');
      }),
    ),
  );
  if (failure !== undefined) throw ioError(failure, 'publish', 'objects/');
  return out;
}
