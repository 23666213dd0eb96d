/**
 * Receiving objects without copying them twice (docs/store.md "Admission", docs/remote.md
 * "Throughput"):
 * - {@link ObjectPart}: a named, resumable file in `tmp/` that the store hashes while the caller
 *   writes it; {@link ObjectPart.commit} checks length and digest, fdatasyncs and ADOPTS the file
 *   as the object by link()/rename() — the bytes are written once, and never published before
 *   they are verified and durable.
 * - {@link putBatch}: many in-memory objects admitted as one group (`group.ts`): one decision,
 *   temps closed once written, one durability point for the bytes and one for the names
 *   (instead of two syncs per object, one after another).
 * Both keep the admission rules of {@link Objects}: the dedup decision under the write lock, the
 * lease claimed before the object is looked for, an existing good object never touched.
 */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, join } from 'node:path';
import { type ObjectId, TensorFSError, objectIdFromDigest, parseObjectId, throwIfAborted } from '@tensorfs/format';
import { type FileFollower, followFile } from '../hash/follow.js';
import { DIRECT_ALIGN, O_DIRECT } from './direct.js';
import { HOST, errnoOf, ioError, pidAlive } from './fsutil.js';
import { admitGroup, type GroupItem } from './group.js';
import type { BatchItem, BatchOutcome, Lease, ObjectPart } from '@tensorfs/format/store';
import { type Objects, type PutResult, chunkList, hashChunks } from './objects.js';

/** Part names: what callers pass as `key` (the file is `tmp/<key>.<host>-<pid>.part`). */
const PART_KEY = /^[a-z0-9][a-z0-9_-]{0,119}$/;

/** Bytes a part collects before they go to the hashing thread and the file. */
const STAGE_BYTES = 4 << 20;

/** Appends in flight per part: one collecting while the others are hashed and written. */
const STAGES = 2;

export type { ObjectPart } from '@tensorfs/format/store';

/**
 * Opens (or resumes) the part `tmp/<key>.<host>-<pid>.part` of an object of `expectedLength` bytes. A part
 * longer than that is discarded. `invalid_argument` for a key outside `[a-z0-9_-]{1,120}`.
 */
export async function openPart(
  objects: Objects,
  key: string,
  expectedLength: number,
  signal?: AbortSignal,
  wantDirect: boolean = objects.directIO,
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
  const path = join(objects.layout.tmp, `${key}.${HOST}-${process.pid}.part`);
  await adoptLeftover(objects.layout.tmp, key, path);
  const { O_RDWR, O_CREAT } = fs.constants;
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(path, O_RDWR | O_CREAT, 0o644);
  } catch (err) {
    throw ioError(err, 'open part', 'tmp/');
  }
  let direct = false;
  let length = 0;
  try {
    throwIfAborted(signal);
    if (wantDirect && objects.directPossible && expectedLength >= STAGE_BYTES) {
      // Whether the filesystem takes O_DIRECT (tmpfs refuses): if not, buffered, as the store is from now on.
      try {
        await (await fsp.open(path, fs.constants.O_WRONLY | O_DIRECT)).close();
        direct = true;
      } catch (err) {
        if (errnoOf(err) !== 'EINVAL') throw err;
        objects.refuseDirect();
      }
    }
    const size = (await fh.stat()).size;
    // Direct writes continue on an aligned offset: a resumed part drops its unaligned tail.
    const keep = direct ? size - (size % DIRECT_ALIGN) : size;
    if (size > expectedLength) await fh.truncate(0);
    else {
      if (keep !== size) await fh.truncate(keep);
      length = keep;
    }
  } catch (err) {
    await fh.close().catch(() => {});
    throw ioError(err, 'resume part', 'tmp/');
  }
  // The hash state of an earlier run is gone: its prefix is hashed again from the file (read once).
  const follower = followFile(path, { write: true, direct });
  follower.advance(length);
  return new Part(objects, path, fh, follower, length, expectedLength);
}

