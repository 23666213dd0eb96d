/**
 * Whole-file SHA-256s kept with a tree, so a server that names files by their SHA-256 (the Hugging
 * Face API's `ETag`/`X-Linked-Etag`) knows them before the first request, even over a read-only
 * store, without a hash pass over the file.
 *
 * - A file of zero or one record needs nothing: its SHA-256 is that of the empty string, or its
 *   one object's id. Only files of several records (safetensors and GGUF files cut at tensors)
 *   are listed.
 * - The list of a tree is one small object, `tensorfs file-sha256 1\n` then one line
 *   `<key> <sha256>\n` per file, sorted, where `<key>` is {@link recordsKey} of the file's record
 *   list (the same bytes in any tree have the same key); it is named by the side ref
 *   `_hf/sha256/<tree hex>` ({@link fileSha256Ref}). A ref roots only that object: it keeps no tree.
 * - The byte format, the key and the ref name are `@tensorfs/format/store`'s (re-exported here),
 *   shared with `@tensorfs/tensors`, whose checkpoint writers record a checkpoint's list (of its
 *   `--safetensors` export) as `_hf/sha256/<checkpoint hex>`.
 * - Written by every import, named or not (which reads every byte anyway and hashes each
 *   multi-record file once more, in order, on its own worker thread: {@link WholeFileHashes}), and
 *   carried along by a pull from an origin that has it. The SHA-256s are claims of whoever wrote the list, as refs are; a
 *   server still verifies every object it sends.
 */
import { createHash } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import {
  type ManifestEntry,
  type ObjectId,
  type RecordRef,
  TensorFSError,
  decodeManifest,
  objectReferences,
  wrongArgument,
} from '@tensorfs/format';
import {
  type Lease,
  type Store,
  decodeFileSha256,
  encodeFileSha256,
  fileSha256Ref as formatFileSha256Ref,
  isSideRef,
} from '@tensorfs/format/store';
import { checkChunks, checkObject, checkObjects, checkOptions, checkString } from './args.js';

/**
 * True for a side ref (`_hf/…`): see `@tensorfs/format/store` `isSideRef`.
 */
export { isSideRef };

/** The key of a record list: the SHA-256 (hex) of `<id> <length>\n` per record. */
export function recordsKey(records: readonly RecordRef[]): string {
  checkObjects(records, 'records');
  const h = createHash('sha256');
  for (const r of records) h.update(`${r.digest} ${r.length}\n`);
  return h.digest('hex');
}

/** The side ref naming the whole-file SHA-256 list of `tree` (`@tensorfs/format/store` `fileSha256Ref`). */
export function fileSha256Ref(tree: ObjectId): string {
  checkString(tree, 'tree');
  return formatFileSha256Ref(tree);
}

/** The bytes of a list and back: `@tensorfs/format/store`'s, re-exported (the byte format is theirs). */
export { encodeFileSha256, decodeFileSha256 };

/**
 * The whole-file SHA-256s recorded for `tree` (empty when none are, or the list cannot be read:
 * the caller computes what it needs).
 */
export async function readFileSha256(
  store: Pick<Store, 'getRef' | 'readObject'>,
  tree: ObjectId,
  options: { signal?: AbortSignal } = {},
): Promise<Map<string, string>> {
  checkObject(store, 'store');
  checkString(tree, 'tree');
  checkOptions(options);
  try {
    const id = await store.getRef(fileSha256Ref(tree), options);
    if (id === null) return new Map();
    return decodeFileSha256(await store.readObject(id, { verify: true, ...options }));
  } catch {
    return new Map();
  }
}

/** What {@link recordFileSha256} writes through (a store, with its own lease type). */
export interface FileSha256Writer<L> {
  put(bytes: Uint8Array[], options?: { lease?: L }): Promise<{ id: ObjectId }>;
  setRef(name: string, id: ObjectId, options?: { lease?: L }): Promise<void>;
}

