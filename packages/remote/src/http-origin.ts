/**
 * HTTP origins: a static web server over the portable folder layout (read-only), and the
 * TensorFS hub (the `/v1/` API of spec/v1/remote.md).
 */
import {
  type ObjectId,
  TensorFSError,
  isErrorCode,
  isTensorFSError,
  parseObjectId,
  throwIfAborted,
} from '@tensorfs/format';
import { type Capability, type SetRefOptions, validateRefName } from '@tensorfs/format/store';
import { parseRefText } from './folder.js';
import { HttpClient, type HttpOptions, type HttpResponse, displayUrl, readText } from './http.js';
import {
  type BatchRead,
  type CallOptions,
  type ObjectRead,
  OriginBase,
  type OriginRef,
  type OriginRefListing,
  type ReadOptions,
  type WriteOptions,
} from './origin.js';

/** Most ids asked about in one `lacks` request. */
export const LACKS_BATCH = 4096;

function hexOf(id: ObjectId): string {
  return parseObjectId(id).slice(7);
}

function encodeRef(name: string): string {
  validateRefName(name);
  return name.split('/').map(encodeURIComponent).join('/');
}

/** Turns a GET (possibly ranged) answer into an {@link ObjectRead}. */
function toRead(res: HttpResponse, id: ObjectId, offset: number): ObjectRead {
  const cancel = () => {
    res.body.destroy();
  };
  if (res.status === 404) {
    // Read the (small) error body off rather than destroying it: a destroyed unread body fails
    // later with an AbortError nobody listens to.
    res.body.dump().catch(() => {});
    throw new TensorFSError('not_found', 'the origin does not hold this object', {
      details: { rule: 'remote.no_object', digest: id },
    });
  }
  if (res.status === 416) {
    cancel();
    const m = /\*\/(\d+)/.exec(String(res.headers['content-range'] ?? ''));
    const size = m ? Number(m[1]) : undefined;
    if (size !== undefined && size === offset) return { offset, size, body: (async function* () {})(), cancel };
    throw new TensorFSError('corrupt', 'the origin holds a shorter object than its id names', {
      details: { rule: 'remote.short_object', digest: id, offset, size },
    });
  }
  if (res.status === 206) {
    const m = /bytes (\d+)-(\d+)\/(\d+|\*)/.exec(String(res.headers['content-range'] ?? ''));
    if (!m || Number(m[1]) !== offset) {
      cancel();
      throw new TensorFSError('malformed', 'the origin answered a range that was not asked', {
        details: { rule: 'http.bad_content_range', digest: id },
      });
    }
    return { offset, size: m[3] === '*' ? undefined : Number(m[3]), ...bodyOf(res), cancel };
  }
  const len = Number(res.headers['content-length']);
  return { offset: 0, size: Number.isSafeInteger(len) ? len : undefined, ...bodyOf(res), cancel };
}

/** The body of a read: owned chunks (undici's, or the raw reader's, which takes them back). */
function bodyOf(res: HttpResponse): Pick<ObjectRead, 'body' | 'owned' | 'recycle'> {
  const body = res.body;
  return { body, owned: true, ...(body.recycle ? { recycle: (chunk) => body.recycle!(chunk) } : {}) };
}

/** When uploads go in parts (hub sessions, S3 multipart): objects above `thresholdBytes`, in parts of `partBytes`. */
export interface MultipartOptions {
  /** Objects larger than this upload in resumable parts (default 64 MiB). */
  thresholdBytes?: number;
  /** Bytes per part (default 16 MiB; S3 needs at least 5 MiB). */
  partBytes?: number;
}

/** Defaults of {@link MultipartOptions}. */
export const MULTIPART_THRESHOLD = 64 << 20;
export const MULTIPART_PART = 16 << 20;

/** Options of the HTTP origins. */
export type HttpOriginOptions = HttpOptions & { multipart?: MultipartOptions };

