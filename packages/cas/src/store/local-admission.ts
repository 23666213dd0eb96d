/**
 * The local store's admission for the import pipeline ({@link importSources}): a file the source
 * offers positioned reads of (a local file) is planned and hashed once by `planAndHash` on the
 * Node hasher's worker threads, and every record's bytes arrive in `onRecord` exactly as hashed
 * and are admitted from memory only if absent — written to a temp while they hash when the store
 * looks new (early temps), with `O_DIRECT` when the store asks for it, small records in group
 * commits. A blob record too big to be held (bytes null) is read again from the source with
 * hash-while-write and checked against the planner's digest (bytes that differ mean the source
 * changed: `conflict`).
 *
 * The pipeline takes this path when the store is a `LocalStore` ({@link localObjectsOf}); any
 * other store admits through its `put`/`putBatch`.
 */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { type ByteSource, isTensorFSError, type ObjectId, TensorFSError } from '@tensorfs/format';
import { type Plan, planAndHash, type ReadRecord, type Seams } from '@tensorfs/planner';
import { createNodeHasher, type NodeHasher } from '../hash/index.js';
import type { FileReader } from '../sources/source.js';
import { DIRECT_ALIGN, DIRECT_MIN_BYTES } from './direct.js';
import type { FileHash } from './file-sha256.js';
import { CHUNK_BYTES } from './fsutil.js';
import { changedError } from './import.js';
import { admitGroup, type GroupItem, groupStrategy, syncNames } from './group.js';
import { hashChunks, type Objects, type OpenTemp, type PutResult, type Temp } from './objects.js';

/** The key of a local store's objects, for the pipeline's local admission (not part of any contract). */
export const LOCAL_OBJECTS: unique symbol = Symbol('tensorfs.cas.localObjects');

/** A store whose objects the pipeline may admit into directly (a `LocalStore`). */
export interface HasLocalObjects {
  [LOCAL_OBJECTS](): unknown;
}

/** The objects of a local store, or undefined for any other store. */
export function localObjectsOf(store: object): Objects | undefined {
  const f = (store as Partial<HasLocalObjects>)[LOCAL_OBJECTS];
  return typeof f === 'function' ? (f.call(store) as Objects) : undefined;
}

/** A file's positioned reads as the planner's `ByteSource` (`size` bytes, reads cancelled by `signal`). */
export function readerSource(reader: FileReader, size: number, signal?: AbortSignal): ByteSource {
  return {
    size,
    read: async (offset, length) => {
      const out = new Uint8Array(length);
      await reader.readInto(offset, out, signal);
      return out;
    },
    readInto: (offset, target) => reader.readInto(offset, target, signal),
  };
}

/** Streams `[offset, offset+length)` of a file in 8 MiB chunks read from `reader`. */
export async function* readerRange(
  reader: FileReader,
  offset: number,
  length: number,
  signal?: AbortSignal,
): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < length; at += CHUNK_BYTES) {
    const buf = new Uint8Array(Math.min(CHUNK_BYTES, length - at));
    await reader.readInto(offset + at, buf, signal);
    yield buf;
  }
}

/** What {@link LocalAdmission.importFile} reads: one file, its reader, its whole-file hash. */
export interface LocalFile {
  path: string;
  size: number;
  reader: FileReader;
  /** The whole-file SHA-256 being computed (fed every record as it arrives). */
  whole: FileHash;
  seams?: Readonly<Record<string, Seams>>;
  /** Also fed every record's bytes, in file order (null: a record too big to buffer). */
  onBytes?: (record: ReadRecord, bytes: readonly Uint8Array[] | null) => void;
  /** Called once each record is admitted (or decided present). */
  onRecord: (length: number) => void;
}

/**
 * One import's admission into a local store: the Node hasher, the early temps, the small-record
 * group and the background publishes. {@link finish} makes everything durable; {@link close}
 * always runs (and removes every temp nobody took over).
 */
