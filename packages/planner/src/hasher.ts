import { sha256 } from '@noble/hashes/sha2.js';

/** An incremental SHA-256, for records too large to buffer. */
export interface HashStream {
  /** Feeds bytes; the caller awaits the result before reusing `bytes`. */
  update(bytes: Uint8Array): void | Promise<void>;
  /** The 32-byte digest of everything fed so far. */
  digest(): Promise<Uint8Array>;
}

/**
 * SHA-256 as the planner needs it. Injected, so the same planner runs on `node:crypto` with a
 * worker pool in Node (`createNodeHasher` in `@tensorfs/cas`) and on `@noble/hashes` anywhere else.
 */
export interface Hasher {
  /**
   * The 32-byte SHA-256 of the concatenation of `pieces`. May run on another thread; must not
   * modify or detach the pieces. Rejects with `cancelled` if `signal` aborts first.
   */
  digest(pieces: readonly Uint8Array[], signal?: AbortSignal): Promise<Uint8Array>;
  /** An incremental hash, for records too large to buffer. */
  stream(): HashStream;
  /**
   * How many digests this hasher computes at once to good effect (its thread count); the planner's
   * default `concurrency`.
   * @default 1
   */
  readonly parallelism?: number;
  /**
   * Allocates a read buffer the hasher can hash without copying (e.g. backed by a
   * `SharedArrayBuffer` for a worker pool). The planner reads records into such buffers.
   * @default `new Uint8Array(size)`
   */
  allocate?(size: number): Uint8Array;
  /**
   * Gives back a buffer from {@link Hasher.allocate} that the planner no longer uses, so the next
   * plan can reuse it instead of allocating (and faulting in) fresh memory.
   */
  release?(buffer: Uint8Array): void;
}

/**
 * The portable hasher: `@noble/hashes` SHA-256 on the calling thread (about 80 MiB/s; use the
 * `node:crypto` hasher of `@tensorfs/cas` in Node).
 */
export function nobleHasher(): Hasher {
  return {
    parallelism: 1,
    async digest(pieces: readonly Uint8Array[]): Promise<Uint8Array> {
      const h = sha256.create();
      for (const piece of pieces) h.update(piece);
      return h.digest();
    },
    stream(): HashStream {
      const h = sha256.create();
      return {
        update(bytes: Uint8Array): void {
          h.update(bytes);
        },
        async digest(): Promise<Uint8Array> {
          return h.digest();
        },
      };
    },
  };
}
