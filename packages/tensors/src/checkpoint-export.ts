/**
 * Exporting checkpoints: ordinary Hugging Face folders (byte-identical to what was converted when
 * the checkpoint has a source snapshot), the header file alone, or a portable folder (header +
 * `chunks/<sha256-hex>`) that another machine reads with no store; and importing a portable folder.
 */
import { checkCheckpoint, checkOptions, checkStore, checkString } from './args.js';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { Progress, ObjectId as SnapshotId } from '@tensorfs/format';
import { type Store, validateRefName } from '@tensorfs/format/store';

/**
 * A store that can also rebuild a snapshot as files in a folder (the local store's
 * `exportSnapshot`): what exporting a checkpoint needs beyond the storage contract.
 */
export interface SnapshotExporter {
  exportSnapshot(
    snapshot: SnapshotId,
    destDir: string,
    options?: { verify?: boolean; signal?: AbortSignal; onProgress?: (p: Progress) => void },
  ): Promise<{ files: number; bytes: number }>;
}

/** A store that can also rebuild snapshots as files (the local store). */
export type ExportingStore = Store & SnapshotExporter;
import {
  type ManifestEntry,
  type ObjectId,
  sortManifestEntries,
  TensorFSError,
  throwIfAborted,
  progressEvent,
  toHex,
} from '@tensorfs/format';
import type { Checkpoint, CheckpointComponentView } from './checkpoint.js';
import { openCheckpoint } from './checkpoint.js';
import { TensorWriter } from './writer.js';

/** The three export forms. */
export type CheckpointExportFormat = 'safetensors' | 'cozytensors' | 'portable';

/** Options of {@link exportCheckpoint}. */
export interface CheckpointExportOptions {
  /** @default 'safetensors' */
  format?: CheckpointExportFormat;
  /** The header file's name without extension (`<variant>.cozytensors`). @default 'model' */
  variant?: string;
  /**
   * `portable`: the ref written under `refs/` naming the checkpoint (the ref it was exported by).
   * @default the variant (`model`)
   */
  ref?: string;
  signal?: AbortSignal;
  /**
   * Called as files are written, phase `export`: `safetensors` reports unit `bytes` with
   * `files`/`filesTotal` and `bytes`/`bytesTotal` (the store's snapshot export); `portable`
   * reports unit `files` after each file, `files` of `filesTotal` and the `bytes` written so far.
   */
  onProgress?: (p: Progress) => void;
}

/** What an export wrote. */
export interface CheckpointExportResult {
  readonly files: number;
  readonly bytes: number;
}

/**
 * Writes a checkpoint to `dir` (created if missing), atomically per file, every object verified:
 * - `safetensors`: the Hugging Face layout. With a source snapshot, exactly its files (the weights
 *   byte-identical to what was converted); otherwise `model_index.json` for a pipeline, and per
 *   component (in its folder when there is a pipeline or several) its assets, `config.json` and a
 *   `model.safetensors` of its plain tensors (encoded tensors are `unsupported` here).
 * - `cozytensors`: only `<variant>.cozytensors` (the header bytes).
 * - `portable`: the origin layout of spec/v1/remote.md, so the folder (or any static web server
 *   over it) is an origin `tfs pull` reads: every object the checkpoint reaches, the header
 *   itself included, as `chunks/<sha256-hex>`, then `refs/<ref>` naming the header (written
 *   last: a ref names only what is complete), and `<variant>.cozytensors` beside them for readers
 *   with no store.
 */
