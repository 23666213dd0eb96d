/**
 * The JSON the web page reads: the refs of a store with their sizes and sharing, one ref's files,
 * configs and tensors, and the diff of two refs. Headers, manifests and small configs only.
 */
import type { RefProblem, Store } from '@tensorfs/cas';
import {
  type CheckpointHeader,
  decodeCheckpoint,
  decodeManifest,
  isCheckpointHeader,
  isTensorFSError,
  jsonInteger,
  listRepositories,
  resolveRevision,
  treeVariants,
  type Manifest,
  type ObjectId,
  TensorFSError,
} from '@tensorfs/format';
import { diffSnapshots, openTensors, type SnapshotDiff } from '@tensorfs/tensors';

/** What the page needs of a store: the port, plus listing refs (a `LocalStore` has all of it). */
export interface WebStore extends Store {
  /** Every ref; may fail as a whole on one bad ref (used only when the two below are absent). */
  listRefs(): Promise<readonly { name: string; id: ObjectId }[]>;
  // `scanRefs` (refs whose file reads, the other entries as problems; no object read) is the contract's.
  /** As `scanRefs`, with each target read and decoded: a missing or damaged one is a problem too. */
  checkRefs?(): Promise<{ refs: readonly { name: string; id: ObjectId }[]; problems: readonly RefProblem[] }>;
}

/** One ref of the refs page. */
export interface WebRef {
  readonly name: string;
  readonly id: ObjectId;
  readonly kind: 'snapshot' | 'checkpoint';
  /** Entries of a snapshot; tensors and assets of a checkpoint. */
  readonly files: number;
  /** Sum of the file sizes. */
  readonly logical: number;
  /** Bytes of the distinct objects it reaches (manifest included). */
  readonly stored: number;
  /** For each other ref sharing objects with it: the bytes of the shared distinct objects. */
  readonly shared: { ref: string; bytes: number }[];
}

/** A ref the refs page cannot show, and why (as `tfs ls --json` names it). */
export interface WebRefProblem {
  readonly name: string;
  /** The id its file names, when it could be read. */
  readonly id?: ObjectId;
  readonly code: string;
  /** `ref.not_regular`, `ref.content`, `ref.target_missing`, `ref.target_malformed`, `store.digest`, ... */
  readonly rule: string;
  readonly message: string;
}

/** The refs page: every ref it can show, and every other ref with its problem. */
export interface WebRefs {
  readonly refs: WebRef[];
  readonly problems: WebRefProblem[];
}

/** The largest JSON config the ref page formats. */
export const MAX_WEB_CONFIG_BYTES = 256 * 1024;

interface Loaded {
  kind: 'snapshot' | 'checkpoint';
  /** Files of a snapshot, tensors and assets of a checkpoint. */
  files: number;
  logical: number;
  objects: Map<ObjectId, number>;
}

/** Every object a checkpoint header references (with lengths), and its logical size. */
function checkpointObjects(
  header: CheckpointHeader,
  objects: Map<ObjectId, number>,
): { logical: number; items: number } {
  let logical = 0;
  let items = 0;
  const add = (records: readonly { digest: ObjectId; length: number }[]) => {
    for (const r of records) {
      objects.set(r.digest, r.length);
      logical += r.length;
    }
  };
  for (const c of header.components) {
    for (const a of c.assets) add(a.records);
    for (const t of c.tensors) {
      if (t.encoding === undefined) add(t.records);
      else for (const p of Object.values(t.encoding.parts)) add(p.records);
    }
    items += c.assets.length + c.tensors.length;
  }
  return { logical, items };
}

async function closure(store: Store, id: ObjectId): Promise<Loaded> {
  const bytes = await store.readObject(id, { verify: true });
  const objects = new Map<ObjectId, number>([[id, bytes.length]]);
  if (isCheckpointHeader(bytes)) {
    const { logical, items } = checkpointObjects(decodeCheckpoint(bytes), objects);
    return { kind: 'checkpoint', files: items, logical, objects };
  }
  // Decoded from the bytes just read and verified (getManifest would read them again).
  const manifest: Manifest = decodeManifest(bytes);
  let logical = 0;
  for (const e of manifest.entries) {
    if (e.kind !== 'file') continue;
    logical += e.size;
    for (const r of e.records) objects.set(r.digest, r.length);
  }
  return { kind: 'snapshot', files: manifest.entries.length, logical, objects };
}

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** Most other refs listed in one ref's `shared` (the ones sharing the most bytes). */
export const MAX_WEB_SHARED = 32;

