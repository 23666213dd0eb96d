import { checkOptions, checkStore, checkString } from './args.js';
import type { Store } from '@tensorfs/format/store';
import {
  type AnyContainerCodec,
  bytesSource,
  CONTAINER_CODECS,
  type ContainerCodec,
  type ContainerHeader,
  type ContainerTemplateOf,
  type ByteSource,
  codecByProfile,
  codecForPath,
  comparePaths,
  type GgufTemplate,
  type ManifestFileEntry,
  type RecordRef,
  type ObjectId,
  type SafetensorsHeader,
  type SafetensorsShardIndex,
  TensorFSError,
  checkShardIndex,
  MAX_SHARD_INDEX_SIZE,
  isTensorFSError,
  parseShardIndex,
  throwIfAborted,
} from '@tensorfs/format';
import { RecordLayout } from './records.js';
import { SnapshotTree, dirname, joinPath } from './snapshot.js';
import { StoredTensorView, type TensorFormat, type TensorView, type ViewFacts, type ViewFile } from './view.js';

/** Options of {@link openTensors}. */
export interface OpenTensorsOptions {
  /**
   * Open one file only: a `.safetensors` or `.gguf` file, or a `*.safetensors.index.json` (all
   * its shards). Without it, every tensor file and shard index of the snapshot is opened.
   */
  file?: string;
  /** Cancels opening (`cancelled`). */
  signal?: AbortSignal;
}

/** A tensor file of an opened snapshot. */
export interface TensorFileInfo {
  /** The file's snapshot path. */
  readonly path: string;
  /** Its container format. */
  readonly format: TensorFormat;
  /** The planner profile it was stored with (`safetensors-v1`, `gguf-v1`, `blob-v1`, ...). */
  readonly profile: string;
  /** The file size in bytes. */
  readonly size: number;
  /** True when every tensor of the file is a run of whole records (see {@link TensorView.aligned}). */
  readonly aligned: boolean;
  /** The file's tensors, in data order. */
  readonly tensors: readonly string[];
  /** The shard index this file belongs to, if it was opened through one. */
  readonly index?: string;
}

/** A file that looked like a tensor file but could not be opened (only when no `file` was asked for). */
export interface SkippedFile {
  readonly path: string;
  /** The error code and message that made it unreadable. */
  readonly code: string;
  readonly message: string;
}

/** The parsed header of one opened file, tagged with its format (one member per codec of `@tensorfs/format`). */
export type TensorFileHeader = ContainerHeader;

/** What a GGUF `TensorWriter` needs to reproduce a source file's header (now defined by the GGUF codec). */
export type { GgufTemplate };

/** Every tensor of a snapshot's safetensors and GGUF files, by name. */
export interface TensorSet extends Iterable<TensorView> {
  /** The snapshot id the set was opened from. */
  readonly snapshot: ObjectId;
  /** The tensor files opened, in path order. */
  readonly files: readonly TensorFileInfo[];
  /** Shard indexes opened (`*.safetensors.index.json`), in path order. */
  readonly indexes: readonly string[];
  /** Files named like tensor files, stored whole, that do not parse (left out of the set). */
  readonly skipped: readonly SkippedFile[];
  /** The number of tensors. */
  readonly size: number;
  /** True if some file has a tensor of this name. */
  has(name: string): boolean;
  /**
   * The tensor called `name`; with `file`, the one in that file (or in a shard of that index).
   * @throws {TensorFSError} `not_found`; `invalid_argument` if several files have it and no `file` is given.
   */
  get(name: string, file?: string): TensorView;
  /** The distinct tensor names, in iteration order. */
  names(): string[];
  /** The parsed header of an opened file. @throws {TensorFSError} `not_found` */
  header(file: string): TensorFileHeader;
  /** The header template of an opened GGUF file, for a `TensorWriter`. @throws {TensorFSError} `not_found`, `invalid_argument` */
  ggufHeader(file: string): GgufTemplate;
  /**
   * The template of an opened file (its codec's: the safetensors `__metadata__`, the GGUF header
   * block...), for a `TensorWriter` rewriting it. @throws {TensorFSError} `not_found`
   */
  template(file: string): unknown;
  /** The manifest entry of an opened file. @throws {TensorFSError} `not_found` */
  entry(file: string): ManifestFileEntry;
  /** The parsed shard index of an opened index (shard names are relative to its directory). @throws {TensorFSError} `not_found` */
  shardIndex(index: string): SafetensorsShardIndex;
}

/** Profiles whose records are cut at tensor boundaries: the container codecs' own. */
const ALIGNED_PROFILES: ReadonlySet<string> = new Set(CONTAINER_CODECS.map((c) => c.profile));

