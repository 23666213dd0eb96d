/**
 * An S3-compatible origin (`s3://bucket/prefix`): the portable layout in a bucket. Endpoint,
 * region and credentials come from the AWS SDK's usual chain (`AWS_ENDPOINT_URL[_S3]`,
 * `AWS_REGION`, `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`, `AWS_PROFILE`
 * and the shared config files). Refs move by conditional writes (`If-None-Match: *` to create,
 * `If-Match: <etag>` to replace); both are probed before the first object is uploaded, and a
 * service that ignores or refuses either is refused (`unsupported`, naming the remedy: a hub that
 * keeps the refs on its own disk, see {@link S3OriginOptions.refsElsewhere}). Uploads carry
 * `x-amz-checksum-sha256` (the id) and are verified on the way, so a mismatching upload never
 * becomes an object.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type {
  ListMultipartUploadsCommandOutput,
  ListObjectsV2CommandOutput,
  ListPartsCommandOutput,
  S3Client,
  S3ClientConfig,
} from '@aws-sdk/client-s3';

type Sdk = typeof import('@aws-sdk/client-s3');
let sdkModule: Promise<Sdk> | undefined;
/** The AWS SDK, loaded on first use (it costs a third of a second to import). */
function loadSdk(): Promise<Sdk> {
  sdkModule ??= import('@aws-sdk/client-s3');
  return sdkModule;
}
import {
  type ErrorCode,
  type ObjectId,
  TensorFSError,
  isTensorFSError,
  parseObjectId,
  throwIfAborted,
  cancelledError,
} from '@tensorfs/format';
import { type Capability, type RefListing, type SetRefOptions, validateRefName } from '@tensorfs/format/store';
import { parseRefText } from './folder.js';
import { offlineError, offlineFromEnv } from './http.js';
import { MULTIPART_PART, MULTIPART_THRESHOLD, type MultipartOptions } from './http-origin.js';
import { type CallOptions, type ObjectRead, OriginBase, type OriginRef, type WriteOptions } from './origin.js';
import { idBase64, verified } from './verify-stream.js';

/** Objects up to this size are verified in memory before they are sent. */
const SMALL_OBJECT = 16 << 20;

/** Options of {@link S3Origin}. */
export interface S3OriginOptions {
  /** A ready client (tests, custom middleware); otherwise one is built from the environment. */
  client?: S3Client;
  /** Overrides of the client configuration. */
  config?: S3ClientConfig;
  /** Environment to read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /**
   * Objects above `thresholdBytes` (default 64 MiB) upload with S3's multipart API in parts of
   * `partBytes` (default 16 MiB, at least 5 MiB, at most 10,000 parts), resuming an interrupted
   * upload of the same object (ListParts) instead of starting over.
   */
  multipart?: MultipartOptions;
  /**
   * The refs live elsewhere (a hub's own disk, `tfs serve --objects … --refs DIR`): object writes
   * need no conditional writes, so a bucket without them still takes objects.
   */
  refsElsewhere?: boolean;
  /**
   * Open no socket: every request fails `unavailable` (`details.offline: true`) before a client
   * is built. Default: `TENSORFS_OFFLINE=1` in `env`.
   */
  offline?: boolean;
}

/**
 * What was learned of a service, once per process: whether conditional writes hold (the probe's
 * outcome) and whether multipart completions take per-part checksums. Keyed by endpoint, bucket
 * and access key (an origin built on a given client keeps its own).
 */
interface Learned {
  conditional?: Promise<void>;
  partChecksums?: boolean;
}
const learnedByService = new Map<string, Learned>();

/**
 * One listener per caller's signal, whatever the number of requests in flight under it: each
 * request gets its own signal, aborted from the caller's, and forgotten when it ends. Passing the
 * caller's signal to every request would hang one listener on it per concurrent request
 * (Node's `MaxListenersExceededWarning` past ten).
 */
const fans = new WeakMap<AbortSignal, { members: Set<AbortController>; onAbort: () => void }>();
function requestSignal(parent: AbortSignal | undefined): { ctl: AbortController; done: () => void } {
  const ctl = new AbortController();
  if (!parent) return { ctl, done: () => {} };
  if (parent.aborted) {
    ctl.abort(parent.reason);
    return { ctl, done: () => {} };
  }
  let fan = fans.get(parent);
  if (!fan) {
    const members = new Set<AbortController>();
    const onAbort = () => {
      for (const m of members) m.abort(parent.reason);
      members.clear();
      fans.delete(parent);
    };
    fan = { members, onAbort };
    fans.set(parent, fan);
    parent.addEventListener('abort', onAbort, { once: true });
  }
  const f = fan;
  f.members.add(ctl);
  return {
    ctl,
    done: () => {
      f.members.delete(ctl);
      if (f.members.size === 0 && fans.get(parent) === f) {
        parent.removeEventListener('abort', f.onAbort);
        fans.delete(parent);
      }
    },
  };
}

