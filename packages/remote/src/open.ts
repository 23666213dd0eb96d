/** {@link openOrigin}: an origin from a URL or a path. */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TensorFSError } from '@tensorfs/format';
import type { Credential } from './credentials.js';
import { FolderOrigin } from './folder.js';
import { HttpClient, type HttpOptions, offlineFromEnv, readText } from './http.js';
import { HubOrigin, StaticHttpOrigin } from './http-origin.js';
import type { Origin } from './origin.js';
import { S3Origin, type S3OriginOptions } from './s3.js';

/** Options of {@link openOrigin}. */
export interface OpenOriginOptions extends Omit<HttpOptions, 'credential'> {
  /** Token for the hub and static HTTP origins. */
  token?: Credential;
  /** S3 client options. */
  s3?: S3OriginOptions;
}

/**
 * Opens an origin: `hub+http(s)://…` the hub; `http(s)://…` a static HTTP origin (a web server
 * over the portable layout); `s3://bucket/prefix`; `file://…` or a plain path a folder.
 */
export function openOrigin(url: string, options: OpenOriginOptions = {}): Origin {
  const http = { ...options, credential: options.token };
  if (url.startsWith('hub+http://') || url.startsWith('hub+https://')) return new HubOrigin(url.slice(4), http);
  if (url.startsWith('http://') || url.startsWith('https://')) return new StaticHttpOrigin(url, http);
  if (url.startsWith('s3://')) return new S3Origin(url, options.s3);
  if (url.startsWith('file://')) return new FolderOrigin(fileURLToPath(url));
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    throw new TensorFSError('unsupported', 'unknown origin scheme', {
      details: { rule: 'remote.scheme', scheme: url.split(':')[0] },
    });
  }
  return new FolderOrigin(resolve(url));
}

/**
 * {@link openOrigin}, but an `http(s)://` URL is first asked for `/v1`: a TensorFS hub answers
 * with its API description and is used as one; anything else is a static HTTP origin.
 */
export async function connectOrigin(
  url: string,
  options: OpenOriginOptions & { signal?: AbortSignal } = {},
): Promise<Origin> {
  if (!url.startsWith('http://') && !url.startsWith('https://')) return openOrigin(url, options);
  const base = url.replace(/\/+$/, '');
  // Offline, the probe is not sent: the origin is opened as a hub (it may be written to) and
  // every request it makes fails `unavailable` (offline), while reads of what the local store
  // holds go on.
  if (options.offline ?? offlineFromEnv()) return openOrigin(`hub+${base}`, options);
  const client = new HttpClient({ ...options, credential: options.token });
  const res = await client.send({
    method: 'GET',
    url: `${base}/v1`,
    accept: [400, 401, 403, 404, 405],
    signal: options.signal,
  });
  let api: unknown;
  try {
    api = JSON.parse(await readText(res.body, 64 * 1024));
  } catch {
    api = undefined;
  }
  if (res.status === 200 && (api as { api?: unknown })?.api === 'tensorfs-hub')
    return openOrigin(`hub+${base}`, options);
  return openOrigin(base, options);
}