export class LocalAdmission {
  /** Started with the first file (a source with no positioned reads never needs its threads). */
  private hasher: NodeHasher | undefined;
  private readonly flushes = new Flushes();
  private readonly early: EarlyTemps;
  private readonly group: SmallGroup;
  /**
   * The folders whose entries the publishes changed (large records' and small groups'), and those
   * to mark ready: their names are made durable together by {@link finish} (one syncfs, or each
   * folder once), not one directory fsync per object as they are published (three for an object
   * in new folders).
   */
  private readonly names = { dirs: new Set<string>(), ready: new Set<string>() };

  constructor(
    private readonly objects: Objects,
    private readonly lease: string,
    private readonly signal: AbortSignal | undefined,
    private readonly threads: number | undefined,
    private readonly counted: (r: PutResult) => void,
  ) {
    this.early = new EarlyTemps(objects, lease);
    this.group = new SmallGroup(objects, lease, signal, counted, this.names);
    // How names are synced is probed once per process (a `sync -f` run): start it now, beside the
    // import, rather than when finish() first needs it.
    groupStrategy(objects.layout.tmp).catch(() => {});
  }

  /** Plans, hashes and admits one file; returns its plan (the caller verifies the reader after). */
  async importFile(f: LocalFile): Promise<Plan> {
    const { objects, lease, signal, early, flushes, group, counted, names } = this;
    // Linked once its bytes are durable; the name's durability waits for finish().
    const publish = (tmp: Temp, id: ObjectId, length: number) =>
      counted({ id, length, written: objects.publishSync(tmp, id, names.dirs, names.ready) });
    const seams = f.seams?.[f.path];
    return planAndHash(readerSource(f.reader, f.size, signal), {
      hasher: (this.hasher ??= createNodeHasher({ threads: this.threads })),
      ...(signal ? { signal } : {}),
      // Big records start page-aligned in the hasher's page-aligned buffers: written with O_DIRECT.
      ...(objects.directImports ? { align: DIRECT_ALIGN } : {}),
      ...(seams ? { seams } : {}),
      // Write a temp while the record hashes (and start its fdatasync), when it is likely new.
      onRead: (record, bytes) => early.start(record, bytes),
      onRecord: async (record, bytes) => {
        f.onBytes?.(record, bytes);
        const hashed = f.whole.add(record, bytes);
        hashed.catch(() => {});
        const temp = early.take(record.index);
        if (bytes === null) {
          // Read again from the source: bytes that differ from what was hashed mean the source
          // changed (conflict), not that the store is damaged.
          const put = await objects
            .putStream(readerRange(f.reader, record.offset, record.length, signal), {
              expected: record.digest,
              expectedLength: record.length,
              lease,
              signal,
            })
            .catch((err) => {
              if (isTensorFSError(err) && err.code === 'corrupt') throw changedError(f.path, 'content', err);
              throw err;
            });
          counted(put);
        } else if (record.length <= SMALL_RECORD) {
          // Small: copied and admitted with its group (one decision, one durability point).
          if (temp) await flushes.add(() => early.discard(temp));
          await group.add(record.digest, bytes, record.length);
        } else if (objects.present(record.digest, lease, record.length) >= 0) {
          early.decided(false);
          if (temp) await flushes.add(() => early.discard(temp));
        } else {
          early.decided(true);
          // Publish (link into objects/) only once the temp's bytes are durable; the digest
          // was computed over the very bytes the temp was written from.
          if (temp) {
            await flushes.add(async () => publish(await early.synced(temp), record.digest, record.length));
          } else {
            // Write the temp now (the planner reuses these buffers once we return), but let
            // its fdatasync and publish run while the planner reads and hashes on.
            const tmp = await objects.fillTempFrom(bytes, record.length);
            await flushes.add(async () => publish(await early.sync(tmp), record.digest, record.length));
          }
        }
        f.onRecord(record.length);
        await hashed;
      },
    });
  }

  /** Admits the small records collected, waits for every publish and makes the names durable: all durable when this resolves. */
  async finish(): Promise<void> {
    await this.group.flush();
    await this.flushes.drain();
    await syncNames(this.objects, this.names.dirs, this.names.ready);
  }