/** The codes of a header that does not parse (as opposed to a store failure). */
const UNPARSABLE: ReadonlySet<string> = new Set(['malformed', 'unsupported', 'limit_exceeded']);

/** How a safetensors shard index is named. @internal */
export const INDEX_SUFFIX = '.safetensors.index.json';

/**
 * Opens the tensors of a snapshot. Only headers are read: the header record of each tensor file
 * (and each shard index); no tensor byte is touched until a view is read.
 *
 * @param store - the store holding the snapshot.
 * @param refOrId - a ref name or a snapshot id.
 * @throws {TensorFSError} `not_found` (ref, snapshot, file, shard or object missing), `malformed` (a header
 *   or index that does not parse), `corrupt` (stored bytes that disagree with the manifest or an index
 *   that disagrees with its shards), `invalid_argument` (`file` is not a tensor file or index).
 */
export async function openTensors(store: Store, refOrId: string, options: OpenTensorsOptions = {}): Promise<TensorSet> {
  checkStore(store);
  checkString(refOrId, 'refOrId');
  checkOptions(options);
  const tree = await SnapshotTree.load(store, refOrId);
  const opener = new FileOpener(store, tree, options.signal);
  if (options.file !== undefined) {
    const path = options.file;
    if (path.endsWith(INDEX_SUFFIX)) await opener.openIndex(path);
    else await opener.openFile(tree.file(path), undefined);
  } else {
    for (const entry of tree.files()) {
      if (entry.path.endsWith(INDEX_SUFFIX)) await opener.openIndex(entry.path);
    }
    for (const entry of tree.files()) {
      if (opener.opened.has(entry.path) || codecOf(entry) === undefined) continue;
      try {
        await opener.openFile(entry, undefined);
      } catch (error) {
        // A whole-stored file named like a tensor file that does not parse is left out (and listed);
        // anything else (a missing object, a planned file that no longer parses) fails the open.
        if (ALIGNED_PROFILES.has(entry.profile) || !isTensorFSError(error) || !UNPARSABLE.has(error.code)) throw error;
        opener.skipped.push({ path: entry.path, code: error.code, message: error.message });
      }
    }
  }
  return new StoredTensorSet(tree.id, opener);
}

/** One opened tensor file. */
interface OpenedFile {
  readonly info: TensorFileInfo;
  readonly entry: ManifestFileEntry;
  readonly header: TensorFileHeader;
  readonly template: unknown;
  readonly views: readonly StoredTensorView[];
}

/** Opens files and indexes of one snapshot, each at most once. */
class FileOpener {
  readonly opened = new Map<string, OpenedFile>();
  readonly indexes: string[] = [];
  /** For each index path, the shard paths it covers. */
  readonly shardsOf = new Map<string, string[]>();
  /** For each index path, the parsed index. */
  readonly parsedIndexes = new Map<string, SafetensorsShardIndex>();
  readonly skipped: SkippedFile[] = [];

  constructor(
    private readonly store: Store,
    private readonly tree: SnapshotTree,
    private readonly signal: AbortSignal | undefined,
  ) {}

  async openFile(entry: ManifestFileEntry, index: string | undefined): Promise<OpenedFile> {
    const known = this.opened.get(entry.path);
    if (known !== undefined) return known;
    throwIfAborted(this.signal);
    const codec = codecOf(entry);
    if (codec === undefined) {
      throw new TensorFSError('invalid_argument', 'not a tensor container file', {
        details: { rule: 'tensors.not_a_tensor_file', path: entry.path, profile: entry.profile },
      });
    }
    const layout = new RecordLayout(entry.records);
    if (layout.size !== entry.size) {
      throw new TensorFSError('corrupt', 'a file entry size disagrees with its records', {
        details: { rule: 'tensors.entry_size', path: entry.path, expected: entry.size, actual: layout.size },
      });
    }
    const planned = ALIGNED_PROFILES.has(entry.profile);
    // The header of a planned file is its own small first record: read it whole and verified, and
    // parse it in memory. A whole-stored file is one object of any size: its header is read by
    // range, unverified (rehashing would read the whole file).
    const head = planned ? await this.headerRecord(entry) : this.store.recordsSource(entry.records);
    const opened = await this.openWith(codec as ContainerCodec, entry, layout, head, index);
    this.opened.set(entry.path, opened);
    return opened;
  }

