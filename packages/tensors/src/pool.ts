/**
 * Reusable tensor buffers: a {@link TensorPool} hands out buffers (`take`) and takes them back
 * (`give`), detaching the caller's copy, so a process that loads layer after layer reads each
 * into memory an earlier, released load already touched (no page faults, no zero-fill) and a
 * use after release reads nothing (the released view has byteLength 0), never another tensor's
 * bytes. Runs anywhere: `structuredClone(buffer, { transfer })` moves a buffer in Node and in
 * browsers alike.
 */
import { TensorFSError, wrongArgument } from '@tensorfs/format';

/** Allocates `n` bytes for a tensor the caller will overwrite whole (need not be zeroed). */
export type TensorAllocator = (n: number) => Uint8Array;

/** Options of {@link TensorPool}. */
export interface TensorPoolOptions {
  /**
   * The most bytes of released buffers the pool keeps for reuse; a buffer given back beyond it
   * is still detached, and left to the garbage collector. @default 2 GiB
   */
  limit?: number;
  /**
   * Where new buffers come from. @default `new Uint8Array(n)` (measured no slower than Node's
   * `Buffer.allocUnsafeSlow`: docs/benchmarks.md "Loads with a pool")
   */
  allocate?: TensorAllocator;
}

const DEFAULT_LIMIT = 2 * 2 ** 30;

const zeroed: TensorAllocator = (n) => new Uint8Array(n);

function checkSize(n: unknown, what: string): asserts n is number {
  if (!Number.isSafeInteger(n) || (n as number) < 0) wrongArgument('tensors', what, 'an integer ≥ 0', n);
}

/** Moves `buffer`'s memory into a new ArrayBuffer; `buffer` is detached (byteLength 0). */
function detach(buffer: ArrayBuffer): ArrayBuffer {
  return structuredClone(buffer, { transfer: [buffer] });
}

/**
 * Buffers taken and given back, by exact length (a model's layers repeat the same shapes).
 * {@link loadTensors} takes its destinations from a pool (the process-wide
 * {@link defaultTensorPool} unless told otherwise) and `LoadedTensors.release()` gives them back.
 * @example
 * const pool = new TensorPool();
 * const bytes = pool.take(1024);      // overwrite all of it
 * pool.give(bytes);                   // bytes.byteLength is now 0
 */
export class TensorPool {
  private readonly free = new Map<number, ArrayBuffer[]>();
  private held = 0;
  private readonly allocate: TensorAllocator | undefined;
  /** The most bytes kept for reuse (settable). */
  limit: number;

  constructor(options: TensorPoolOptions = {}) {
    if (typeof options !== 'object' || options === null) wrongArgument('tensors', 'options', 'an object', options);
    if (options.limit !== undefined) checkSize(options.limit, 'options.limit');
    if (options.allocate !== undefined && typeof options.allocate !== 'function')
      wrongArgument('tensors', 'options.allocate', 'a function', options.allocate);
    this.limit = options.limit ?? DEFAULT_LIMIT;
    this.allocate = options.allocate;
  }

  /** Bytes of released buffers the pool holds now. */
  get byteLength(): number {
    return this.held;
  }

  /**
   * A buffer of exactly `n` bytes that owns its whole ArrayBuffer: one given back earlier, or a
   * new one. Its contents are unspecified (an earlier tensor's bytes, or zeros): overwrite it.
   */
  take(n: number): Uint8Array {
    checkSize(n, 'n');
    const list = this.free.get(n);
    const reused = list?.pop();
    if (reused !== undefined) {
      if (list!.length === 0) this.free.delete(n);
      this.held -= n;
      return new Uint8Array(reused);
    }
    const bytes = (this.allocate ?? zeroed)(n);
    if (!(bytes instanceof Uint8Array) || bytes.length !== n) {
      throw new TensorFSError('invalid_argument', 'the allocator did not return n bytes', {
        details: {
          rule: 'tensors.pool_allocate',
          expected: n,
          actual: bytes instanceof Uint8Array ? bytes.length : null,
        },
      });
    }
    // A Buffer becomes a plain view of its own memory; a view into a larger allocation is refused.
    if (bytes.byteOffset === 0 && bytes.buffer instanceof ArrayBuffer && bytes.buffer.byteLength === n)
      return bytes.constructor === Uint8Array ? bytes : new Uint8Array(bytes.buffer);
    return new Uint8Array(n);
  }

  /**
   * Gives a buffer back: `bytes` (and every view of its memory) is detached — byteLength 0,
   * reads see nothing — and its memory is kept for the next {@link take} of the same length
   * (up to {@link limit}). `bytes` must view its whole ArrayBuffer (as {@link take} returns).
   * @throws {TensorFSError} `invalid_argument` (rule `tensors.pool_give`) for a view of part of a
   *   buffer, a detached or a shared one.
   */
  give(bytes: Uint8Array): void {
    if (
      !(bytes instanceof Uint8Array) ||
      !(bytes.buffer instanceof ArrayBuffer) ||
      bytes.byteOffset !== 0 ||
      bytes.byteLength !== bytes.buffer.byteLength ||
      bytes.byteLength === 0
    ) {
      throw new TensorFSError('invalid_argument', 'a pool takes back only a whole, non-empty buffer', {
        details: {
          rule: 'tensors.pool_give',
          actual: bytes instanceof Uint8Array ? bytes.byteLength : null,
        },
      });
    }
    this.giveBuffer(bytes.buffer);
  }

  /** Detaches `buffer` and keeps its memory if the limit allows. @internal */
  giveBuffer(buffer: ArrayBuffer): void {
    const n = buffer.byteLength;
    if (n === 0) return;
    const moved = detach(buffer);
    if (this.held + n > this.limit) return;
    let list = this.free.get(n);
    if (list === undefined) this.free.set(n, (list = []));
    list.push(moved);
    this.held += n;
  }

  /** Drops every buffer the pool holds (left to the garbage collector). */
  clear(): void {
    this.free.clear();
    this.held = 0;
  }
}

let defaultPool: TensorPool | undefined;

/**
 * The process-wide pool {@link loadTensors} takes from and `release()` gives back to when no
 * `pool` option is passed. Set its `limit` (or `clear()` it) to bound what it keeps.
 */
export function defaultTensorPool(): TensorPool {
  defaultPool ??= new TensorPool();
  return defaultPool;
}
