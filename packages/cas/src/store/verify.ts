/**
 * Verify (restic `check` style): every object reachable from refs and roots must exist with the
 * length its referrer declares; with `data` each one (or a random sample) is rehashed. Corrupt
 * objects are quarantined, so readers refuse them (`corrupt`) until a good copy is admitted.
 */
import {
  type ObjectId,
  type Progress,
  progressEvent,
  TensorFSError,
  isTensorFSError,
  throwIfAborted,
} from '@tensorfs/format';
import { reach } from './graph.js';
import type { Objects } from './objects.js';
import { listObjects } from './walk.js';

/** Options of {@link LocalStore.verify}. */
export interface VerifyOptions {
  /** Rehash object bytes (default: lengths only). */
  data?: boolean;
  /** With `data`, rehash only this fraction (0 < sample ≤ 1) of the objects, chosen at random. */
  sample?: number;
  /** Also check objects nothing references (default: only reachable ones). */
  all?: boolean;
  signal?: AbortSignal;
  /**
   * Called after each object checked: phase `verify`, unit `objects`, `objects` checked so far
   * (as in the result: missing ones are not counted) of `objectsTotal` (every object the verify
   * looks for), and the `bytes` of those checked.
   */
  onProgress?: (p: Progress) => void;
}

/** Findings of a verify. */
export interface VerifyResult {
  /** Objects checked. */
  objects: number;
  /** Their bytes (as found on disk). */
  bytes: number;
  /** Objects whose bytes were rehashed. */
  rehashed: number;
  /** Referenced objects that are absent. */
  missing: ObjectId[];
  /** Objects with wrong bytes or length, or referencing objects that do not decode. */
  corrupt: ObjectId[];
  /** Objects that could not be read (an I/O or permission error); every one is listed. */
  unreadable: ObjectId[];
  /** Refs and roots walked. */
  tops: number;
}

/** Objects up to this size are rehashed in one synchronous read. */
const SMALL_OBJECT = 64 << 10;
/** Verify runs this long before it lets other work (and a cancellation) in. */
const SLICE_MS = 8;

/** Objects checked at once (descriptors a verify holds, at most). */
const VERIFY_CONCURRENCY = 4;

/** Runs a verify over `tops` (ref and root targets). */
export async function verifyStore(objects: Objects, tops: ObjectId[], options: VerifyOptions): Promise<VerifyResult> {
  const { data = false, sample = 1, all = false, signal, onProgress } = options;
  if (!(sample > 0 && sample <= 1)) {
    throw new TensorFSError('invalid_argument', 'sample must be in (0, 1]', {
      details: { rule: 'store.verify_sample', actual: sample },
    });
  }
  const r = await reach(objects, tops, signal);
  const targets = new Map(r.objects);
  if (all)
    for await (const o of listObjects(objects.layout, signal)) if (!targets.has(o.id)) targets.set(o.id, undefined);
  const missing = new Set(r.missing);
  const corrupt = new Set(r.corrupt);
  const unreadable = new Set<ObjectId>();
  const out: VerifyResult = {
    objects: 0,
    bytes: 0,
    rehashed: 0,
    missing: [],
    corrupt: [],
    unreadable: [],
    tops: tops.length,
  };
  // Looked up once: a query per object was a tenth of a verify of many small objects.
  const quarantined = objects.quarantinedIds();
  const report = () =>
    onProgress?.(
      progressEvent('verify', 'objects', { objects: out.objects, objectsTotal: targets.size, bytes: out.bytes }),
    );
  const check = async (id: ObjectId, declared: number | undefined): Promise<void> => {
    throwIfAborted(signal);
    if (missing.has(id) || corrupt.has(id)) return;
    const size = objects.rawSizeSync(id);
    if (size === null) {
      missing.add(id);
      return;
    }
    out.objects++;
    out.bytes += size;
    if (declared !== undefined && size !== declared) {
      objects.quarantine(id, 'length');
      corrupt.add(id);
    } else if (data && (sample === 1 || Math.random() < sample)) {
      out.rehashed++;
      let actual: ObjectId;
      try {
        // A small object in one synchronous read; a large one streamed, a few at a time.
        actual =
          size <= SMALL_OBJECT ? objects.hashSmallSync(id).actual : (await objects.hashFile(id, signal, true)).actual;
      } catch (err) {
        // One unreadable object must not hide the state of the others: list it and go on.
        if (!isTensorFSError(err) || (err.code !== 'io' && err.code !== 'denied')) throw err;
        unreadable.add(id);
        report();
        return;
      }
      if (actual !== id) {
        objects.quarantine(id, 'digest');
        corrupt.add(id);
      } else if (quarantined.has(id)) {
        objects.clearQuarantine(id);
      }
    } else if (quarantined.has(id)) {
      corrupt.add(id);
    }
    report();
  };
  // A few objects at a time (each holds one descriptor while it is hashed): the thread pool
  // overlaps the opens and reads of large objects. Small ones are checked synchronously, so the
  // workers give the event loop a turn every few milliseconds.
  const queue = targets.entries();
  let slice = performance.now();
  const worker = async (): Promise<void> => {
    for (let next = queue.next(); !next.done; next = queue.next()) {
      await check(next.value[0], next.value[1]);
      if (performance.now() - slice > SLICE_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        slice = performance.now();
      }
    }
  };
  await Promise.all(Array.from({ length: VERIFY_CONCURRENCY }, worker));
  // Aborted while the last objects were in flight: still cancelled, not a partial answer.
  throwIfAborted(signal);
  out.missing = [...missing].sort();
  out.corrupt = [...corrupt].sort();
  out.unreadable = [...unreadable].sort();
  return out;
}
