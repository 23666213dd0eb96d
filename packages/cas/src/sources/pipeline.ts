/**
 * The one import pipeline: every source (`hf://`, `https://`, `civitai://`, and any later one) is
 * resolved → its files listed with sizes and announced digests → each file's header read first
 * (bounded ranges; a source with positioned reads needs no probe) → planned as a local import
 * plans it (same records, same objects) → admitted → its whole bytes checked against what the
 * source announced → the snapshot written → the ref set once. A source is one adapter
 * ({@link Source}); nothing here knows which one it is.
 *
 * Each byte is hashed once for its object id, by the store: the planner cuts, and its "hasher"
 * ({@link StoreHasher}) hands each record to the store's `put` (a record too big to buffer to
 * `putStream`), whose returned id is the record's digest — the store hashes what it admits and
 * trusts no caller. Small records keep the store's group commit (`putBatch`): hashed here to
 * plan, and by the store again as it admits the group (a few bytes of a model). The whole file's
 * SHA-256 is computed once more over the same bytes, on a worker thread for a source with
 * positioned reads (the planner's buffers are shared memory the worker reads in place).
 *
 * Into a `LocalStore`, a file with positioned reads (a local file, a Hugging Face cache blob) is
 * admitted by the store's own admission instead ({@link LocalAdmission}: hashed on its worker
 * threads, written to temps while records hash, `O_DIRECT` when the store asks, small records in
 * group commits): what `importPath` always did, now its only path. Everything else — the source
 * checks, the announced digests, the whole-file list, the snapshot and the ref — is the same.
 */
import { createHash } from 'node:crypto';
import { checkObject, checkOptions } from '../store/args.js';
import { type FileHash, recordFileSha256, WholeFileHashes } from '../store/file-sha256.js';
import { LocalAdmission, localObjectsOf, readerRange, readerSource } from '../store/local-admission.js';
import {
  cancelledError,
  fromHex,
  comparePaths,
  detectCodec,
  isTensorFSError,
  type ManifestEntry,
  type ObjectId,
  type Progress,
  progressEvent,
  RECORD_GRID_BYTES,
  readHead,
  TensorFSError,
  throwIfAborted,
  validatePath,
  validateSymlinkTarget,
  wrongArgument,
} from '@tensorfs/format';
import { type Lease, type PutResult, type Store, supports, validateRefName } from '@tensorfs/format/store';
import { type Hasher, type HashStream, planAndHash, type Seams } from '@tensorfs/planner';
import { RemoteFile } from './remote-file.js';
import type { FileReader, ResolvedSource, Source, SourceFile, SourceVoice } from './source.js';

/** The running counts of {@link importSources}, reported as a {@link Progress} (phase `import`, unit `bytes`). */
interface SourceCounts {
  files: number;
  filesTotal: number;
  /** Bytes of selected files planned and hashed so far. */
  bytes: number;
  bytesTotal: number;
  /** Body bytes received from the sources so far. */
  bytesFetched: number;
  /** Bytes and objects this import wrote (new objects) so far. */
  bytesWritten: number;
  objectsWritten: number;
  path: string;
}

