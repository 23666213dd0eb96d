/**
 * One file of a source as a {@link ByteSource}: bytes below the probed prefix come from the
 * header probe (bounded ranges), the rest from one forward stream, reopened where it stopped if
 * it fails. Every byte is hashed once, in order, into the file's whole-file digest. With a spool,
 * the bytes received are also kept on disk, so a later attempt reads them from there and asks
 * the source only for the rest.
 */
import { createHash, type Hash } from 'node:crypto';
import { type ByteSource, cancelledError, isTensorFSError, TensorFSError } from '@tensorfs/format';

import type { SourceFile, SourceVoice } from './source.js';

/** Longest header prefix read by ranges before a file is streamed (parsers cap headers lower). */
export const MAX_PROBE_BYTES = 256 * 1024 * 1024;
/** Times a file stream that failed mid-body is reopened where it stopped. */
export const STREAM_RESUMES = 3;

type Body = AsyncIterable<Uint8Array> & { destroy?: () => void };

/** See the module comment. */
export class RemoteFile implements ByteSource {
  readonly size: number;
  private prefix = new Uint8Array(0);
  private probing = true;
  private stream:
    | { pos: number; it: AsyncIterator<Uint8Array>; body: { destroy?: () => void }; held: Uint8Array; skip: number }
    | undefined;
  private readonly hash: Hash;
  private hashedTo = 0;
  fetched = 0;

  constructor(
    readonly file: SourceFile,
    private readonly voice: SourceVoice,
    private readonly signal: AbortSignal | undefined,
    private readonly onBytes: (n: number) => void,
  ) {
    this.size = file.size;
    if (file.digest?.algorithm === 'git-blob') this.hash = createHash('sha1').update(`blob ${file.size}\0`);
    else this.hash = createHash('sha256');
  }

  /** Ends the header probe: from now on, bytes past the prefix come from the stream. */
  endProbe(): void {
    this.probing = false;
  }

  async read(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    const out = new Uint8Array(length);
    await this.readInto(offset, out, signal);
    return out;
  }

  async readInto(offset: number, target: Uint8Array, _signal?: AbortSignal): Promise<void> {
    const length = target.length;
    if (!Number.isSafeInteger(offset) || offset < 0 || offset + length > this.size) {
      throw new TensorFSError('invalid_argument', 'read outside the source', {
        details: { rule: 'source.range', offset, length, size: this.size },
      });
    }
    if (this.signal?.aborted) throw cancelledError(this.signal.reason);
    const end = offset + length;
    if (this.probing && end > this.prefix.length) {
      if (end > MAX_PROBE_BYTES) {
        throw new TensorFSError('limit_exceeded', 'the file header is larger than a header probe reads', {
          details: { rule: `${this.voice.rules}.header_limit`, path: this.file.path, limit: MAX_PROBE_BYTES },
        });
      }
      const more = new Uint8Array(end - this.prefix.length);
      await this.fetchExact(this.prefix.length, more);
      const grown = new Uint8Array(end);
      grown.set(this.prefix);
      grown.set(more, this.prefix.length);
      this.prefix = grown;
    }
    let at = offset;
    if (at < this.prefix.length) {
      const n = Math.min(end, this.prefix.length) - at;
      target.set(this.prefix.subarray(at, at + n), 0);
      at += n;
    }
    if (at < end) await this.fromStream(at, target.subarray(at - offset));
    // Whole-file digest: every byte once, in order (the planner re-reads the header region).
    if (offset <= this.hashedTo && end > this.hashedTo) {
      this.hash.update(target.subarray(this.hashedTo - offset));
      this.hashedTo = end;
    }
  }

  /** Bytes `[start, start+target.length)` kept by the spool: copied, and the count returned. */
  private async fromSpool(start: number, target: Uint8Array): Promise<number> {
    const spool = this.file.spool;
    if (spool === undefined || start >= spool.length) return 0;
    const n = Math.min(target.length, spool.length - start);
    await spool.read(start, target.subarray(0, n));
    return n;
  }

  /** Keeps bytes received from the source at `offset` in the spool (contiguous appends only). */
  private async keep(offset: number, bytes: Uint8Array): Promise<void> {
    const spool = this.file.spool;
    if (spool === undefined || bytes.length === 0) return;
    if (offset <= spool.length && offset + bytes.length > spool.length) {
      await spool.append(spool.length, bytes.subarray(spool.length - offset));
    }
  }