  /** Waits for what is in flight, removes temps nobody took over, stops the hasher (idempotent). */
  async close(): Promise<void> {
    await this.flushes.settle();
    await this.early.abandon();
    await this.hasher?.close();
  }
}

/**
 * Records at most this long are admitted in groups ({@link admitGroup}): copied out of the
 * planner's buffers, decided together in one transaction, written to temps closed at once, made
 * durable together. Larger ones (those `directIO` writes with O_DIRECT) keep the overlapped path:
 * a temp written while the record hashes, fdatasynced on its own.
 */
export const SMALL_RECORD = DIRECT_MIN_BYTES - 1;

/** A group is admitted once it holds this many objects or {@link GROUP_BYTES} bytes. */
const GROUP_OBJECTS = 16384;
const GROUP_BYTES = 64 << 20;

/** The small records of an import waiting for their group commit. */
class SmallGroup {
  private items: GroupItem[] = [];
  private bytes = 0;

  constructor(
    private readonly objects: Objects,
    private readonly lease: string,
    private readonly signal: AbortSignal | undefined,
    private readonly counted: (r: PutResult) => void,
    private readonly names: { dirs: Set<string>; ready: Set<string> },
  ) {}

  /** Copies the record's bytes (the planner reuses its buffers) and admits the group when full. */
  async add(id: ObjectId, chunks: readonly Uint8Array[], length: number): Promise<void> {
    const copy = new Uint8Array(length);
    let at = 0;
    for (const c of chunks) {
      copy.set(c, at);
      at += c.length;
    }
    this.items.push({ id, chunks: [copy], length });
    this.bytes += length;
    if (this.items.length >= GROUP_OBJECTS || this.bytes >= GROUP_BYTES) await this.flush();
  }

  /** Admits what is collected: its objects are durable when this resolves, its names once the admission's are synced. */
  async flush(): Promise<void> {
    const items = this.items;
    this.items = [];
    this.bytes = 0;
    const { lease, signal, names } = this;
    for (const r of await admitGroup(this.objects, items, { lease, signal, names })) this.counted(r);
  }
}

/** Temps being synced and published in the background, at most {@link Flushes.MAX} at once. */
class Flushes {
  static readonly MAX = 8;
  private readonly running = new Set<Promise<void>>();
  private failure: unknown;

  /** Starts `job`; waits first while {@link Flushes.MAX} are running. Rethrows an earlier failure. */
  async add(job: () => Promise<void>): Promise<void> {
    this.check();
    while (this.running.size >= Flushes.MAX) await Promise.race(this.running);
    this.check();
    const p: Promise<void> = job()
      .catch((err) => {
        this.failure ??= err;
      })
      .finally(() => this.running.delete(p));
    this.running.add(p);
  }

  /** Waits for every job; throws the first failure. */
  async drain(): Promise<void> {
    await this.settle();
    this.check();
  }

  /** Waits for every job, ignoring failures (cleanup path). */
  async settle(): Promise<void> {
    while (this.running.size > 0) await Promise.all(this.running);
  }

  private check(): void {
    if (this.failure !== undefined) throw this.failure;
  }
}

/** A temp written from a record's bytes before its digest was known. */
interface Early {
  /** Settles when the bytes are in the temp, still open until its sync (the planner may then reuse its buffer). */
  written: Promise<OpenTemp>;
  /** The synced temp, or null once it was discarded before its sync started. */
  synced: Promise<Temp | null>;
  discarded: boolean;
}

/**
 * First-import overlap: temps written while their records hash. A record read from the source
 * is written to a temp at once and its fdatasync queued (at most {@link EarlyTemps.SYNCS} at a
 * time, so the reads and writes always find a free libuv thread); once its digest is known the
 * caller publishes the synced temp, or discards it if the object turned out to be present.
 *
 * Writing before knowing the digest wastes a write for an object the store already has, so it
 * happens only while records look new: the first record of a file is checked directly when it is
 * small (a header object already present means a re-import or a fine-tune), every later one
 * follows the last decision made (`decided`). Nothing here publishes: publishing stays with the
 * caller, after the sync and the digest check.
 */