/** Options of {@link importSources}. */
export interface ImportSourcesOptions {
  /** A ref to point at the snapshot (set once, last). */
  name?: string;
  /** Compare-and-swap for `name` (`null`: must not exist). */
  expected?: ObjectId | null;
  /**
   * Records admitted (hashed and written by the store) at once (default 4); into a `LocalStore`,
   * the hashing worker threads of its local admission (default: one per core).
   */
  threads?: number;
  /**
   * Extra cut points inside tensors, by snapshot path (as `importPath`'s `seams`): tensor name →
   * byte offsets. A seam naming no tensor of its file is `invalid_argument` (`planner.seam_tensor`).
   */
  seams?: Readonly<Record<string, Seams>>;
  /**
   * Also compute the whole-file SHA-256 of each local file of several records and record the
   * tree's list (`_hf/sha256/<tree>`), so a Hugging Face server's first `HEAD` of such a file
   * reads no byte. Default false: that is a second SHA-256 pass over every byte, which on a
   * machine of few cores costs the import as much time as the durable write (docs/decisions.md 25);
   * a server computes a missing digest once, on first request, and keeps it. Digests a source
   * announces (the Hub's LFS SHA-256, a Hugging Face cache's blob names, `--sha256`) are checked
   * and recorded whatever this says, and a file of one record costs nothing (its id is its
   * SHA-256).
   */
  fileSha256?: boolean;
  signal?: AbortSignal;
  /**
   * Import under the caller's lease instead of one of its own: the objects and the snapshot are
   * added to it and it is not released, so the caller can name the snapshot later while it is live
   * (the Hugging Face cache import names all its snapshots once every one is in). The whole-file
   * SHA-256 list is then the caller's to record (`recordFileSha256` with the result's
   * `fileSha256`) once it names the snapshot: a failed import leaves no ref behind.
   */
  lease?: Lease;
  /**
   * Called as bytes are hashed and as each file is done: phase `import`, unit `bytes`, with
   * `files`/`filesTotal`, `bytes`/`bytesTotal`, `bytesFetched` (body bytes received),
   * `bytesWritten`/`objectsWritten` (new objects) and `path`.
   */
  onProgress?: (p: Progress) => void;
}

/** What {@link importSources} made. */
export interface ImportSourcesResult<P = unknown> {
  snapshot: ObjectId;
  /** Each source's recorded metadata, in the order given. */
  sources: P[];
  /** Regular files imported. */
  files: number;
  /** Symbolic links recorded (a local folder's). */
  links: number;
  /** Bytes of the imported files. */
  bytes: number;
  /** Body bytes received. */
  bytesFetched: number;
  bytesWritten: number;
  objectsWritten: number;
  /**
   * Each file's SHA-256 (hex), by path, where known (recorded with the snapshot as its whole-file
   * list): files of zero or one record, files whose source announced it, and, with `fileSha256`,
   * every local file.
   */
  fileSha256: ReadonlyMap<string, string>;
}

/** Small records admitted together: at most this many bytes or objects per group commit. */
const GROUP_BYTES = 64 << 20;
const GROUP_OBJECTS = 16384;
/** Records up to this length go through the group commit (larger ones are put alone). */
const GROUP_RECORD = 4 << 20;
/** Records admitted at once by default (each a `put` the store hashes and writes). */
const ADMISSIONS = 4;

/**
 * Imports the files of one or more sources into `store` as one snapshot (paths must not repeat
 * across sources). Each file is read header first, planned, hashed and admitted as a local import
 * does, and checked against the digest its source announced before the snapshot is written; the
 * ref (`name`) is set last. Objects of a failed import are left unreferenced (GC takes them).
 * @throws {TensorFSError} whatever a source refuses with (its own rules), `corrupt` (bytes that
 *   differ from what was announced: `<source>.digest_mismatch`), `invalid_argument`
 *   (`source.duplicate_path`, a bad `name`), `conflict` (`expected`), `cancelled`.
 */
