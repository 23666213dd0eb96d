/**
 * Writing a checkpoint straight to an origin: the objects a {@link CheckpointWriter} stores are
 * mirrored to the origin while it writes (only those the origin lacks), and `commit()` makes a
 * tree holding the header as a `.cozytensors` file and moves a branch of a repository to it.
 */
import {
  type Manifest,
  type ManifestEntry,
  moveBranch,
  type ObjectId,
  objectReferences,
  resolveRevision,
  TensorFSError,
  throwIfAborted,
  validateRepoId,
} from '@tensorfs/format';
import { type Store, decodeFileSha256, fileSha256Ref } from '@tensorfs/format/store';
import { checkBytes, checkObject, checkOptions, checkStore } from './args.js';

/** Where a {@link CheckpointWriter} publishes: a branch of a repository on an origin. */
export interface CheckpointDestination {
  /** The origin: any store of the contract that takes objects and moves refs (a hub, a folder, S3, another store). */
  origin: Store;
  /** The repository id (`owner/name`). */
  repo: string;
  /** The branch to move. @default 'draft' (a draft, not `main`, unless told) */
  branch?: string;
  /** The variant: the header is the tree's `model.VARIANT.cozytensors` (`''` or absent: `model.cozytensors`). */
  variant?: string;
  /**
   * Who moves the branch, recorded in the revision document. A hub refuses any other than the
   * token's owner id (`denied` `hub.author_mismatch`): take it from `HubOrigin.whoami()`.
   */
  author: string;
  /** The revision's message. @default 'convert' */
  message?: string;
  /**
   * The revision document the branch must hold (`null`: the branch must not exist); `conflict` otherwise.
   * @default the branch's head when the commit publishes (a move in between is still a `conflict`)
   */
  expected?: ObjectId | null;
  /**
   * The tree starts empty instead of from the branch's tree (or, for a new branch, `main`'s):
   * by default the other files and variants there are kept and this variant is added or replaced.
   */
  fresh?: boolean;
  /** Objects uploaded at once. @default 4 */
  concurrency?: number;
}

/** What a publish made on the origin. */
export interface PublishedRevision {
  readonly repo: string;
  readonly branch: string;
  /** The tree's path of the header (`model.cozytensors`, `model.int8.cozytensors`). */
  readonly path: string;
  /** The published tree (a TFM1 manifest id). */
  readonly tree: ObjectId;
  /** The revision document the branch now names. */
  readonly revision: ObjectId;
  /** What the branch named before (null: it was created). */
  readonly previous: ObjectId | null;
  /** Objects and bytes the origin lacked and was sent (tensors, header, tree). */
  readonly sent: { objects: number; bytes: number };
}

/** The tree path of a variant's header. */
export function variantPath(variant: string | undefined): string {
  if (variant === undefined || variant === '') return 'model.cozytensors';
  if (typeof variant !== 'string' || !/^[A-Za-z0-9_][A-Za-z0-9_-]*$/.test(variant)) {
    throw new TensorFSError('invalid_argument', 'a variant name is letters, digits, "_" and "-" (no dots)', {
      details: { rule: 'repo.variant_name', variant: String(variant) },
    });
  }
  return `model.${variant}.cozytensors`;
}

/** Checks a destination before anything is written (`invalid_argument` naming the field). */
export function checkDestination(d: CheckpointDestination): void {
  if (typeof d !== 'object' || d === null || typeof d.origin !== 'object' || d.origin === null) {
    throw new TensorFSError('invalid_argument', 'a destination is { origin, repo, branch?, author }', {
      details: { rule: 'repo.destination' },
    });
  }
  validateRepoId(d.repo);
  if (d.branch !== undefined && (typeof d.branch !== 'string' || !/^[A-Za-z0-9_][A-Za-z0-9._-]*$/.test(d.branch))) {
    throw new TensorFSError('invalid_argument', 'a branch name is one ref segment', {
      details: { rule: 'repo.branch_name', branch: String(d.branch) },
    });
  }
  if (typeof d.author !== 'string' || d.author === '') {
    throw new TensorFSError('invalid_argument', 'a destination needs an author (a hub: its whoami owner id)', {
      details: { rule: 'repo.author_required' },
    });
  }
  variantPath(d.variant);
}

/**
 * Mirrors objects of a local store to an origin in the background: asks the origin which it
 * lacks (batched), sends those, each once. `flush()` waits for everything added so far and throws
 * the first failure; after a failure nothing more is sent.
 */
export class ObjectMirror {
  private readonly queued = new Set<ObjectId>();
  private pending: ObjectId[] = [];
  private running = 0;
  private failure: unknown;
  private idle: (() => void)[] = [];
  /** Objects and bytes sent so far. */
  readonly sent = { objects: 0, bytes: 0 };

  constructor(
    private readonly local: Store,
    private readonly origin: Store,
    private readonly options: { concurrency?: number; signal?: AbortSignal } = {},
  ) {
    checkStore(local, 'local');
    checkStore(origin, 'origin');
    checkOptions(options);
  }

  /** Queues objects (each id once) to be sent if the origin lacks them. */
  add(ids: Iterable<ObjectId>): void {
    for (const id of ids) {
      if (this.queued.has(id)) continue;
      this.queued.add(id);
      this.pending.push(id);
    }
    this.pump();
  }

  /** Waits until every added object is on the origin; throws the first failure. */
  async flush(): Promise<void> {
    this.pump();
    while (this.running > 0 || (this.pending.length > 0 && this.failure === undefined)) {
      await new Promise<void>((r) => this.idle.push(r));
    }
    if (this.failure !== undefined) throw this.failure;
  }