export async function exportCheckpoint(
  store: ExportingStore,
  checkpoint: Checkpoint,
  dir: string,
  options: CheckpointExportOptions = {},
): Promise<CheckpointExportResult> {
  checkStore(store);
  checkCheckpoint(checkpoint);
  checkString(dir, 'dir');
  checkOptions(options);
  const format = options.format ?? 'safetensors';
  const root = resolve(dir);
  await exportFolder(root);
  if (format === 'safetensors') {
    const tree = checkpoint.source ?? (await layoutSnapshot(store, checkpoint));
    return store.exportSnapshot(tree, root, {
      verify: true,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
  }
  const variant = options.variant ?? 'model';
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/.test(variant)) {
    throw new TensorFSError('invalid_argument', 'a variant is a plain file name stem', {
      details: { rule: 'tensors.variant_name', variant },
    });
  }
  await atomicWrite(join(root, `${variant}.cozytensors`), [checkpoint.bytes]);
  let files = 1;
  let bytes = checkpoint.bytes.length;
  if (format === 'portable') {
    const refName = options.ref ?? variant;
    validateRefName(refName);
    const chunks = join(root, 'chunks');
    await exportFolder(chunks);
    const ids = await closure(store, checkpoint);
    if (!ids.includes(checkpoint.id)) ids.push(checkpoint.id);
    // The header file, one chunk per object, the ref.
    const filesTotal = 1 + ids.length + 1;
    for (const id of ids) {
      throwIfAborted(options.signal);
      const dest = join(chunks, id.slice('sha256:'.length));
      const parts = [id === checkpoint.id ? checkpoint.bytes : await store.readObject(id, { verify: true })];
      await atomicWrite(dest, parts);
      files++;
      bytes += parts.reduce((n, p) => n + p.length, 0);
      options.onProgress?.(progressEvent('export', 'files', { files, filesTotal, bytes }));
    }
    const refPath = join(root, 'refs', ...refName.split('/'));
    await exportFolder(dirname(refPath));
    await atomicWrite(refPath, [new TextEncoder().encode(`${checkpoint.id}\n`)]);
    files++;
    options.onProgress?.(progressEvent('export', 'files', { files, filesTotal, bytes }));
  } else if (format !== 'cozytensors') {
    throw new TensorFSError('invalid_argument', 'export format is safetensors, cozytensors or portable', {
      details: { rule: 'tensors.export_format', format },
    });
  }
  return { files, bytes };
}

/**
 * A component's files for a loader that only takes paths: the component's folder of the source
 * snapshot (or the whole source for a one-component layout), else its assets, `config.json` and a
 * `model.safetensors` of its tensors.
 */
export async function exportComponentFiles(
  store: ExportingStore,
  checkpoint: Checkpoint,
  component: string,
  dir: string,
  options: { signal?: AbortSignal } = {},
): Promise<CheckpointExportResult> {
  checkStore(store);
  checkCheckpoint(checkpoint);
  checkString(component, 'component');
  checkString(dir, 'dir');
  checkOptions(options);
  const c = checkpoint.component(component);
  let entries: ManifestEntry[];
  if (checkpoint.source !== null) {
    const all = (await store.getManifest(checkpoint.source)).entries;
    const inside = all.filter((e) => e.path.startsWith(`${component}/`));
    entries =
      inside.length > 0
        ? inside.map((e) => ({ ...e, path: e.path.slice(component.length + 1) }) as ManifestEntry)
        : all;
  } else {
    entries = await componentEntries(store, c, '');
  }
  const tree = await store.putManifest({ entries: sortManifestEntries(entries) });
  return store.exportSnapshot(tree, resolve(dir), {
    verify: true,
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

/**
 * Admits a portable folder (`<variant>.cozytensors` + `chunks/<hex>`) into the store, each chunk
 * checked against its name (`corrupt` otherwise), and opens the checkpoint; with `name`, a ref.
 */
export async function importPortable(
  store: Store,
  dir: string,
  options: { variant?: string; name?: string; expected?: ObjectId | null; signal?: AbortSignal } = {},
): Promise<Checkpoint> {
  checkStore(store);
  checkString(dir, 'dir');
  checkOptions(options);
  const root = resolve(dir);
  const header = new Uint8Array(await fsp.readFile(join(root, `${options.variant ?? 'model'}.cozytensors`)));
  const probe = await openCheckpoint(store, header, { requireObjects: false });
  const lease = await store.lease({ purpose: 'import portable checkpoint' });
  try {
    const wanted = [...probe.references()];
    for (let i = 0; i < wanted.length; i++) {
      const id = wanted[i]!;
      throwIfAborted(options.signal);
      if (!(await store.has(id))) {
        let bytes: Uint8Array;
        try {
          bytes = new Uint8Array(await fsp.readFile(join(root, 'chunks', id.slice('sha256:'.length))));
        } catch {
          throw new TensorFSError('not_found', 'the portable folder lacks an object of the checkpoint', {
            details: { rule: 'cozytensors.missing_object', digest: id },
          });
        }
        await store.put([bytes], { expected: id, lease });
      } else {
        lease.add([id]);
      }
      // A source snapshot's files are objects too.
      if (id === probe.source) {
        for (const e of (await store.getManifest(id)).entries) {
          if (e.kind === 'file') for (const r of e.records) if (!wanted.includes(r.digest)) wanted.push(r.digest);
        }
      }
    }
    const { id } = await store.put([header], { lease });
    if (options.name !== undefined) {
      await store.setRef(options.name, id, { expected: options.expected ?? null, lease });
    }
    return await openCheckpoint(store, id);
  } finally {
    if (options.name !== undefined) await lease.release();
  }
}

/** Every object the checkpoint reaches: its references and the files of its source snapshot. */
async function closure(store: Store, checkpoint: Checkpoint): Promise<ObjectId[]> {
  const out = new Set<ObjectId>(checkpoint.references());
  if (checkpoint.source !== null) {
    for (const e of (await store.getManifest(checkpoint.source)).entries) {
      if (e.kind === 'file') for (const r of e.records) out.add(r.digest);
    }
  }
  return [...out];
}

/** A snapshot laying a checkpoint out as Hugging Face files (for checkpoints with no source). */
/**
 * The snapshot a `--safetensors` export of `checkpoint` writes: its source snapshot when the store
 * holds it, else the layout of its components (the few objects that takes — a safetensors header,
 * a `config.json` — are put into `store`). What the hub serves a checkpoint as.
 */
export async function safetensorsExportTree(store: Store, checkpoint: Checkpoint): Promise<ObjectId> {
  checkStore(store);
  checkCheckpoint(checkpoint);
  if (checkpoint.source !== null && (await store.has(checkpoint.source))) return checkpoint.source;
  return layoutSnapshot(store, checkpoint);
}

async function layoutSnapshot(store: Store, checkpoint: Checkpoint): Promise<ObjectId> {
  const entries: ManifestEntry[] = [];
  const nested = checkpoint.pipeline !== null || checkpoint.components.size > 1;
  if (checkpoint.pipeline !== null) {
    entries.push(await jsonEntry(store, 'model_index.json', checkpoint.pipeline.config));
  }
  for (const c of checkpoint.components.values())
    entries.push(...(await componentEntries(store, c, nested ? `${c.name}/` : '')));
  return store.putManifest({ entries: sortManifestEntries(entries) });
}

async function componentEntries(store: Store, c: CheckpointComponentView, prefix: string): Promise<ManifestEntry[]> {
  const entries: ManifestEntry[] = [];
  for (const name of c.assets) {
    const records = c.header.assets.find((a) => a.name === name)!.records;
    entries.push({
      path: `${prefix}${name}`,
      kind: 'file',
      mode: 0o644,
      size: records.reduce((n, r) => n + r.length, 0),
      profile: 'blob-v1',
      records: [...records],
    });
  }
  if (!c.assets.includes('config.json') && c.config !== null) {
    entries.push(await jsonEntry(store, `${prefix}config.json`, c.config));
  }
  if (c.tensors.size > 0) {
    const writer = new TensorWriter(store, `${prefix}model.safetensors`);
    try {
      for (const view of c.tensors.values()) {
        if (view.encoding !== null) {
          throw new TensorFSError(
            'unsupported',
            'an encoded tensor has no plain safetensors form; export --cozytensors or --portable',
            {
              details: {
                rule: 'cozytensors.export_encoded',
                component: c.name,
                tensor: view.name,
                scheme: view.encoding.scheme,
              },
            },
          );
        }
        await writer.inherit(view);
      }
      entries.push(await writer.finish());
    } finally {
      await writer.close();
    }
  }
  // Blob entries of more than one record are not blob-v1: say what they are.
  return entries.map((e) =>
    e.kind === 'file' && e.profile === 'blob-v1' && e.records.length > 1 ? { ...e, profile: 'safetensors-v1' } : e,
  );
}

async function jsonEntry(store: Store, path: string, value: unknown): Promise<ManifestEntry> {
  const bytes = new TextEncoder().encode(`${JSON.stringify(value, null, 2)}\n`);
  const { id, length } = await store.put([bytes]);
  return { path, kind: 'file', mode: 0o644, size: length, profile: 'blob-v1', records: [{ digest: id, length }] };
}

/** Writes `parts` to `dest` via a temp file, fsync and rename (then fsyncs the folder). */
async function atomicWrite(dest: string, parts: readonly Uint8Array[]): Promise<void> {
  const tmp = `${dest}.tfs-${process.pid}-${toHex(crypto.getRandomValues(new Uint8Array(4)))}.tmp`;
  try {
    const fh = await fsp.open(tmp, 'wx', 0o644);
    try {
      for (const p of parts) await fh.write(p);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fsp.rename(tmp, dest);
    const d = await fsp.open(dirname(dest), 'r');
    try {
      await d.sync();
    } finally {
      await d.close();
    }
  } catch (error) {
    await fsp.rm(tmp, { force: true });
    if (error instanceof TensorFSError) throw error;
    if ((error as { code?: string }).code === 'EISDIR') {
      const name = basename(dest);
      throw new TensorFSError(
        'conflict',
        `${name} is a folder in the export destination: remove it or choose another folder`,
        {
          details: { rule: 'export.not_a_file', path: name },
        },
      );
    }
    throw new TensorFSError('io', 'could not write an export file', {
      details: { rule: 'tensors.export_io', code: (error as { code?: string }).code, file: dest.split(/[\\/]/).pop() },
      cause: error,
    });
  }
}

/**
 * Creates an export folder (and its parents) or accepts an existing one. Something else at the
 * path (a file) is `conflict` (rule `export.not_a_folder`), as for a snapshot export; any other
 * failure is `io` with its errno. Neither names a local absolute path.
 */
async function exportFolder(dir: string): Promise<void> {
  try {
    await fsp.mkdir(dir, { recursive: true });
  } catch (error) {
    const errno = (error as NodeJS.ErrnoException).code;
    const name = basename(dir);
    if (errno === 'EEXIST' || errno === 'ENOTDIR') {
      throw new TensorFSError(
        'conflict',
        `export destination ${name} exists and is not a folder: remove it or choose another folder`,
        { details: { rule: 'export.not_a_folder', path: name } },
      );
    }
    throw new TensorFSError('io', `cannot create the export folder ${name} (${errno ?? 'error'})`, {
      details: { rule: 'export.folder', path: name, errno },
      cause: error,
    });
  }
}
