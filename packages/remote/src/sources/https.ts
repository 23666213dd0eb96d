/**
 * `https://…` (and `http://…`) URLs to one file as a source of the import pipeline. The file is
 * asked about first (`HEAD`, or a one-byte `Range` where `HEAD` is refused) for its size, ETag and
 * Last-Modified; then read header first by `Range`, the rest in one stream, reopened where it
 * stopped. A server that ignores `Range` still works (its `200` bodies are skipped up to where
 * the read starts). Redirects are followed; credentials, if any, never go past the first origin.
 * With a spool folder, an interrupted import continues from the bytes kept (see `openSpool` of
 * `@tensorfs/cas`).
 */
import { basename } from 'node:path';
import { TensorFSError, validatePath } from '@tensorfs/format';
import { displayUrl, HttpClient, type HttpOptions, type HttpResponse } from '../http.js';
import {
  type AnnouncedDigest,
  type OpenedRange,
  openSpool,
  type Source,
  type SourceArea,
  type SourceFile,
  type SourceVoice,
  type Spool,
} from '@tensorfs/cas';

/** Where an `https://` import came from: recorded with the snapshot, and printed. */
export interface HttpsProvenance {
  kind: 'https';
  /** The URL as given (scheme, host and path: no query, no user info). */
  url: string;
  /** The file's path in the snapshot. */
  path: string;
  size: number;
  /** The validators the server gave, when it gave them. */
  etag?: string;
  lastModified?: string;
  /** The SHA-256 of the bytes imported (checked against `--sha256` when one was given). */
  sha256: string;
  /** When it was fetched (ISO 8601). */
  fetchedAt: string;
}

/** Options of {@link httpsSource}. */
export interface HttpsSourceOptions {
  /** The SHA-256 (64 hex digits) the bytes must have (`corrupt`, `https.digest_mismatch` otherwise). */
  sha256?: string;
  /** The file's path in the snapshot (default: the URL's last path segment). */
  path?: string;
  /** A folder where partial downloads are kept so a later attempt resumes (the CLI: the store's). */
  spoolDir?: string;
  /** Retries, timeouts, redirects. */
  http?: Omit<HttpOptions, 'credential'>;
}

/** True if `src` is an `http://` or `https://` URL. */
export function isHttpsUrl(src: string): boolean {
  return /^https?:\/\//i.test(src);
}

/** What a server says about one file. */
export interface HttpFileInfo {
  size: number;
  etag?: string;
  lastModified?: string;
  /** The URL that answered (after redirects). */
  finalUrl: string;
}

function header(res: HttpResponse, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function discard(res: HttpResponse): void {
  res.body.dump().catch(() => {});
}

/** `invalid_argument` unless `url` is an http(s) URL without user info. */
export function checkHttpUrl(url: string, rules: SourceArea): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new TensorFSError('invalid_argument', 'not a URL', { details: { rule: `${rules}.url` } });
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') {
    throw new TensorFSError('invalid_argument', 'only http(s) URLs can be imported', {
      details: { rule: `${rules}.url`, actual: u.protocol },
    });
  }
  if (u.username || u.password) {
    throw new TensorFSError('invalid_argument', 'a URL with user info is refused (it would be recorded and printed)', {
      details: { rule: `${rules}.url` },
    });
  }
  return u;
}

/** 401/403/404/410 as `denied` / `not_found`, with the source's rule prefix. */
function refusal(res: HttpResponse, voice: SourceVoice, hint: string): TensorFSError {
  const details = { status: res.status, url: displayUrl(res.url) };
  if (res.status === 401 || res.status === 403) {
    return new TensorFSError('denied', `${voice.who} refused access to ${displayUrl(res.url)}${hint}`, {
      details: { rule: `${voice.rules}.denied`, ...details },
    });
  }
  return new TensorFSError('not_found', `${voice.who} has no file at ${displayUrl(res.url)}`, {
    details: { rule: `${voice.rules}.not_found`, ...details },
  });
}

const REFUSED = [401, 403, 404, 410];

/**
 * Asks the server what the file at `url` is: `HEAD` (redirects followed), or where `HEAD` is not
 * answered (405/501), `GET` of its first byte. `unsupported` when it says no length.
 */