/** A static HTTP origin: `GET <base>/refs/<name>` and `GET <base>/chunks/<hex>` (with `Range`). */
export class StaticHttpOrigin extends OriginBase {
  readonly kind: 'http' | 'hub' = 'http';
  readonly writable: boolean = false;
  readonly display: string;
  /** Read-only: no capability beyond reading objects and refs. */
  readonly capabilities: ReadonlySet<Capability> = new Set<Capability>();
  protected readonly http: HttpClient;
  protected readonly base: string;
  protected readonly multipart: Required<MultipartOptions>;

  constructor(base: string, options: HttpOriginOptions = {}) {
    super();
    this.base = base.replace(/\/+$/, '');
    this.display = displayUrl(this.base);
    this.http = new HttpClient(options);
    this.multipart = {
      thresholdBytes: options.multipart?.thresholdBytes ?? MULTIPART_THRESHOLD,
      partBytes: Math.max(1, options.multipart?.partBytes ?? MULTIPART_PART),
    };
  }

  async getRef(name: string, options: CallOptions = {}): Promise<ObjectId | null> {
    throwIfAborted(options.signal);
    const res = await this.http.send({
      method: 'GET',
      url: `${this.base}/refs/${encodeRef(name)}`,
      accept: [404],
      signal: options.signal,
    });
    const text = await readText(res.body, 1024);
    if (res.status === 404) return null;
    return parseRefText(text);
  }

  /** `unsupported`: a static web server has no listing (no `refs.list` capability). */
  override async scanRefs(options: CallOptions = {}): Promise<OriginRefListing> {
    throwIfAborted(options.signal);
    throw new TensorFSError('unsupported', 'a static HTTP origin cannot list its refs', {
      details: { rule: 'remote.no_listing', capability: 'refs.list' },
    });
  }

  /** The refs of {@link scanRefs}. */
  async listRefs(options: CallOptions = {}): Promise<OriginRef[]> {
    return (await this.scanRefs(options)).refs;
  }

  async setRef(_name: string, _id: ObjectId, options: SetRefOptions = {}): Promise<void> {
    throwIfAborted(options.signal);
    throw new TensorFSError('unsupported', 'a static HTTP origin is read-only', {
      details: { rule: 'remote.read_only' },
    });
  }

  async lacks(ids: readonly ObjectId[], options: CallOptions = {}): Promise<ObjectId[]> {
    throwIfAborted(options.signal);
    const out: ObjectId[] = [];
    let next = 0;
    const worker = async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        const res = await this.http.send({
          method: 'HEAD',
          url: `${this.base}/chunks/${hexOf(id)}`,
          accept: [404],
          signal: options.signal,
        });
        await res.body.dump().catch(() => {});
        if (res.status === 404) out.push(id);
      }
    };
    await Promise.all(Array.from({ length: Math.min(8, ids.length) }, worker));
    return out;
  }

  async read(id: ObjectId, offset: number, options: ReadOptions = {}): Promise<ObjectRead> {
    throwIfAborted(options.signal);
    const res = await this.http.send({
      method: 'GET',
      url: this.objectUrl(id),
      headers: offset > 0 ? { range: `bytes=${offset}-` } : {},
      accept: [404, 416],
      signal: options.signal,
      large: options.large,
    });
    return toRead(res, id, offset);
  }

  /** The object's length from a `HEAD` (`not_found` on 404). */
  override async objectSize(id: ObjectId, options: CallOptions = {}): Promise<number> {
    throwIfAborted(options.signal);
    const res = await this.http.send({
      method: 'HEAD',
      url: this.objectUrl(id),
      accept: [404],
      signal: options.signal,
    });
    await res.body.dump().catch(() => {});
    if (res.status === 404) {
      throw new TensorFSError('not_found', 'the origin does not hold this object', {
        details: { rule: 'remote.no_object', digest: id },
      });
    }
    const len = Number(res.headers['content-length']);
    if (!Number.isSafeInteger(len) || len < 0) {
      throw new TensorFSError('malformed', "the origin did not say the object's length", {
        details: { rule: 'http.no_length', digest: id },
      });
    }
    return len;
  }

  protected objectUrl(id: ObjectId): string {
    return `${this.base}/chunks/${hexOf(id)}`;
  }

  async write(
    _id: ObjectId,
    _length: number,
    _body: () => AsyncIterable<Uint8Array>,
    _options?: CallOptions,
  ): Promise<void> {
    throw new TensorFSError('unsupported', 'a static HTTP origin is read-only', {
      details: { rule: 'remote.read_only' },
    });
  }

  async close(): Promise<void> {}
}

