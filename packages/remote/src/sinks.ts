/**
 * Where the transfer engine puts the bytes of one object while they arrive: memory (small
 * objects, admitted with one put) or a resumable part file on disk (large ones).
 */
import * as fsp from 'node:fs/promises';
import { TensorFSError } from '@tensorfs/format';

/** What receives one object's bytes. */
export interface Sink {
  readonly length: number;
  /**
   * `handOver`: the chunk's memory is the sink's (see {@link ObjectRead.owned}) until it calls
   * `done`, if it does (a sink that keeps the chunk never does).
   */
  write(chunk: Uint8Array, options?: { handOver?: boolean; done?: () => void }): Promise<void>;
  reset(): Promise<void>;
}

/** Most bytes one write of a {@link FileSink} takes (as the store's `WRITE_PIECE`). */
const PIECE = 256 << 10;

export class MemorySink implements Sink {
  private parts: Uint8Array[] = [];
  length = 0;
  async write(chunk: Uint8Array): Promise<void> {
    this.parts.push(chunk);
    this.length += chunk.length;
  }
  async reset(): Promise<void> {
    this.parts = [];
    this.length = 0;
  }
  bytes(): Uint8Array {
    return this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.length);
  }
}

/** Appends to a part file (in batches of about 4 MiB); a part longer than the object is discarded. */
export class FileSink implements Sink {
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  /** The callers' `done` of the chunks in {@link pending}. */
  private pendingDone: (() => void)[] = [];

  private constructor(
    private readonly path: string,
    private fh: fsp.FileHandle,
    public length: number,
  ) {}

  static async open(path: string, len: number): Promise<FileSink> {
    let size = 0;
    try {
      size = (await fsp.stat(path)).size;
    } catch {
      size = 0;
    }
    if (size > len) {
      await fsp.rm(path, { force: true });
      size = 0;
    }
    let fh: fsp.FileHandle;
    try {
      fh = await fsp.open(path, 'a');
    } catch (err) {
      throw new TensorFSError('io', 'cannot write a partial download', {
        details: { rule: 'pull.part_io', errno: (err as { code?: string }).code ?? 'unknown' },
      });
    }
    return new FileSink(path, fh, size);
  }

  async write(chunk: Uint8Array, options?: { done?: () => void }): Promise<void> {
    this.pending.push(chunk);
    if (options?.done) this.pendingDone.push(options.done);
    this.pendingBytes += chunk.length;
    this.length += chunk.length;
    if (this.pendingBytes >= 4 << 20) await this.flush();
  }

  /** Writes what is buffered (also before a resume reads the part's length from disk), 256 KiB per call. */
  async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const parts = this.pending;
    const dones = this.pendingDone;
    this.pending = [];
    this.pendingDone = [];
    this.pendingBytes = 0;
    try {
      for (const p of parts) {
        for (let at = 0; at < p.length; ) {
          const { bytesWritten } = await this.fh.write(p, at, Math.min(PIECE, p.length - at));
          if (bytesWritten === 0) throw Object.assign(new Error('no progress'), { code: 'EIO' });
          at += bytesWritten;
        }
      }
    } finally {
      for (const done of dones) done();
    }
  }

  async reset(): Promise<void> {
    for (const done of this.pendingDone.splice(0)) done();
    this.pending = [];
    this.pendingBytes = 0;
    await this.fh.truncate(0);
    await this.fh.close();
    this.fh = await fsp.open(this.path, 'a');
    this.length = 0;
  }

  async close(): Promise<void> {
    await this.flush().catch(() => {});
    await this.fh.close().catch(() => {});
  }
}