export async function probeHttpFile(
  http: HttpClient,
  url: string,
  voice: SourceVoice,
  signal?: AbortSignal,
  hint = '',
): Promise<HttpFileInfo> {
  let res = await http.send({ method: 'HEAD', url, accept: [...REFUSED, 405, 501], ...(signal ? { signal } : {}) });
  discard(res);
  let size: number | undefined;
  if (REFUSED.includes(res.status)) throw refusal(res, voice, hint);
  if (res.status === 405 || res.status === 501) {
    res = await http.send({
      method: 'GET',
      url,
      headers: { range: 'bytes=0-0' },
      accept: REFUSED,
      ...(signal ? { signal } : {}),
    });
    discard(res);
    if (REFUSED.includes(res.status)) throw refusal(res, voice, hint);
    const m = /^bytes \d+-\d+\/(\d+)$/.exec(header(res, 'content-range') ?? '');
    if (res.status === 206 && m) size = Number(m[1]);
  }
  if (size === undefined && res.status === 200) {
    const cl = header(res, 'content-length');
    if (cl !== undefined && /^\d+$/.test(cl.trim())) size = Number(cl.trim());
  }
  if (size === undefined || !Number.isSafeInteger(size)) {
    throw new TensorFSError('unsupported', `${voice.who} does not say how long the file is (no Content-Length)`, {
      details: { rule: `${voice.rules}.no_length`, url: displayUrl(url) },
    });
  }
  const etag = header(res, 'etag');
  const lastModified = header(res, 'last-modified');
  return {
    size,
    ...(etag !== undefined ? { etag: etag.trim() } : {}),
    ...(lastModified !== undefined ? { lastModified: lastModified.trim() } : {}),
    finalUrl: res.url,
  };
}

/**
 * One remote file for the pipeline: ranges of `url` checked against `info` (the same size and,
 * where the server gave one, the same ETag: a file that changed meanwhile is `conflict`).
 */
export function httpSourceFile(
  http: HttpClient,
  url: string,
  info: HttpFileInfo,
  path: string,
  voice: SourceVoice,
  extra: { digest?: AnnouncedDigest; spool?: Spool; hint?: string } = {},
): SourceFile {
  const open = async (start: number, end: number | undefined, signal?: AbortSignal): Promise<OpenedRange> => {
    const range = `bytes=${start}-${end === undefined ? '' : end - 1}`;
    const res = await http.send({
      method: 'GET',
      url,
      headers: { range },
      accept: REFUSED,
      ...(signal ? { signal } : {}),
    });
    if (REFUSED.includes(res.status)) {
      discard(res);
      throw refusal(res, voice, extra.hint ?? '');
    }
    const etag = header(res, 'etag')?.trim();
    if (info.etag !== undefined && etag !== undefined && etag !== info.etag) {
      discard(res);
      throw new TensorFSError('conflict', `${path}: the file changed on ${voice.who} while it was read; import again`, {
        details: { rule: `${voice.rules}.changed`, path, expected: info.etag, actual: etag.slice(0, 80) },
      });
    }
    if (res.status === 206) {
      const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(header(res, 'content-range') ?? '');
      if (m && m[3] !== '*' && Number(m[3]) !== info.size) {
        discard(res);
        throw new TensorFSError('corrupt', `${path}: ${voice.who} announced ${info.size} bytes, but serves ${m[3]}`, {
          details: { rule: `${voice.rules}.size_mismatch`, path, expected: info.size, actual: Number(m[3]) },
        });
      }
      if (!m || Number(m[1]) !== start) {
        discard(res);
        throw new TensorFSError('corrupt', `${voice.who} answered another byte range than the one asked for`, {
          details: {
            rule: `${voice.rules}.bad_range`,
            path,
            expected: range,
            actual: header(res, 'content-range') ?? '',
          },
        });
      }
      return { body: res.body, skip: 0 };
    }
    if (res.status === 200) {
      const cl = header(res, 'content-length')?.trim();
      if (cl !== undefined && /^\d+$/.test(cl) && Number(cl) !== info.size) {
        discard(res);
        throw new TensorFSError('corrupt', `${path}: ${voice.who} announced ${info.size} bytes, but serves ${cl}`, {
          details: { rule: `${voice.rules}.size_mismatch`, path, expected: info.size, actual: Number(cl) },
        });
      }
      return { body: res.body, skip: start }; // Range ignored: skip to `start`
    }
    discard(res);
    throw new TensorFSError('unavailable', `${voice.who} answered ${res.status} to a file read`, {
      details: { rule: `http.${res.status}`, path },
    });
  };
  return {
    path,
    size: info.size,
    ...(extra.digest !== undefined ? { digest: extra.digest } : {}),
    ...(extra.spool !== undefined ? { spool: extra.spool } : {}),
    open,
  };
}