/** Who a token is to a hub ({@link HubOrigin.whoami}). */
export interface HubIdentity {
  /** The owner id: 16 hex digits of the token's SHA-256 (`anonymous` without a token). */
  owner: string;
  anonymous: boolean;
  admin: boolean;
}

/** The TensorFS hub: the `/v1/` API (refs with compare-and-swap, batched `lacks`, verified uploads). */
export class HubOrigin extends StaticHttpOrigin {
  override readonly kind = 'hub' as const;
  override readonly writable = true;
  /** The hub checks a ref's closure before it moves; it has no ref deletion in its API. */
  override readonly capabilities: ReadonlySet<Capability> = new Set<Capability>([
    'objects.write',
    'refs.write',
    'refs.list',
    'refs.closure',
  ]);

  protected override objectUrl(id: ObjectId): string {
    return `${this.base}/v1/objects/${hexOf(id)}`;
  }

  /** Asks the hub to collect garbage in its own store (`POST /v1/admin/gc`; a token with the `admin` scope). */
  async adminGc(body: { graceMs: number; dryRun: boolean }, signal?: AbortSignal): Promise<unknown> {
    const { value } = await this.http.json<unknown>({
      method: 'POST',
      url: `${this.base}/v1/admin/gc`,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal,
      retry: false,
    });
    return value;
  }

  override async getRef(name: string, options: CallOptions = {}): Promise<ObjectId | null> {
    throwIfAborted(options.signal);
    const { status, value } = await this.http.json<{ id?: string }>({
      method: 'GET',
      url: `${this.base}/v1/refs/${encodeRef(name)}`,
      accept: [404],
      signal: options.signal,
    });
    if (status === 404) return null;
    return parseRefText(String(value?.id ?? ''));
  }

  /**
   * `GET /v1/whoami`: who this origin's token is to the hub — its owner id (what a branch move's
   * revision document must name as `author`, else `denied` `hub.author_mismatch`) and whether it
   * is an administrator's. Asked once per origin.
   */
  whoami(options: CallOptions = {}): Promise<HubIdentity> {
    this.identity ??= this.http
      .json<{ owner?: unknown; anonymous?: unknown; admin?: unknown }>({
        method: 'GET',
        url: `${this.base}/v1/whoami`,
        signal: options.signal,
      })
      .then(({ value }) => {
        if (typeof value?.owner !== 'string' || value.owner === '') {
          throw new TensorFSError('malformed', 'the hub did not say who this token is', {
            details: { rule: 'hub.bad_whoami' },
          });
        }
        return { owner: value.owner, anonymous: value.anonymous === true, admin: value.admin === true };
      });
    this.identity.catch(() => {
      this.identity = undefined;
    });
    return this.identity;
  }

  private identity: Promise<HubIdentity> | undefined;

  /** The hub's listing: the refs it could read, and the ones it names as unreadable (`problems`). */
  override async scanRefs(options: CallOptions = {}): Promise<OriginRefListing> {
    throwIfAborted(options.signal);
    const { value } = await this.http.json<{
      refs?: { name: string; id: string }[];
      problems?: { name?: unknown; code?: unknown; rule?: unknown }[];
    }>({
      method: 'GET',
      url: `${this.base}/v1/refs`,
      signal: options.signal,
    });
    // A hub from before `problems` answers refs only; an entry of an unknown family is kept as `corrupt`.
    const problems = Array.isArray(value?.problems) ? value.problems : [];
    return {
      refs: (value?.refs ?? []).map((r) => ({ name: String(r.name), id: parseRefText(String(r.id)) })),
      problems: problems.map((p) => ({
        name: String(p?.name ?? ''),
        code: isErrorCode(p?.code) ? p.code : 'corrupt',
        rule: String(p?.rule ?? ''),
      })),
    };
  }