class EarlyTemps {
  /**
   * fdatasyncs in flight at once. libuv's pool has 4 threads and the planner's next read needs one;
   * with buffered writes each sync writes its 8 MiB out, and three at a time kept the disk busier
   * than two (imp17: default-mode import 14–18 % less wall time under load, directIO unchanged).
   */
  static readonly SYNCS = 3;
  /** Records at most this long are hashed here to decide whether a file looks new. */
  static readonly PROBE_BYTES = 1 << 20;
  /** Early temps (each an open descriptor until its sync) at most at once. */
  static readonly OPEN = 16;
  private readonly open = new Map<number, Early>();
  private readonly all = new Set<Early>();
  private lastNew: boolean;
  private syncing = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly objects: Objects,
    private readonly lease: string,
  ) {
    this.lastNew = storeLooksEmpty(objects);
  }

  /** The planner's `onRead`: writes a temp for the record if it looks new. */
  start(record: ReadRecord, bytes: readonly Uint8Array[]): Promise<void> | undefined {
    if (record.index === 0 && record.length <= EarlyTemps.PROBE_BYTES) {
      const { id } = hashChunks(bytes);
      this.lastNew = this.objects.present(id, this.lease, record.length) < 0;
    }
    if (!this.lastNew || record.length <= SMALL_RECORD || this.all.size >= EarlyTemps.OPEN) return undefined;
    // Left open until its sync (a temp closed and re-opened to sync can lose a writeback error):
    // at most OPEN early temps at a time, later records take the path without one.
    const written = this.objects.fillTempFrom(bytes, record.length);
    const early: Early = { written, synced: Promise.resolve(null), discarded: false };
    early.synced = written.then((tmp) =>
      this.limited(() => (early.discarded ? this.drop(tmp) : this.objects.syncTemp(tmp))),
    );
    early.synced.catch(() => {});
    this.open.set(record.index, early);
    this.all.add(early);
    return written.then(() => undefined);
  }

  /** The early temp of record `index`, if one was started (the caller now owns it). */
  take(index: number): Early | undefined {
    const early = this.open.get(index);
    this.open.delete(index);
    return early;
  }

  /** Records whether the last record decided was new (written) or present. */
  decided(isNew: boolean): void {
    this.lastNew = isNew;
  }

  /** The synced temp of `early` (its failure is the caller's). */
  async synced(early: Early): Promise<Temp> {
    const tmp = await early.synced;
    this.all.delete(early);
    if (tmp === null)
      throw new TensorFSError('internal', 'early temp was discarded', { details: { rule: 'import.internal' } });
    return tmp;
  }

  /** fdatasyncs and closes `tmp`, one of at most {@link EarlyTemps.SYNCS} at a time. */
  sync(tmp: OpenTemp): Promise<Temp> {
    return this.limited(() => this.objects.syncTemp(tmp));
  }

  /** Removes the temp of `early` (its object was present after all); skips its sync if not begun. */
  async discard(early: Early): Promise<void> {
    early.discarded = true;
    const tmp = await early.synced.catch(() => null);
    this.all.delete(early);
    if (tmp !== null) await fsp.rm(tmp.path, { force: true });
  }

  /** After a failure: removes every early temp nobody took over. */
  async abandon(): Promise<void> {
    this.open.clear();
    await Promise.all([...this.all].map((early) => this.discard(early)));
  }

  private async drop(tmp: OpenTemp): Promise<null> {
    await tmp.fh.close().catch(() => {});
    await fsp.rm(tmp.path, { force: true });
    return null;
  }

  private async limited<T>(job: () => Promise<T>): Promise<T> {
    while (this.syncing >= EarlyTemps.SYNCS) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.syncing++;
    try {
      return await job();
    } finally {
      this.syncing--;
      this.waiting.shift()?.();
    }
  }
}

/** True when the store has no object folder yet (a new store: every record will be new). */
function storeLooksEmpty(objects: Objects): boolean {
  try {
    return fs.readdirSync(objects.layout.objects).length === 0;
  } catch {
    return true;
  }
}