/**
 * Takes over the part of `key` an earlier run left, by renaming it to `path`: one whose writer is
 * dead (a pid of this host that no longer runs) or that has the unowned name `<key>.part` of
 * earlier versions. A part has one writer at a time: two processes pulling one object never write
 * into one file (the bytes are hashed in memory, so a file changed behind its writer would not be
 * noticed). A live writer's part, or another host's, is left alone.
 */
async function adoptLeftover(tmp: string, key: string, path: string): Promise<void> {
  let names: string[];
  try {
    names = await fsp.readdir(tmp);
  } catch {
    return;
  }
  if (names.includes(basename(path))) return;
  for (const name of names) {
    if (!name.startsWith(`${key}.`) || !name.endsWith('.part')) continue;
    const owner = /^(.+)-(\d+)$/.exec(name.slice(key.length + 1, -'.part'.length));
    if (name !== `${key}.part` && (!owner || owner[1] !== HOST || pidAlive(Number(owner[2])))) continue;
    try {
      await fsp.rename(join(tmp, name), path);
      return;
    } catch (err) {
      // Taken by another process first: look on.
      if (errnoOf(err) !== 'ENOENT') throw ioError(err, 'adopt part', 'tmp/');
    }
  }
}

/**
 * Received chunks are collected, not copied (those the caller keeps are copied once, into memory
 * of the part's own), and every ~4 MiB go to the hashing thread as one append — moved there when
 * they fill their buffers — which hashes them while the thread pool writes them: buffered with one
 * `writev`, or, when the store's `directIO` is on and the filesystem allows it, copied into
 * page-aligned buffers written with O_DIRECT (the device reads the buffer: no copy into the page
 * cache). At most {@link STAGES} appends are in flight: memory stays bounded, the disk sets the pace.
 */
class Part implements ObjectPart {
  /** The chunks collected for the next append, their bytes, and the appends in flight. */
  private batch: Uint8Array[] = [];
  private batchBytes = 0;
  /** The callers' `done` of the chunks in {@link batch}. */
  private batchDone: (() => void)[] = [];
  private readonly appends: Promise<void>[] = [];
  /** Bytes handed to the file (written or being written). */
  private fileAt: number;
  /** The first failure of a background hash or write. */
  private failure: unknown;
  private closed = false;

  constructor(
    private readonly objects: Objects,
    private readonly path: string,
    private readonly fh: fsp.FileHandle,
    private readonly follower: FileFollower,
    public length: number,
    private readonly expectedLength: number,
  ) {
    this.fileAt = length;
  }

  async write(chunk: Uint8Array, options?: { handOver?: boolean; done?: () => void }): Promise<void> {
    if (this.length + chunk.length > this.expectedLength) {
      throw new TensorFSError('corrupt', 'more bytes than the object has', {
        details: { rule: 'store.part_too_long', expected: this.expectedLength, actual: this.length + chunk.length },
      });
    }
    if (chunk.length === 0) {
      if (options?.done) giveBack([options.done]);
      return;
    }
    // What the caller keeps is copied (into memory of our own, which can then move).
    if (options?.handOver === true) {
      this.batch.push(chunk);
      if (options.done) this.batchDone.push(options.done);
    } else {
      this.batch.push(new Uint8Array(chunk));
      if (options?.done) giveBack([options.done]);
    }
    this.batchBytes += chunk.length;
    this.length += chunk.length;
    if (this.batchBytes >= STAGE_BYTES) await this.submit();
  }

  /** Hands what is collected to the hashing thread; waits while too much is in flight. */
  private async submit(): Promise<void> {
    if (this.batchBytes > 0) {
      const chunks = this.batch;
      const dones = this.batchDone;
      const at = this.fileAt;
      this.fileAt += this.batchBytes;
      this.batch = [];
      this.batchDone = [];
      this.batchBytes = 0;
      this.appends.push(
        this.follower
          .append(chunks, at, movable(chunks))
          .catch((err) => {
            this.failure ??= err;
          })
          // Settled: the hashing thread has answered, so it no longer reads the chunks.
          .finally(() => {
            giveBack(dones);
          }),
      );
    }
    while (this.appends.length >= STAGES) await this.appends.shift();
    this.check();
  }

  private check(): void {
    if (this.failure !== undefined) throw ioError(this.failure, 'write part', 'tmp/');
  }

