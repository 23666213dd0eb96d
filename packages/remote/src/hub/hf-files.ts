/**
 * The files of a tree as the Hugging Face download API serves them: rebuilt from their objects on
 * the fly, every byte verified on the way out, and each file's SHA-256 (its ETag) computed once
 * and kept.
 *
 * - A tree's ordinary files are served byte-exact from their record lists. A checkpoint (a tree
 *   that is a bare checkpoint header, or a tree holding one `.cozytensors` variant) is served as
 *   its `--safetensors` export: the export's layout snapshot, built without writing to the store
 *   (the few objects it makes — a safetensors header, a `config.json` — stay in memory).
 * - A file's SHA-256: a file of one record is that object (its id is the digest). Otherwise it is
 *   the one recorded with the tree (`tfs import` and pulls keep a list per tree, the side ref
 *   `_hf/sha256/<tree hex>`: `@tensorfs/cas` `readFileSha256`), or with a checkpoint (its writer
 *   records the list of its export as `_hf/sha256/<checkpoint hex>`), so the first `HEAD` reads
 *   one small object, over a read-only store too. A tree without one has it computed once (single flight per record list, every object verified while hashing) and kept
 *   in memory and, when the store takes writes, as a side ref `_hf/etags/<key>` → a small object
 *   `sha256:<hex>\n`, where `<key>` is the SHA-256 of the record list (`<id> <length>\n` per
 *   record). The same bytes in any tree share one entry; a pull-through import records what the
 *   upstream announced (and verified) there, so the first `HEAD` is immediate.
 */
import { createHash } from 'node:crypto';
import {
  type ObjectId,
  type RecordRef,
  TensorFSError,
  isTensorFSError,
  parseObjectId,
  sortManifestEntries,
} from '@tensorfs/format';
import { readFileSha256, recordsKey } from '@tensorfs/cas';
import type { Store } from '@tensorfs/format/store';
import { OverlayStore } from '@tensorfs/tensors';
import type { HubStore } from './types.js';
import type { Quarantine } from './verify.js';
import { Digest, corruptObject } from './verify.js';

/** One file of a served tree. */
export interface ServedFile {
  path: string;
  size: number;
  records: readonly RecordRef[];
}

/** A tree's files as served (sorted by path), and the objects the export built in memory. */
export interface ServedTree {
  /** The tree (or checkpoint header) this was built from. */
  target: ObjectId;
  files: ServedFile[];
  byPath: Map<string, ServedFile>;
  /** Objects only in memory (an export's headers): read from here before the store. */
  extra: Map<ObjectId, Uint8Array>;
  /**
   * The trees and checkpoints whose whole-file SHA-256 lists name these files: the target, the
   * served checkpoint variant (its writer records the list of its export) and the export's tree
   * (a source snapshot, whose import recorded one).
   */
  lists: ObjectId[];
}

/** A store that keeps what is put in memory and reads the rest from `base` (the export's scratch; `@tensorfs/tensors`'). */
export { OverlayStore };

/** The file name suffix of a checkpoint variant in a tree. */
export const VARIANT_SUFFIX = '.cozytensors';

/**
 * Turns a checkpoint header into the manifest of its `--safetensors` export (the export code of
 * `@tensorfs/tensors`), writing through `store` (an {@link OverlayStore}).
 */
export type CheckpointLayout = (store: Store, checkpoint: ObjectId) => Promise<ObjectId>;

/**
 * The files of `target` as served. `kind` says what the target is. A tree with one
 * `.cozytensors` variant serves its other files plus the variant's export (an export file of the
 * same path as a tree file replaces it); with several, the unnamed `model.cozytensors` is the one
 * served, and without it the request is refused (`invalid_argument` `hf.variant_required`).
 */
