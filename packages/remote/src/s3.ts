/**
 * An S3-compatible origin (`s3://bucket/prefix`): the portable layout in a bucket. Endpoint,
 * region and credentials come from the AWS SDK's usual chain (`AWS_ENDPOINT_URL[_S3]`,
 * `AWS_REGION`, `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`, `AWS_PROFILE`
 * and the shared config files). Refs move by conditional writes (`If-None-Match: *` to create,
 * `If-Match: <etag>` to replace); a service that ignores them is refused (`unsupported`).
 * Uploads carry `x-amz-checksum-sha256` (the id) and are verified on the way, so a mismatching
 * upload never becomes an object.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { ListObjectsV2CommandOutput, S3Client, S3ClientConfig } from '@aws-sdk/client-s3';

type Sdk = typeof import('@aws-sdk/client-s3');
let sdkModule: Promise<Sdk> | undefined;
/** The AWS SDK, loaded on first use (it costs a third of a second to import). */
function loadSdk(): Promise<Sdk> {
  sdkModule ??= import('@aws-sdk/client-s3');
  return sdkModule;
}
import { validateRefName } from '@tensorfs/cas';
import { type ErrorCode, type ObjectId, TensorFSError, isTensorFSError, parseObjectId } from '@tensorfs/format';
import { parseRefText } from './folder.js';
import { cancelled } from './http.js';
import { MULTIPART_PART, MULTIPART_THRESHOLD, type MultipartOptions } from './http-origin.js';
import type { CallOptions, ObjectRead, Origin, OriginRef, WriteOptions } from './origin.js';
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