  async openIndex(path: string): Promise<void> {
    if (this.shardsOf.has(path)) return;
    throwIfAborted(this.signal);
    const entry = this.tree.file(path);
    if (entry.size > MAX_SHARD_INDEX_SIZE) {
      throw new TensorFSError('limit_exceeded', 'a shard index is too large', {
        details: { rule: 'tensors.shard_index_limit', path, limit: MAX_SHARD_INDEX_SIZE, actual: entry.size },
      });
    }
    const source = this.store.recordsSource(entry.records, { verify: true });
    const index = parseShardIndex((await source.read(0, source.size, this.signal)).slice());
    const dir = dirname(path);
    const headers = new Map<string, SafetensorsHeader>();
    const shards: string[] = [];
    for (const shard of index.shards) {
      const shardPath = joinPath(dir, shard);
      let shardEntry: ManifestFileEntry;
      try {
        shardEntry = this.tree.file(shardPath);
      } catch (error) {
        throw new TensorFSError('not_found', 'a shard index names a shard that is not in the snapshot', {
          details: { rule: 'tensors.missing_shard', path, shard, snapshot: this.tree.id },
          cause: error,
        });
      }
      const opened = await this.openFile(shardEntry, path);
      if (opened.header.format !== 'safetensors') {
        throw new TensorFSError('malformed', 'a safetensors shard index names a file that is not safetensors', {
          details: { rule: 'tensors.shard_not_safetensors', path, shard },
        });
      }
      headers.set(shard, opened.header.header);
      shards.push(opened.info.path);
    }
    checkShardIndex(index, headers);
    this.indexes.push(path);
    this.shardsOf.set(path, shards);
    this.parsedIndexes.set(path, index);
  }

  /** The verified bytes of a planned file's first record (which holds its whole header). */
  private async headerRecord(entry: ManifestFileEntry): Promise<Uint8Array> {
    const first = entry.records[0];
    if (first === undefined) {
      throw new TensorFSError('corrupt', 'a planned tensor file has no records', {
        details: { rule: 'tensors.no_records', path: entry.path },
      });
    }
    const bytes = await this.store.readObject(first.digest, { verify: true });
    if (bytes.length !== first.length) {
      throw new TensorFSError('corrupt', 'a stored object does not have its recorded length', {
        details: {
          rule: 'tensors.object_length',
          path: entry.path,
          digest: first.digest,
          expected: first.length,
          actual: bytes.length,
        },
      });
    }
    return bytes;
  }

  /**
   * Opens a file with its codec: the header from a planned file's first record (in memory) or a
   * whole-stored file's source, the tensors' views, the template for rewriting it. The planner
   * only plans files whose header parses, so a planned one that does not is `corrupt` (its first
   * record is not its header).
   */
  private async openWith(
    codec: ContainerCodec,
    entry: ManifestFileEntry,
    layout: RecordLayout,
    head: Uint8Array | ByteSource,
    index: string | undefined,
  ): Promise<OpenedFile> {
    const planned = head instanceof Uint8Array;
    let header: unknown;
    if (planned) {
      try {
        header = codec.parse(head, entry.size);
      } catch (error) {
        throw new TensorFSError('corrupt', "a planned file's first record does not hold its header", {
          details: { rule: 'tensors.header_record', path: entry.path },
          cause: error,
        });
      }
    } else {
      header = await codec.read(head, this.signal ? { signal: this.signal } : {});
    }
    const facts = codec.tensors(header).map((t) => ({
      ...t,
      records: spanRecords(entry, layout, t.byteOffset, t.byteLength, planned, t.name),
    }));
    if (planned) checkHeaderRecord(entry, layout, codec.dataStart(header));
    const template = await codec.template(header, planned ? bytesSource(head) : head, this.signal);
    return this.bind(entry, { format: codec.name, header } as TensorFileHeader, template, facts, index);
  }

  private bind(
    entry: ManifestFileEntry,
    header: TensorFileHeader,
    template: unknown,
    facts: readonly ViewFacts[],
    index: string | undefined,
  ): OpenedFile {
    const store = this.store;
    const sources = new Map<boolean, ByteSource>();
    const owner: ViewFile = {
      store,
      path: entry.path,
      format: header.format,
      byteOrder: (header.header as { endianness?: string }).endianness === 'big' ? 'big' : 'little',
      source(verify) {
        let source = sources.get(verify);
        if (source === undefined) sources.set(verify, (source = store.recordsSource(entry.records, { verify })));
        return source;
      },
    };
    const views = facts.map((f) => new StoredTensorView(owner, f));
    const info: TensorFileInfo = {
      path: entry.path,
      format: header.format,
      profile: entry.profile,
      size: entry.size,
      aligned: views.every((v) => v.aligned),
      tensors: views.map((v) => v.name),
      ...(index !== undefined ? { index } : {}),
    };
    return { info, entry, header, template, views };
  }
}

/** Which container a file entry holds, from its profile, else from its name. */
function codecOf(entry: ManifestFileEntry): AnyContainerCodec | undefined {
  return codecByProfile(entry.profile) ?? codecForPath(entry.path);
}