  /**
   * Fills `target` with the bytes at `start` (from the spool, then by a bounded range request),
   * asking again for what is left when an answer ends early or fails (up to {@link STREAM_RESUMES}).
   */
  private async fetchExact(start: number, target: Uint8Array): Promise<void> {
    let filled = await this.fromSpool(start, target);
    if (filled === target.length) return;
    for (let resumes = 0; ; resumes++) {
      let failure: TensorFSError | undefined;
      const at = start + filled;
      const { body, skip } = await this.file.open(at, start + target.length, this.signal);
      try {
        const n = await this.drain(body, skip, target.subarray(filled));
        await this.keep(at, target.subarray(filled, filled + n));
        filled += n;
      } catch (err) {
        failure = this.streamError(err);
        if (failure.code !== 'unavailable') throw failure;
      }
      if (filled === target.length) return;
      if (resumes >= STREAM_RESUMES) throw failure ?? this.truncated(start + filled);
    }
  }

  private truncated(offset: number): TensorFSError {
    return new TensorFSError('unavailable', `${this.voice.who} ended a file read early`, {
      details: { rule: `${this.voice.rules}.truncated`, path: this.file.path, offset },
    });
  }

  /** Copies `body` (after skipping `skip` bytes) into `target`; returns the bytes copied. */
  private async drain(body: Body, skip: number, target: Uint8Array): Promise<number> {
    let filled = 0;
    try {
      for await (const chunk of body) {
        this.count(chunk.length);
        let c = chunk;
        if (skip > 0) {
          const s = Math.min(skip, c.length);
          skip -= s;
          c = c.subarray(s);
        }
        const n = Math.min(c.length, target.length - filled);
        target.set(c.subarray(0, n), filled);
        filled += n;
        if (filled === target.length) break;
      }
      return filled;
    } catch (err) {
      // Bytes already copied count: the caller asks for the rest.
      if (filled > 0 && !this.signal?.aborted) return filled;
      throw err;
    } finally {
      body.destroy?.();
    }
  }

  private count(n: number): void {
    this.fetched += n;
    this.onBytes(n);
  }

  private streamError(err: unknown): TensorFSError {
    if (this.signal?.aborted) return cancelledError(this.signal.reason);
    if (isTensorFSError(err)) return err;
    return new TensorFSError('unavailable', `a file read from ${this.voice.who} failed`, {
      details: {
        rule: `${this.voice.rules}.stream`,
        path: this.file.path,
        cause: (err as { code?: string })?.code ?? 'error',
      },
    });
  }

  private async open(pos: number): Promise<void> {
    this.close();
    const { body, skip } = await this.file.open(pos, undefined, this.signal);
    this.stream = { pos, it: body[Symbol.asyncIterator](), body, held: new Uint8Array(0), skip };
  }

  private async fromStream(pos: number, target: Uint8Array): Promise<void> {
    // What an earlier attempt kept is read from the spool; the source is asked for the rest.
    const spooled = await this.fromSpool(pos, target);
    if (spooled === target.length) return;
    pos += spooled;
    target = target.subarray(spooled);
    let resumes = 0;
    if (this.stream === undefined || this.stream.pos !== pos) await this.open(pos);
    let filled = 0;
    while (filled < target.length) {
      const s = this.stream!;
      if (s.held.length === 0) {
        let next: IteratorResult<Uint8Array>;
        try {
          next = await s.it.next();
        } catch (err) {
          const e = this.streamError(err);
          if (e.code !== 'unavailable' || resumes >= STREAM_RESUMES) throw e;
          resumes++;
          await this.open(s.pos);
          continue;
        }
        if (next.done) {
          if (resumes >= STREAM_RESUMES) throw this.truncated(s.pos);
          resumes++;
          await this.open(s.pos);
          continue;
        }
        this.count(next.value.length);
        let c = next.value;
        if (s.skip > 0) {
          const k = Math.min(s.skip, c.length);
          s.skip -= k;
          c = c.subarray(k);
        }
        s.held = c;
        continue;
      }
      const n = Math.min(s.held.length, target.length - filled);
      const piece = s.held.subarray(0, n);
      target.set(piece, filled);
      await this.keep(s.pos, piece);
      s.held = s.held.subarray(n);
      s.pos += n;
      filled += n;
    }
  }

  /** A stream of every byte from `pos` to the end (for a large blob stored whole). */
  async *rest(pos: number): AsyncGenerator<Uint8Array> {
    const chunk = 8 * 1024 * 1024;
    for (let at = pos; at < this.size; ) {
      const buf = new Uint8Array(Math.min(chunk, this.size - at));
      await this.readInto(at, buf);
      at += buf.length;
      yield buf;
    }
  }

  /** The whole-file digest (hex), or undefined if not every byte went through in order. */
  digest(): string | undefined {
    return this.hashedTo === this.size ? this.hash.digest('hex') : undefined;
  }

  close(): void {
    if (this.stream) {
      this.stream.body.destroy?.();
      this.stream = undefined;
    }
  }
}