export async function importSources<P>(
  store: Store,
  sources: Source<P> | readonly Source<P>[],
  options: ImportSourcesOptions = {},
): Promise<ImportSourcesResult<P>> {
  checkObject(store, 'store');
  for (const m of ['lease', 'has', 'put', 'putStream', 'putManifest', 'setRef'] as const) {
    if (typeof store[m] !== 'function') wrongArgument('store', 'store', `a Store (with ${m}())`, store);
  }
  checkOptions(options);
  if (options.lease !== undefined) checkObject(options.lease, 'options.lease');
  const { signal } = options;
  if (options.name !== undefined) validateRefName(options.name);
  const list = Array.isArray(sources) ? (sources as readonly Source<P>[]) : [sources as Source<P>];
  for (const s of list) {
    if (typeof s !== 'object' || s === null || typeof s.resolve !== 'function') {
      wrongArgument('store', 'sources', 'a Source (an object with resolve()) or an array of them', s);
    }
  }
  const resolved: ResolvedSource<P>[] = [];
  try {
    for (const s of list) {
      throwIfAborted(signal);
      resolved.push(await s.resolve(signal));
    }
    const files: { file: SourceFile; source: ResolvedSource<P> }[] = [];
    const seen = new Set<string>();
    for (const source of resolved) {
      for (const file of source.files) {
        validatePath(file.path);
        if (seen.has(file.path)) {
          throw new TensorFSError('invalid_argument', `two sources hold ${JSON.stringify(file.path)}`, {
            details: { rule: 'source.duplicate_path', path: file.path },
          });
        }
        seen.add(file.path);
        files.push({ file, source });
      }
    }
    files.sort((a, b) => comparePaths(a.file.path, b.file.path));
    const links: ManifestEntry[] = [];
    for (const source of resolved) {
      for (const link of source.links ?? []) {
        validatePath(link.path);
        validateSymlinkTarget(link.path, link.symlink);
        if (seen.has(link.path)) {
          throw new TensorFSError('invalid_argument', `two sources hold ${JSON.stringify(link.path)}`, {
            details: { rule: 'source.duplicate_path', path: link.path },
          });
        }
        seen.add(link.path);
        links.push({ path: link.path, kind: 'symlink', target: link.symlink });
      }
    }
    const progress: SourceCounts = {
      files: 0,
      filesTotal: files.length,
      bytes: 0,
      bytesTotal: files.reduce((n, f) => n + f.file.size, 0),
      bytesFetched: 0,
      bytesWritten: 0,
      objectsWritten: 0,
      path: '',
    };
    const counts = progress;
    const own = options.lease === undefined;
    const lease =
      options.lease ??
      (await store.lease({ purpose: `import ${resolved.map((s) => s.label).join(', ')}`.slice(0, 200) }));
    const admit = new Admission(store, lease, signal, counts);
    const parallelism = options.threads ?? ADMISSIONS;
    const wholes = new WholeFileHashes();
    // A local store admits files with positioned reads itself (early temps, O_DIRECT, its hasher).
    const objects = localObjectsOf(store);
    const local =
      objects === undefined
        ? undefined
        : new LocalAdmission(objects, lease.id, signal, options.threads, (r) => admit.counted(r));
    const digests = resolved.map(() => new Map<string, string>());
    const sha256 = new Map<string, string>();
    try {
      const entries: ManifestEntry[] = [];
      const ctx: FileContext = {
        admit,
        hasher: new StoreHasher(store, lease, admit, signal, parallelism, false),
        sharedHasher: new StoreHasher(store, lease, admit, signal, parallelism, true),
        wholes,
        local,
        signal,
        progress,
        options,
      };
      for (const { file, source } of files) {
        throwIfAborted(signal);
        progress.path = file.path;
        const imported = await importFile(file, source.voice, ctx);
        entries.push(imported.entry);
        // The whole file's SHA-256 (announced and checked, or computed): the tree's list has it.
        if (imported.sha256 !== undefined) sha256.set(file.path, imported.sha256);
        if (imported.digest !== undefined) digests[resolved.indexOf(source)]!.set(file.path, imported.digest);
        progress.files++;
        options.onProgress?.(progressEvent('import', 'bytes', progress));
      }
      await admit.flush();
      await local?.finish();
      throwIfAborted(signal);
      if (links.length > 0) {
        entries.push(...links);
        entries.sort((a, b) => comparePaths(a.path, b.path));
      }
      const snapshot = await store.putManifest({ entries }, { lease });
      if (options.name !== undefined) {
        await store.setRef(options.name, snapshot, {
          lease,
          ...(options.expected !== undefined ? { expected: options.expected } : {}),
        });
      }
      // Named or not, as a local import: a Hugging Face server's first HEAD then reads no byte.
      // A local store's failure to write it is the import's (as `importPath`'s always was); another
      // store may refuse such refs, and then the list is only a shortcut lost.
      if (own) {
        const recorded = recordFileSha256(store, snapshot, entries, sha256, { lease });
        await (local !== undefined ? recorded : recorded.catch(() => {}));
      }
      for (const { file } of files) await file.spool?.done();
      return {
        snapshot,
        sources: resolved.map((s, i) => s.provenance(digests[i]!)),
        files: files.length,
        links: links.length,
        bytes: progress.bytesTotal,
        bytesFetched: progress.bytesFetched,
        bytesWritten: progress.bytesWritten,
        objectsWritten: progress.objectsWritten,
        fileSha256: sha256,
      };
    } finally {
      await local?.close();
      await wholes.close();
      if (own) await lease.release();
    }
  } catch (err) {
    if (signal?.aborted) throw cancelledError(signal.reason);
    throw err;
  } finally {
    for (const s of resolved) await s.close?.().catch(() => {});
  }
}