/** S3's smallest part (all but the last) and most parts per upload. */
const S3_MIN_PART = 5 << 20;
const S3_MAX_PARTS = 10_000;

interface SdkError {
  name?: string;
  Code?: string;
  $metadata?: { httpStatusCode?: number };
}

function statusOf(err: unknown): number | undefined {
  return (err as SdkError)?.$metadata?.httpStatusCode;
}

/** What an error message may name about the origin: its bucket and access key id (never the secret). */
export interface S3ErrorContext {
  bucket?: string;
  accessKeyId?: string;
}

/** The service's error code (`SignatureDoesNotMatch`, `NoSuchBucket`, …), at most 60 characters. */
function serviceCode(err: unknown): string {
  const e = err as SdkError & { code?: string };
  return String(e?.Code ?? e?.name ?? e?.code ?? 'error').slice(0, 60);
}

/**
 * A TensorFSError for an SDK failure: family from the status, never the SDK's message. `denied`
 * names the access key id and the service's code; a missing bucket names the bucket; missing AWS
 * configuration (no credentials, no region) is `invalid_argument` naming what is missing.
 */
export function s3Error(err: unknown, op: string, context: S3ErrorContext = {}): TensorFSError {
  if (isTensorFSError(err)) return err;
  const e = err as SdkError & { code?: string; message?: string };
  if (e?.name === 'AbortError') return cancelledError();
  const status = statusOf(err);
  const name = serviceCode(err);
  if (status === undefined && e?.name === 'CredentialsProviderError') {
    return new TensorFSError(
      'invalid_argument',
      's3 origin: no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)',
      { details: { rule: 's3.no_credentials' } },
    );
  }
  if (status === undefined && /region is missing/i.test(String(e?.message ?? ''))) {
    return new TensorFSError('invalid_argument', 's3 origin: no AWS region: set AWS_REGION (or AWS_ENDPOINT_URL)', {
      details: { rule: 's3.no_region' },
    });
  }
  const details = { rule: `s3.${name}` as const, status: status ?? 0 };
  if (status === 401 || status === 403) {
    const who = context.accessKeyId ? `access key id ${context.accessKeyId}` : 'the credentials';
    return new TensorFSError('denied', `s3 origin: ${op} failed: the service refused ${who} (${name})`, {
      details: { ...details, ...(context.accessKeyId ? { accessKeyId: context.accessKeyId } : {}) },
    });
  }
  if (status === 404 && name === 'NoSuchBucket') {
    const which = context.bucket ? `bucket ${context.bucket}` : 'the bucket';
    return new TensorFSError('not_found', `s3 origin: ${op} failed: ${which} does not exist`, {
      details: { ...details, ...(context.bucket ? { bucket: context.bucket } : {}) },
    });
  }
  let code: ErrorCode = 'unavailable';
  if (status === 404) code = 'not_found';
  else if (status === 409 || status === 412) code = 'conflict';
  else if (name === 'BadDigest' || /checksum/i.test(name)) code = 'corrupt';
  else if (status === 400) code = 'invalid_argument';
  else if (status === 501) code = 'unsupported';
  else if (status === 413) code = 'limit_exceeded';
  return new TensorFSError(code, `s3 origin: ${op} failed (${name})`, { details });
}

/** Parses `s3://bucket/prefix` into a bucket and a key prefix ending in `/` (or empty). */
export function parseS3Url(url: string): { bucket: string; prefix: string } {
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(url);
  if (!m) {
    throw new TensorFSError('invalid_argument', 'not an s3://bucket[/prefix] URL', { details: { rule: 's3.bad_url' } });
  }
  const p = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
  return { bucket: m[1]!, prefix: p ? `${p}/` : '' };
}

/**
 * The S3 client configuration of an environment (AWS conventions; path-style for custom
 * endpoints). Keys in `env` are used as they are; without them the SDK's chain (profiles, SSO,
 * instance roles) applies.
 */
export function s3ConfigFromEnv(env: NodeJS.ProcessEnv): S3ClientConfig {
  const endpoint = env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? (endpoint ? 'us-east-1' : undefined);
  const keys =
    env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY
      ? {
          credentials: {
            accessKeyId: env.AWS_ACCESS_KEY_ID,
            secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
            ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
          },
        }
      : {};
  return {
    ...keys,
    ...(region ? { region } : {}),
    ...(endpoint ? { endpoint, forcePathStyle: env.AWS_S3_FORCE_PATH_STYLE !== 'false' } : {}),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 4,
  };
}

/** The remedy a bucket without conditional writes needs, for messages. */
function remedy(url: string): string {
  return `keep the refs on a hub's disk: tfs serve --objects ${url} --refs DIR`;
}

