/**
 * Hashing a file as it is written, on a worker thread: the writer hands over each range it
 * writes ({@link FileFollower.update}; shared memory travels without a copy) or has the thread
 * write it too ({@link FileFollower.append}; memory handed over travels without a copy), and a
 * prefix already in the file (a resumed part) is read back from it ({@link FileFollower.advance}).
 * A transfer's main thread then only receives while the other core hashes and the thread pool
 * writes (docs/remote.md "Throughput").
 *
 * One worker serves every follower of the process (SHA-256 at ~1.1 GiB/s outruns any transfer it
 * follows); it keeps the process alive only while a reply is awaited. Where a worker cannot run,
 * the same reads, writes and hashing happen on the calling thread.
 */
import { createHash, type Hash } from 'node:crypto';
import * as fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import { TensorFSError } from '@tensorfs/format';

/**
 * Hashes one file from byte 0: ranges read back from the file ({@link advance}) and bytes given
 * in memory ({@link update}), in the order they were asked. Reports read errors at {@link digest}.
 */
export interface FileFollower {
  /** The file holds at least `end` bytes: hash up to there from the file. */
  advance(end: number): void;
  /**
   * Hashes `bytes` as the next bytes of the file; resolves once they are hashed (their memory may
   * be reused then). Views of a `SharedArrayBuffer` reach the hashing thread without a copy.
   */
  update(bytes: Uint8Array): Promise<void>;
  /**
   * Writes `chunks` into the file at `at` (the bytes hashed so far: each append continues where
   * the last ended) and hashes them as its next bytes; resolves once both are done, rejects with
   * the errno-style error of a failed write. Appends reach the file one after another, so a file
   * cut short by a crash holds a prefix. The buffers listed in `transfer` move to the hashing
   * thread (their views here are detached: only for memory the caller gives up); other chunks
   * are copied. Needs a follower opened with `write: true`.
   */
  append(chunks: readonly Uint8Array[], at: number, transfer?: readonly ArrayBuffer[]): Promise<void>;
  /** Starts again from byte 0 (the file was truncated). */
  reset(): void;
  /**
   * SHA-256 of the first `end` bytes (or of all advanced to, if more). Rejects with the errno-style
   * error of a failed read (`code` `EOF` when the file is shorter). The follower is finished afterwards.
   */
  digest(end: number): Promise<Uint8Array>;
  /** Stops following (no digest). Idempotent. */
  close(): void;
}

/** Bytes the worker reads at a time (one buffer, reused). */
const READ_BYTES = 4 << 20;

/**
 * Follows the file at `path`, opened by the hashing thread read-only, or read-write with
 * `write: true` (for {@link FileFollower.append}). `thread: false` (or a platform without worker
 * threads) reads, writes and hashes on the calling thread.
 */
export function followFile(path: string, options: { thread?: boolean; write?: boolean } = {}): FileFollower {
  const w = options.thread === false ? null : sharedWorker();
  return w ? w.follow(path, options.write === true) : new InlineFollower(path);
}