  private pump(): void {
    const max = Math.max(1, this.options.concurrency ?? 4);
    while (this.failure === undefined && this.pending.length > 0 && this.running < max) {
      const batch = this.pending.splice(0, 256);
      this.running++;
      this.send(batch)
        .catch((error) => {
          this.failure ??= error;
        })
        .finally(() => {
          this.running--;
          this.pump();
          if (this.running === 0) for (const r of this.idle.splice(0)) r();
        });
    }
    if (this.running === 0) for (const r of this.idle.splice(0)) r();
  }

  private async send(batch: ObjectId[]): Promise<void> {
    const signal = this.options.signal;
    throwIfAborted(signal);
    const lacking = await this.origin.lacks(batch, signal ? { signal } : {});
    for (const id of lacking) {
      throwIfAborted(signal);
      const bytes = await this.local.readObject(id);
      await this.origin.put([bytes], { expected: id, ...(signal ? { signal } : {}) });
      this.sent.objects++;
      this.sent.bytes += bytes.length;
    }
  }
}

const utf8 = new TextEncoder();

function byPath(a: ManifestEntry, b: ManifestEntry): number {
  const x = utf8.encode(a.path);
  const y = utf8.encode(b.path);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

/** Queues every object `bytes` reaches, reading (from `local`) only the referencing ones. */
async function addClosure(local: Store, mirror: ObjectMirror, bytes: Uint8Array, signal?: AbortSignal): Promise<void> {
  const seen = new Set<ObjectId>();
  const walk = async (b: Uint8Array): Promise<void> => {
    for (const c of objectReferences(b)?.children ?? []) {
      throwIfAborted(signal);
      mirror.add([c.id]);
      if (c.follow === true && !seen.has(c.id)) {
        seen.add(c.id);
        await walk(await local.readObject(c.id, { verify: true }));
      }
    }
  };
  await walk(bytes);
}

/** Sends `_hf/sha256/<checkpoint hex>` (a leaf object and its side ref) to the origin; best effort. */
async function sendFileSha256(local: Store, origin: Store, checkpoint: ObjectId, signal?: AbortSignal): Promise<void> {
  const call = signal ? { signal } : {};
  try {
    const name = fileSha256Ref(checkpoint);
    const id = await local.getRef(name, call);
    if (id === null || (await origin.getRef(name, call)) === id) return;
    const bytes = await local.readObject(id, { verify: true, ...call });
    decodeFileSha256(bytes);
    await origin.put([bytes], { expected: id, ...call });
    await origin.setRef(name, id, call);
  } catch {
    // Without it, the origin's server hashes the export's files on first use.
  }
}

/** The branch head (null: no such branch or repository), through the store-generic resolution. */
async function headOf(
  origin: Store,
  repo: string,
  branch: string,
): Promise<{ commit: ObjectId | null; ref: ObjectId; tree: ObjectId | null } | null> {
  try {
    const r = await resolveRevision(origin, repo, branch);
    return { commit: r.commit, ref: r.head, tree: r.targetKind === 'tree' ? r.target : null };
  } catch (error) {
    if (error instanceof TensorFSError && error.code === 'not_found') return null;
    throw error;
  }
}

/**
 * Publishes a committed checkpoint header (already in `local`; its objects mirrored by `mirror`):
 * waits for the mirror, sends the header, makes the tree (the branch's tree, or `main`'s for a new
 * branch, with this variant added or replaced) and moves the branch by compare-and-swap.
 */
export async function publishCheckpoint(
  local: Store,
  mirror: ObjectMirror,
  d: CheckpointDestination,
  header: { id: ObjectId; bytes: Uint8Array },
  signal?: AbortSignal,
): Promise<PublishedRevision> {
  checkStore(local, 'local');
  if (!(mirror instanceof ObjectMirror)) checkObject(null, 'mirror', 'an ObjectMirror');
  checkDestination(d);
  checkObject(header, 'header', '{ id, bytes }');
  checkBytes(header.bytes, 'header.bytes');
  const branch = d.branch ?? 'draft';
  const path = variantPath(d.variant);
  // Everything the header references (a base's tensors were never put, the source snapshot),
  // then the header itself: the origin holds a closure before anything names it.
  await addClosure(local, mirror, header.bytes, signal);
  await mirror.flush();
  mirror.add([header.id]);
  await mirror.flush();
  // The checkpoint's whole-file SHA-256 list, if the writer recorded one, before the branch names
  // the tree: the origin's first HEAD of the export is then immediate.
  await sendFileSha256(local, d.origin, header.id, signal);
  throwIfAborted(signal);
  const head = await headOf(d.origin, d.repo, branch);
  const start = d.fresh
    ? null
    : head !== null
      ? head.tree
      : branch !== 'main'
        ? ((await headOf(d.origin, d.repo, 'main'))?.tree ?? null)
        : null;
  const kept: ManifestEntry[] = start === null ? [] : (await d.origin.getManifest(start)).entries;
  const file: ManifestEntry = {
    path,
    kind: 'file',
    mode: 0o644,
    size: header.bytes.length,
    profile: 'blob-v1',
    records: [{ digest: header.id, length: header.bytes.length }],
  };
  const manifest: Manifest = { entries: [...kept.filter((e) => e.path !== path), file].sort(byPath) };
  const tree = await d.origin.putManifest(manifest);
  const expected = d.expected !== undefined ? d.expected : head === null ? null : head.ref;
  const moved = await moveBranch(d.origin, {
    repo: d.repo,
    branch,
    target: tree,
    expected,
    author: d.author,
    message: d.message ?? 'convert',
  });
  return {
    repo: d.repo,
    branch,
    path,
    tree,
    revision: moved.commit,
    previous: moved.previous,
    sent: { ...mirror.sent },
  };
}