/** A TensorFSError for an SDK failure: family from the status, never the SDK's message. */
export function s3Error(err: unknown, op: string): TensorFSError {
  if (isTensorFSError(err)) return err;
  const e = err as SdkError & { code?: string };
  if (e?.name === 'AbortError') return cancelled();
  const status = statusOf(err);
  const name = String(e?.name ?? e?.Code ?? e?.code ?? 'error').slice(0, 60);
  let code: ErrorCode = 'unavailable';
  if (status === 404) code = 'not_found';
  else if (status === 401 || status === 403) code = 'denied';
  else if (status === 409 || status === 412) code = 'conflict';
  else if (name === 'BadDigest' || /checksum/i.test(name)) code = 'corrupt';
  else if (status === 400) code = 'invalid_argument';
  else if (status === 501) code = 'unsupported';
  else if (status === 413) code = 'limit_exceeded';
  return new TensorFSError(code, `s3 origin: ${op} failed`, { details: { rule: `s3.${name}`, status: status ?? 0 } });
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

/** An origin in an S3-compatible bucket. */
export class S3Origin implements Origin {
  readonly kind = 's3' as const;
  readonly writable = true;
  readonly display: string;
  readonly bucket: string;
  readonly prefix: string;
  private readonly given: S3Client | undefined;
  private readonly config: S3ClientConfig;
  private made: Promise<{ sdk: Sdk; client: S3Client }> | undefined;
  private owned: S3Client | undefined;
  private conditional: Promise<void> | undefined;
  private readonly multipart: Required<MultipartOptions>;

  constructor(url: string, options: S3OriginOptions = {}) {
    this.multipart = {
      thresholdBytes: options.multipart?.thresholdBytes ?? MULTIPART_THRESHOLD,
      partBytes: Math.max(S3_MIN_PART, options.multipart?.partBytes ?? MULTIPART_PART),
    };
    const { bucket, prefix } = parseS3Url(url);
    this.bucket = bucket;
    this.prefix = prefix;
    this.display = `s3://${bucket}/${prefix}`;
    this.given = options.client;
    this.config = { ...s3ConfigFromEnv(options.env ?? process.env), ...(options.config ?? {}) };
  }

  /** The SDK and the client (built on first use unless one was given). */
  private c(): Promise<{ sdk: Sdk; client: S3Client }> {
    this.made ??= loadSdk().then((sdk) => {
      const client = this.given ?? new sdk.S3Client(this.config);
      if (!this.given) this.owned = client;
      return { sdk, client };
    });
    return this.made;
  }

  private key(id: ObjectId): string {
    return `${this.prefix}chunks/${parseObjectId(id).slice(7)}`;
  }

  private refKey(name: string): string {
    validateRefName(name);
    return `${this.prefix}refs/${name}`;
  }

  private async getRefWithEtag(name: string, signal?: AbortSignal): Promise<{ id: ObjectId; etag: string } | null> {
    const { sdk, client } = await this.c();
    try {
      const r = await client.send(new sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.refKey(name) }), {
        abortSignal: signal,
      });
      const text = await r.Body!.transformToString('utf8');
      return { id: parseRefText(text.slice(0, 200)), etag: r.ETag ?? '' };
    } catch (err) {
      if (statusOf(err) === 404) return null;
      throw s3Error(err, 'read ref');
    }
  }

  async getRef(name: string, options: CallOptions = {}): Promise<ObjectId | null> {
    return (await this.getRefWithEtag(name, options.signal))?.id ?? null;
  }

  async listRefs(options: CallOptions = {}): Promise<OriginRef[]> {
    const { sdk, client } = await this.c();
    const out: OriginRef[] = [];
    let token: string | undefined;
    do {
      let page: ListObjectsV2CommandOutput;
      try {
        page = await client.send(
          new sdk.ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: `${this.prefix}refs/`,
            ContinuationToken: token,
          }),
          { abortSignal: options.signal },
        );
      } catch (err) {
        throw s3Error(err, 'list refs');
      }
      for (const c of page.Contents ?? []) {
        const name = (c.Key ?? '').slice(`${this.prefix}refs/`.length);
        const id = await this.getRef(name, options).catch(() => null);
        if (id) out.push({ name, id });
      }
      token = page.NextContinuationToken;
    } while (token);
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * Checks once per origin that the service enforces conditional writes: a second create with
   * `If-None-Match: *` must fail. `unsupported` otherwise (two writers could both win).
   */
  ensureConditionalWrites(signal?: AbortSignal): Promise<void> {
    this.conditional ??= (async () => {
      const { sdk, client } = await this.c();
      const Key = `${this.prefix}tmp/cas-probe-${randomBytes(8).toString('hex')}`;
      const put = () =>
        client.send(new sdk.PutObjectCommand({ Bucket: this.bucket, Key, Body: 'probe', IfNoneMatch: '*' }), {
          abortSignal: signal,
        });
      try {
        await put();
      } catch (err) {
        throw s3Error(err, 'probe conditional writes');
      }
      let enforced = false;
      try {
        await put();
      } catch (err) {
        if (statusOf(err) !== 412 && statusOf(err) !== 409) throw s3Error(err, 'probe conditional writes');
        enforced = true;
      } finally {
        await client.send(new sdk.DeleteObjectCommand({ Bucket: this.bucket, Key })).catch(() => {});
      }
      if (!enforced) {
        throw new TensorFSError('unsupported', 'this S3 service ignores conditional writes; refs cannot move safely', {
          details: { rule: 's3.no_conditional_writes' },
        });
      }
    })();
    this.conditional.catch(() => {
      this.conditional = undefined;
    });
    return this.conditional;
  }

  async setRef(
    name: string,
    id: ObjectId,
    expected: ObjectId | null | undefined,
    options: CallOptions = {},
  ): Promise<void> {
    const { sdk, client } = await this.c();
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
      await client.send(
        new sdk.PutObjectCommand({
          Bucket: this.bucket,
          Key,
          Body: `${id}\n`,
          ContentType: 'text/plain',
          ...condition,
        }),
        { abortSignal: options.signal },
      );
    } catch (err) {
      const st = statusOf(err);
      if (st === 412 || st === 409) {
        throw new TensorFSError('conflict', 'the remote ref moved', {
          details: { rule: 'remote.ref_moved', ref: name },
        });
      }
      throw s3Error(err, 'write ref');
    }
  }

  async lacks(ids: readonly ObjectId[], options: CallOptions = {}): Promise<ObjectId[]> {
    const { sdk, client } = await this.c();
    const out: ObjectId[] = [];
    let next = 0;
    const worker = async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        try {
          await client.send(new sdk.HeadObjectCommand({ Bucket: this.bucket, Key: this.key(id) }), {
            abortSignal: options.signal,
          });
        } catch (err) {
          if (statusOf(err) === 404) out.push(id);
          else throw s3Error(err, 'head object');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(16, ids.length) }, worker));
    return out;
  }

  async read(id: ObjectId, offset: number, options: CallOptions = {}): Promise<ObjectRead> {
    const { sdk, client } = await this.c();
    try {
      const r = await client.send(
        new sdk.GetObjectCommand({
          Bucket: this.bucket,
          Key: this.key(id),
          ...(offset > 0 ? { Range: `bytes=${offset}-` } : {}),
        }),
        { abortSignal: options.signal },
      );
      const body = r.Body as unknown as Readable;
      const m = /bytes (\d+)-(\d+)\/(\d+)/.exec(r.ContentRange ?? '');
      if (offset > 0 && m && Number(m[1]) === offset)
        return { offset, size: Number(m[3]), body, cancel: () => body.destroy() };
      return { offset: 0, size: r.ContentLength, body, cancel: () => body.destroy() };
    } catch (err) {
      const st = statusOf(err);
      if (st === 404) {
        throw new TensorFSError('not_found', 'the origin does not hold this object', {
          details: { rule: 'remote.no_object', digest: id },
        });
      }
      if (st === 416) return { offset, body: Readable.from([]), cancel: () => {} };
      throw s3Error(err, 'read object');
    }
  }

  async write(
    id: ObjectId,
    length: number,
    body: (offset?: number, end?: number) => AsyncIterable<Uint8Array>,
    options: WriteOptions = {},
  ): Promise<void> {
    if (length > this.multipart.thresholdBytes) return this.writeMultipart(id, length, body, options);
    const { sdk, client } = await this.c();
    // Small objects are verified whole before sending (and the SDK may retry them); large ones
    // stream through `verified`, whose failure aborts the request before S3 completes it.
    let failure: unknown;
    const ctl = new AbortController();
    const signal = options.signal ? AbortSignal.any([options.signal, ctl.signal]) : ctl.signal;
    let Body: Uint8Array | Readable;
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
    try {
      await client.send(
        new sdk.PutObjectCommand({
          Bucket: this.bucket,
          Key: this.key(id),
          Body,
          ContentLength: length,
          ChecksumSHA256: idBase64(id),
          ContentType: 'application/octet-stream',
        }),
        { abortSignal: signal },
      );
    } catch (err) {
      if (failure !== undefined) throw failure;
      if (options.signal?.aborted) throw cancelled();
      throw s3Error(err, 'write object');
    }
  }

  /**
   * A multipart upload that resumes: an upload already started for this key (by an interrupted
   * push) is continued — its parts whose size and SHA-256 match the local bytes are kept, the
   * rest are sent. Every part carries its SHA-256 (S3 checks it), and the whole object's SHA-256
   * is computed over all parts, sent or kept, before CompleteMultipartUpload: bytes that do not
   * hash to the id abort the upload (`corrupt`) and never become an object. Other failures leave
   * the upload for the next push to resume (a bucket lifecycle rule cleans abandoned ones).
   */
  private async writeMultipart(
    id: ObjectId,
    length: number,
    body: (offset?: number, end?: number) => AsyncIterable<Uint8Array>,
    options: WriteOptions,
  ): Promise<void> {
    const { sdk, client } = await this.c();
    const Key = this.key(id);
    const Bucket = this.bucket;
    const opts = { abortSignal: options.signal };
    const partSize = Math.max(this.multipart.partBytes, Math.ceil(length / S3_MAX_PARTS));
    const count = Math.max(1, Math.ceil(length / partSize));
    const fail = (err: unknown, op: string) => {
      if (options.signal?.aborted) return cancelled();
      return s3Error(err, op);
    };
    // An upload of this key left by an interrupted push, and the parts it holds.
    let uploadId: string | undefined;
    const kept = new Map<number, { size: number; etag: string; sha256?: string }>();
    try {
      const ups = await client.send(new sdk.ListMultipartUploadsCommand({ Bucket, Prefix: Key }), opts);
      const mine = (ups.Uploads ?? []).filter((u) => u.Key === Key && u.UploadId);
      mine.sort((a, b) => (b.Initiated?.getTime() ?? 0) - (a.Initiated?.getTime() ?? 0));
      uploadId = mine[0]?.UploadId;
      if (uploadId !== undefined) {
        let marker: string | undefined;
        for (;;) {
          const r = await client.send(
            new sdk.ListPartsCommand({ Bucket, Key, UploadId: uploadId, PartNumberMarker: marker }),
            opts,
          );
          for (const p of r.Parts ?? []) {
            if (p.PartNumber && p.ETag)
              kept.set(p.PartNumber, { size: p.Size ?? -1, etag: p.ETag, sha256: p.ChecksumSHA256 });
          }
          if (!r.IsTruncated || !r.NextPartNumberMarker) break;
          marker = r.NextPartNumberMarker;
        }
      }
    } catch {
      // No listing (a service or a policy without it): start a new upload.
      if (options.signal?.aborted) throw cancelled();
      uploadId = undefined;
      kept.clear();
    }
    try {
      if (uploadId === undefined) {
        const r = await client.send(
          new sdk.CreateMultipartUploadCommand({
            Bucket,
            Key,
            ChecksumAlgorithm: 'SHA256',
            ContentType: 'application/octet-stream',
          }),
          opts,
        );
        uploadId = r.UploadId;
        if (!uploadId)
          throw new TensorFSError('unavailable', 's3 origin: no upload id', { details: { rule: 's3.no_upload_id' } });
      }
    } catch (err) {
      throw fail(err, 'create multipart upload');
    }
    const whole = createHash('sha256');
    const done: { PartNumber: number; ETag: string; ChecksumSHA256: string }[] = [];
    for (let n = 1; n <= count; n++) {
      if (options.signal?.aborted) throw cancelled();
      const start = (n - 1) * partSize;
      const end = Math.min(length, start + partSize);
      const chunks: Uint8Array[] = [];
      let got = 0;
      for await (const c of body(start, end)) {
        const piece = c.length > end - start - got ? c.subarray(0, end - start - got) : c;
        chunks.push(piece);
        got += piece.length;
        if (got === end - start) break;
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
      try {
        const r = await client.send(
          new sdk.UploadPartCommand({
            Bucket,
            Key,
            UploadId: uploadId,
            PartNumber: n,
            Body: bytes,
            ContentLength: got,
            ChecksumSHA256: sha,
          }),
          opts,
        );
        done.push({ PartNumber: n, ETag: r.ETag ?? '', ChecksumSHA256: sha });
        options.sent?.(got);
      } catch (err) {
        throw fail(err, 'upload part');
      }
    }
    const actual = `sha256:${whole.digest('hex')}`;
    if (actual !== id) {
      await client.send(new sdk.AbortMultipartUploadCommand({ Bucket, Key, UploadId: uploadId })).catch(() => {});
      throw new TensorFSError('corrupt', 'object bytes do not match their id', {
        details: { rule: 'remote.digest_mismatch', digest: id, actual },
      });
    }
    try {
      await client.send(
        new sdk.CompleteMultipartUploadCommand({ Bucket, Key, UploadId: uploadId, MultipartUpload: { Parts: done } }),
        opts,
      );
    } catch (err) {
      throw fail(err, 'complete multipart upload');
    }
  }

  async close(): Promise<void> {
    this.owned?.destroy();
  }
}
