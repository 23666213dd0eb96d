/**
 * Hashing a file as it is written, on a worker thread: the writer has the thread write each range
 * and hash it ({@link FileFollower.append}; memory handed over or shared travels without a copy),
 * and a prefix already in the file (a resumed part) is read back from it
 * ({@link FileFollower.advance}). A transfer's main thread then only receives while the other core
 * hashes and the thread pool writes, in pieces of {@link WRITE_PIECE} (docs/remote.md "Throughput").
 *
 * One worker serves every follower of the process (SHA-256 at ~1.1 GiB/s outruns any transfer it
 * follows); it keeps the process alive only while a reply is awaited. Where a worker cannot run,
 * the same reads, writes and hashing happen on the calling thread.
 */
import { createHash, type Hash } from 'node:crypto';
import * as fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import { DIRECT_ALIGN, O_DIRECT } from '../store/direct.js';
import { WRITE_PIECE } from '../store/fsutil.js';
import { TensorFSError } from '@tensorfs/format';

/**
 * Hashes one file from byte 0: ranges read back from the file ({@link advance}) and bytes appended
 * ({@link append}), in the order they were asked. Reports read errors at {@link digest}.
 */
export interface FileFollower {
  /** The file holds at least `end` bytes: hash up to there from the file. */
  advance(end: number): void;
  /**
   * Writes `chunks` into the file at `at` (the bytes hashed so far: each append continues where
   * the last ended) and hashes them as its next bytes; resolves once both are done, rejects with
   * the errno-style error of a failed write. Appends reach the file one after another, so a file
   * cut short by a crash holds a prefix. The buffers listed in `transfer` move to the hashing
   * thread (their views here are detached: only for memory the caller gives up); views of a
   * `SharedArrayBuffer` are shared (the caller must not change them until this resolves); other
   * chunks are copied. Needs a follower opened with `write: true`. With `direct`, the bytes are copied
   * into page-aligned 4 MiB buffers written with O_DIRECT, and a last partial block stays in
   * memory until {@link flush}.
   */
  append(chunks: readonly Uint8Array[], at: number, transfer?: readonly ArrayBuffer[]): Promise<void>;
  /**
   * Writes what appends hold back (a direct file's last partial block, padded to 4 KiB: the
   * caller cuts the file to its length) and resolves when every write has ended.
   */
  flush(): Promise<void>;
  /** True once the filesystem refused a direct write (the file was then written buffered). */
  readonly directRefused: boolean;
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

/** Bytes of a direct file's staging buffer (written at once). */
const STAGE_BYTES = 4 << 20;

/**
 * Follows the file at `path`, opened by the hashing thread read-only, or read-write with
 * `write: true` (for {@link FileFollower.append}); `direct` writes appends with O_DIRECT (Linux;
 * a file whose filesystem refuses it is written buffered). `thread: false` (or a platform
 * without worker threads) reads, writes (buffered) and hashes on the calling thread.
 */
export function followFile(
  path: string,
  options: { thread?: boolean; write?: boolean; direct?: boolean } = {},
): FileFollower {
  const w = options.thread === false ? null : sharedWorker();
  const direct = options.direct === true && O_DIRECT !== 0;
  return w ? w.follow(path, options.write === true, direct) : new InlineFollower(path);
}

// The worker: a table of followed files, each with its descriptors, hash state, position and the
// chain of its writes (run by the thread pool while the worker hashes; descriptors are closed only
// after them). A direct file fills page-aligned 4 MiB stages, writes each full one with O_DIRECT
// and keeps the partial last one until a flush; a refused direct write (EINVAL) is redone
// buffered, and the file stays buffered. Any failure is kept and reported by the next append,
// flush or digest (messages are handled in order).
const WORKER_SOURCE = `
const { parentPort, MessageChannel } = process.getBuiltinModule('node:worker_threads');
const { createHash } = process.getBuiltinModule('node:crypto');
const fs = process.getBuiltinModule('node:fs');
const buf = Buffer.allocUnsafe(${READ_BYTES});
const STAGE = ${STAGE_BYTES};
const ALIGN = ${DIRECT_ALIGN};
const PIECE = ${WRITE_PIECE};
const SPARE = 16; // stages kept for reuse (four parts, two appends of up to two stages each)
const spare = [];
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
// Writes chunks at 'at' with writev calls of at most 'piece' bytes each: page-cache writes go in
// pieces of PIECE (WRITE_PIECE in fsutil.ts says why), direct ones whole.
function writeAll(fd, chunks, at, piece) {
  return new Promise((resolve, reject) => {
    let i = 0, off = 0, pos = at;
    const step = () => {
      while (i < chunks.length && off === chunks[i].length) { i++; off = 0; }
      if (i === chunks.length) return resolve();
      const batch = [];
      let n = 0;
      for (let k = i, o = off; k < chunks.length && n < piece; k++, o = 0) {
        const take = Math.min(chunks[k].length - o, piece - n);
        batch.push(chunks[k].subarray(o, o + take));
        n += take;
      }
      fs.writev(fd, batch, pos, (err, w) => {
        if (err) return reject(err);
        if (w === 0) return reject(Object.assign(new Error('no progress'), { code: 'EIO' }));
        pos += w;
        while (w > 0) {
          const left = chunks[i].length - off;
          if (w >= left) { w -= left; i++; off = 0; } else { off += w; w = 0; }
        }
        step();
      });
    };
    step();
  });
}
// A stage: 4 MiB at a page boundary (WebAssembly memory starts on one).
function takeStage() {
  return spare.pop() || new Uint8Array(new WebAssembly.Memory({ initial: STAGE / 65536, maximum: STAGE / 65536 }).buffer);
}
function giveStage(stage) { if (spare.length < SPARE) spare.push(stage); }
// Queues the write of stage bytes [0, n) at 'at': direct (rounded up to the alignment), or buffered.
function writeStage(f, stage, n, at) {
  const run = f.w.then(async () => {
    if (f.dfd >= 0) {
      try { await writeAll(f.dfd, [stage.subarray(0, Math.ceil(n / ALIGN) * ALIGN)], at, Infinity); return; }
      catch (err) { if (err.code !== 'EINVAL') throw err; }
      f.refused = true;
      try { fs.closeSync(f.dfd); } catch {}
      f.dfd = -1;
    }
    await writeAll(f.fd, [stage.subarray(0, n)], at, PIECE);
  });
  f.w = run.catch((err) => { f.error ??= err.code || 'EIO'; }).then(() => giveStage(stage));
}
function stageInto(f, c) {
  for (let i = 0; i < c.length; ) {
    if (f.stage === null) { f.stage = takeStage(); f.fill = 0; }
    const n = Math.min(c.length - i, STAGE - f.fill);
    f.stage.set(c.subarray(i, i + n), f.fill);
    f.fill += n; i += n;
    if (f.fill === STAGE) { writeStage(f, f.stage, STAGE, f.wat); f.wat += STAGE; f.stage = null; }
  }
}
// Buffers posted with a transfer list through a closed channel are freed at once: how this
// thread frees an append's chunks when it is done with them. Left to its garbage collector (this
// thread allocates little, so it collects rarely) they would add tens of megabytes to the RSS.
const drain = new MessageChannel();
drain.port2.close();
function free(chunks) {
  const whole = new Set();
  for (const c of chunks)
    if (c.byteOffset === 0 && c.byteLength === c.buffer.byteLength && c.buffer instanceof ArrayBuffer) whole.add(c.buffer);
  if (whole.size > 0) drain.port1.postMessage(null, [...whole]);
}
// Replies (and frees the append's chunks) once the writes queued so far have ended.
function reply(m, f) {
  f.w.then(() => {
    if (m.chunks) free(m.chunks);
    parentPort.postMessage({ id: m.id, tag: m.tag, error: f.error, refused: f.refused });
  });
}
function finish(f) {
  const fds = [f.fd, f.dfd].filter((fd) => fd >= 0);
  f.fd = f.dfd = -1;
  if (f.stage !== null) { giveStage(f.stage); f.stage = null; }
  f.w.then(() => { for (const fd of fds) try { fs.closeSync(fd); } catch {} });
}
// Every operation but 'open' runs from one queue, in the order asked, whatever its file. A step
// returns false to be called again once the event loop has turned: a buffered append hashes a
// piece per call, so a write's completion (which sends its file's next piece) waits behind at most
// a piece of hashing — not behind other appends — and appends still complete in the order they
// came. (A resumed prefix read back, and a direct append, are hashed in one step.)
const queue = [];
let pumping = false;
function pump() {
  while (queue.length > 0) {
    if (!queue[0]()) { setImmediate(pump); return; }
    queue.shift();
  }
  pumping = false;
}
function appendStep(m, f) {
  let k = -1;
  let i = 0;
  return () => {
    if (k < 0) {
      if (f.error === undefined && m.at !== f.at) f.error = 'EINVAL';
      if (f.error !== undefined) { parentPort.postMessage({ id: m.id, tag: m.tag, error: f.error }); return true; }
      // Direct writes need aligned offsets: a file resumed elsewhere goes buffered.
      if (f.dfd >= 0 && f.stage === null && m.at % ALIGN !== 0) { try { fs.closeSync(f.dfd); } catch {} f.dfd = -1; }
      // (A stage begun stays the way to the file until flushed, even once direct writes were refused.)
      if (f.dfd >= 0 || f.stage !== null) {
        if (f.stage === null) f.wat = m.at;
        for (const c of m.chunks) { f.h.update(c); f.at += c.length; stageInto(f, c); }
        reply(m, f);
        return true;
      }
      // The write is queued first: the thread pool writes while this thread hashes.
      const fd = f.fd;
      f.w = f.w.then(() => writeAll(fd, m.chunks, m.at, PIECE)).catch((err) => { f.error ??= err.code || 'EIO'; });
      k = 0;
    }
    while (k < m.chunks.length && i === m.chunks[k].length) { k++; i = 0; }
    if (k === m.chunks.length) { reply(m, f); return true; }
    const c = m.chunks[k];
    const end = Math.min(c.length, i + PIECE);
    f.h.update(c.subarray(i, end));
    f.at += end - i;
    i = end;
    return false;
  };
}
function step(m, f) {
  if (m.op === 'to') return () => { upTo(f, m.end); return true; };
  if (m.op === 'append') return appendStep(m, f);
  if (m.op === 'flush') return () => {
    if (f.stage !== null && f.fill > 0) writeStage(f, f.stage, f.fill, f.wat);
    else if (f.stage !== null) giveStage(f.stage);
    f.stage = null;
    reply(m, f);
    return true;
  };
  if (m.op === 'reset') return () => {
    f.h = createHash('sha256'); f.at = 0;
    if (f.stage !== null) { giveStage(f.stage); f.stage = null; }
    if (f.error !== 'ENOENT' && f.fd >= 0) f.error = undefined;
    return true;
  };
  if (m.op === 'digest') return () => {
    upTo(f, m.end);
    const error = f.error;
    const d = error === undefined ? f.h.digest() : undefined;
    parentPort.postMessage({ id: m.id, tag: m.tag, error, digest: d && d.buffer.slice(d.byteOffset, d.byteOffset + 32) });
    finish(f);
    return true;
  };
  return () => { finish(f); return true; };
}
parentPort.on('message', (m) => {
  if (m.op === 'open') {
    const f = { at: 0, h: createHash('sha256'), fd: -1, dfd: -1, error: undefined, refused: false, w: Promise.resolve(), stage: null, fill: 0, wat: 0 };
    try { f.fd = fs.openSync(m.path, m.write ? 'r+' : 'r'); } catch (err) { f.error = err.code || 'EIO'; }
    if (m.direct && f.error === undefined) {
      try { f.dfd = fs.openSync(m.path, fs.constants.O_WRONLY | fs.constants.O_DIRECT); }
      catch (err) { if (err.code === 'EINVAL') f.refused = true; else f.error = err.code || 'EIO'; }
    }
    files.set(m.id, f);
    return;
  }
  const f = files.get(m.id);
  if (!f) return;
  if (m.op === 'digest' || m.op === 'close') files.delete(m.id);
  queue.push(step(m, f));
  if (!pumping) { pumping = true; pump(); }
});
`;

/** A reply of the worker: a failure's errno-style code, a digest, whether direct writes were refused. */
interface Reply {
  error?: string;
  digest?: ArrayBuffer;
  refused?: boolean;
}

type Waiter = { resolve: (r: Reply) => void; reject: (e: unknown) => void };

class HashWorker {
  private readonly worker: Worker;
  /** Replies awaited, by tag. */
  private readonly waiting = new Map<number, Waiter>();
  private nextId = 0;
  private nextTag = 0;
  dead = false;

