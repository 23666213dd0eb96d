/**
 * The raw reader: one plain-HTTP/1.1 GET whose socket reads land straight in large buffers
 * (`net`'s `onread`), each handed to the consumer whole. undici allocates a 64 KiB buffer per
 * socket read, copies each into its parser and streams the body in 64 KiB chunks; for a large
 * object that costs about 1.6 s of CPU per GiB here against 0.3 s for reads into buffers of the
 * caller's (docs/remote.md, "Throughput") — the difference between a pull that keeps up with
 * `curl` and one that does not on a two-core host.
 *
 * It serves {@link HttpClient.send} for requests marked `large` (a pull's large object reads)
 * over `http:` only, and handles only the framings a static server or the hub uses for them: a
 * `Content-Length`, or a body that ends when the connection closes. A chunked or interim (1xx)
 * response is {@link RawFramingError}, on which the client goes back to undici for good. The
 * connection is never reused (`Connection: close`): each large object costs one connect, which
 * its bytes dwarf. Redirects, retries, credentials and error bodies stay with the client.
 */
import * as net from 'node:net';
import { TensorFSError } from '@tensorfs/format';

/** Bytes per chunk of a body with a known length (the last one may be shorter). */
export const RAW_CHUNK = 4 << 20;
/** Bytes per chunk of a body that ends when the connection closes. */
const OPEN_CHUNK = 64 << 10;
/** Chunks at least this long are read into pooled buffers. */
const POOLED_MIN = 256 << 10;
/** Longest response head read (undici's default too; the hub's are < 1 KiB). */
const HEAD_MAX = 16 << 10;
/** Free chunk buffers kept for the next reads (24 × 4 MiB), and for how long once none is taken. */
const FREE_MAX = 24;
const FREE_IDLE_MS = 5000;
/** Chunks waiting for the consumer before the socket pauses. */
const READY_MAX = 2;

/** A response this reader does not handle (chunked transfer coding, an interim 1xx). */
export class RawFramingError extends Error {
  readonly code = 'raw_framing';
}

/**
 * A raw response body. Each chunk is memory the consumer owns until it gives it back with
 * {@link RawBody.recycle} (or forever: a chunk never given back is left to the garbage collector).
 * Chunks of a known-length body are views of `SharedArrayBuffer`s, so a consumer may post them to
 * another thread without a copy and without giving them up.
 */
export interface RawBody extends AsyncIterable<Uint8Array> {
  /** Stops reading and closes the connection. */
  destroy(): void;
  /** Discards the rest (the connection is closed, never reused). */
  dump(): Promise<void>;
  /** The consumer is done with `chunk` (nothing reads it any more): later reads may land in it. */
  recycle(chunk: Uint8Array): void;
}

/**
 * Buffers of chunks given back, reused before any new one is allocated: the same few megabytes
 * stay mapped and warm instead of a fresh 4 MiB being mapped (and faulted in, and freed) per
 * chunk — which on a VM whose host reclaims freed guest memory costs more than the copy itself.
 */
const freeBuffers: SharedArrayBuffer[] = [];
/** Buffers handed out and not given back yet: only these may come back (once each). */
const lent = new WeakSet<SharedArrayBuffer>();
let lastTaken = 0;
let trim: ReturnType<typeof setTimeout> | undefined;

/** Drops the free buffers once none was taken for {@link FREE_IDLE_MS}: an idle process keeps no pool. */
function trimLater(): void {
  if (trim !== undefined) return;
  trim = setTimeout(() => {
    trim = undefined;
    if (Date.now() - lastTaken >= FREE_IDLE_MS) freeBuffers.length = 0;
    else trimLater();
  }, FREE_IDLE_MS);
  trim.unref();
}

function takeBuffer(size: number): Buffer {
  lastTaken = Date.now();
  const b = freeBuffers.pop() ?? new SharedArrayBuffer(RAW_CHUNK);
  lent.add(b);
  return Buffer.from(b, 0, size);
}