  override async setRef(name: string, id: ObjectId, options: SetRefOptions = {}): Promise<void> {
    throwIfAborted(options.signal);
    parseObjectId(id);
    const expected = options.expected;
    const body = JSON.stringify(expected === undefined ? { id } : { id, expected });
    const res = await this.http.send({
      method: 'PUT',
      url: `${this.base}/v1/refs/${encodeRef(name)}`,
      headers: { 'content-type': 'application/json' },
      body,
      signal: options.signal,
      // a retried compare-and-swap could report `conflict` for its own first success
      retry: false,
    });
    await res.body.dump().catch(() => {});
  }

  override lacks(ids: readonly ObjectId[], options: CallOptions = {}): Promise<ObjectId[]> {
    return this.askLacks(ids, false, options);
  }

  /**
   * {@link lacks} with `"freshen": true`: the hub restarts the retention age of what it holds
   * (its store's mtime, or the bucket's `LastModified`), so its GC keeps what a push skips. A
   * hub from before this ignores the key and only answers.
   */
  freshen(ids: readonly ObjectId[], options: CallOptions = {}): Promise<ObjectId[]> {
    return this.askLacks(ids, true, options);
  }

  private async askLacks(ids: readonly ObjectId[], freshen: boolean, options: CallOptions): Promise<ObjectId[]> {
    throwIfAborted(options.signal);
    const out: ObjectId[] = [];
    for (let i = 0; i < ids.length; i += LACKS_BATCH) {
      const batch = ids.slice(i, i + LACKS_BATCH);
      const { value } = await this.http.json<{ lacks?: string[] }>({
        method: 'POST',
        url: `${this.base}/v1/objects/lacks`,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(freshen ? { ids: batch, freshen: true } : { ids: batch }),
        signal: options.signal,
      });
      const asked = new Set<string>(batch);
      for (const l of value?.lacks ?? []) {
        if (!asked.has(l)) {
          throw new TensorFSError('malformed', 'the hub answered about objects that were not asked', {
            details: { rule: 'hub.bad_lacks' },
          });
        }
        out.push(l as ObjectId);
      }
    }
    return out;
  }

