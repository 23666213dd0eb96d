/**
 * A checkpoint's whole-file SHA-256 list: the SHA-256 of each file its `--safetensors` export is
 * made of (what a Hugging Face server names a file by), recorded when the checkpoint is written so
 * the first `HEAD` of a served checkpoint reads one small object instead of hashing the file.
 *
 * The list is the `@tensorfs/format/store` one (`_hf/sha256/<checkpoint hex>`, keyed by the
 * record list of each served file of several records). A file the source snapshot's list already
 * names (the same records are the same bytes) is taken from it; any other is hashed from its
 * objects, each verified, once: the whole-file hash on a worker thread of its own, overlapping the
 * verification of the next object on the calling thread.
 */
import { createHash } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { type Manifest, type ObjectId, TensorFSError, throwIfAborted } from '@tensorfs/format';
import {
  type Lease,
  MemoryStore,
  type Store,
  encodeFileSha256,
  fileRecordsKey,
  fileSha256Ref,
  readFileSha256List,
} from '@tensorfs/format/store';
import { checkOptions, checkStore } from './args.js';
import { type Checkpoint, openCheckpoint } from './checkpoint.js';
import { safetensorsExportTree } from './checkpoint-export.js';

/**
 * A store that keeps what is put in memory and reads everything else from `base`: the scratch a
 * checkpoint's export layout is built in (its few new objects, a safetensors header and a
 * `config.json`, never reach `base`).
 */
export class OverlayStore extends MemoryStore {
  constructor(private readonly base: Store) {
    super();
  }
  override async has(id: ObjectId, options = {}): Promise<boolean> {
    return (await super.has(id, options)) || this.base.has(id, options);
  }
  override async objectSize(id: ObjectId, options = {}): Promise<number> {
    return this.objects.has(id) ? super.objectSize(id, options) : this.base.objectSize(id, options);
  }
  override async readObject(id: ObjectId, options = {}): Promise<Uint8Array> {
    return this.objects.has(id) ? super.readObject(id, options) : this.base.readObject(id, options);
  }
  override async readObjectRange(id: ObjectId, offset: number, length: number, options = {}): Promise<Uint8Array> {
    return this.objects.has(id)
      ? super.readObjectRange(id, offset, length, options)
      : this.base.readObjectRange(id, offset, length, options);
  }
  override async getManifest(id: ObjectId): Promise<Manifest> {
    return this.objects.has(id) ? super.getManifest(id) : this.base.getManifest(id);
  }
}

/** What {@link checkpointFileSha256} found. */
export interface CheckpointFileSha256 {
  /** Record-list key → SHA-256 (hex), for every export file of several records. */
  readonly list: Map<string, string>;
  /** The export's tree (the source snapshot, or a layout built in memory only). */
  readonly tree: ObjectId;
  /** Export files of several records (the ones listed). */
  readonly files: number;
  /** Of those, taken from the source snapshot's list (nothing read). */
  readonly reused: number;
  /** Of those, hashed from their objects, and the bytes that took. */
  readonly hashed: number;
  readonly bytesHashed: number;
}

/** Options of {@link checkpointFileSha256} and {@link recordCheckpointFileSha256}. */
export interface CheckpointFileSha256Options {
  signal?: AbortSignal;
  /**
   * Hash the files the source snapshot's list does not name (default true). False lists only
   * what that list gives: nothing is read, and a server computes the others on first request.
   */
  hash?: boolean;
}

/**
 * The SHA-256 of each file of `checkpoint`'s `--safetensors` export made of several records (the
 * files a Hugging Face server serves for it), by record-list key. Taken from the list of the
 * export's tree when it has one (a source snapshot imported with `fileSha256`, from `hf://`, or
 * pulled with its list), else hashed from the objects, each verified (`corrupt` on a damaged
 * one), or with `hash: false` left out. Writes nothing to `store`.
 * @throws {TensorFSError} what building the export throws (`unsupported` for an encoded tensor
 *   with no source snapshot: such a checkpoint has no safetensors export), `corrupt`, `cancelled`.
 */
export async function checkpointFileSha256(
  store: Store,
  checkpoint: Checkpoint | Uint8Array,
  options: CheckpointFileSha256Options = {},
): Promise<CheckpointFileSha256> {
  checkStore(store);
  checkOptions(options);
  const { signal } = options;
  const cp = checkpoint instanceof Uint8Array ? await openCheckpoint(store, checkpoint) : checkpoint;
  const overlay = new OverlayStore(store);
  const tree = await safetensorsExportTree(overlay, cp);
  const entries = (await overlay.getManifest(tree)).entries.filter((e) => e.kind === 'file' && e.records.length > 1);
  const known = overlay.objects.has(tree)
    ? new Map<string, string>()
    : await readFileSha256List(store, tree, { signal });
  const list = new Map<string, string>();
  let reused = 0;
  let hashed = 0;
  let bytesHashed = 0;
  const todo: { key: string; records: readonly { digest: ObjectId; length: number }[]; size: number }[] = [];
  for (const e of entries) {
    if (e.kind !== 'file') continue;
    const key = await fileRecordsKey(e.records);
    if (list.has(key)) continue;
    const hex = known.get(key);
    if (hex !== undefined) {
      list.set(key, hex);
      reused++;
    } else if (options.hash !== false) {
      todo.push({ key, records: e.records, size: e.size });
      list.set(key, '');
    }
  }
  const hasher = new FileHasher();
  try {
    for (const file of todo) {
      throwIfAborted(signal);
      list.set(file.key, await hashRecords(overlay, hasher, file.records, signal));
      hashed++;
      bytesHashed += file.size;
    }
  } finally {
    await hasher.close();
  }
  return { list, tree, files: list.size, reused, hashed, bytesHashed };
}