export async function servedTree(
  store: HubStore,
  target: ObjectId,
  kind: 'tree' | 'checkpoint',
  layout: CheckpointLayout,
): Promise<ServedTree> {
  const extra = new Map<ObjectId, Uint8Array>();
  const files = new Map<string, ServedFile>();
  const lists = new Set<ObjectId>([target]);
  const exportOf = async (checkpoint: ObjectId, prefix: string) => {
    const overlay = new OverlayStore(store);
    const tree = await layout(overlay, checkpoint);
    lists.add(checkpoint);
    if (!overlay.objects.has(tree)) lists.add(tree);
    const m = await overlay.getManifest(tree);
    for (const [id, bytes] of overlay.objects) extra.set(id, bytes);
    for (const e of m.entries) {
      if (e.kind !== 'file') continue;
      files.set(prefix + e.path, { path: prefix + e.path, size: e.size, records: e.records });
    }
  };
  if (kind === 'checkpoint') await exportOf(target, '');
  else {
    const m = await store.getManifest(target);
    const variants = m.entries.filter((e) => e.kind === 'file' && e.path.endsWith(VARIANT_SUFFIX));
    for (const e of m.entries) {
      if (e.kind !== 'file' || e.path.endsWith(VARIANT_SUFFIX)) continue;
      files.set(e.path, { path: e.path, size: e.size, records: e.records });
    }
    if (variants.length > 0) {
      const chosen = variants.length === 1 ? variants[0]! : variants.find((v) => v.path === `model${VARIANT_SUFFIX}`);
      if (chosen === undefined || chosen.kind !== 'file' || chosen.records.length !== 1) {
        throw new TensorFSError(
          'invalid_argument',
          `the tree holds several checkpoint variants (${variants.map((v) => v.path).join(', ')}) and no model${VARIANT_SUFFIX}`,
          { details: { rule: 'hf.variant_required' } },
        );
      }
      const slash = chosen.path.lastIndexOf('/');
      await exportOf(chosen.records[0]!.digest, slash < 0 ? '' : chosen.path.slice(0, slash + 1));
    }
  }
  const list = sortManifestEntries([...files.values()]);
  return { target, files: list, byPath: new Map(list.map((f) => [f.path, f])), extra, lists: [...lists] };
}

/** The key of a record list (the one `@tensorfs/cas` keys its whole-file SHA-256 lists by). */
export { recordsKey };

/** The side ref holding the SHA-256 of the file a record list makes. */
export function etagRefName(key: string): string {
  return `_hf/etags/${key.slice(0, 2)}/${key}`;
}

const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const MAX_REMEMBERED = 200_000;
const LISTS_KEPT = 256;

/** Reads an object as a stream, from memory (an export's header) or the store. */
export async function openObject(
  store: HubStore,
  tree: ServedTree,
  id: ObjectId,
  signal: AbortSignal,
): Promise<{ size: number; body: AsyncIterable<Uint8Array>; cancel(): void; recycle?: (c: Uint8Array) => void }> {
  const mem = tree.extra.get(id);
  if (mem !== undefined) {
    return {
      size: mem.length,
      body: (async function* () {
        yield mem;
      })(),
      cancel: () => {},
    };
  }
  const r = await store.read(id, 0, { signal });
  if (r.size === undefined || r.offset !== 0) {
    r.cancel();
    throw new TensorFSError('internal', 'the backend did not report a size', { details: { rule: 'hub.no_size' } });
  }
  return { size: r.size, body: r.body, cancel: () => r.cancel(), ...(r.recycle ? { recycle: r.recycle.bind(r) } : {}) };
}

/** The SHA-256 of every served file, computed once (single flight) and kept. */
export class FileDigests {
  private readonly known = new Map<string, string>();
  private readonly running = new Map<string, Promise<string>>();
  private readonly lists = new Map<ObjectId, Promise<Map<string, string>>>();
  /** Aborted when the hub closes: computations in flight stop reading. */
  readonly stopped = new AbortController();

  constructor(
    private readonly store: HubStore,
    private readonly quarantine: Quarantine,
  ) {}

  /** The digest when known without reading any file byte (memory, one-record files); else undefined. */
  peek(file: ServedFile): string | undefined {
    if (file.records.length === 0) return EMPTY_SHA256;
    if (file.records.length === 1) return parseObjectId(file.records[0]!.digest).slice(7);
    return this.known.get(recordsKey(file.records));
  }

  /** Records what an import verified: the file of `records` has SHA-256 `hex`. */
  async record(records: readonly RecordRef[], hex: string): Promise<void> {
    if (records.length <= 1) return;
    const key = recordsKey(records);
    this.remember(key, hex);
    await this.persist(key, hex);
  }

