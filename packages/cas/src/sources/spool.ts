/**
 * The on-disk memory of a partial download, so an interrupted `https://` or `civitai://` import
 * continues where the last attempt stopped: `<dir>/<key>.part` holds bytes `[0, n)` of the file
 * and `<key>.json` what the server said the file was (URL, size, ETag, Last-Modified). A later
 * attempt keeps the bytes only if the server still names the same file by a validator (an ETag or
 * a Last-Modified date, and the same size); otherwise it starts again from byte 0. The bytes are
 * hashed again on the way (records and the whole-file digest), so kept bytes are verified as
 * much as fetched ones.
 */
import { createHash } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { TensorFSError } from '@tensorfs/format';
import { checkObject, checkString } from '../store/args.js';
import type { Spool } from './source.js';

/** What identifies the remote file a spool holds a prefix of. */
export interface SpoolIdentity {
  url: string;
  size: number;
  etag?: string;
  lastModified?: string;
}

function ioErr(err: unknown, op: string): TensorFSError {
  return new TensorFSError('io', `cannot ${op} the partial download`, {
    details: { rule: 'source.spool_io', errno: (err as { code?: string })?.code ?? 'unknown' },
    cause: err,
  });
}

/** The spool key of a URL (its SHA-256: file names stay short and hold nothing secret). */
export function spoolKey(url: string): string {
  checkString(url, 'url');
  return createHash('sha256').update(url).digest('hex');
}

/**
 * Opens (or starts) the spool of `identity` in `dir`. Without a validator (neither ETag nor
 * Last-Modified) nothing is kept across attempts: the spool starts empty each time.
 */
export async function openSpool(dir: string, identity: SpoolIdentity): Promise<Spool> {
  checkString(dir, 'dir');
  checkObject(identity, 'identity');
  const key = spoolKey(identity.url);
  const part = join(dir, `${key}.part`);
  const meta = join(dir, `${key}.json`);
  const wanted = JSON.stringify({
    url: identity.url,
    size: identity.size,
    etag: identity.etag ?? null,
    lastModified: identity.lastModified ?? null,
  });
  const validated = identity.etag !== undefined || identity.lastModified !== undefined;
  try {
    await fsp.mkdir(dir, { recursive: true });
    let keep = false;
    if (validated) {
      const previous = await fsp.readFile(meta, 'utf8').catch(() => null);
      keep = previous === wanted;
    }
    let fh = keep ? await fsp.open(part, 'r+').catch(() => null) : null;
    if (fh === null) {
      keep = false;
      fh = await fsp.open(part, 'w+');
    }
    let length = 0;
    if (keep) {
      length = Math.min((await fh.stat()).size, identity.size);
    } else {
      await fsp.writeFile(meta, wanted);
    }
    return new FileSpool(fh, part, meta, length);
  } catch (err) {
    throw ioErr(err, 'open');
  }
}

class FileSpool implements Spool {
  private closed = false;

  constructor(
    private readonly fh: fsp.FileHandle,
    private readonly part: string,
    private readonly meta: string,
    public length: number,
  ) {}

  async read(offset: number, target: Uint8Array): Promise<void> {
    let at = 0;
    while (at < target.length) {
      const { bytesRead } = await this.fh.read(target, at, target.length - at, offset + at).catch((err) => {
        throw ioErr(err, 'read');
      });
      if (bytesRead === 0) throw ioErr(new Error('short'), 'read');
      at += bytesRead;
    }
  }

  async append(offset: number, bytes: Uint8Array): Promise<void> {
    if (this.closed || offset !== this.length || bytes.length === 0) return;
    await this.fh.write(bytes, 0, bytes.length, offset).catch((err) => {
      throw ioErr(err, 'write');
    });
    this.length += bytes.length;
  }

  async done(): Promise<void> {
    await this.close();
    await fsp.rm(this.part, { force: true });
    await fsp.rm(this.meta, { force: true });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.fh.close().catch(() => {});
  }
}