/**
 * Records the SHA-256s of `tree`'s multi-record files: `sha256` maps a path of `entries` to its
 * file's SHA-256 (paths of files of one record or none are skipped). Nothing is written when no
 * file is left. The list object is put under `lease` (kept until the ref names it).
 */
export async function recordFileSha256<L>(
  store: FileSha256Writer<L>,
  tree: ObjectId,
  entries: readonly ManifestEntry[],
  sha256: ReadonlyMap<string, string>,
  options: { lease?: L } = {},
): Promise<void> {
  checkObject(store, 'store');
  checkString(tree, 'tree');
  checkObjects(entries, 'entries');
  if (!(sha256 instanceof Map)) wrongArgument('store', 'sha256', 'a Map', sha256);
  checkOptions(options);
  const list = new Map<string, string>();
  for (const e of entries) {
    if (e.kind !== 'file' || !Array.isArray(e.records) || e.records.length < 2) continue;
    const hex = sha256.get(e.path);
    if (hex !== undefined) list.set(recordsKey(e.records), hex);
  }
  if (list.size === 0) return;
  const { id } = await store.put([encodeFileSha256(list)], options);
  await store.setRef(fileSha256Ref(tree), id, options);
}

/**
 * Copies `tree`'s list from `from` (an origin or a store) into `to`, when `from` has one and `to`
 * does not; `as` names it for another tree of `to` (a selection of `tree`'s files, whose record
 * lists are `tree`'s). Best effort: a list that cannot be read or written is left out (a server
 * then computes the SHA-256s once). Returns true when a list was copied.
 */
export async function copyFileSha256(
  from: Pick<Store, 'getRef' | 'readObject'>,
  to: Pick<Store, 'getRef' | 'put' | 'setRef'>,
  tree: ObjectId,
  options: { as?: ObjectId; lease?: Lease; signal?: AbortSignal } = {},
): Promise<boolean> {
  checkObject(from, 'from');
  checkObject(to, 'to');
  checkString(tree, 'tree');
  checkOptions(options);
  const { signal, lease } = options;
  const call = signal ? { signal } : {};
  try {
    const name = fileSha256Ref(options.as ?? tree);
    if ((await to.getRef(name, call)) !== null) return false;
    const id = await from.getRef(fileSha256Ref(tree), call);
    if (id === null) return false;
    const bytes = await from.readObject(id, { verify: true, ...call });
    decodeFileSha256(bytes);
    await to.put([bytes], { expected: id, ...call, ...(lease ? { lease } : {}) });
    await to.setRef(name, id, { ...call, ...(lease ? { lease } : {}) });
    return true;
  } catch {
    if (signal?.aborted) throw signal.reason;
    return false;
  }
}

/** True when `bytes` are a TFM1 manifest with a file of several records (a list may exist for it). */
export function mayHaveFileSha256(bytes: Uint8Array): boolean {
  checkChunks(bytes, 'bytes');
  if (!(bytes instanceof Uint8Array)) return false;
  if (objectReferences(bytes)?.kind !== 'manifest') return false;
  return decodeManifest(bytes).entries.some((e) => e.kind === 'file' && e.records.length > 1);
}

// -------------------------------------------------------------------------------------------------
// Hashing during an import

/**
 * The worker body: one incremental SHA-256 per file id; `update` replies once the bytes are
 * hashed (the caller may then reuse them), `digest` with the hex.
 */
const WORKER_SOURCE = `
const { parentPort } = process.getBuiltinModule('node:worker_threads');
const { createHash } = process.getBuiltinModule('node:crypto');
const files = new Map();
parentPort.on('message', ({ seq, file, op, bytes }) => {
  let h = files.get(file);
  if (h === undefined) files.set(file, (h = createHash('sha256')));
  if (op === 'update') {
    for (const b of bytes) h.update(b);
    parentPort.postMessage({ seq });
  } else {
    files.delete(file);
    parentPort.postMessage({ seq, hex: op === 'digest' ? h.digest('hex') : undefined });
  }
});
`;