  /** The file's SHA-256 (hex): known, read from its side ref, or computed from its objects. */
  async of(tree: ServedTree, file: ServedFile, signal: AbortSignal): Promise<string> {
    const quick = this.peek(file);
    if (quick !== undefined) return quick;
    const key = recordsKey(file.records);
    let p = this.running.get(key);
    if (p === undefined) {
      // Not tied to one request: another request may be waiting for the same digest.
      p = this.load(tree, file, key).finally(() => this.running.delete(key));
      p.catch(() => {});
      this.running.set(key, p);
    }
    if (signal.aborted) throw signal.reason;
    return p;
  }

  /** The whole-file SHA-256 list recorded with `target` (read once per target; empty if none). */
  private listOf(target: ObjectId): Promise<Map<string, string>> {
    let p = this.lists.get(target);
    if (p === undefined) {
      p = readFileSha256(this.store, target);
      if (this.lists.size >= LISTS_KEPT) this.lists.delete(this.lists.keys().next().value as ObjectId);
      this.lists.set(target, p);
    }
    return p;
  }

  private remember(key: string, hex: string): void {
    if (this.known.size >= MAX_REMEMBERED) this.known.delete(this.known.keys().next().value as string);
    this.known.set(key, hex);
  }

  private async load(tree: ServedTree, file: ServedFile, key: string): Promise<string> {
    // Recorded with the tree or checkpoint (at import, convert or pull): no hash pass, no write.
    for (const id of tree.lists) {
      const listed = (await this.listOf(id)).get(key);
      if (listed !== undefined) {
        this.remember(key, listed);
        return listed;
      }
    }
    const stored = await this.stored(key);
    if (stored !== undefined) {
      this.remember(key, stored);
      return stored;
    }
    const hex = await this.compute(tree, file);
    this.remember(key, hex);
    await this.persist(key, hex);
    return hex;
  }

  private async stored(key: string): Promise<string | undefined> {
    try {
      const id = await this.store.getRef(etagRefName(key));
      if (id === null) return undefined;
      const text = new TextDecoder().decode(await this.store.readObject(id, { verify: true }));
      const m = /^sha256:([0-9a-f]{64})\n$/.exec(text);
      return m ? m[1] : undefined;
    } catch {
      return undefined;
    }
  }

  private async persist(key: string, hex: string): Promise<void> {
    if (!this.store.capabilities.has('objects.write') || !this.store.capabilities.has('refs.write')) return;
    try {
      const { id } = await this.store.put([new TextEncoder().encode(`sha256:${hex}\n`)]);
      await this.store.setRef(etagRefName(key), id);
    } catch {
      // Kept in memory only: a read-only store, or a race with another hub writing the same entry.
    }
  }

  /** Hashes the file from its objects, each verified (a damaged one is quarantined: `corrupt`). */
  private async compute(tree: ServedTree, file: ServedFile): Promise<string> {
    const whole = createHash('sha256');
    const signal = this.stopped.signal;
    for (const rec of file.records) {
      if (signal.aborted) throw signal.reason;
      this.quarantine.refuse(rec.digest);
      const r = await openObject(this.store, tree, rec.digest, signal);
      const digest = new Digest(rec.digest, rec.length);
      let fits = r.size === rec.length;
      try {
        for await (const chunk of r.body) {
          if (!fits || !digest.update(chunk)) {
            fits = false;
            break;
          }
          whole.update(chunk);
          r.recycle?.(chunk);
        }
      } finally {
        r.cancel();
      }
      if (!fits || !digest.matches()) {
        if (r.size !== rec.length && r.size !== undefined) {
          throw new TensorFSError('corrupt', 'object length differs from its record', {
            details: { rule: 'hub.corrupt_object', digest: rec.digest },
          });
        }
        await this.quarantine.add(rec.digest);
        throw corruptObject(rec.digest);
      }
    }
    return whole.digest('hex');
  }
}

/** True for a `not_found` error. */
export function isNotFound(err: unknown): boolean {
  return isTensorFSError(err) && err.code === 'not_found';
}