  /** Submits what is collected and waits for every write; the file then holds exactly `length` bytes. */
  private async drain(): Promise<void> {
    await this.submit();
    await Promise.all(this.appends.splice(0));
    this.check();
    await this.follower.flush();
    // Refused on this filesystem (tmpfs): buffered from now on, for the whole store.
    if (this.follower.directRefused) this.objects.refuseDirect();
    const size = (await this.fh.stat()).size;
    // Bytes gone behind the writer's back: never padded back with zeros and published.
    if (size < this.fileAt) throw Object.assign(new Error('the part shrank'), { code: 'EOF' });
    // A direct write of the last block rounded it up to the alignment: cut the padding off.
    if (size > this.fileAt) await this.fh.truncate(this.fileAt);
  }

  async reset(): Promise<void> {
    await Promise.all(this.appends.splice(0));
    this.failure = undefined;
    this.dropBatch();
    this.length = 0;
    this.fileAt = 0;
    try {
      await this.fh.truncate(0);
    } catch (err) {
      throw ioError(err, 'truncate part', 'tmp/');
    }
    this.follower.reset();
  }

  /** Forgets the chunks collected and not yet appended (their callers may reuse them). */
  private dropBatch(): void {
    const dones = this.batchDone;
    this.batch = [];
    this.batchDone = [];
    this.batchBytes = 0;
    giveBack(dones);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.drain();
    } catch (err) {
      throw ioError(err, 'write part', 'tmp/');
    } finally {
      this.follower.close();
      await this.release();
    }
  }

  /** Closes the file once the appends in flight have settled. */
  private async release(): Promise<void> {
    await Promise.all(this.appends.splice(0));
    await this.fh.close().catch(() => {});
  }

  async discard(): Promise<void> {
    this.dropBatch();
    this.follower.close();
    if (!this.closed) {
      this.closed = true;
      await this.release();
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
      await this.drain();
      actual = objectIdFromDigest(await this.follower.digest(this.length));
    } catch (err) {
      await this.discard();
      throw ioError(err, 'write part', 'tmp/');
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
      // Flushes the file's size and extents and the device's cache, direct writes included.
      await this.fh.datasync();
      this.closed = true;
      await this.release();
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

/** Calls each caller's `done`; one that throws neither stops the others nor fails the part. */
function giveBack(dones: readonly (() => void)[]): void {
  for (const done of dones) {
    try {
      done();
    } catch {
      // The caller's own failure: its memory is its own business.
    }
  }
}

/**
 * The buffers of `chunks` that may move to another thread: each filled entirely by one chunk
 * (a chunk that shares its buffer is copied by the message instead).
 */
function movable(chunks: readonly Uint8Array[]): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const c of chunks) {
    if (c.byteOffset === 0 && c.byteLength === c.buffer.byteLength && c.buffer instanceof ArrayBuffer)
      out.add(c.buffer);
  }
  return [...out];
}

export type { BatchItem, BatchOutcome } from '@tensorfs/format/store';

/**
 * Admits many in-memory objects with batched durability: each is hashed (an item whose bytes do
 * not match `expected` is refused `corrupt`, the others go on), then the rest are admitted as one
 * group ({@link admitGroup}): decided in one transaction (present ones claimed and skipped), the
 * absent ones written to temps that are closed at once, made durable together, published by
 * link(), and the new names made durable together. An object is visible only after its bytes are
 * durable; the names are durable when this resolves. A few descriptors at a time, whatever the
 * number of items.
 */
export async function putBatch(
  objects: Objects,
  items: readonly BatchItem[],
  options: { lease?: Lease; signal?: AbortSignal } = {},
): Promise<BatchOutcome[]> {
  objects.assertWritable();
  const out: BatchOutcome[] = new Array(items.length);
  const group: GroupItem[] = [];
  const at: number[] = [];
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
    group.push({ id, chunks, length });
    at.push(i);
  }
  const results = await admitGroup(objects, group, {
    ...(options.lease ? { lease: options.lease.id } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  for (const [k, r] of results.entries()) out[at[k]!] = { ok: true, result: r };
  return out;
}