/**
 * The records that hold a tensor's bytes exactly. In a planned file they must exist (else the
 * manifest disagrees with the header: `corrupt`); otherwise `null` selects range reads.
 */
function spanRecords(
  entry: ManifestFileEntry,
  layout: RecordLayout,
  offset: number,
  length: number,
  planned: boolean,
  tensor: string,
): readonly RecordRef[] | null {
  const span = layout.span(offset, length);
  if (span === null) {
    if (!planned) return null;
    throw new TensorFSError('corrupt', "a tensor's bytes do not fall on its file's record boundaries", {
      details: { rule: 'tensors.tensor_span', path: entry.path, tensor, offset, length, profile: entry.profile },
    });
  }
  return entry.records.slice(span.first, span.end);
}

/** A planned file starts with one record holding everything before the data section. */
function checkHeaderRecord(entry: ManifestFileEntry, layout: RecordLayout, dataStart: number): void {
  if (layout.records.length === 0 || layout.start(1) !== dataStart) {
    throw new TensorFSError('corrupt', "a planned file's first record is not exactly its header", {
      details: { rule: 'tensors.header_record', path: entry.path, expected: dataStart, actual: layout.start(1) },
    });
  }
}

/** The {@link TensorSet} of {@link openTensors}. */
class StoredTensorSet implements TensorSet {
  readonly files: readonly TensorFileInfo[];
  readonly indexes: readonly string[];
  readonly skipped: readonly SkippedFile[];
  private readonly byFile: ReadonlyMap<string, OpenedFile>;
  private readonly byName = new Map<string, StoredTensorView[]>();
  private readonly shardsOf: ReadonlyMap<string, readonly string[]>;
  private readonly parsedIndexes: ReadonlyMap<string, SafetensorsShardIndex>;
  private readonly ordered: StoredTensorView[] = [];

  constructor(
    readonly snapshot: ObjectId,
    opener: FileOpener,
  ) {
    const files = [...opener.opened.values()].sort((a, b) => comparePaths(a.info.path, b.info.path));
    this.byFile = new Map(files.map((f) => [f.info.path, f]));
    this.files = files.map((f) => f.info);
    this.indexes = [...opener.indexes].sort(comparePaths);
    this.skipped = opener.skipped;
    this.shardsOf = opener.shardsOf;
    this.parsedIndexes = opener.parsedIndexes;
    for (const file of files) {
      for (const view of file.views) {
        this.ordered.push(view);
        const list = this.byName.get(view.name);
        if (list === undefined) this.byName.set(view.name, [view]);
        else list.push(view);
      }
    }
  }

  get size(): number {
    return this.ordered.length;
  }

  [Symbol.iterator](): Iterator<TensorView> {
    return this.ordered[Symbol.iterator]();
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  get(name: string, file?: string): TensorView {
    let found = this.byName.get(name) ?? [];
    if (file !== undefined) {
      const shards = this.shardsOf.get(file) ?? [file];
      found = found.filter((v) => shards.includes(v.file));
    }
    if (found.length === 0) {
      throw new TensorFSError('not_found', 'no such tensor', {
        details: {
          rule: 'tensors.no_tensor',
          tensor: name,
          snapshot: this.snapshot,
          ...(file !== undefined ? { path: file } : {}),
        },
      });
    }
    if (found.length > 1) {
      throw new TensorFSError('invalid_argument', 'several files have a tensor of this name; say which file', {
        details: { rule: 'tensors.ambiguous_tensor', tensor: name, files: found.map((v) => v.file) },
      });
    }
    return found[0]!;
  }

  header(file: string): TensorFileHeader {
    return this.opened(file).header;
  }

  ggufHeader(file: string): GgufTemplate {
    const opened = this.opened(file);
    if (opened.header.format !== 'gguf') {
      throw new TensorFSError('invalid_argument', 'not a GGUF file', {
        details: { rule: 'tensors.not_gguf', path: file },
      });
    }
    return opened.template as ContainerTemplateOf<'gguf'>;
  }

  template(file: string): unknown {
    return this.opened(file).template;
  }

  entry(file: string): ManifestFileEntry {
    return this.opened(file).entry;
  }

  shardIndex(index: string): SafetensorsShardIndex {
    const parsed = this.parsedIndexes.get(index);
    if (parsed === undefined) {
      throw new TensorFSError('not_found', 'no such shard index in the opened set', {
        details: { rule: 'tensors.no_file', path: index, snapshot: this.snapshot },
      });
    }
    return parsed;
  }

  private opened(file: string): OpenedFile {
    const opened = this.byFile.get(file);
    if (opened === undefined) {
      throw new TensorFSError('not_found', 'no such tensor file in the opened set', {
        details: { rule: 'tensors.no_file', path: file, snapshot: this.snapshot },
      });
    }
    return opened;
  }
}