/** Records at least this long are waited for; shorter ones are copied and not waited for. */
const IN_PLACE_FROM = 1 << 20;

/** One file's whole SHA-256, fed with its records in file order. */
export interface FileHash {
  /**
   * Feeds one record's bytes (in file order). The returned promise settles once the bytes are
   * hashed or copied: await it before reusing them. A record that is the whole file (the file's
   * only one; its bytes may be null when too big to buffer) is not hashed: its id is the digest.
   */
  add(record: { offset: number; length: number; digest: ObjectId }, bytes: readonly Uint8Array[] | null): Promise<void>;
  /** The SHA-256 (hex) when the file has several records; undefined for zero or one. */
  finish(): Promise<string | undefined>;
}

/**
 * The whole-file SHA-256s of an import's files, each hashed once more over the very bytes the
 * planner read, on one worker thread of its own (started at the first file of several records),
 * so the import's own thread only passes views: views of a `SharedArrayBuffer` (the hashing pool's
 * buffers, with more than one hashing thread) travel without a copy. A file whose first record is
 * the whole file is never hashed.
 */
export class WholeFileHashes {
  private worker: Worker | undefined;
  private failed: unknown;
  private seq = 0;
  private nextFile = 0;
  private readonly waiting = new Map<number, { resolve: (hex?: string) => void; reject: (e: unknown) => void }>();

  /** A hash for one file of `size` bytes. */
  file(size: number): FileHash {
    if (!Number.isSafeInteger(size) || size < 0) wrongArgument('store', 'size', 'an integer ≥ 0', size);
    const id = this.nextFile++;
    let records = 0;
    let sent = false;
    return {
      add: async (record, bytes) => {
        records++;
        // The file's only record: its id is the file's SHA-256.
        if (record.offset === 0 && record.length === size) return;
        if (bytes === null) return; // only a blob's one record is unbuffered (handled above)
        sent = true;
        const length = bytes.reduce((n, b) => n + b.length, 0);
        if (length >= IN_PLACE_FROM) {
          // Waited for: a view of shared memory is hashed in place (the caller reuses it after),
          // other bytes are copied into the message; either way at most one big record is queued.
          await this.send({ file: id, op: 'update', bytes });
          return;
        }
        // Small: copied into the message (in order with the rest), not waited for.
        const copies = bytes.map((b) => (b.buffer instanceof SharedArrayBuffer ? b.slice() : b));
        this.send({ file: id, op: 'update', bytes: copies }).catch(() => {});
      },
      finish: async () => {
        if (records <= 1) {
          if (sent) await this.send({ file: id, op: 'drop' });
          return undefined;
        }
        return this.send({ file: id, op: 'digest' });
      },
    };
  }

  private send(message: { file: number; op: 'update' | 'digest' | 'drop'; bytes?: readonly Uint8Array[] }) {
    if (this.failed !== undefined) return Promise.reject(this.failed);
    const worker = this.start();
    const seq = this.seq++;
    return new Promise<string | undefined>((resolve, reject) => {
      this.waiting.set(seq, { resolve, reject });
      worker.ref();
      worker.postMessage({ seq, ...message });
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true });
    worker.on('message', ({ seq, hex }: { seq: number; hex?: string }) => {
      const w = this.waiting.get(seq);
      this.waiting.delete(seq);
      if (this.waiting.size === 0) worker.unref();
      w?.resolve(hex);
    });
    const fail = (cause: unknown) => {
      this.failed = new TensorFSError('internal', 'the whole-file hash worker failed', {
        cause,
        details: { rule: 'store.file_sha256_worker' },
      });
      for (const w of this.waiting.values()) w.reject(this.failed);
      this.waiting.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => {
      if (this.worker === worker) fail(new Error(`exited with code ${code}`));
    });
    worker.unref();
    this.worker = worker;
    return worker;
  }

  /** Ends the worker. */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    await w?.terminate();
  }
}