/** Admits objects: small ones collected into group commits where the store has them. */
class Admission {
  private items: { id: ObjectId; bytes: Uint8Array }[] = [];
  private pending = new Set<ObjectId>();
  private bytes = 0;

  constructor(
    private readonly store: Store,
    private readonly lease: Lease,
    private readonly signal: AbortSignal | undefined,
    private readonly counts: { bytesWritten: number; objectsWritten: number },
  ) {}

  /** True when a record of `length` bytes goes through the group commit ({@link put}). */
  grouped(length: number): boolean {
    return length <= GROUP_RECORD && supports(this.store, 'objects.batch');
  }

  /** Admits an object held in `chunks` (the planner reuses its buffers: copied when grouped). */
  async put(id: ObjectId, chunks: readonly Uint8Array[], length: number): Promise<void> {
    if (this.pending.has(id)) return;
    if (this.grouped(length)) {
      const copy = new Uint8Array(length);
      let at = 0;
      for (const c of chunks) {
        copy.set(c, at);
        at += c.length;
      }
      this.items.push({ id, bytes: copy });
      this.pending.add(id);
      this.bytes += length;
      if (this.items.length >= GROUP_OBJECTS || this.bytes >= GROUP_BYTES) await this.flush();
      return;
    }
    if (await this.store.has(id)) {
      this.lease.add([id]);
      return;
    }
    this.counted(await this.store.put(chunks, { expected: id, lease: this.lease }));
  }

  /** Admits a stream of `length` bytes that must hash to `id`. */
  async putStream(id: ObjectId, length: number, chunks: () => AsyncIterable<Uint8Array>): Promise<void> {
    if (await this.store.has(id)) {
      this.lease.add([id]);
      return;
    }
    this.counted(
      await this.store.putStream(chunks(), {
        expected: id,
        expectedLength: length,
        lease: this.lease,
        ...(this.signal ? { signal: this.signal } : {}),
      }),
    );
  }

  /** Admits what is collected (one group commit); durable when this resolves. */
  async flush(): Promise<void> {
    if (this.items.length === 0) return;
    const items = this.items;
    this.items = [];
    this.pending.clear();
    this.bytes = 0;
    if (!supports(this.store, 'objects.batch'))
      throw new TensorFSError('internal', 'no group commit', { details: { rule: 'import.no_batch' } });
    const out = await this.store.putBatch(
      items.map((i) => ({ bytes: [i.bytes], expected: i.id })),
      { lease: this.lease, ...(this.signal ? { signal: this.signal } : {}) },
    );
    for (const o of out) {
      if (!o.ok) throw o.error;
      this.counted(o.result);
    }
  }

  /** Counts an admission made elsewhere (by {@link StoreHasher}). */
  counted(r: { written: boolean; length: number }): void {
    if (r.written) {
      this.counts.objectsWritten++;
      this.counts.bytesWritten += r.length;
    }
  }
}

/**
 * The planner's hasher, made of the store's admission: a record's digest is the id the store's
 * `put` returns for its bytes (the store hashes them as it admits them, once), a record too big
 * to buffer is streamed into `putStream`. A record the group commit will take
 * ({@link Admission.grouped}) is only hashed here; the store hashes it again in its group.
 */
class StoreHasher implements Hasher {
  constructor(
    private readonly store: Store,
    private readonly lease: Lease,
    private readonly admit: Admission,
    private readonly signal: AbortSignal | undefined,
    readonly parallelism: number,
    /** Buffers in shared memory (a worker reads them for the whole-file SHA-256 without a copy). */
    private readonly shared: boolean,
  ) {}

  allocate(size: number): Uint8Array {
    return this.shared ? new Uint8Array(new SharedArrayBuffer(size)) : new Uint8Array(size);
  }