/**
 * Most refs an object's holders are paired through: an object held by more refs (a base every
 * fine-tune shares) counts toward the first this many only, so the work is linear in refs.
 */
export const MAX_WEB_HOLDERS = 64;

/** Steps of work between two yields to the event loop, so other requests are answered meanwhile. */
const YIELD_EVERY = 4096;

const yieldNow = () => new Promise<void>((r) => setImmediate(r));

/**
 * Every ref of the store with its kind, logical and stored size, and what it shares with the
 * others; a ref that cannot be read or measured (its file, or the objects it names) is named in
 * `problems` instead, and never hides the others. Linear in refs: each distinct head is read once
 * however many refs name it, sharing is counted through an index of who holds each object (at
 * most {@link MAX_WEB_HOLDERS} per object, {@link MAX_WEB_SHARED} listed per ref), and the work
 * yields to the event loop so the server answers other requests while it runs.
 */
export async function webRefs(store: WebStore): Promise<WebRefs> {
  const listing = store.checkRefs
    ? await store.checkRefs()
    : store.scanRefs
      ? await store.scanRefs()
      : { refs: await store.listRefs(), problems: [] };
  const problems: WebRefProblem[] = listing.problems.map((p) => ({ ...p, message: p.message ?? p.rule }));
  const loaded: ({ name: string; id: ObjectId } & Loaded)[] = [];
  const heads = new Map<ObjectId, Promise<Loaded>>();
  for (const r of listing.refs) {
    try {
      let head = heads.get(r.id);
      if (!head) {
        head = closure(store, r.id);
        heads.set(r.id, head);
      }
      loaded.push({ name: r.name, id: r.id, ...(await head) });
    } catch (error) {
      if (!isTensorFSError(error) || error.code === 'cancelled') throw error;
      const rule = typeof error.details.rule === 'string' ? error.details.rule : 'web.ref';
      problems.push({ name: r.name, id: r.id, code: error.code, rule, message: error.message });
    }
  }
  // Who holds each object, in listing order (at most MAX_WEB_HOLDERS kept per object).
  const holders = new Map<ObjectId, number[]>();
  let steps = 0;
  const step = async () => {
    if (++steps % YIELD_EVERY === 0) await yieldNow();
  };
  for (let i = 0; i < loaded.length; i++) {
    for (const id of loaded[i]!.objects.keys()) {
      let h = holders.get(id);
      if (!h) holders.set(id, (h = []));
      if (h.length < MAX_WEB_HOLDERS) h.push(i);
      await step();
    }
  }
  const refs: WebRef[] = [];
  for (let i = 0; i < loaded.length; i++) {
    const r = loaded[i]!;
    let stored = 0;
    const with_ = new Map<number, number>();
    for (const [id, n] of r.objects) {
      stored += n;
      for (const j of holders.get(id)!) {
        if (j !== i) with_.set(j, (with_.get(j) ?? 0) + n);
        await step();
      }
    }
    const shared = [...with_]
      .sort((x, y) => y[1] - x[1] || x[0] - y[0])
      .slice(0, MAX_WEB_SHARED)
      .sort((x, y) => x[0] - y[0])
      .map(([j, bytes]) => ({ ref: loaded[j]!.name, bytes }));
    refs.push({ name: r.name, id: r.id, kind: r.kind, files: r.files, logical: r.logical, stored, shared });
  }
  return { refs, problems: problems.sort(byName) };
}

/** One tensor row of the ref page. */
export interface WebTensor {
  /** The tensor file or shard index (a snapshot's), or the component (a checkpoint's). */
  readonly file: string;
  /** The component (a checkpoint's; a snapshot's top folder, `model` at its root): tensors pair by it and their name. */
  readonly component: string;
  /** `plain`, or `encoded` (a checkpoint tensor stored as parts: read with decode). */
  readonly storage: 'plain' | 'encoded';
  readonly name: string;
  readonly dtype: string;
  readonly shape: (number | string)[];
  /** `plain`, or the block encoding of a quantized type (`ggml Q8_0`). */
  readonly encoding: string;
  readonly bytes: number;
  readonly objects: string[];
}