/** An origin in an S3-compatible bucket. */
export class S3Origin extends OriginBase {
  readonly kind = 's3' as const;
  readonly writable = true;
  readonly display: string;
  /** Refs move by conditional writes (probed first); deleting one is not offered. */
  readonly capabilities: ReadonlySet<Capability> = new Set<Capability>(['objects.write', 'refs.write', 'refs.list']);
  readonly bucket: string;
  readonly prefix: string;
  private readonly given: S3Client | undefined;
  private readonly config: S3ClientConfig;
  private made: Promise<{ sdk: Sdk; client: S3Client }> | undefined;
  private owned: S3Client | undefined;
  private readonly multipart: Required<MultipartOptions>;
  private readonly refsElsewhere: boolean;
  private readonly offline: boolean;
  /** Bucket and access key id, for error messages (the key id once the credentials resolve). */
  private readonly context: S3ErrorContext;
  private learnedOwn: Learned | undefined;

  constructor(url: string, options: S3OriginOptions = {}) {
    super();
    this.multipart = {
      thresholdBytes: options.multipart?.thresholdBytes ?? MULTIPART_THRESHOLD,
      partBytes: Math.max(S3_MIN_PART, options.multipart?.partBytes ?? MULTIPART_PART),
    };
    const { bucket, prefix } = parseS3Url(url);
    this.bucket = bucket;
    this.prefix = prefix;
    this.display = `s3://${bucket}/${prefix}`;
    this.given = options.client;
    this.refsElsewhere = options.refsElsewhere ?? false;
    this.offline = options.offline ?? offlineFromEnv(options.env ?? process.env);
    this.config = { ...s3ConfigFromEnv(options.env ?? process.env), ...(options.config ?? {}) };
    const creds = this.config.credentials as { accessKeyId?: string } | undefined;
    this.context = { bucket, ...(typeof creds?.accessKeyId === 'string' ? { accessKeyId: creds.accessKeyId } : {}) };
  }

  /**
   * The SDK and the client (built on first use unless one was given). The region and the
   * credentials are resolved here, so missing AWS configuration fails at once as
   * `invalid_argument` naming what is missing, before any request.
   */
  private c(): Promise<{ sdk: Sdk; client: S3Client }> {
    // Every request builds on the client: offline, none is made and no socket opened.
    if (this.offline) return Promise.reject(offlineError(this.display));
    this.made ??= (async () => {
      const sdk = await loadSdk();
      const client = this.given ?? quietly(() => new sdk.S3Client(this.config));
      if (!this.given) this.owned = client;
      try {
        await client.config.region();
      } catch (err) {
        throw s3Error(err, 'resolve the region', this.context);
      }
      try {
        const creds = await client.config.credentials();
        if (creds?.accessKeyId) this.context.accessKeyId = creds.accessKeyId;
      } catch (err) {
        throw s3Error(err, 'resolve the credentials', this.context);
      }
      return { sdk, client };
    })();
    this.made.catch(() => {
      this.made = undefined;
    });
    return this.made;
  }

  /** What this process learned of the service (shared by the origins of one endpoint, bucket and key). */
  private async learned(): Promise<Learned> {
    if (this.given) {
      this.learnedOwn ??= {};
      return this.learnedOwn;
    }
    const { client } = await this.c();
    const endpoint = client.config.endpoint ? JSON.stringify(await client.config.endpoint()) : 'aws';
    const key = `${endpoint}\n${await client.config.region()}\n${this.bucket}\n${this.context.accessKeyId ?? ''}`;
    let l = learnedByService.get(key);
    if (!l) {
      l = {};
      learnedByService.set(key, l);
    }
    return l;
  }

  /**
   * Sends one command under `signal` (one listener on it, however many are in flight), mapping
   * failures with `op` unless `raw` (the caller inspects the SDK's error itself).
   */
  private async send<T>(command: object, signal: AbortSignal | undefined, op: string, raw = false): Promise<T> {
    const { client } = await this.c();
    const { ctl, done } = requestSignal(signal);
    try {
      return (await client.send(command as never, { abortSignal: ctl.signal })) as T;
    } catch (err) {
      if (signal?.aborted) throw cancelledError();
      if (raw) throw err;
      throw s3Error(err, op, this.context);
    } finally {
      done();
    }
  }

  private key(id: ObjectId): string {
    return `${this.prefix}chunks/${parseObjectId(id).slice(7)}`;
  }

  private refKey(name: string): string {
    validateRefName(name);
    return `${this.prefix}refs/${name}`;
  }

