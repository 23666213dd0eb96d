/**
 * Push: ask the destination which objects of the closure it lacks, send only those (data before
 * the objects that reference them), then move the remote ref by compare-and-swap.
 */
import {
  type ObjectId,
  type Progress,
  progressEvent,
  TensorFSError,
  isObjectId,
  cancelledError,
} from '@tensorfs/format';
import { carryFileSha256 } from './file-sha256.js';
import type { Store } from '@tensorfs/format/store';
import type { Origin } from './origin.js';
import { runPool } from './pool.js';
import { referencesOf } from './references.js';

/** Options of {@link push}. */
export interface PushOptions {
  /** Remote ref to move (default: the local ref's name). */
  name?: string;
  /**
   * What the remote ref must hold for the move: an id, or null (must not exist). Default: what
   * it held when the push started, so a concurrent move is a `conflict`, never overwritten.
   */
  expected?: ObjectId | null;
  /** Objects sent at once (default 4). */
  concurrency?: number;
  /** Bytes read from the store per piece while sending (default 8 MiB). */
  pieceBytes?: number;
  signal?: AbortSignal;
  /**
   * Called as objects are sent (or found already held by the origin): phase `push`, unit `bytes`,
   * with `objects`/`objectsTotal` and `bytes`/`bytesTotal` of the closure.
   */
  onProgress?: (p: Progress) => void;
}

/** What a push did. */
export interface PushResult {
  ref: string;
  name: string;
  id: ObjectId;
  /** What the remote ref held before. */
  previous: ObjectId | null;
  objects: { total: number; present: number; sent: number };
  bytes: { total: number; present: number; sent: number };
}

/** Pushes local `ref` (a ref or an id) to `origin`. */
export async function push(store: Store, origin: Origin, ref: string, options: PushOptions = {}): Promise<PushResult> {
  const signal = options.signal;
  if (!origin.writable) {
    throw new TensorFSError('unsupported', 'this origin is read-only', { details: { rule: 'remote.read_only' } });
  }
  const name = options.name ?? (isObjectId(ref) ? undefined : ref);
  if (name === undefined) {
    throw new TensorFSError('invalid_argument', 'pushing an object id needs a remote ref name', {
      details: { rule: 'push.name_required' },
    });
  }
  const id = await store.resolve(ref);
  const previous = await origin.getRef(name, { signal });
  const expected = options.expected !== undefined ? options.expected : previous;
  if (options.expected !== undefined && previous !== options.expected) {
    throw new TensorFSError('conflict', 'the remote ref does not hold the expected id', {
      details: { rule: 'remote.ref_moved', ref: name, expected: options.expected, actual: previous },
    });
  }

  const sent = await sendClosure(store, origin, id, options);
  if (signal?.aborted) throw cancelledError();
  await carryFileSha256(store, origin, store, id, signal ? { signal } : {});
  await origin.setRef(name, id, { expected, signal });
  return {
    ref,
    name,
    id,
    previous,
    ...sent,
  };
}

/** What {@link sendClosure} sent. */
export interface SendResult {
  objects: { total: number; present: number; sent: number };
  bytes: { total: number; present: number; sent: number };
}

/**
 * Sends the closure of local object `id` to `origin`: asks which objects it lacks and sends only
 * those, data before the objects that reference them (so a store that checks closures never
 * holds a referencing object whose children are missing). Moves no ref: {@link push} and the
 * repository upload move theirs afterwards, so a failure here leaves every ref where it was.
 */
export async function sendClosure(
  store: Store,
  origin: Origin,
  id: ObjectId,
  options: Pick<PushOptions, 'concurrency' | 'pieceBytes' | 'signal' | 'onProgress'> = {},
): Promise<SendResult> {
  const signal = options.signal;
  // Closure, from the store: leaves with their declared lengths; referencing objects post-order.
  const leaves = new Map<ObjectId, number>();
  const referencing: { id: ObjectId; length: number }[] = [];
  const seen = new Set<ObjectId>();
  const visit = async (oid: ObjectId) => {
    if (signal?.aborted) throw cancelledError();
    seen.add(oid);
    const bytes = await store.readObject(oid, { verify: true });
    for (const r of referencesOf(bytes)) {
      if (r.follow) {
        if (!seen.has(r.id)) await visit(r.id);
      } else if (!leaves.has(r.id)) {
        leaves.set(r.id, r.length ?? (await store.readObject(r.id)).length);
      }
    }
    referencing.push({ id: oid, length: bytes.length });
  };
  await visit(id);
  for (const r of referencing) leaves.delete(r.id);

  const all = [...leaves.keys(), ...referencing.map((r) => r.id)];
  // What the origin holds is skipped, and freshened where the origin can (its age restarts), so
  // a remote GC that listed it as old and unreachable re-checks its age and keeps it.
  const lacking = new Set(await (origin.freshen ? origin.freshen(all, { signal }) : origin.lacks(all, { signal })));
  const total = { objects: all.length, bytes: 0 };
  for (const l of leaves.values()) total.bytes += l;
  for (const r of referencing) total.bytes += r.length;
  let objectsDone = 0;
  let bytesDone = 0;
  let sentObjects = 0;
  let sentBytes = 0;
  const progress = () =>
    options.onProgress?.(
      progressEvent('push', 'bytes', {
        objects: objectsDone,
        objectsTotal: total.objects,
        bytes: bytesDone,
        bytesTotal: total.bytes,
      }),
    );
  for (const [lid, len] of leaves) {
    if (!lacking.has(lid)) {
      objectsDone++;
      bytesDone += len;
    }
  }
  for (const r of referencing) {
    if (!lacking.has(r.id)) {
      objectsDone++;
      bytesDone += r.length;
    }
  }
  progress();

  const piece = options.pieceBytes ?? 8 << 20;
  const send = async (oid: ObjectId, len: number, sig: AbortSignal) => {
    // Bytes actually handed to the origin: a resumed upload sends only the parts it lacks.
    let yielded = 0;
    let reported: number | undefined;
    await origin.write(
      oid,
      len,
      async function* (offset = 0, end = len) {
        const stop = Math.min(end, len);
        for (let off = offset; off < stop; off += piece) {
          if (sig.aborted) throw cancelledError();
          const b = await store.readObjectRange(oid, off, Math.min(piece, stop - off));
          yielded += b.length;
          yield b;
        }
      },
      {
        signal: sig,
        sent: (n) => {
          reported = (reported ?? 0) + n;
        },
      },
    );
    sentObjects++;
    // Never more than the object: parts another upload of it already sent are not counted twice.
    sentBytes += Math.min(reported ?? yielded, len);
    objectsDone++;
    bytesDone += len;
    progress();
  };
  const toSend = [...leaves].filter(([lid]) => lacking.has(lid));
  await runPool(toSend, options.concurrency ?? 4, signal, ([lid, len], sig) => send(lid, len, sig));
  // Referencing objects after everything they reference, children before parents.
  for (const r of referencing) {
    if (lacking.has(r.id)) await send(r.id, r.length, signal ?? new AbortController().signal);
  }
  if (signal?.aborted) throw cancelledError();
  return {
    objects: { total: total.objects, present: total.objects - sentObjects, sent: sentObjects },
    // `present`: what the destination held or got without this push sending it; never negative.
    bytes: { total: total.bytes, present: Math.max(0, total.bytes - sentBytes), sent: sentBytes },
  };
}