/** The ref page: files (tensor files, configs, assets), formatted configs, tensors. */
export interface WebRefDetail {
  readonly name: string;
  readonly id: ObjectId;
  readonly kind: 'snapshot' | 'checkpoint';
  /** A snapshot's files; a checkpoint's components (role `component`) and assets (`component/name`). */
  readonly files: {
    path: string;
    size: number;
    profile: string;
    role: 'tensors' | 'config' | 'asset' | 'symlink' | 'component';
  }[];
  readonly configs: { path: string; value?: unknown; error?: string }[];
  readonly tensors: WebTensor[];
  readonly skipped: { path: string; code: string; message: string }[];
}

/** A ref's files, configs and tensors (headers and configs only). */
export async function webRef(store: Store, ref: string): Promise<WebRefDetail> {
  const id = await store.resolve(ref);
  const bytes = await store.readObject(id, { verify: true });
  if (isCheckpointHeader(bytes)) return checkpointDetail(ref, id, decodeCheckpoint(bytes));
  const manifest = await store.getManifest(id);
  const set = await openTensors(store, id);
  const tensorFiles = new Set([...set.files.map((f) => f.path), ...set.indexes]);
  const files: WebRefDetail['files'] = [];
  const configs: WebRefDetail['configs'] = [];
  for (const e of manifest.entries) {
    if (e.kind === 'symlink') {
      files.push({ path: e.path, size: 0, profile: '', role: 'symlink' });
      continue;
    }
    const isConfig = !tensorFiles.has(e.path) && e.path.endsWith('.json');
    files.push({
      path: e.path,
      size: e.size,
      profile: e.profile,
      role: tensorFiles.has(e.path) ? 'tensors' : isConfig ? 'config' : 'asset',
    });
    if (!isConfig) continue;
    if (e.size > MAX_WEB_CONFIG_BYTES) {
      configs.push({ path: e.path, error: `larger than ${MAX_WEB_CONFIG_BYTES} bytes` });
      continue;
    }
    const bytes = await store.recordsSource(e.records, { verify: true }).read(0, e.size);
    try {
      configs.push({ path: e.path, value: JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) });
    } catch {
      configs.push({ path: e.path, error: 'not JSON' });
    }
  }
  const placeOf = new Map(set.files.map((f) => [f.path, f.index ?? f.path]));
  const tensors: WebTensor[] = [...set].map((v) => ({
    file: placeOf.get(v.file) ?? v.file,
    component: v.component,
    storage: v.storage,
    name: v.name,
    dtype: v.dtype,
    shape: v.shape.map(jsonInteger),
    encoding: v.blockSize > 1 ? `ggml ${v.dtype}` : 'plain',
    bytes: v.byteLength,
    objects: [...v.digests],
  }));
  return { name: ref, id, kind: 'snapshot', files, configs, tensors, skipped: [...set.skipped] };
}

const size = (records: readonly { length: number }[]) => records.reduce((n, r) => n + r.length, 0);

/** A checkpoint's page: components (class, counts), assets, configs (pipeline and each component's), tensors with encodings. */
function checkpointDetail(name: string, id: ObjectId, header: CheckpointHeader): WebRefDetail {
  const files: WebRefDetail['files'] = [];
  const configs: WebRefDetail['configs'] = [];
  const tensors: WebTensor[] = [];
  if (header.pipeline !== null)
    configs.push({ path: 'pipeline', value: { cls: header.pipeline.cls, config: header.pipeline.config } });
  for (const c of header.components) {
    let bytes = 0;
    for (const t of c.tensors) {
      const records = t.encoding === undefined ? t.records : Object.values(t.encoding.parts).flatMap((p) => p.records);
      bytes += size(records);
      tensors.push({
        file: c.name,
        component: c.name,
        storage: t.encoding === undefined ? 'plain' : 'encoded',
        name: t.name,
        dtype: t.dtype,
        shape: t.shape.map(jsonInteger),
        encoding: t.encoding === undefined ? 'plain' : t.encoding.scheme,
        bytes: size(records),
        objects: records.map((r) => r.digest),
      });
    }
    files.push({ path: c.name, size: bytes, profile: c.cls, role: 'component' });
    for (const a of c.assets)
      files.push({ path: `${c.name}/${a.name}`, size: size(a.records), profile: '', role: 'asset' });
    configs.push({ path: `${c.name}/config`, value: { cls: c.cls, config: c.config } });
  }
  return { name, id, kind: 'checkpoint', files, configs, tensors, skipped: [] };
}