  async digest(pieces: readonly Uint8Array[], signal?: AbortSignal): Promise<Uint8Array> {
    const length = pieces.reduce((n, p) => n + p.length, 0);
    if (this.admit.grouped(length)) {
      const h = createHash('sha256');
      for (const p of pieces) h.update(p);
      return new Uint8Array(h.digest());
    }
    const s = signal ?? this.signal;
    const r = await this.store.put(pieces, { lease: this.lease, ...(s ? { signal: s } : {}) });
    this.admit.counted(r);
    return fromHex(r.id.slice('sha256:'.length));
  }

  stream(): HashStream {
    const feed = new Feed();
    const result = this.store.putStream(feed, { lease: this.lease, ...(this.signal ? { signal: this.signal } : {}) });
    result.catch((err) => feed.fail(err));
    return {
      update: (bytes) => feed.push(bytes),
      digest: async () => {
        feed.end();
        const r: PutResult = await result;
        this.admit.counted(r);
        return fromHex(r.id.slice('sha256:'.length));
      },
    };
  }
}

/**
 * A stream fed one chunk at a time: {@link push} settles once the consumer has taken the chunk
 * and asked for the next (or stopped), so the producer may then reuse its buffer.
 */
class Feed implements AsyncIterable<Uint8Array> {
  private chunk: Uint8Array | null = null;
  private producer: { resolve: () => void; reject: (e: unknown) => void } | undefined;
  private consumer: (() => void) | undefined;
  private ended = false;
  private failure: unknown;

  push(bytes: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.failure !== undefined) return reject(this.failure);
      this.chunk = bytes;
      this.producer = { resolve, reject };
      this.wake();
    });
  }

  end(): void {
    this.ended = true;
    this.wake();
  }

  fail(err: unknown): void {
    this.failure = err;
    this.producer?.reject(err);
    this.producer = undefined;
  }

  private wake(): void {
    const c = this.consumer;
    this.consumer = undefined;
    c?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    for (;;) {
      while (this.chunk === null && !this.ended) await new Promise<void>((r) => (this.consumer = r));
      const chunk = this.chunk;
      if (chunk === null) return;
      this.chunk = null;
      const producer = this.producer;
      this.producer = undefined;
      try {
        yield chunk;
      } finally {
        producer?.resolve();
      }
    }
  }
}

interface FileContext {
  admit: Admission;
  hasher: StoreHasher;
  sharedHasher: StoreHasher;
  wholes: WholeFileHashes;
  /** The local store's own admission, when the store is one. */
  local: LocalAdmission | undefined;
  signal: AbortSignal | undefined;
  progress: SourceCounts;
  options: ImportSourcesOptions;
}

/** The `corrupt` error of a file whose bytes are not what its source announced. */
function digestMismatch(file: SourceFile, voice: SourceVoice, actual: string): Error {
  if (file.digestError !== undefined) return file.digestError(actual);
  const d = file.digest!;
  return new TensorFSError(
    'corrupt',
    `${file.path}: the bytes received do not match the ${d.algorithm === 'sha256' ? 'SHA-256' : 'git blob id'} ${voice.who} announced`,
    { details: { rule: `${voice.rules}.digest_mismatch`, path: file.path, expected: d.hex, actual } },
  );
}

/**
 * Runs the source's checks for `file`, then plans, hashes, admits and verifies its bytes. Returns
 * the manifest entry, the whole-file digest (the announced algorithm's, else SHA-256) and the
 * file's SHA-256 where it is known.
 */