// The worker: a table of followed files, each with its descriptor, hash state, position and the
// chain of its appends' writes (run by the thread pool while the worker hashes; the descriptor is
// closed only after them). Any failure is kept and reported by the next append or digest
// (messages are handled in order).
const WORKER_SOURCE = `
const { parentPort } = process.getBuiltinModule('node:worker_threads');
const { createHash } = process.getBuiltinModule('node:crypto');
const fs = process.getBuiltinModule('node:fs');
const buf = Buffer.allocUnsafe(${READ_BYTES});
const files = new Map();
function upTo(f, end) {
  while (f.error === undefined && f.at < end) {
    try {
      const n = fs.readSync(f.fd, buf, 0, Math.min(buf.length, end - f.at), f.at);
      if (n === 0) f.error = 'EOF';
      else { f.h.update(buf.subarray(0, n)); f.at += n; }
    } catch (err) { f.error = err.code || 'EIO'; }
  }
}
function writeAll(fd, chunks, at) {
  return new Promise((resolve, reject) => {
    const next = (list, pos) => fs.writev(fd, list, pos, (err, n) => {
      if (err) return reject(err);
      if (n === 0) return reject(Object.assign(new Error('no progress'), { code: 'EIO' }));
      let rest = list;
      let skip = n;
      while (rest.length > 0 && skip >= rest[0].length) { skip -= rest[0].length; rest = rest.slice(1); }
      if (rest.length === 0) return resolve();
      if (skip > 0) rest = [rest[0].subarray(skip), ...rest.slice(1)];
      next(rest, pos + n);
    });
    next(chunks, at);
  });
}
function finish(f) { if (f.fd >= 0) { const fd = f.fd; f.fd = -1; f.w.then(() => { try { fs.closeSync(fd); } catch {} }); } }
parentPort.on('message', (m) => {
  let f = files.get(m.id);
  if (m.op === 'open') {
    f = { at: 0, h: createHash('sha256'), fd: -1, error: undefined, w: Promise.resolve() };
    try { f.fd = fs.openSync(m.path, m.write ? 'r+' : 'r'); } catch (err) { f.error = err.code || 'EIO'; }
    files.set(m.id, f);
    return;
  }
  if (!f) return;
  if (m.op === 'to') upTo(f, m.end);
  else if (m.op === 'bytes') {
    if (f.error === undefined) { f.h.update(m.bytes); f.at += m.bytes.length; }
    parentPort.postMessage({ id: m.id, tag: m.tag });
  }
  else if (m.op === 'append') {
    if (f.error === undefined && m.at !== f.at) f.error = 'EINVAL';
    if (f.error !== undefined) { parentPort.postMessage({ id: m.id, tag: m.tag, error: f.error }); return; }
    const fd = f.fd;
    // The write is queued first: the thread pool writes while this thread hashes.
    const written = f.w.then(() => writeAll(fd, m.chunks, m.at));
    f.w = written.catch((err) => { f.error ??= err.code || 'EIO'; });
    for (const c of m.chunks) { f.h.update(c); f.at += c.length; }
    f.w.then(() => parentPort.postMessage({ id: m.id, tag: m.tag, error: f.error }));
  }
  else if (m.op === 'reset') { f.h = createHash('sha256'); f.at = 0; if (f.error !== 'ENOENT' && f.fd >= 0) f.error = undefined; }
  else if (m.op === 'digest') {
    upTo(f, m.end);
    const error = f.error;
    const d = error === undefined ? f.h.digest() : undefined;
    parentPort.postMessage({ id: m.id, tag: m.tag, error, digest: d && d.buffer.slice(d.byteOffset, d.byteOffset + 32) });
  }
  if (m.op === 'digest' || m.op === 'close') {
    finish(f);
    files.delete(m.id);
  }
});
`;

type Waiter = { resolve: (d: Uint8Array | undefined) => void; reject: (e: unknown) => void };

class HashWorker {
  private readonly worker: Worker;
  /** Replies awaited, by tag. */
  private readonly waiting = new Map<number, Waiter>();
  private nextId = 0;
  private nextTag = 0;
  dead = false;

  constructor() {
    this.worker = new Worker(WORKER_SOURCE, { eval: true });
    this.worker.on('message', (m: { tag: number; error?: string; digest?: ArrayBuffer }) => {
      const w = this.waiting.get(m.tag);
      if (!w) return;
      this.waiting.delete(m.tag);
      if (this.waiting.size === 0) this.worker.unref();
      if (m.error !== undefined) w.reject(readError(m.error));
      else w.resolve(m.digest && new Uint8Array(m.digest));
    });
    const fail = (cause: unknown) => {
      this.dead = true;
      const err = new TensorFSError('internal', 'the hashing thread failed', { cause });
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`exit code ${code}`)));
    this.worker.unref();
  }

  /** Posts `m` (moving the buffers in `transfer`) and resolves with the reply to it. */
  private ask(m: object, transfer?: readonly ArrayBuffer[]): Promise<Uint8Array | undefined> {
    if (this.dead) return Promise.reject(new TensorFSError('internal', 'the hashing thread failed'));
    const tag = this.nextTag++;
    return new Promise((resolve, reject) => {
      this.waiting.set(tag, { resolve, reject });
      this.worker.ref();
      try {
        this.worker.postMessage({ tag, ...m }, transfer as ArrayBuffer[] | undefined);
      } catch {
        // A buffer that cannot move (WebAssembly memory): copied instead.
        this.worker.postMessage({ tag, ...m });
      }
    });
  }

  follow(path: string, write: boolean): FileFollower {
    const id = this.nextId++;
    const post = (m: object) => this.worker.postMessage({ id, ...m });
    post({ op: 'open', path, write });
    let done = false;
    let end = 0;
    return {
      advance: (n) => {
        if (done || n <= end) return;
        end = n;
        post({ op: 'to', end: n });
      },
      update: async (bytes) => {
        if (done) throw new TensorFSError('internal', 'the follower is finished');
        end += bytes.length;
        await this.ask({ id, op: 'bytes', bytes });
      },
      append: async (chunks, at, transfer) => {
        if (done) throw new TensorFSError('internal', 'the follower is finished');
        for (const c of chunks) end += c.length;
        await this.ask({ id, op: 'append', chunks, at }, transfer);
      },
      reset: () => {
        if (done) return;
        end = 0;
        post({ op: 'reset' });
      },
      digest: async (n) => {
        if (done) throw new TensorFSError('internal', 'the follower is finished');
        done = true;
        return (await this.ask({ id, op: 'digest', end: Math.max(n, end) }))!;
      },
      close: () => {
        if (done) return;
        done = true;
        post({ op: 'close' });
      },
    };
  }
}