/**
 * Computes {@link checkpointFileSha256} and records it as the side ref
 * `_hf/sha256/<checkpoint hex>` (the list object put under `lease`); nothing is written when the
 * export has no file of several records. Returns what was found, and the list object's id.
 */
export async function recordCheckpointFileSha256(
  store: Store,
  checkpoint: Checkpoint | Uint8Array,
  options: CheckpointFileSha256Options & { lease?: Lease } = {},
): Promise<CheckpointFileSha256 & { readonly id: ObjectId | null; readonly checkpoint: ObjectId }> {
  checkStore(store);
  checkOptions(options);
  const cp = checkpoint instanceof Uint8Array ? await openCheckpoint(store, checkpoint) : checkpoint;
  const found = await checkpointFileSha256(store, cp, options);
  if (found.list.size === 0) return { ...found, id: null, checkpoint: cp.id };
  throwIfAborted(options.signal);
  const lease = options.lease ? { lease: options.lease } : {};
  const { id } = await store.put([encodeFileSha256(found.list)], lease);
  await store.setRef(fileSha256Ref(cp.id), id, lease);
  return { ...found, id, checkpoint: cp.id };
}

/** The worker body: one whole-file SHA-256 at a time; each `update` is acknowledged once hashed. */
const WORKER_SOURCE = `
const { parentPort } = process.getBuiltinModule('node:worker_threads');
const { createHash } = process.getBuiltinModule('node:crypto');
let h = createHash('sha256');
parentPort.on('message', ({ seq, op, bytes }) => {
  if (op === 'update') {
    h.update(bytes);
    parentPort.postMessage({ seq });
  } else {
    parentPort.postMessage({ seq, hex: h.digest('hex') });
    h = createHash('sha256');
  }
});
`;

/**
 * Whole-file SHA-256s computed on a worker thread of their own, so each object's verification
 * (on this thread) overlaps the whole-file hash of the one before: at most one object is queued.
 * Where no worker can start, the hash runs here.
 */
class FileHasher {
  private worker: Worker | null | undefined;
  private seq = 0;
  private readonly waiting = new Map<number, { resolve: (hex?: string) => void; reject: (e: unknown) => void }>();
  private failed: unknown;
  private local = createHash('sha256');

  private start(): Worker | null {
    if (this.worker !== undefined) return this.worker;
    try {
      const worker = new Worker(WORKER_SOURCE, { eval: true });
      worker.on('message', ({ seq, hex }: { seq: number; hex?: string }) => {
        const w = this.waiting.get(seq);
        this.waiting.delete(seq);
        w?.resolve(hex);
      });
      const fail = (cause: unknown) => {
        this.failed ??= cause;
        for (const w of this.waiting.values()) w.reject(cause);
        this.waiting.clear();
      };
      worker.on('error', fail);
      worker.on('exit', (code) => fail(new Error(`the hash worker exited (${code})`)));
      this.worker = worker;
    } catch {
      this.worker = null;
    }
    return this.worker;
  }

  private send(op: 'update' | 'digest', bytes?: Uint8Array): Promise<string | undefined> {
    if (this.failed !== undefined) return Promise.reject(this.failed);
    const worker = this.worker!;
    const seq = this.seq++;
    return new Promise((resolve, reject) => {
      this.waiting.set(seq, { resolve, reject });
      if (bytes === undefined) worker.postMessage({ seq, op });
      else {
        // A buffer of its own moves to the worker; a view of a shared one is copied.
        const own =
          bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
        const b = own ? bytes : bytes.slice();
        worker.postMessage({ seq, op, bytes: b }, [b.buffer as ArrayBuffer]);
      }
    });
  }

  /** Feeds one object's bytes (the caller gives them up); settles once the previous one is hashed. */
  update(bytes: Uint8Array): Promise<string | undefined> {
    if (this.start() === null) {
      this.local.update(bytes);
      return Promise.resolve(undefined);
    }
    return this.send('update', bytes);
  }

  /** The SHA-256 (hex) of everything fed since the last digest. */
  async digest(): Promise<string> {
    if (this.start() === null) {
      const hex = this.local.digest('hex');
      this.local = createHash('sha256');
      return hex;
    }
    return (await this.send('digest'))!;
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.failed ??= new Error('closed');
    await w?.terminate();
  }
}

/**
 * The SHA-256 of a file made of `records`, read from `store` (each object verified against its id
 * on this thread) and hashed whole by `hasher` (on its worker), one object behind the reads.
 */
async function hashRecords(
  store: Store,
  hasher: FileHasher,
  records: readonly { digest: ObjectId; length: number }[],
  signal: AbortSignal | undefined,
): Promise<string> {
  const call = signal ? { signal } : {};
  let hashing: Promise<unknown> = Promise.resolve();
  try {
    for (const r of records) {
      throwIfAborted(signal);
      const bytes = await store.readObject(r.digest, { verify: true, ...call });
      if (bytes.length !== r.length) {
        throw new TensorFSError('corrupt', 'an object is not as long as its record says', {
          details: { rule: 'tensors.record_length', digest: r.digest, expected: r.length, actual: bytes.length },
        });
      }
      await hashing;
      hashing = hasher.update(bytes);
      // A failure while the next object is read is reported when awaited, not as unhandled.
      hashing.catch(() => {});
    }
    await hashing;
  } catch (error) {
    await hashing.catch(() => {});
    throw error;
  }
  return hasher.digest();
}
