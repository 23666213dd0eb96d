/**
 * The Node hasher: `node:crypto` SHA-256, on the calling thread or spread over a small
 * `worker_threads` pool.
 */
import { TensorFSError } from '@tensorfs/format';
import type { Hasher, HashStream } from '@tensorfs/planner';
import { createHash, hash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { allocateAligned } from '../store/direct.js';

/** Options of {@link createNodeHasher}. */
export interface NodeHasherOptions {
  /**
   * Threads that hash. `1` hashes on the calling thread; more starts that many workers (each
   * record's digest runs on one worker; different records run in parallel).
   * @default os.availableParallelism()
   */
  threads?: number;
  /**
   * Digests of fewer bytes than this run on the calling thread even with workers (a message
   * round trip costs more than hashing them).
   * @default 262144 (256 KiB)
   */
  inlineBelow?: number;
}

/** A {@link Hasher} that owns threads: `close()` ends them. */
export interface NodeHasher extends Hasher {
  /** The number of hashing threads. */
  readonly parallelism: number;
  /** Ends the workers; pending digests reject with `cancelled`. Idempotent. */
  close(): Promise<void>;
}

/**
 * SHA-256 with `node:crypto` (about 1.1 GiB/s a core). With `threads > 1`, read buffers from
 * `allocate()` are backed by a `SharedArrayBuffer`, so a worker hashes them without a copy
 * (other pieces are copied once into the message). They start on a page boundary (so a store can
 * write records from them with O_DIRECT). Buffers given back with `release()` are
 * reused by later plans (up to `threads + 2` of each size). Idle workers never keep the process alive.
 * @throws {TensorFSError} `invalid_argument` for a bad thread count.
 */
export function createNodeHasher(options: NodeHasherOptions = {}): NodeHasher {
  if (typeof options !== 'object' || options === null) {
    throw new TensorFSError('invalid_argument', 'options must be an object', {
      details: { rule: 'store.argument', argument: 'options', actual: options === null ? 'null' : typeof options },
    });
  }
  const threads = options.threads ?? availableParallelism();
  if (!Number.isSafeInteger(threads) || threads < 1 || threads > 256) {
    throw new TensorFSError('invalid_argument', 'threads must be an integer in 1…256', {
      details: { rule: 'hash.threads', actual: threads },
    });
  }
  const inlineBelow = options.inlineBelow ?? 256 * 1024;
  const pool = threads > 1 ? new WorkerPool(threads) : undefined;
  // Released read buffers by size, reused by the next plan (a fresh 64 MiB buffer costs its page faults).
  const spare = new Map<number, Uint8Array[]>();
  const maxSpare = threads + 2;
  return {
    parallelism: threads,
    async digest(pieces: readonly Uint8Array[], signal?: AbortSignal): Promise<Uint8Array> {
      if (signal?.aborted) throw cancelled(signal);
      const total = pieces.reduce((n, p) => n + p.length, 0);
      if (pool === undefined || total < inlineBelow) return hashInline(pieces);
      return pool.digest(pieces, signal);
    },
    stream: nodeStream,
    allocate(size: number): Uint8Array {
      const reused = spare.get(size)?.pop();
      if (reused) return reused;
      return allocateAligned(size, pool !== undefined);
    },
    release(buffer: Uint8Array): void {
      const list = spare.get(buffer.length) ?? [];
      if (list.length >= maxSpare || list.includes(buffer)) return;
      list.push(buffer);
      spare.set(buffer.length, list);
    },
    async close(): Promise<void> {
      spare.clear();
      await pool?.close();
    },
  };
}

function hashInline(pieces: readonly Uint8Array[]): Uint8Array {
  // One-shot hash() skips the Hash object: measurably faster for the many small records of a
  // checkpoint with thousands of tensors.
  if (pieces.length === 1) return new Uint8Array(hash('sha256', pieces[0]!, 'buffer'));
  const h = createHash('sha256');
  for (const p of pieces) h.update(p);
  return new Uint8Array(h.digest());
}

function nodeStream(): HashStream {
  const h = createHash('sha256');
  return {
    update(bytes: Uint8Array): void {
      h.update(bytes);
    },
    async digest(): Promise<Uint8Array> {
      return new Uint8Array(h.digest());
    },
  };
}

function cancelled(signal: AbortSignal): TensorFSError {
  return new TensorFSError('cancelled', 'hashing cancelled', {
    details: { rule: 'hash.cancelled' },
    cause: signal.reason,
  });
}

/**
 * The worker body (evaluated; works whether the parent runs as CommonJS or as an ES module):
 * hash the pieces of each message, reply with the digest.
 */
const WORKER_SOURCE = `
const { parentPort } = process.getBuiltinModule('node:worker_threads');
const { createHash } = process.getBuiltinModule('node:crypto');
parentPort.on('message', ({ id, pieces }) => {
  const h = createHash('sha256');
  for (const p of pieces) h.update(p);
  const digest = h.digest();
  parentPort.postMessage({ id, digest: digest.buffer.slice(digest.byteOffset, digest.byteOffset + 32) });
});
`;

interface Job {
  id: number;
  pieces: Uint8Array[];
  transfer: ArrayBuffer[];
  resolve: (digest: Uint8Array) => void;
  reject: (err: unknown) => void;
}

interface Slot {
  worker: Worker;
  job?: Job | undefined;
}

class WorkerPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 0;
  private closed = false;
  /** Worker failures since the last digest that succeeded; past a few, the pool gives up. */
  private failures = 0;

  constructor(size: number) {
    for (let i = 0; i < size; i++) this.slots.push(this.spawn());
  }

  digest(pieces: readonly Uint8Array[], signal?: AbortSignal): Promise<Uint8Array> {
    if (this.closed) {
      return Promise.reject(
        new TensorFSError('invalid_argument', 'the hasher is closed', { details: { rule: 'store.hasher_closed' } }),
      );
    }
    if (this.slots.length === 0) {
      return Promise.reject(
        new TensorFSError('unavailable', 'hash workers cannot start on this platform', {
          details: { rule: 'hash.no_workers' },
        }),
      );
    }
    return new Promise<Uint8Array>((resolve, reject) => {
      const { sendable, transfer } = toMessage(pieces);
      const job: Job = {
        id: this.nextId++,
        pieces: sendable,
        transfer,
        resolve: (digest) => {
          this.unwatch(signal, job);
          resolve(digest);
        },
        reject: (err) => {
          this.unwatch(signal, job);
          reject(err);
        },
      };
      this.watch(signal, job);
      this.queue.push(job);
      this.pump();
    });
  }

  /**
   * Jobs waiting on each signal, behind ONE abort listener per signal: a listener per job put
   * hundreds on the caller's signal at once (a 64 MiB batch of small records) and Node printed
   * `MaxListenersExceededWarning` on stderr, breaking `--json`'s one-object stderr.
   */
  private readonly watched = new Map<AbortSignal, { jobs: Set<Job>; onAbort: () => void }>();

  private watch(signal: AbortSignal | undefined, job: Job): void {
    if (!signal) return;
    let w = this.watched.get(signal);
    if (!w) {
      const jobs = new Set<Job>();
      const onAbort = (): void => {
        this.watched.delete(signal);
        for (const j of jobs) {
          const queued = this.queue.indexOf(j);
          if (queued !== -1) this.queue.splice(queued, 1);
          j.reject(cancelled(signal));
        }
      };
      w = { jobs, onAbort };
      this.watched.set(signal, w);
      signal.addEventListener('abort', onAbort, { once: true });
    }
    w.jobs.add(job);
  }

  private unwatch(signal: AbortSignal | undefined, job: Job): void {
    if (!signal) return;
    const w = this.watched.get(signal);
    if (!w?.jobs.delete(job) || w.jobs.size > 0) return;
    signal.removeEventListener('abort', w.onAbort);
    this.watched.delete(signal);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const err = new TensorFSError('cancelled', 'the hasher was closed', { details: { rule: 'store.hasher_closed' } });
    for (const job of this.queue.splice(0)) job.reject(err);
    await Promise.all(
      this.slots.map(async (slot) => {
        slot.job?.reject(err);
        slot.job = undefined;
        await slot.worker.terminate();
      }),
    );
  }

  private spawn(): Slot {
    const worker = new Worker(WORKER_SOURCE, { eval: true });
    const slot: Slot = { worker };
    worker.on('message', ({ id, digest }: { id: number; digest: ArrayBuffer }) => {
      const job = slot.job;
      if (!job || job.id !== id) return;
      slot.job = undefined;
      this.failures = 0;
      worker.unref();
      job.resolve(new Uint8Array(digest));
      this.pump();
    });
    worker.on('error', (cause) => this.replace(slot, cause));
    worker.on('exit', (code) => {
      if (!this.closed) this.replace(slot, new Error(`hash worker exited with code ${code}`));
    });
    // After the listeners: adding a 'message' listener refs the worker's port again.
    worker.unref();
    return slot;
  }

  /** A worker died: fail its job and start another in its place. */
  private replace(slot: Slot, cause: unknown): void {
    const index = this.slots.indexOf(slot);
    if (index === -1 || this.closed) return;
    const err = new TensorFSError('internal', 'a hash worker failed', {
      details: { rule: 'hash.worker_failed' },
      cause,
    });
    slot.job?.reject(err);
    slot.job = undefined;
    void slot.worker.terminate();
    if (++this.failures > 2 * this.slots.length) {
      // Workers cannot start here: fail what is queued rather than respawning forever.
      for (const job of this.queue.splice(0)) job.reject(err);
      this.slots.splice(index, 1);
      return;
    }
    this.slots[index] = this.spawn();
    this.pump();
  }

  private pump(): void {
    for (const slot of this.slots) {
      if (slot.job) continue;
      const job = this.queue.shift();
      if (!job) return;
      slot.job = job;
      // A busy worker keeps the process alive until its reply arrives; an idle one never does.
      slot.worker.ref();
      slot.worker.postMessage({ id: job.id, pieces: job.pieces }, job.transfer);
    }
  }
}

/**
 * Pieces as they go to a worker: views of a SharedArrayBuffer travel as they are (shared, no copy);
 * any other piece is copied once into its own ArrayBuffer, which is transferred.
 */
function toMessage(pieces: readonly Uint8Array[]): { sendable: Uint8Array[]; transfer: ArrayBuffer[] } {
  const sendable: Uint8Array[] = [];
  const transfer: ArrayBuffer[] = [];
  for (const p of pieces) {
    if (p.buffer instanceof SharedArrayBuffer) {
      sendable.push(p);
    } else {
      const copy = p.slice();
      sendable.push(copy);
      transfer.push(copy.buffer);
    }
  }
  return { sendable, transfer };
}