  constructor() {
    this.worker = new Worker(WORKER_SOURCE, { eval: true });
    this.worker.on('message', (m: Reply & { tag: number }) => {
      const w = this.waiting.get(m.tag);
      if (!w) return;
      this.waiting.delete(m.tag);
      if (this.waiting.size === 0) this.worker.unref();
      if (m.error !== undefined) w.reject(readError(m.error));
      else w.resolve(m);
    });
    const fail = (cause: unknown) => {
      this.dead = true;
      const err = new TensorFSError('internal', 'the hashing thread failed', {
        details: { rule: 'hash.thread_failed' },
        cause,
      });
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`exit code ${code}`)));
    this.worker.unref();
  }

  /** Posts `m` (moving the buffers in `transfer`) and resolves with the reply to it. */
  private ask(m: object, transfer?: readonly ArrayBuffer[]): Promise<Reply> {
    if (this.dead)
      return Promise.reject(
        new TensorFSError('internal', 'the hashing thread failed', { details: { rule: 'hash.thread_failed' } }),
      );
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

  follow(path: string, write: boolean, direct: boolean): FileFollower {
    const id = this.nextId++;
    const post = (m: object) => this.worker.postMessage({ id, ...m });
    post({ op: 'open', path, write, direct });
    let done = false;
    let end = 0;
    let refused = false;
    const finished = () =>
      new TensorFSError('internal', 'the follower is finished', { details: { rule: 'hash.follower_finished' } });
    const note = (r: Reply) => {
      if (r.refused) refused = true;
    };
    return {
      advance: (n) => {
        if (done || n <= end) return;
        end = n;
        post({ op: 'to', end: n });
      },
      append: async (chunks, at, transfer) => {
        if (done) throw finished();
        for (const c of chunks) end += c.length;
        note(await this.ask({ id, op: 'append', chunks, at }, transfer));
      },
      flush: async () => {
        if (done) throw finished();
        note(await this.ask({ id, op: 'flush' }));
      },
      get directRefused() {
        return refused;
      },
      reset: () => {
        if (done) return;
        end = 0;
        post({ op: 'reset' });
      },
      digest: async (n) => {
        if (done) throw finished();
        done = true;
        return new Uint8Array((await this.ask({ id, op: 'digest', end: Math.max(n, end) })).digest!);
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

  append(chunks: readonly Uint8Array[], at: number): Promise<void> {
    if (this.done)
      return Promise.reject(
        new TensorFSError('internal', 'the follower is finished', { details: { rule: 'hash.follower_finished' } }),
      );
    const run = this.chain.then(async () => {
      await this.catchUp(this.end);
      if (at !== this.at) throw readError('EINVAL');
      const fh = await fs.promises.open(this.path, 'r+');
      try {
        let pos = at;
        for (const c of chunks) {
          for (let done = 0; done < c.length; ) {
            const { bytesWritten } = await fh.write(c, done, Math.min(WRITE_PIECE, c.length - done), pos);
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

  async flush(): Promise<void> {
    await this.chain;
  }

  /** Writes here are buffered. */
  readonly directRefused = false;

  reset(): void {
    this.chain = this.chain.then(() => {
      this.at = 0;
      this.end = 0;
      this.h = createHash('sha256');
    });
  }

  async digest(end: number): Promise<Uint8Array> {
    if (this.done)
      throw new TensorFSError('internal', 'the follower is finished', { details: { rule: 'hash.follower_finished' } });
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
