/**
 * `civitai://<model-version-id>` (and `https://civitai.com/models/<id>?modelVersionId=<v>` page
 * URLs) as a source of the import pipeline. The version is asked of the Civitai API
 * (`GET /api/v1/model-versions/{id}`; a model page without a version: `GET /api/v1/models/{id}`,
 * its first — newest — version); its `files[]` (`name`, `sizeKB`, `hashes.SHA256`, `downloadUrl`,
 * `primary`) are the snapshot's files, each file's SHA-256 checked against what the API announced
 * before any ref names it. `CIVITAI_TOKEN` goes as `Authorization: Bearer` to the API's own origin
 * only: never to a download URL elsewhere, nor past a redirect (the CDN).
 */
import { globMatcher, TensorFSError, validatePath } from '@tensorfs/format';
import type { Credential } from '../credentials.js';
import { displayUrl, HttpClient, type HttpOptions, readText } from '../http.js';
import { checkHttpUrl, httpSourceFile, probeHttpFile } from './https.js';
import { openSpool, type Source, type SourceFile, type SourceVoice } from '@tensorfs/cas';

/** The public Civitai site (its API is under `/api/v1`). */
export const CIVITAI_DEFAULT_ENDPOINT = 'https://civitai.com';

/** A parsed Civitai source: a model version, or a model whose newest version is meant. */
export type CivitaiSpec = { versionId: number } | { modelId: number; versionId?: undefined };

/** One file of a model version, as the API lists it. */
export interface CivitaiFile {
  name: string;
  /** The exact length (from the download's `Content-Length`). */
  size: number;
  /** The API's `sizeKB`. */
  sizeKB: number;
  /** The SHA-256 the API announces (lowercased). */
  sha256: string;
  primary: boolean;
}

/** Where a `civitai://` import came from: recorded with the snapshot, and printed. */
export interface CivitaiProvenance {
  kind: 'civitai';
  /** The API's site (scheme, host and path). */
  endpoint: string;
  modelId: number | null;
  versionId: number;
  /** The version's name (`v16.0`) and its model's, as the API gave them. */
  versionName: string | null;
  modelName: string | null;
  baseModel: string | null;
  include?: string[];
  files: CivitaiFile[];
}

/** Options of {@link civitaiSource}. */
export interface CivitaiOptions {
  /** The site's base URL (the CLI: `TENSORFS_CIVITAI_ENDPOINT`). @default {@link CIVITAI_DEFAULT_ENDPOINT} */
  endpoint?: string;
  /** `CIVITAI_TOKEN`: sent to the API's origin only. */
  token?: Credential;
  /** Import only files whose name matches one of these globs (picomatch). Default: every file. */
  include?: string | readonly string[];
  /** A folder where partial downloads are kept so a later attempt resumes. */
  spoolDir?: string;
  http?: Omit<HttpOptions, 'credential'>;
}

const ID = /^[1-9][0-9]{0,15}$/;

/**
 * Parses `civitai://<version-id>`, `civitai://models/<model-id>[@<version-id>]` and
 * `https://civitai.com/models/<id>[/<slug>][?modelVersionId=<v>]`.
 * @throws {TensorFSError} `invalid_argument` (`civitai.url`).
 */
export function parseCivitaiUrl(url: string): CivitaiSpec {
  const bad = () =>
    new TensorFSError(
      'invalid_argument',
      'not a Civitai source: civitai://<model-version-id> or https://civitai.com/models/<id>?modelVersionId=<v>',
      { details: { rule: 'civitai.url' } },
    );
  if (typeof url !== 'string') throw bad();
  if (url.startsWith('civitai://')) {
    const rest = url.slice('civitai://'.length);
    if (ID.test(rest)) return { versionId: Number(rest) };
    const m = /^models\/([0-9]+)(?:@([0-9]+))?$/.exec(rest);
    if (m && ID.test(m[1]!) && (m[2] === undefined || ID.test(m[2]))) {
      return m[2] !== undefined ? { versionId: Number(m[2]) } : { modelId: Number(m[1]) };
    }
    throw bad();
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw bad();
  }
  if (!isCivitaiHost(u.hostname)) throw bad();
  const m = /^\/models\/([0-9]+)(?:\/[^/]*)?\/?$/.exec(u.pathname);
  if (!m || !ID.test(m[1]!)) throw bad();
  const v = u.searchParams.get('modelVersionId');
  if (v !== null) {
    if (!ID.test(v)) throw bad();
    return { versionId: Number(v) };
  }
  return { modelId: Number(m[1]) };
}

/** True for `civitai.com` and its subdomains. */
export function isCivitaiHost(host: string): boolean {
  const h = host.toLowerCase();
  return h === 'civitai.com' || h.endsWith('.civitai.com');
}