/** `invalid_argument` unless `hex` is a SHA-256 (64 hex digits, either case); returns it lowercased. */
export function checkSha256(hex: string, rule: `${SourceArea}.sha256`): string {
  if (typeof hex !== 'string' || !/^[0-9a-fA-F]{64}$/.test(hex)) {
    throw new TensorFSError('invalid_argument', 'a SHA-256 is 64 hex digits', { details: { rule } });
  }
  return hex.toLowerCase();
}

/** True for `localhost`, `127.0.0.0/8` and `::1`. */
function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** The file name a URL names (its last path segment, decoded), or `download`. */
export function urlFileName(u: URL): string {
  let name = '';
  try {
    name = decodeURIComponent(basename(u.pathname));
  } catch {
    name = basename(u.pathname);
  }
  name = name.replace(/[\u0000-\u001f\u007f/\\]/g, '_').replace(/^\.+/, '');
  return name.length > 0 ? name.slice(0, 200) : 'download';
}

/**
 * `https://…` (or `http://…`) to one file as a pipeline source: the snapshot holds that file at
 * `path` (default the URL's file name). Its ETag / Last-Modified and SHA-256 are the source
 * metadata; `sha256` demands a digest. Plain `http://` is taken for loopback hosts, or with
 * `sha256` (`invalid_argument`, `https.insecure` otherwise).
 * @throws {TensorFSError} `invalid_argument` (URL, `sha256`, `path`) at once; when resolved
 *   `denied`, `not_found`, `unsupported` (`https.no_length`), `unavailable`.
 */
export function httpsSource(url: string, options: HttpsSourceOptions = {}): Source<HttpsProvenance> {
  const u = checkHttpUrl(url, 'https');
  const sha256 = options.sha256 !== undefined ? checkSha256(options.sha256, 'https.sha256') : undefined;
  if (u.protocol === 'http:' && sha256 === undefined && !isLoopback(u.hostname)) {
    // Nothing would check the bytes: anyone on the way could change them.
    throw new TensorFSError(
      'invalid_argument',
      'plain http:// to another host is refused without --sha256 (nothing would check the bytes): use https://',
      { details: { rule: 'https.insecure', host: u.hostname.slice(0, 100) } },
    );
  }
  const path = options.path ?? urlFileName(u);
  validatePath(path);
  const voice: SourceVoice = { rules: 'https', who: 'the server' };
  return {
    async resolve(signal) {
      const http = new HttpClient(options.http ?? {});
      const info = await probeHttpFile(http, u.href, voice, signal);
      const spool =
        options.spoolDir !== undefined
          ? await openSpool(options.spoolDir, {
              url: u.href,
              size: info.size,
              ...(info.etag !== undefined ? { etag: info.etag } : {}),
              ...(info.lastModified !== undefined ? { lastModified: info.lastModified } : {}),
            })
          : undefined;
      const file = httpSourceFile(http, u.href, info, path, voice, {
        ...(sha256 !== undefined ? { digest: { algorithm: 'sha256', hex: sha256 } } : {}),
        ...(spool !== undefined ? { spool } : {}),
      });
      return {
        label: `https ${displayUrl(u.href)}`,
        voice,
        files: [file],
        provenance: (digests) => ({
          kind: 'https',
          url: displayUrl(u.href),
          path,
          size: info.size,
          ...(info.etag !== undefined ? { etag: info.etag } : {}),
          ...(info.lastModified !== undefined ? { lastModified: info.lastModified } : {}),
          sha256: digests.get(path)!,
          fetchedAt: new Date().toISOString(),
        }),
        close: async () => {
          await spool?.close();
        },
      };
    },
  };
}
