import { sha256 } from '@noble/hashes/sha2.js';
import { TensorFSError } from '@tensorfs/format';

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

/**
 * A hasher on WebCrypto (`crypto.subtle.digest`, native speed in browsers, Deno, workers and
 * Node): whole records are hashed natively; streaming (a `blob-v1` record over 64 MiB) falls back
 * to `@noble/hashes`, since WebCrypto has no incremental SHA-256.
 * @throws {TensorFSError} `unsupported` if the platform has no `crypto.subtle`.
 */
export function webCryptoHasher(): Hasher {
  const subtle = globalThis.crypto?.subtle;
  if (!subtle)
    throw new TensorFSError('unsupported', 'WebCrypto (crypto.subtle) is not available here', {
      details: { rule: 'planner.no_webcrypto' },
    });
  const fallback = nobleHasher();
  return {
    parallelism: 1,
    async digest(pieces: readonly Uint8Array[]): Promise<Uint8Array> {
      // WebCrypto takes one non-shared buffer: join several pieces, copy a shared one.
      const one = pieces.length === 1 && !isShared(pieces[0]!) ? pieces[0]! : join(pieces);
      return new Uint8Array(await subtle.digest('SHA-256', one as Uint8Array<ArrayBuffer>));
    },
    stream: fallback.stream,
  };
}

/** True for a view of a SharedArrayBuffer (which may not even exist where isolation is off). */
function isShared(bytes: Uint8Array): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && bytes.buffer instanceof SharedArrayBuffer;
}

function join(pieces: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