let shared: HashWorker | null | undefined;

/** The process's hashing thread (started on first use, again after a crash); null if none can run. */
function sharedWorker(): HashWorker | null {
  if (shared === null) return null;
  if (shared === undefined || shared.dead) {
    try {
      shared = new HashWorker();
    } catch {
      shared = null;
    }
  }
  return shared;
}

/** The same work on the calling thread: file ranges read when bytes or the digest need them. */
class InlineFollower implements FileFollower {
  /** Bytes hashed; `end` is how far the file holds bytes not hashed yet. */
  private at = 0;
  private end = 0;
  private h: Hash = createHash('sha256');
  private done = false;
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly path: string) {}

  advance(end: number): void {
    this.end = Math.max(this.end, end);
  }

  update(bytes: Uint8Array): Promise<void> {
    if (this.done) return Promise.reject(new TensorFSError('internal', 'the follower is finished'));
    const run = this.chain.then(async () => {
      await this.catchUp(this.end);
      this.h.update(bytes);
      this.at += bytes.length;
      this.end = this.at;
    });
    this.chain = run.catch(() => {});
    return run;
  }

  append(chunks: readonly Uint8Array[], at: number): Promise<void> {
    if (this.done) return Promise.reject(new TensorFSError('internal', 'the follower is finished'));
    const run = this.chain.then(async () => {
      await this.catchUp(this.end);
      if (at !== this.at) throw readError('EINVAL');
      const fh = await fs.promises.open(this.path, 'r+');
      try {
        let pos = at;
        for (const c of chunks) {
          for (let done = 0; done < c.length; ) {
            const { bytesWritten } = await fh.write(c, done, c.length - done, pos);
            if (bytesWritten === 0) throw readError('EIO');
            done += bytesWritten;
            pos += bytesWritten;
          }
          this.h.update(c);
        }
      } finally {
        await fh.close();
      }
      this.at = this.end = at + chunks.reduce((n, c) => n + c.length, 0);
    });
    this.chain = run.catch(() => {});
    return run;
  }

  reset(): void {
    this.chain = this.chain.then(() => {
      this.at = 0;
      this.end = 0;
      this.h = createHash('sha256');
    });
  }

  async digest(end: number): Promise<Uint8Array> {
    if (this.done) throw new TensorFSError('internal', 'the follower is finished');
    this.done = true;
    await this.chain;
    await this.catchUp(Math.max(end, this.end));
    return new Uint8Array(this.h.digest());
  }

  close(): void {
    this.done = true;
  }

  /** Reads and hashes the file from what is hashed up to `end`. */
  private async catchUp(end: number): Promise<void> {
    if (this.at >= end) return;
    const fh = await fs.promises.open(this.path, 'r');
    try {
      const buf = Buffer.allocUnsafe(Math.min(READ_BYTES, end - this.at));
      while (this.at < end) {
        const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, end - this.at), this.at);
        if (bytesRead === 0) throw readError('EOF');
        this.h.update(buf.subarray(0, bytesRead));
        this.at += bytesRead;
      }
    } finally {
      await fh.close();
    }
  }
}

/** An errno-style error (`EOF` when the file is shorter than was advanced to, or a failed write); callers wrap it. */
function readError(code: string | undefined): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`file access failed (${code ?? 'EIO'})`);
  err.code = code ?? 'EIO';
  return err;
}