/**
 * Gives a chunk's buffer back to the pool. Anything not lent out — not from the pool, or already
 * given back — is ignored: a buffer given back twice could otherwise be read into while a
 * consumer still hashes or writes it.
 */
export function recycleRaw(chunk: Uint8Array): void {
  const b = chunk.buffer;
  if (!(b instanceof SharedArrayBuffer) || !lent.has(b)) return;
  lent.delete(b);
  if (freeBuffers.length < FREE_MAX) {
    freeBuffers.push(b);
    trimLater();
  }
}

/** Empties the pool (for tests). @internal */
export function resetRawPool(): void {
  freeBuffers.length = 0;
  if (trim !== undefined) clearTimeout(trim);
  trim = undefined;
}

/** A response head and its body. */
export interface RawResponse {
  statusCode: number;
  headers: Record<string, string | string[]>;
  body: RawBody;
}

/** Options of {@link rawGet}. */
export interface RawOptions {
  signal?: AbortSignal;
  /** Milliseconds without a byte (head or body) before the exchange fails; paused while the consumer lags. */
  timeoutMs: number;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const BAD_VALUE = /[\0\r\n]/;

function badResponse(why: string): TensorFSError {
  return new TensorFSError('unavailable', `the origin sent a malformed response: ${why}`, {
    details: { rule: 'http.bad_response' },
  });
}

/**
 * Parses a response head (status line and header lines, without the blank line). Header names
 * are lowercased; a repeated header becomes an array. Throws `unavailable` (`http.bad_response`)
 * for anything that is not plain HTTP/1.x.
 */
export function parseResponseHead(text: string): { statusCode: number; headers: Record<string, string | string[]> } {
  const lines = text.split('\r\n');
  const status = /^HTTP\/1\.[01] ([1-9]\d\d)(?: [^\0\r\n]*)?$/.exec(lines[0]!);
  if (!status) throw badResponse('status line');
  const headers: Record<string, string | string[]> = Object.create(null);
  for (let k = 1; k < lines.length; k++) {
    const line = lines[k]!;
    const colon = line.indexOf(':');
    const name = line.slice(0, colon);
    // No folded lines, no bare CR/LF/NUL, names that are tokens.
    if (colon <= 0 || !TOKEN.test(name) || BAD_VALUE.test(line)) throw badResponse('header line');
    const key = name.toLowerCase();
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
    const had = headers[key];
    if (had === undefined) headers[key] = value;
    else if (Array.isArray(had)) had.push(value);
    else headers[key] = [had, value];
  }
  return { statusCode: Number(status[1]), headers: { ...headers } };
}

/** The body length a head announces: a number, or Infinity when the body ends with the connection. */
function framing(statusCode: number, headers: Record<string, string | string[]>): number {
  if (statusCode < 200 || headers['transfer-encoding'] !== undefined) throw new RawFramingError('not raw-readable');
  if (statusCode === 204 || statusCode === 304) return 0;
  const cl = headers['content-length'];
  if (cl === undefined) return Number.POSITIVE_INFINITY;
  const values = Array.isArray(cl) ? cl : [cl];
  if (values.some((v) => v !== values[0]) || !/^\d{1,15}$/.test(values[0]!)) throw badResponse('Content-Length');
  return Number(values[0]);
}

/**
 * Sends `GET url` with `headers` on a connection of its own and resolves once the response head
 * has arrived. Connection failures reject with the socket's error (`code` like `ECONNREFUSED`);
 * a malformed head with `unavailable` (`http.bad_response`); a stall with `unavailable`
 * (`http.read_timeout`); a framing this reader leaves to undici with {@link RawFramingError}.
 */
export function rawGet(url: string, headers: Record<string, string>, options: RawOptions): Promise<RawResponse> {
  const u = new URL(url);
  if (u.protocol !== 'http:') throw new RawFramingError('not plain http');
  let head = `GET ${u.pathname}${u.search} HTTP/1.1\r\nhost: ${u.host}\r\nconnection: close\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (lower === 'host' || lower === 'connection') continue;
    if (!TOKEN.test(name) || BAD_VALUE.test(value)) {
      return Promise.reject(
        new TensorFSError('invalid_argument', 'a request header is not valid HTTP', {
          details: { rule: 'http.bad_header' },
        }),
      );
    }
    head += `${name}: ${value}\r\n`;
  }
  return new RawExchange(u, `${head}\r\n`, options).response;
}

class RawExchange implements RawBody {
  readonly response: Promise<RawResponse>;
  private settle!: { resolve: (r: RawResponse) => void; reject: (err: unknown) => void };
  private readonly socket: net.Socket;
  /** The head as it arrives; undefined once parsed. */
  private head: Buffer | undefined = Buffer.allocUnsafe(HEAD_MAX);
  private headFilled = 0;
  /** The chunk being filled, and how far. */
  private chunk: Buffer = Buffer.alloc(0);
  private filled = 0;
  /** Body bytes still to come (Infinity: until the connection closes). */
  private remaining = Number.POSITIVE_INFINITY;
  private readonly ready: Uint8Array[] = [];
  private paused = false;
  private done = false;
  private failure: unknown;
  private wake: (() => void) | undefined;
  private readonly onAbort = () => this.fail(Object.assign(new Error('aborted'), { name: 'AbortError' }));
  private headDeadline: ReturnType<typeof setTimeout> | undefined;

  constructor(
    u: URL,
    request: string,
    private readonly options: RawOptions,
  ) {
    this.response = new Promise((resolve, reject) => {
      this.settle = { resolve, reject };
    });
    this.socket = net.connect({
      host: u.hostname.replace(/^\[|\]$/g, ''),
      port: Number(u.port || 80),
      onread: { buffer: () => this.nextBuffer(), callback: (n: number) => this.onRead(n) },
    });
    this.socket.setNoDelay(true);
    const stalled = () =>
      this.fail(
        new TensorFSError('unavailable', 'the origin stopped sending', {
          details: { rule: 'http.read_timeout', timeoutMs: options.timeoutMs },
        }),
      );
    // Between bytes, and for the whole head (a head sent a byte at a time is no answer).
    this.socket.setTimeout(options.timeoutMs);
    this.socket.on('timeout', stalled);
    if (options.timeoutMs > 0) {
      this.headDeadline = setTimeout(stalled, options.timeoutMs);
      this.headDeadline.unref();
    }
    this.socket.on('error', (err) => this.fail(err));
    this.socket.on('close', () => this.onClose());
    this.socket.write(request);
    if (options.signal?.aborted) this.onAbort();
    else options.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Where the next socket read lands: the head buffer, then the rest of the current chunk. */
  private nextBuffer(): Uint8Array {
    if (this.head) return this.head.subarray(this.headFilled);
    if (this.filled < this.chunk.length) return this.chunk.subarray(this.filled);
    return SPILL; // finished: whatever else arrives is dropped with the connection
  }

  /** `n` bytes were read into the buffer last given; false pauses the socket. */
  private onRead(n: number): boolean {
    if (this.done) return false;
    try {
      if (this.head) this.onHead(n);
      else this.onBody(n);
    } catch (err) {
      this.fail(err);
      return false;
    }
    if (this.ready.length >= READY_MAX && !this.done) {
      this.paused = true;
      this.socket.setTimeout(0);
      return false;
    }
    return true;
  }

  private onHead(n: number): void {
    const head = this.head!;
    const from = Math.max(0, this.headFilled - 3);
    this.headFilled += n;
    const end = head.subarray(0, this.headFilled).indexOf('\r\n\r\n', from, 'latin1');
    if (end < 0) {
      if (this.headFilled === head.length) throw badResponse('head too large');
      return;
    }
    clearTimeout(this.headDeadline);
    const { statusCode, headers } = parseResponseHead(head.toString('latin1', 0, end));
    this.remaining = framing(statusCode, headers);
    this.head = undefined;
    this.newChunk();
    this.settle.resolve({ statusCode, headers, body: this });
    // Body bytes that came with the head.
    let rest = head.subarray(end + 4, this.headFilled);
    while (rest.length > 0 && !this.done) {
      const take = Math.min(rest.length, this.chunk.length - this.filled);
      this.chunk.set(rest.subarray(0, take), this.filled);
      rest = rest.subarray(take);
      this.onBody(take);
    }
    if (this.remaining === 0) this.finish();
  }

  private onBody(n: number): void {
    this.filled += n;
    this.remaining -= n;
    if (this.filled === this.chunk.length) this.flush();
    if (this.remaining === 0) this.finish();
    else if (this.filled === 0) this.newChunk();
  }

  /** A chunk sized to what is left: reads never run past the announced length. */
  private newChunk(): void {
    const size = Math.min(this.remaining, this.remaining === Number.POSITIVE_INFINITY ? OPEN_CHUNK : RAW_CHUNK);
    // Small bodies (an error's text, a short tail) get memory of their own, not a pooled 4 MiB.
    this.chunk = size >= POOLED_MIN ? takeBuffer(size) : Buffer.allocUnsafeSlow(size);
    this.filled = 0;
  }

  /** Hands the bytes of the current chunk to the consumer. */
  private flush(): void {
    if (this.filled === 0) return;
    this.ready.push(this.filled === this.chunk.length ? this.chunk : this.chunk.subarray(0, this.filled));
    this.chunk = Buffer.alloc(0);
    this.filled = 0;
    this.wakeUp();
  }

  private finish(): void {
    if (this.done) return;
    this.flush();
    this.done = true;
    this.detach();
    this.socket.destroy();
    this.wakeUp();
  }

  /** Ends the exchange with `err`; bytes already read still reach the consumer first. */
  private fail(err: unknown): void {
    if (this.done) return;
    if (!this.head) this.flush();
    this.done = true;
    this.failure = err;
    this.detach();
    this.socket.destroy();
    this.settle.reject(err);
    this.wakeUp();
  }

  private onClose(): void {
    if (this.done) return;
    if (this.head) {
      this.fail(Object.assign(new Error('the connection closed before a response'), { code: 'ECONNRESET' }));
    } else if (this.remaining === Number.POSITIVE_INFINITY) {
      this.finish();
    } else {
      this.fail(
        new TensorFSError('unavailable', 'the connection closed before the body ended', {
          details: { rule: 'http.short_body', missing: this.remaining },
        }),
      );
    }
  }

  private detach(): void {
    clearTimeout(this.headDeadline);
    this.options.signal?.removeEventListener('abort', this.onAbort);
  }

  private wakeUp(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    try {
      for (;;) {
        const next = this.ready.shift();
        if (next !== undefined) {
          if (this.paused && this.ready.length < READY_MAX && !this.done) {
            this.paused = false;
            this.socket.setTimeout(this.options.timeoutMs);
            this.socket.resume();
          }
          yield next;
          continue;
        }
        if (this.failure !== undefined) throw this.failure;
        if (this.done) return;
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
      }
    } finally {
      this.destroy();
    }
  }

  destroy(): void {
    this.ready.length = 0;
    if (this.done) return;
    this.done = true;
    this.failure ??= Object.assign(new Error('the body was destroyed'), { code: 'ERR_STREAM_DESTROYED' });
    this.detach();
    this.socket.destroy();
    this.settle.reject(this.failure);
    this.wakeUp();
  }

  async dump(): Promise<void> {
    this.destroy();
  }

  recycle(chunk: Uint8Array): void {
    recycleRaw(chunk);
  }
}

/** Where reads go once a response is complete (the connection is being closed). */
const SPILL = Buffer.allocUnsafe(OPEN_CHUNK);