/** True if `src` names a Civitai source (a `civitai://` URL or a civitai.com model page). */
export function isCivitaiSource(src: string): boolean {
  if (src.startsWith('civitai://')) return true;
  try {
    const u = new URL(src);
    return (
      (u.protocol === 'https:' || u.protocol === 'http:') &&
      isCivitaiHost(u.hostname) &&
      u.pathname.startsWith('/models/')
    );
  } catch {
    return false;
  }
}

function malformed(message: string, url: string): TensorFSError {
  return new TensorFSError('malformed', `the Civitai API answered ${message}`, {
    details: { rule: 'civitai.bad_answer', url: displayUrl(url) },
  });
}

/**
 * A Civitai model version as a pipeline source (see the module comment).
 * @throws {TensorFSError} `invalid_argument` (URL, endpoint, globs) at once; when resolved
 *   `denied` (`civitai.denied`: set `CIVITAI_TOKEN`), `not_found` (`civitai.not_found`,
 *   `civitai.nothing_selected`), `malformed` (`civitai.bad_answer`), `corrupt`
 *   (`civitai.size_mismatch`, and after reading `civitai.digest_mismatch`), `unavailable`.
 */
export function civitaiSource(url: string, options: CivitaiOptions = {}): Source<CivitaiProvenance> {
  const spec = parseCivitaiUrl(url);
  const endpoint = (options.endpoint ?? CIVITAI_DEFAULT_ENDPOINT).replace(/\/+$/, '');
  const site = checkHttpUrl(endpoint, 'civitai');
  if (site.search || site.hash) {
    throw new TensorFSError('invalid_argument', 'the Civitai endpoint must be a URL without query', {
      details: { rule: 'civitai.endpoint' },
    });
  }
  const globs =
    options.include === undefined ? [] : typeof options.include === 'string' ? [options.include] : [...options.include];
  if (globs.some((g) => typeof g !== 'string' || g.length === 0)) {
    throw new TensorFSError('invalid_argument', 'an include glob is empty', { details: { rule: 'civitai.include' } });
  }
  const match = globs.length > 0 ? globMatcher(globs) : () => true;
  const hasToken = options.token !== undefined && options.token !== '';
  const hint = hasToken
    ? ' (the token in CIVITAI_TOKEN has no access to it)'
    : ' (set CIVITAI_TOKEN to an API key of an account with access: the creator may require a login)';
  const voice: SourceVoice = { rules: 'civitai', who: 'Civitai' };
  // The token goes with requests to the API's origin (and, the HTTP client's rule, never past a
  // redirect to another origin); requests elsewhere use a client without it.
  const withToken = new HttpClient({
    ...(options.http ?? {}),
    ...(options.token !== undefined ? { credential: options.token } : {}),
  });
  const anonymous = new HttpClient(options.http ?? {});
  const clientFor = (target: string) => (new URL(target).origin === site.origin ? withToken : anonymous);

  const getJson = async (path: string, signal?: AbortSignal): Promise<Record<string, unknown>> => {
    const target = `${endpoint}${path}`;
    const res = await withToken.send({
      method: 'GET',
      url: target,
      headers: { accept: 'application/json' },
      accept: [401, 403, 404],
      ...(signal ? { signal } : {}),
    });
    if (res.status === 401 || res.status === 403) {
      await res.body.dump().catch(() => {});
      throw new TensorFSError('denied', `Civitai refused access to ${displayUrl(target)}${hint}`, {
        details: { rule: 'civitai.denied', status: res.status, url: displayUrl(target) },
      });
    }
    if (res.status === 404) {
      await res.body.dump().catch(() => {});
      throw new TensorFSError(
        'not_found',
        `Civitai has no ${path.includes('model-versions') ? 'model version' : 'model'} ${path.split('/').pop()}`,
        {
          details: { rule: 'civitai.not_found', url: displayUrl(target) },
        },
      );
    }
    const text = await readText(res.body, 16 * 1024 * 1024);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw malformed('with invalid JSON', target);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw malformed('with no object', target);
    return value as Record<string, unknown>;
  };

  return {
    async resolve(signal) {
      let versionId: number;
      if (spec.versionId !== undefined) versionId = spec.versionId;
      else {
        const model = await getJson(`/api/v1/models/${spec.modelId}`, signal);
        const versions = model.modelVersions;
        const first = Array.isArray(versions) ? (versions[0] as { id?: unknown } | undefined) : undefined;
        if (typeof first?.id !== 'number' || !Number.isSafeInteger(first.id)) {
          throw malformed('a model with no version', `${endpoint}/api/v1/models/${spec.modelId}`);
        }
        versionId = first.id;
      }
      const apiUrl = `${endpoint}/api/v1/model-versions/${versionId}`;
      const version = await getJson(`/api/v1/model-versions/${versionId}`, signal);
      if (version.id !== versionId) throw malformed('with another version than the one asked for', apiUrl);
      if (!Array.isArray(version.files)) throw malformed('with no files[]', apiUrl);
      const listed: { name: string; sizeKB: number; sha256: string; downloadUrl: string; primary: boolean }[] = [];
      const seen = new Set<string>();
      for (const f of version.files as Record<string, unknown>[]) {
        if (f === null || typeof f !== 'object') throw malformed('with a file that is not an object', apiUrl);
        const { name, sizeKB, downloadUrl } = f;
        const hashes = f.hashes as Record<string, unknown> | undefined;
        const sha = hashes?.SHA256;
        if (typeof name !== 'string' || typeof downloadUrl !== 'string')
          throw malformed('with a file without name or downloadUrl', apiUrl);
        if (typeof sizeKB !== 'number' || !Number.isFinite(sizeKB) || sizeKB < 0)
          throw malformed(`with no sizeKB for ${name}`, apiUrl);
        if (typeof sha !== 'string' || !/^[0-9a-fA-F]{64}$/.test(sha)) {
          throw malformed(`with no SHA-256 for ${name} (it cannot be checked)`, apiUrl);
        }
        try {
          validatePath(name);
        } catch (err) {
          throw new TensorFSError('malformed', 'the Civitai API names a file a snapshot cannot hold', {
            details: { rule: 'civitai.bad_path', path: name.slice(0, 200) },
            cause: err,
          });
        }
        if (seen.has(name)) throw malformed(`with ${name} twice`, apiUrl);
        seen.add(name);
        const dl = checkHttpUrl(new URL(downloadUrl, apiUrl).href, 'civitai');
        listed.push({ name, sizeKB, sha256: sha.toLowerCase(), downloadUrl: dl.href, primary: f.primary === true });
      }
      const chosen = listed.filter((f) => match(f.name));
      if (chosen.length === 0) {
        throw new TensorFSError(
          'not_found',
          `no file of Civitai model version ${versionId} matches${globs.length > 0 ? ' the include globs' : ''} (files: ${listed.map((f) => f.name).join(', ') || 'none'})`,
          { details: { rule: 'civitai.nothing_selected', versionId } },
        );
      }
      const files: SourceFile[] = [];
      const records: CivitaiFile[] = [];
      const spools: { close(): Promise<void> }[] = [];
      try {
        for (const f of chosen) {
          const http = clientFor(f.downloadUrl);
          const info = await probeHttpFile(http, f.downloadUrl, voice, signal, hint);
          // sizeKB is the size in KiB, rounded: more than one KiB away is another file.
          if (Math.abs(info.size / 1024 - f.sizeKB) > 1) {
            throw new TensorFSError(
              'corrupt',
              `${f.name}: Civitai lists ${f.sizeKB} KB, but the download has ${info.size} bytes`,
              {
                details: { rule: 'civitai.size_mismatch', path: f.name, expected: f.sizeKB, actual: info.size },
              },
            );
          }
          const spool =
            options.spoolDir !== undefined
              ? await openSpool(options.spoolDir, {
                  url: `civitai:${versionId}/${f.name}/${f.sha256}`,
                  size: info.size,
                  // The announced SHA-256 names the bytes: what is kept is checked against it.
                  etag: f.sha256,
                })
              : undefined;
          if (spool) spools.push(spool);
          files.push(
            httpSourceFile(http, f.downloadUrl, info, f.name, voice, {
              digest: { algorithm: 'sha256', hex: f.sha256 },
              hint,
              ...(spool ? { spool } : {}),
            }),
          );
          records.push({ name: f.name, size: info.size, sizeKB: f.sizeKB, sha256: f.sha256, primary: f.primary });
        }
      } catch (err) {
        for (const s of spools) await s.close();
        throw err;
      }
      const model = version.model as { name?: unknown } | undefined;
      const str = (v: unknown) => (typeof v === 'string' ? v : null);
      return {
        label: `civitai ${versionId}`,
        voice,
        files,
        provenance: () => ({
          kind: 'civitai',
          endpoint: displayUrl(endpoint).replace(/\/$/, ''),
          modelId: typeof version.modelId === 'number' ? version.modelId : null,
          versionId,
          versionName: str(version.name),
          modelName: str(model?.name),
          baseModel: str(version.baseModel),
          ...(globs.length > 0 ? { include: globs } : {}),
          files: records,
        }),
        close: async () => {
          for (const s of spools) await s.close();
        },
      };
    },
  };
}