  /**
   * Checks the credentials and the bucket with one listing (`GET`, so the service's error code
   * comes back): `denied` naming the access key id and the code, `not_found` naming the bucket,
   * `invalid_argument` for missing configuration. What `tfs serve --objects` runs at start-up.
   */
  async check(options: CallOptions = {}): Promise<void> {
    const { sdk } = await this.c();
    await this.send(
      new sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix, MaxKeys: 1 }),
      options.signal,
      'check the bucket',
    );
  }

  private async getRefWithEtag(name: string, signal?: AbortSignal): Promise<{ id: ObjectId; etag: string } | null> {
    const { sdk } = await this.c();
    const Key = this.refKey(name);
    try {
      const r = await this.send<{ Body?: { transformToString(e: string): Promise<string> }; ETag?: string }>(
        new sdk.GetObjectCommand({ Bucket: this.bucket, Key }),
        signal,
        'read ref',
        true,
      );
      const text = await r.Body!.transformToString('utf8');
      return { id: parseRefText(text.slice(0, 200)), etag: r.ETag ?? '' };
    } catch (err) {
      if (statusOf(err) === 404 && serviceCode(err) !== 'NoSuchBucket') return null;
      throw s3Error(err, 'read ref', this.context);
    }
  }

  async getRef(name: string, options: CallOptions = {}): Promise<ObjectId | null> {
    throwIfAborted(options.signal);
    return (await this.getRefWithEtag(name, options.signal))?.id ?? null;
  }

  /** The refs of {@link scanRefs}. */
  async listRefs(options: CallOptions = {}): Promise<OriginRef[]> {
    return (await this.scanRefs(options)).refs;
  }

  /**
   * Every object under `chunks/` with its size and `LastModified` (retention, `tfs gc`; keys that
   * are not an object's are skipped).
   */
  async *listChunks(signal?: AbortSignal): AsyncIterable<{ id: ObjectId; size: number; modifiedMs: number }> {
    const { sdk } = await this.c();
    const base = `${this.prefix}chunks/`;
    let token: string | undefined;
    do {
      const page = await this.send<ListObjectsV2CommandOutput>(
        new sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix: base, ContinuationToken: token }),
        signal,
        'list objects',
      );
      for (const c of page.Contents ?? []) {
        const hex = (c.Key ?? '').slice(base.length);
        if (!/^[0-9a-f]{64}$/.test(hex)) continue;
        yield { id: `sha256:${hex}` as ObjectId, size: c.Size ?? 0, modifiedMs: c.LastModified?.getTime() ?? 0 };
      }
      token = page.NextContinuationToken;
    } while (token);
  }

  /**
   * Deletes those of `ids` whose `LastModified` is still before `cutoffMs`, re-checked right
   * before the delete by listing the key range of each batch of 1,000 (so an object a push
   * freshened since the GC's first listing stays); absent ones are no error. Returns the ids
   * deleted. Retention, `tfs gc`.
   */
  async deleteChunks(ids: readonly ObjectId[], cutoffMs: number, signal?: AbortSignal): Promise<ObjectId[]> {
    const { sdk } = await this.c();
    const sorted = [...ids].sort();
    const removed: ObjectId[] = [];
    const base = `${this.prefix}chunks/`;
    for (let i = 0; i < sorted.length; i += 1000) {
      const batch = sorted.slice(i, i + 1000);
      const wanted = new Set(batch);
      const first = this.key(batch[0]!);
      const last = this.key(batch[batch.length - 1]!);
      const old: ObjectId[] = [];
      let token: string | undefined;
      let done = false;
      do {
        const page = await this.send<ListObjectsV2CommandOutput>(
          new sdk.ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: base,
            ...(token ? { ContinuationToken: token } : { StartAfter: first.slice(0, -1) }),
          }),
          signal,
          'list objects',
        );
        for (const c of page.Contents ?? []) {
          const key = c.Key ?? '';
          if (key > last) {
            done = true;
            break;
          }
          const id = `sha256:${key.slice(base.length)}` as ObjectId;
          if (wanted.has(id) && (c.LastModified?.getTime() ?? 0) < cutoffMs) old.push(id);
        }
        token = page.NextContinuationToken;
      } while (token && !done);
      if (old.length === 0) continue;
      const Objects = old.map((id) => ({ Key: this.key(id) }));
      const out = await this.send<{ Errors?: { Key?: string; Code?: string; Message?: string }[] }>(
        new sdk.DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects, Quiet: true } }),
        signal,
        'delete objects',
      );
      const failed = (out.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
      if (failed.length > 0) {
        throw new TensorFSError('io', `the bucket refused to delete ${failed.length} objects (${failed[0]!.Code})`, {
          details: { rule: 's3.delete_failed', bucket: this.bucket, code: failed[0]!.Code ?? '' },
        });
      }
      removed.push(...old);
    }
    return removed;
  }

  /** Every key under `refs/` that holds an id, sorted; the others named with why. */
  override async scanRefs(options: CallOptions = {}): Promise<RefListing> {
    throwIfAborted(options.signal);
    const { sdk } = await this.c();
    const out: OriginRef[] = [];
    const problems: RefListing['problems'] = [];
    let token: string | undefined;
    do {
      const page = await this.send<ListObjectsV2CommandOutput>(
        new sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix: `${this.prefix}refs/`, ContinuationToken: token }),
        options.signal,
        'list refs',
      );
      for (const c of page.Contents ?? []) {
        const name = (c.Key ?? '').slice(`${this.prefix}refs/`.length);
        try {
          const id = await this.getRef(name, options);
          if (id) out.push({ name, id });
        } catch (err) {
          if (isTensorFSError(err) && err.code === 'cancelled') throw err;
          const e = isTensorFSError(err) ? err : s3Error(err, 'read ref', this.context);
          problems.push({ name, code: e.code, rule: String(e.details?.rule ?? 'ref.unreadable'), message: e.message });
        }
      }
      token = page.NextContinuationToken;
    } while (token);
    const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    return { refs: out.sort(byName), problems: problems.sort(byName) };
  }

  /**
   * Checks once per service and process that conditional writes hold, both of them: a second
   * create with `If-None-Match: *` must fail, a replace with `If-Match` and a stale ETag must fail,
   * and one with the current ETag must succeed. `unsupported` (rule `s3.no_conditional_writes`,
   * `details.missing` the header) when the service ignores or refuses either, naming the remedy.
   * Runs before the first object is uploaded, so a refused push leaves nothing in the bucket.
   */
  async ensureConditionalWrites(signal?: AbortSignal): Promise<void> {
    const learned = await this.learned();
    learned.conditional ??= this.probeConditional(signal);
    const p = learned.conditional;
    p.catch((err) => {
      // Only the service's answer is remembered, not a passing fault or a cancelled probe.
      if (!(isTensorFSError(err) && err.details.rule === 's3.no_conditional_writes') && learned.conditional === p)
        learned.conditional = undefined;
    });
    return p;
  }

  private async probeConditional(signal?: AbortSignal): Promise<void> {
    const { sdk } = await this.c();
    const Key = `${this.prefix}tmp/cas-probe-${randomBytes(8).toString('hex')}`;
    const put = (condition: { IfNoneMatch?: string; IfMatch?: string }) =>
      this.send<{ ETag?: string }>(
        new sdk.PutObjectCommand({ Bucket: this.bucket, Key, Body: 'probe', ...condition }),
        signal,
        'probe conditional writes',
        true,
      );
    const missing = (header: string, how: string) =>
      new TensorFSError(
        'unsupported',
        `this S3 service ${how} ${header}, so refs cannot move safely in ${this.display}; ${remedy(this.display)}`,
        {
          details: {
            rule: 's3.no_conditional_writes',
            missing: header,
            remedy: `tfs serve --objects ${this.display} --refs DIR`,
          },
        },
      );
    // A refusal: 501 NotImplemented (Swift), or a 400 naming the header as not implemented.
    const refused = (err: unknown) =>
      statusOf(err) === 501 || (statusOf(err) === 400 && /NotImplemented|InvalidArgument/.test(serviceCode(err)));
    const failedAsItShould = (err: unknown) => statusOf(err) === 412 || statusOf(err) === 409;
    let etag: string;
    try {
      etag = (await put({ IfNoneMatch: '*' })).ETag ?? '';
    } catch (err) {
      if (refused(err)) throw missing('If-None-Match: *', 'refuses');
      throw s3Error(err, 'probe conditional writes', this.context);
    }
    try {
      try {
        await put({ IfNoneMatch: '*' });
        throw missing('If-None-Match: *', 'ignores');
      } catch (err) {
        if (isTensorFSError(err)) throw err;
        if (!failedAsItShould(err)) throw s3Error(err, 'probe conditional writes', this.context);
      }
      const stale = `"${createHash('md5').update(`stale ${Key}`).digest('hex')}"`;
      try {
        await put({ IfMatch: stale });
        throw missing('If-Match', 'ignores');
      } catch (err) {
        if (isTensorFSError(err)) throw err;
        if (refused(err)) throw missing('If-Match', 'refuses');
        if (!failedAsItShould(err)) throw s3Error(err, 'probe conditional writes', this.context);
      }
      try {
        await put({ IfMatch: etag });
      } catch (err) {
        if (refused(err) || failedAsItShould(err)) throw missing('If-Match', 'refuses a current ETag in');
        throw s3Error(err, 'probe conditional writes', this.context);
      }
    } finally {
      await this.send(new sdk.DeleteObjectCommand({ Bucket: this.bucket, Key }), undefined, 'delete probe').catch(
        () => {},
      );
    }
  }

  async setRef(name: string, id: ObjectId, options: SetRefOptions = {}): Promise<void> {
    throwIfAborted(options.signal);
    const expected = options.expected;
    const { sdk } = await this.c();
    parseObjectId(id);
    await this.ensureConditionalWrites(options.signal);
    const Key = this.refKey(name);
    let condition: { IfNoneMatch?: string; IfMatch?: string } = {};
    if (expected === null) condition = { IfNoneMatch: '*' };
    else {
      const cur = await this.getRefWithEtag(name, options.signal);
      if (expected !== undefined && cur?.id !== expected) {
        throw new TensorFSError('conflict', 'the remote ref moved', {
          details: { rule: 'remote.ref_moved', ref: name, expected, actual: cur?.id ?? null },
        });
      }
      condition = cur ? { IfMatch: cur.etag } : { IfNoneMatch: '*' };
    }
    try {
      await this.send(
        new sdk.PutObjectCommand({
          Bucket: this.bucket,
          Key,
          Body: `${id}\n`,
          ContentType: 'text/plain',
          ...condition,
        }),
        options.signal,
        'write ref',
        true,
      );
    } catch (err) {
      const st = statusOf(err);
      if (st === 412 || st === 409) {
        throw new TensorFSError('conflict', 'the remote ref moved', {
          details: { rule: 'remote.ref_moved', ref: name },
        });
      }
      throw s3Error(err, 'write ref', this.context);
    }
  }

  async lacks(ids: readonly ObjectId[], options: CallOptions = {}): Promise<ObjectId[]> {
    throwIfAborted(options.signal);
    const { sdk } = await this.c();
    const out: ObjectId[] = [];
    let next = 0;
    const worker = async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        try {
          await this.send(
            new sdk.HeadObjectCommand({ Bucket: this.bucket, Key: this.key(id) }),
            options.signal,
            'head object',
            true,
          );
        } catch (err) {
          if (statusOf(err) === 404) out.push(id);
          else throw s3Error(err, 'head object', this.context);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(16, ids.length) }, worker));
    return out;
  }

  /**
   * {@link lacks}, and each object the bucket holds is copied onto itself (`CopyObject`,
   * metadata `REPLACE`), which gives it a new `LastModified`: a remote GC's grace window starts
   * again for what a push skips. An object the service will not copy in one request (over
   * 5 GiB) is only looked for.
   */
  async freshen(ids: readonly ObjectId[], options: CallOptions = {}): Promise<ObjectId[]> {
    throwIfAborted(options.signal);
    const { sdk } = await this.c();
    const out: ObjectId[] = [];
    const unsure: ObjectId[] = [];
    let next = 0;
    const worker = async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        const Key = this.key(id);
        try {
          await this.send(
            new sdk.CopyObjectCommand({
              Bucket: this.bucket,
              Key,
              CopySource: `${this.bucket}/${Key.split('/').map(encodeURIComponent).join('/')}`,
              MetadataDirective: 'REPLACE',
              ContentType: 'application/octet-stream',
            }),
            options.signal,
            'freshen object',
            true,
          );
        } catch (err) {
          const status = statusOf(err);
          if (status === 404) out.push(id);
          else if (status === 400) unsure.push(id);
          else throw s3Error(err, 'freshen object', this.context);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(16, ids.length) }, worker));
    if (unsure.length > 0) out.push(...(await this.lacks(unsure, options)));
    return out;
  }

  /** The object's length from a `HeadObject` (`not_found` on 404). */
  override async objectSize(id: ObjectId, options: CallOptions = {}): Promise<number> {
    throwIfAborted(options.signal);
    const { sdk } = await this.c();
    try {
      const r = await this.send<{ ContentLength?: number }>(
        new sdk.HeadObjectCommand({ Bucket: this.bucket, Key: this.key(id) }),
        options.signal,
        'stat object',
        true,
      );
      return Number(r.ContentLength);
    } catch (err) {
      if (statusOf(err) === 404) {
        throw new TensorFSError('not_found', 'the origin does not hold this object', {
          details: { rule: 'remote.no_object', digest: id },
        });
      }
      throw s3Error(err, 'stat object', this.context);
    }
  }

  async read(id: ObjectId, offset: number, options: CallOptions = {}): Promise<ObjectRead> {
    throwIfAborted(options.signal);
    const { sdk, client } = await this.c();
    // The request's signal stays live until its body ends: aborting the caller's stops the body too.
    const { ctl, done } = requestSignal(options.signal);
    try {
      const r = await client.send(
        new sdk.GetObjectCommand({
          Bucket: this.bucket,
          Key: this.key(id),
          ...(offset > 0 ? { Range: `bytes=${offset}-` } : {}),
        }),
        { abortSignal: ctl.signal },
      );
      const body = r.Body as unknown as Readable;
      body.once('close', done);
      const cancel = () => {
        body.destroy();
        done();
      };
      const m = /bytes (\d+)-(\d+)\/(\d+)/.exec(r.ContentRange ?? '');
      if (offset > 0 && m && Number(m[1]) === offset) return { offset, size: Number(m[3]), body, cancel };
      return { offset: 0, size: r.ContentLength, body, cancel };
    } catch (err) {
      done();
      if (options.signal?.aborted) throw cancelledError();
      const st = statusOf(err);
      if (st === 404 && serviceCode(err) !== 'NoSuchBucket') {
        throw new TensorFSError('not_found', 'the origin does not hold this object', {
          details: { rule: 'remote.no_object', digest: id },
        });
      }
      if (st === 416) return { offset, body: Readable.from([]), cancel: () => {} };
      throw s3Error(err, 'read object', this.context);
    }
  }

  async write(
    id: ObjectId,
    length: number,
    body: (offset?: number, end?: number) => AsyncIterable<Uint8Array>,
    options: WriteOptions = {},
  ): Promise<void> {
    // Refs will move here: make sure they can before the first byte goes up.
    if (!this.refsElsewhere) await this.ensureConditionalWrites(options.signal);
    if (length > this.multipart.thresholdBytes) return this.writeMultipart(id, length, body, options);
    const { sdk, client } = await this.c();
    // Small objects are verified whole before sending (and the SDK may retry them); large ones
    // stream through `verified`, whose failure aborts the request before S3 completes it.
    let failure: unknown;
    const { ctl, done } = requestSignal(options.signal);
    let Body: Uint8Array | Readable;
    try {
      if (length <= SMALL_OBJECT) {
        const parts: Uint8Array[] = [];
        for await (const c of verified(body(), id, length)) parts.push(c);
        Body = Buffer.concat(parts);
      } else {
        const stream = Readable.from(verified(body(), id, length));
        stream.on('error', (err) => {
          failure = err;
          ctl.abort();
        });
        Body = stream;
      }
      await client.send(
        new sdk.PutObjectCommand({
          Bucket: this.bucket,
          Key: this.key(id),
          Body,
          ContentLength: length,
          ChecksumSHA256: idBase64(id),
          ContentType: 'application/octet-stream',
        }),
        { abortSignal: ctl.signal },
      );
    } catch (err) {
      if (failure !== undefined) throw failure;
      if (options.signal?.aborted) throw cancelledError();
      throw s3Error(err, 'write object', this.context);
    } finally {
      done();
    }
  }

  /**
   * A multipart upload that resumes: an upload already started for this key (by an interrupted
   * push) is continued — its parts whose size and SHA-256 (or MD5 ETag) match the local bytes are
   * kept, the rest are sent. Parts carry their SHA-256 where the service takes per-part checksums
   * in the completion (AWS, MinIO, Ceph RGW); one that refuses them (Swift's s3api answers
   * `MalformedXML`) gets the completion without them, and the origin remembers it for the
   * process. The whole object's SHA-256 is computed over all parts, sent or kept, before
   * CompleteMultipartUpload: bytes that do not hash to the id abort the upload (`corrupt`) and
   * never become an object. A completion the service refuses aborts the upload (`unsupported`);
   * a passing failure leaves it for the next push to resume (`unavailable`; a bucket lifecycle
   * rule cleans abandoned ones).
   */
  private async writeMultipart(
    id: ObjectId,
    length: number,
    body: (offset?: number, end?: number) => AsyncIterable<Uint8Array>,
    options: WriteOptions,
  ): Promise<void> {
    const { sdk } = await this.c();
    const learned = await this.learned();
    const checksums = learned.partChecksums !== false;
    const Key = this.key(id);
    const Bucket = this.bucket;
    const signal = options.signal;
    const partSize = Math.max(this.multipart.partBytes, Math.ceil(length / S3_MAX_PARTS));
    const count = Math.max(1, Math.ceil(length / partSize));
    // An upload of this key left by an interrupted push, and the parts it holds.
    let uploadId: string | undefined;
    const kept = new Map<number, { size: number; etag: string; sha256?: string }>();
    try {
      const ups = await this.send<ListMultipartUploadsCommandOutput>(
        new sdk.ListMultipartUploadsCommand({ Bucket, Prefix: Key }),
        signal,
        'list uploads',
        true,
      );
      const mine = (ups.Uploads ?? []).filter((u) => u.Key === Key && u.UploadId);
      mine.sort((a, b) => (b.Initiated?.getTime() ?? 0) - (a.Initiated?.getTime() ?? 0));
      uploadId = mine[0]?.UploadId;
      if (uploadId !== undefined) {
        let marker: string | undefined;
        for (;;) {
          const r = await this.send<ListPartsCommandOutput>(
            new sdk.ListPartsCommand({ Bucket, Key, UploadId: uploadId, PartNumberMarker: marker }),
            signal,
            'list parts',
            true,
          );
          for (const p of r.Parts ?? []) {
            if (p.PartNumber && p.ETag)
              kept.set(p.PartNumber, { size: p.Size ?? -1, etag: p.ETag, sha256: p.ChecksumSHA256 });
          }
          if (!r.IsTruncated || !r.NextPartNumberMarker) break;
          marker = r.NextPartNumberMarker;
        }
      }
    } catch (err) {
      if (signal?.aborted || isTensorFSError(err)) throw isTensorFSError(err) ? err : cancelledError();
      // No listing (a service or a policy without it): start a new upload.
      uploadId = undefined;
      kept.clear();
    }
    if (uploadId === undefined) {
      const r = await this.send<{ UploadId?: string }>(
        new sdk.CreateMultipartUploadCommand({
          Bucket,
          Key,
          ...(checksums ? { ChecksumAlgorithm: 'SHA256' as const } : {}),
          ContentType: 'application/octet-stream',
        }),
        signal,
        'create multipart upload',
      );
      uploadId = r.UploadId;
      if (!uploadId)
        throw new TensorFSError('unavailable', 's3 origin: no upload id', { details: { rule: 's3.no_upload_id' } });
    }
    const abort = () =>
      this.send(new sdk.AbortMultipartUploadCommand({ Bucket, Key, UploadId: uploadId }), undefined, 'abort').catch(
        () => {},
      );
    const whole = createHash('sha256');
    const done: { PartNumber: number; ETag: string; ChecksumSHA256: string }[] = [];
    // The bytes are read once, front to back (every part, kept or sent, goes into the whole
    // object's hash), so a body that can be read only once (a hub's request stream) serves too.
    const source = body()[Symbol.asyncIterator]();
    let carry: Uint8Array | undefined;
    try {
      for (let n = 1; n <= count; n++) {
        if (signal?.aborted) throw cancelledError();
        const start = (n - 1) * partSize;
        const end = Math.min(length, start + partSize);
        const chunks: Uint8Array[] = [];
        let got = 0;
        while (got < end - start) {
          let c = carry;
          carry = undefined;
          if (c === undefined) {
            const r = await source.next();
            if (r.done) break;
            c = r.value;
          }
          const want = end - start - got;
          if (c.length > want) {
            carry = c.subarray(want);
            c = c.subarray(0, want);
          }
          chunks.push(c);
          got += c.length;
        }
        if (got !== end - start) {
          throw new TensorFSError('corrupt', 'object length does not match', {
            details: { rule: 'remote.length_mismatch', digest: id, expected: length, actual: start + got },
          });
        }
        const bytes = Buffer.concat(chunks, got);
        whole.update(bytes);
        const sha = createHash('sha256').update(bytes).digest('base64');
        const md5 = `"${createHash('md5').update(bytes).digest('hex')}"`;
        const have = kept.get(n);
        if (have && have.size === got && (have.sha256 ? have.sha256 === sha : have.etag === md5)) {
          done.push({ PartNumber: n, ETag: have.etag, ChecksumSHA256: sha });
          continue;
        }
        const r = await this.send<{ ETag?: string }>(
          new sdk.UploadPartCommand({
            Bucket,
            Key,
            UploadId: uploadId,
            PartNumber: n,
            Body: bytes,
            ContentLength: got,
            ...(checksums ? { ChecksumSHA256: sha } : {}),
          }),
          signal,
          'upload part',
        );
        done.push({ PartNumber: n, ETag: r.ETag ?? '', ChecksumSHA256: sha });
        options.sent?.(got);
      }
    } finally {
      await source.return?.();
    }
    const actual = `sha256:${whole.digest('hex')}`;
    if (actual !== id) {
      await abort();
      throw new TensorFSError('corrupt', 'object bytes do not match their id', {
        details: { rule: 'remote.digest_mismatch', digest: id, actual },
      });
    }
    const complete = (withChecksums: boolean) =>
      this.send(
        new sdk.CompleteMultipartUploadCommand({
          Bucket,
          Key,
          UploadId: uploadId,
          MultipartUpload: {
            Parts: done.map((p) => (withChecksums ? p : { PartNumber: p.PartNumber, ETag: p.ETag })),
          },
        }),
        signal,
        'complete multipart upload',
        true,
      );
    // A 400 is the service refusing what was sent (a malformed or unsupported completion), never
    // the user's argument.
    const refusal = (err: unknown) => {
      const code = serviceCode(err);
      return new TensorFSError(
        'unsupported',
        `s3 origin: the service refused to complete the multipart upload (${code}); the upload was aborted`,
        { details: { rule: `s3.${code}`, status: statusOf(err) ?? 0 } },
      );
    };
    try {
      await complete(checksums);
      if (checksums) learned.partChecksums = true;
      return;
    } catch (err) {
      if (statusOf(err) !== 400) {
        const e = s3Error(err, 'complete multipart upload', this.context);
        throw e.code === 'invalid_argument' ? refusal(err) : e;
      }
      if (!checksums) {
        await abort();
        throw refusal(err);
      }
    }
    // The service refused the per-part checksums: complete without them (the whole object was
    // hashed above), and remember.
    try {
      await complete(false);
      learned.partChecksums = false;
    } catch (err) {
      if (statusOf(err) !== 400) throw s3Error(err, 'complete multipart upload', this.context);
      await abort();
      throw refusal(err);
    }
  }

  async close(): Promise<void> {
    this.owned?.destroy();
  }
}

/**
 * Runs `fn` (building an S3 client) without the SDK's `NodeVersionSupportWarning` on stderr: the
 * SDK warns on Node releases it will stop supporting in the future; TensorFS supports them, and a
 * command's stderr carries only TensorFS's own lines.
 */
function quietly<T>(fn: () => T): T {
  const key = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';
  const before = process.env[key];
  process.env[key] = 'true';
  try {
    return fn();
  } finally {
    if (before === undefined) delete process.env[key];
    else process.env[key] = before;
  }
}