/** One variant of a tree: its name (`''` for `model.cozytensors`), path and checkpoint header id. */
export interface WebVariant {
  readonly name: string;
  readonly path: string;
  readonly checkpoint: ObjectId;
}

/** A branch or tag of the repositories page, with what it resolves to. */
export interface WebRevision {
  readonly name: string;
  readonly kind: 'branch' | 'tag';
  /** What the ref holds (a revision document, or for a legacy ref the tree or checkpoint). */
  readonly head: ObjectId;
  /** The tree or checkpoint it names (absent when it could not be resolved: see `error`). */
  readonly target?: ObjectId;
  readonly targetKind?: 'tree' | 'checkpoint';
  /** From the revision document, when the head is one. */
  readonly author?: string;
  readonly time?: number;
  readonly message?: string;
  /** The tree's `.cozytensors` variants (a checkpoint head: itself, unnamed). */
  readonly variants: WebVariant[];
  /** The tree's entries. */
  readonly files: number;
  /** Why it could not be resolved (one bad revision never hides the others). */
  readonly error?: { code: string; message: string; rule?: string };
}

/** A repository of the repositories page. */
export interface WebRepo {
  readonly repo: string;
  readonly branches: WebRevision[];
  readonly tags: WebRevision[];
}

/** Every repository with its branches and tags, and each one's tree variants (headers and manifests only). */
export async function webRepos(store: Store): Promise<{ repos: WebRepo[] }> {
  const repos = await listRepositories(store);
  const out: WebRepo[] = [];
  for (const r of repos) {
    const one = async (kind: 'branch' | 'tag', x: { name: string; head: ObjectId }): Promise<WebRevision> => {
      try {
        const res = await resolveRevision(store, r.repo, x.name);
        const doc = res.document as { author?: string; time?: number; message?: string } | null | undefined;
        let variants: WebVariant[] = [];
        let files = 0;
        if (res.targetKind === 'tree') {
          const manifest = await store.getManifest(res.target);
          files = manifest.entries.length;
          const byPath = new Map(manifest.entries.map((e) => [e.path, e]));
          variants = treeVariants(manifest).map((v) => {
            const e = byPath.get(v.path);
            const digest = e?.kind === 'file' ? e.records[0]?.digest : undefined;
            return { name: v.name, path: v.path, checkpoint: digest ?? res.target };
          });
        } else {
          variants = [{ name: '', path: 'model.cozytensors', checkpoint: res.target }];
        }
        return {
          name: x.name,
          kind,
          head: x.head,
          target: res.target,
          targetKind: res.targetKind,
          ...(doc?.author !== undefined ? { author: doc.author } : {}),
          ...(doc?.time !== undefined ? { time: Number(doc.time) } : {}),
          ...(doc?.message !== undefined ? { message: doc.message } : {}),
          variants,
          files,
        };
      } catch (error) {
        if (!isTensorFSError(error) || error.code === 'cancelled') throw error;
        const rule = typeof error.details.rule === 'string' ? error.details.rule : undefined;
        return {
          name: x.name,
          kind,
          head: x.head,
          variants: [],
          files: 0,
          error: { code: error.code, message: error.message, ...(rule ? { rule } : {}) },
        };
      }
    };
    const branches: WebRevision[] = [];
    for (const b of r.branches) branches.push(await one('branch', b));
    const tags: WebRevision[] = [];
    for (const t of r.tags) tags.push(await one('tag', t));
    out.push({ repo: r.repo, branches, tags });
  }
  return { repos: out };
}

/** The compare view: exactly `tfs diff --json`. */
export function webDiff(store: Store, a: string, b: string, file?: string): Promise<SnapshotDiff> {
  if (a === '' || b === '') {
    return Promise.reject(
      new TensorFSError('invalid_argument', 'compare needs two refs', { details: { rule: 'web.compare' } }),
    );
  }
  return diffSnapshots(store, a, b, file ? { file } : {});
}