  /**
   * `POST /v1/objects/batch`: the objects in the order asked, parsed from the framed answer
   * (spec/v1/remote.md "Batched reads"). Stops with `malformed` at a frame naming another id or
   * longer than `maxObjectBytes`; ends early when the answer is cut. Bytes are not verified here.
   */
  async *readBatch(
    ids: readonly ObjectId[],
    options: CallOptions & { maxObjectBytes: number },
  ): AsyncIterable<BatchRead> {
    const res = await this.http.send({
      method: 'POST',
      url: `${this.base}/v1/objects/batch`,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ids }),
      signal: options.signal,
    });
    const bad = (why: string) =>
      new TensorFSError('malformed', `the hub's batch answer is not valid: ${why}`, {
        details: { rule: 'hub.bad_batch' },
      });
    let buf: Buffer = Buffer.alloc(0);
    let next = 0;
    // The object being read: its id and remaining length (null between frames).
    let cur: { id: ObjectId; length: number; parts: Buffer[]; have: number } | null = null;
    try {
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
        for (;;) {
          if (cur === null) {
            if (buf.length < 40) break;
            if (next >= ids.length) throw bad('more frames than ids');
            const id = ids[next++]!;
            if (buf.subarray(0, 32).toString('hex') !== id.slice(7)) throw bad('a frame names another object');
            const n = buf.readBigUInt64BE(32);
            buf = buf.subarray(40);
            if (n === 0xffff_ffff_ffff_ffffn) {
              yield { id, bytes: null };
              continue;
            }
            if (n > BigInt(options.maxObjectBytes)) throw bad('an object is larger than asked');
            cur = { id, length: Number(n), parts: [], have: 0 };
          }
          const take = Math.min(cur.length - cur.have, buf.length);
          if (take > 0) {
            cur.parts.push(buf.subarray(0, take));
            cur.have += take;
            buf = buf.subarray(take);
          }
          if (cur.have < cur.length) break;
          const done = cur;
          cur = null;
          yield { id: done.id, bytes: Buffer.concat(done.parts, done.length) };
        }
      }
      if (cur !== null || buf.length > 0 || next < ids.length) {
        throw new TensorFSError('unavailable', 'the batch answer ended early', {
          details: { rule: 'hub.short_batch' },
        });
      }
    } finally {
      res.body.destroy();
    }
  }

  override async write(
    id: ObjectId,
    length: number,
    body: (offset?: number, end?: number) => AsyncIterable<Uint8Array>,
    options: WriteOptions = {},
  ): Promise<void> {
    if (length > this.multipart.thresholdBytes && !this.noSessions) {
      try {
        await this.writeInParts(id, length, body, options);
        return;
      } catch (err) {
        // A hub without upload sessions: one PUT, as before.
        if (!(isTensorFSError(err) && err.code === 'not_found' && err.details.rule === 'hub.no_route')) throw err;
        this.noSessions = true;
      }
    }
    const res = await this.http.send({
      method: 'PUT',
      url: this.objectUrl(id),
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(length) },
      body: () => body(0),
      payloadDigest: id,
      signal: options.signal,
    });
    await res.body.dump().catch(() => {});
  }

  private noSessions = false;

  /**
   * A resumable upload (spec/v1/remote.md "Resumable uploads"): open or find the session (the hub
   * says how many bytes it holds), send the rest in parts from that offset, then complete — the
   * hub verifies the whole object before it is visible. An interrupted upload resumes where the
   * hub stands, so only the missing parts cross the wire again.
   */
  private async writeInParts(
    id: ObjectId,
    length: number,
    body: (offset?: number, end?: number) => AsyncIterable<Uint8Array>,
    options: WriteOptions,
  ): Promise<void> {
    const url = `${this.base}/v1/uploads/${hexOf(id)}`;
    const openSession = async () => {
      const { value } = await this.http.json<{ offset?: number; stored?: boolean }>({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ length }),
        signal: options.signal,
      });
      const offset = value?.offset;
      if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0 || offset > length) {
        throw new TensorFSError('malformed', 'the hub answered an invalid upload offset', {
          details: { rule: 'hub.bad_upload' },
        });
      }
      return { offset, stored: value?.stored === true };
    };
    let { offset, stored } = await openSession();
    if (stored) return;
    let conflicts = 0;
    while (offset < length) {
      const n = Math.min(this.multipart.partBytes, length - offset);
      const from = offset;
      try {
        const { value } = await this.http.json<{ offset?: number }>({
          method: 'PUT',
          url: `${url}?offset=${from}`,
          headers: { 'content-type': 'application/octet-stream', 'content-length': String(n) },
          body: () => take(body(from, from + n), n),
          signal: options.signal,
          // A retried part would start at a stale offset: ask the hub where it stands instead.
          retry: false,
        });
        const next = value?.offset;
        if (next !== from + n) {
          throw new TensorFSError('malformed', 'the hub answered an invalid upload offset', {
            details: { rule: 'hub.bad_upload' },
          });
        }
        offset = next;
        options.sent?.(n);
      } catch (err) {
        if (options.signal?.aborted) throw err;
        const retriable = isTensorFSError(err) && (err.code === 'conflict' || err.code === 'unavailable');
        if (!retriable) throw err;
        // Ask where the session stands. Another upload of the same object (a concurrent push
        // with this token) moving it on, or completing it, is progress, not a failure: only
        // attempts that found the session no further count against the bound.
        const before = offset;
        ({ offset, stored } = await openSession());
        if (stored) return;
        if (offset <= before && ++conflicts > 5) throw err;
      }
    }
    const res = await this.http.send({ method: 'POST', url: `${url}/complete`, signal: options.signal, retry: false });
    await res.body.dump().catch(() => {});
  }
}

/** The first `n` bytes of `source` (the rest is not read). */
async function* take(source: AsyncIterable<Uint8Array>, n: number): AsyncIterable<Uint8Array> {
  let left = n;
  if (left <= 0) return;
  for await (const c of source) {
    const piece = c.length > left ? c.subarray(0, left) : c;
    left -= piece.length;
    yield piece;
    if (left === 0) return;
  }
}