async function importFile(
  file: SourceFile,
  voice: SourceVoice,
  ctx: FileContext,
): Promise<{ entry: ManifestEntry; digest: string | undefined; sha256?: string; positioned?: boolean }> {
  const { signal, progress, admit } = ctx;
  await file.check?.(signal);
  if (file.reader !== undefined) {
    return { ...(await importPositioned(file, voice, await file.reader(signal), ctx)), positioned: true };
  }
  const fetched = (n: number) => {
    progress.bytesFetched += n;
  };
  const verify = async (source: RemoteFile): Promise<string> => {
    const actual = source.digest();
    if (file.digest !== undefined && actual !== file.digest.hex) {
      // Kept bytes that do not verify are worth nothing to a retry.
      await file.spool?.done();
      throw digestMismatch(file, voice, actual ?? 'unread');
    }
    if (actual === undefined) {
      throw new TensorFSError('internal', `${file.path}: not every byte went through the file digest`, {
        details: { rule: 'source.unhashed', path: file.path },
      });
    }
    return actual;
  };
  // A streamed file's digest is its SHA-256 unless a git blob id was announced.
  const digested = (digest: string) =>
    file.digest?.algorithm === 'git-blob' ? { digest } : { digest, sha256: digest };
  const source = new RemoteFile(file, voice, signal, fetched);
  try {
    // The header first, by bounded ranges; a small git file (the Hub keeps files over 10 MB in
    // LFS) in one range.
    let tensorFile = true;
    if (file.digest?.algorithm === 'git-blob' && file.size > 0 && file.size <= RECORD_GRID_BYTES) {
      await source.readInto(0, new Uint8Array(file.size));
    } else if (file.size > 0) {
      const head = await readHead(source, signal);
      const codec = detectCodec(head, file.size);
      if (codec === undefined) tensorFile = false;
      else {
        try {
          await codec.read(source, signal ? { signal } : {});
        } catch (err) {
          if (!isTensorFSError(err) || !['malformed', 'unsupported', 'limit_exceeded'].includes(err.code)) throw err;
          tensorFile = false; // the planner stores it as a blob, as a local import does
        }
      }
    }
    source.endProbe();
    if (!tensorFile && file.size > RECORD_GRID_BYTES && file.digest?.algorithm === 'sha256') {
      // A large blob is one object: its id is the file's SHA-256, which the store checks.
      const id = `sha256:${file.digest.hex}` as ObjectId;
      await admit
        .putStream(id, file.size, () => source.rest(0))
        .catch(async (err) => {
          if (isTensorFSError(err) && err.code === 'corrupt') {
            await file.spool?.done();
            throw digestMismatch(file, voice, 'differs');
          }
          throw err;
        });
      const digest = await verify(source);
      progress.bytes += file.size;
      return {
        entry: {
          path: file.path,
          kind: 'file',
          mode: file.executable ? 0o755 : 0o644,
          size: file.size,
          profile: 'blob-v1',
          records: [{ digest: id, length: file.size }],
        },
        ...digested(digest),
      };
    }
    const seams = ctx.options.seams?.[file.path];
    const plan = await planAndHash(source, {
      hasher: ctx.hasher,
      ...(signal ? { signal } : {}),
      ...(seams ? { seams } : {}),
      onRecord: async (record, bytes) => {
        // Admitted by the hasher already (the store's id is the digest), unless grouped.
        if (bytes !== null && admit.grouped(record.length)) await admit.put(record.digest, bytes, record.length);
        progress.bytes += record.length;
        ctx.options.onProgress?.(progressEvent('import', 'bytes', progress));
      },
    });
    return { entry: fileEntry(file, plan), ...digested(await verify(source)) };
  } finally {
    source.close();
  }
}

/** SHA-256 of no bytes (the whole-file digest of an empty file). */
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** The manifest entry of a planned file. */
function fileEntry(
  file: { path: string; executable?: boolean },
  plan: Awaited<ReturnType<typeof planAndHash>>,
): ManifestEntry {
  return {
    path: file.path,
    kind: 'file',
    mode: file.executable ? 0o755 : 0o644,
    size: plan.size,
    profile: plan.profile,
    records: plan.records.map((r) => ({ digest: r.digest, length: r.length })),
  };
}

/**
 * The whole-file digest a source announced, computed over the records as they arrive (in file
 * order, the very bytes imported): SHA-256 is the whole-file hash computed anyway; a git blob id
 * is a SHA-1 fed here. A record too big to be buffered (`bytes` null) is the file's only record
 * (`blob-v1`): git's SHA-1 then reads the file once more.
 */
class AnnouncedCheck {
  private readonly sha1: ReturnType<typeof createHash> | undefined;
  private unbuffered = false;

  constructor(
    private readonly file: SourceFile,
    private readonly voice: SourceVoice,
  ) {
    if (file.digest?.algorithm === 'git-blob') this.sha1 = createHash('sha1').update(`blob ${file.size}\0`);
  }

  add(bytes: readonly Uint8Array[] | null): void {
    if (this.sha1 === undefined) return;
    if (bytes === null) this.unbuffered = true;
    else for (const b of bytes) this.sha1.update(b);
  }

  /**
   * The announced algorithm's digest of the bytes (`corrupt`, `<source>.digest_mismatch`, unless
   * it matches); with nothing announced, `sha256` (undefined when not computed).
   */
  async check(
    sha256: string | undefined,
    reader: FileReader,
    signal: AbortSignal | undefined,
  ): Promise<string | undefined> {
    const d = this.file.digest;
    if (d === undefined) return sha256;
    let actual = sha256;
    if (this.sha1 !== undefined) {
      if (this.unbuffered)
        for await (const chunk of readerRange(reader, 0, this.file.size, signal)) this.sha1.update(chunk);
      actual = this.sha1.digest('hex');
    }
    // An announced SHA-256 is always computed (importPositioned asks for the whole-file hash).
    if (actual !== d.hex) throw digestMismatch(this.file, this.voice, actual ?? 'unread');
    return actual;
  }
}

/** The whole-file hash of a file nobody needs it for (`fileSha256` off, nothing announced). */
const NO_WHOLE_FILE_HASH: FileHash = { add: async () => {}, finish: async () => undefined };

/**
 * A file with positioned reads: planned straight from preads into the planner's buffers, the
 * whole-file SHA-256 (when asked for, or announced) fed from the same buffers to a worker, any
 * digest the source announced checked over the same bytes, and the file checked unchanged once
 * every byte was read. Into a
 * local store its own admission takes the records ({@link LocalAdmission}); into any other store,
 * each record is admitted by the store's `put` as it is hashed there (shared buffers).
 */
async function importPositioned(
  file: SourceFile,
  voice: SourceVoice,
  reader: FileReader,
  ctx: FileContext,
): Promise<{ entry: ManifestEntry; digest: string | undefined; sha256?: string }> {
  const { signal, progress, admit } = ctx;
  try {
    const whole =
      ctx.options.fileSha256 === true || file.digest?.algorithm === 'sha256'
        ? ctx.wholes.file(file.size)
        : NO_WHOLE_FILE_HASH;
    const announced = new AnnouncedCheck(file, voice);
    const seams = ctx.options.seams?.[file.path];
    const recorded = (length: number) => {
      progress.bytes += length;
      ctx.options.onProgress?.(progressEvent('import', 'bytes', progress));
    };
    let plan: Awaited<ReturnType<typeof planAndHash>>;
    if (ctx.local !== undefined) {
      plan = await ctx.local.importFile({
        path: file.path,
        size: file.size,
        reader,
        whole,
        ...(ctx.options.seams ? { seams: ctx.options.seams } : {}),
        onBytes: (_record, bytes) => announced.add(bytes),
        onRecord: recorded,
      });
    } else {
      plan = await planAndHash(readerSource(reader, file.size, signal), {
        hasher: ctx.sharedHasher,
        ...(signal ? { signal } : {}),
        ...(seams ? { seams } : {}),
        onRecord: async (record, bytes) => {
          announced.add(bytes);
          const hashed = whole.add(record, bytes);
          hashed.catch(() => {});
          if (bytes !== null && admit.grouped(record.length)) await admit.put(record.digest, bytes, record.length);
          recorded(record.length);
          await hashed;
        },
      });
    }
    const hex = await whole.finish();
    // After every byte was read: the file must still be the one listed, unchanged.
    await reader.verify();
    const sha256 =
      hex ??
      (plan.records.length === 0
        ? EMPTY_SHA256
        : plan.records.length === 1
          ? plan.records[0]!.digest.slice('sha256:'.length)
          : undefined);
    const digest = await announced.check(sha256, reader, signal);
    return { entry: fileEntry(file, plan), digest, ...(sha256 !== undefined ? { sha256 } : {}) };
  } catch (err) {
    // Whatever failed (a header that stopped parsing, a short read): if the file changed
    // meanwhile, that is the cause to report.
    if (!isTensorFSError(err) || (err.code !== 'cancelled' && err.details.rule !== 'import.source_changed')) {
      await reader.verify(err);
    }
    throw err;
  } finally {
    await reader.close();
  }
}
