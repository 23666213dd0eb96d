/**
 * The source adapter contract of the one import pipeline ({@link importSources}): a source is
 * resolved (pinned) once, lists its files with sizes and any digests it announces, and opens
 * byte ranges of each file (a local source also offers positioned reads into the pipeline's own
 * buffers, {@link SourceFile.reader}). Everything else — headers first, planning, admission, verification,
 * the snapshot and the ref — is the pipeline's, the same for every source.
 */
/** A digest a source announces for a file's whole bytes (checked before any ref names it). */
export type AnnouncedDigest =
  /** SHA-256 of the bytes (64 lowercase hex digits). */
  | { algorithm: 'sha256'; hex: string }
  /** The git blob id (`sha1("blob <size>\0" + bytes)`, 40 hex digits), as the Hub lists git files. */
  | { algorithm: 'git-blob'; hex: string };

/** A body stream of a file range; `skip` bytes at its start are to be dropped (a `200` to a ranged ask). */
export interface OpenedRange {
  body: AsyncIterable<Uint8Array> & { destroy?: () => void };
  skip: number;
}

/** The areas of the sources' error rules: `<area>.denied`, `<area>.size_mismatch`... */
export type SourceArea = 'hf' | 'https' | 'civitai' | 'import';

/**
 * Words a source's errors use: the rule prefix (`hf`, `https`, `civitai`) and who served the bytes
 * (`the Hub`, `the server`).
 */
export interface SourceVoice {
  rules: SourceArea;
  who: string;
}

/** One file of a resolved source. */
export interface SourceFile {
  /** Its path in the snapshot (validated by the pipeline). */
  readonly path: string;
  /** Its exact length in bytes. */
  readonly size: number;
  /** What the source announces for its bytes, if anything. */
  readonly digest?: AnnouncedDigest;
  /**
   * The error of bytes that differ from {@link SourceFile.digest} (`actual`: the digest computed),
   * when the source has its own (the Hugging Face cache: `hf_cache.blob_digest`); default
   * `corrupt` with rule `<area>.digest_mismatch`.
   */
  digestError?(actual: string): Error;
  /** Called before any byte is read (a source's own checks: the Hub's `HEAD`). */
  check?(signal?: AbortSignal): Promise<void>;
  /** `[start, end)` (`end` omitted: to the end) as a body stream. */
  open(start: number, end: number | undefined, signal?: AbortSignal): Promise<OpenedRange>;
  /**
   * Positioned reads into the caller's buffers (a local file: preads), offered besides
   * {@link SourceFile.open}. With it the pipeline reads every byte once, straight into the
   * planner's buffers, and needs no header probe (the planner's first read covers the header).
   */
  reader?(signal?: AbortSignal): Promise<FileReader>;
  /** Where partial bytes of this file are kept across runs (a resumable download), if anywhere. */
  readonly spool?: Spool;
  /** True for a file with an execute bit (recorded as mode `0o755`, else `0o644`). */
  readonly executable?: boolean;
}

/** Positioned reads of one open file (see {@link SourceFile.reader}). */
export interface FileReader {
  /**
   * Fills `target` with the bytes at `offset` (`conflict`, rule `import.source_changed`, when the
   * file is shorter than it was listed).
   */
  readInto(offset: number, target: Uint8Array, signal?: AbortSignal): Promise<void>;
  /**
   * After every byte was read: `conflict` (rule `import.source_changed`) unless the file is still
   * the one listed, unchanged; `cause` is the failure being reported when called after one.
   */
  verify(cause?: unknown): Promise<void>;
  /** Releases the file (idempotent). */
  close(): Promise<void>;
}

/** A symbolic link of a source (a local folder): recorded as a link, never followed. */
export interface SourceLink {
  readonly path: string;
  /** The link's target, relative and inside the tree (`validateSymlinkTarget`). */
  readonly symlink: string;
}

/** The file-backed memory of a partial download (see `spool.ts`). */
export interface Spool {
  /** Bytes `[0, length)` of the file kept from an earlier attempt. */
  readonly length: number;
  /** Reads `target.length` bytes at `offset` (< length). */
  read(offset: number, target: Uint8Array): Promise<void>;
  /** Appends bytes at `length` (a write elsewhere is ignored). */
  append(offset: number, bytes: Uint8Array): Promise<void>;
  /** The file imported: the partial bytes are no longer needed. */
  done(): Promise<void>;
  close(): Promise<void>;
}

/** A source pinned to what it is now: its files and what to record about it. */
export interface ResolvedSource<P = unknown> {
  /** For the lease's purpose and messages (`hf acme/tiny`, `https example.org/m.safetensors`). */
  readonly label: string;
  readonly voice: SourceVoice;
  readonly files: readonly SourceFile[];
  /** Symbolic links, for sources that have them. */
  readonly links?: readonly SourceLink[];
  /**
   * The source metadata recorded with the snapshot, made once every file was read and verified
   * (`digests`: each file's SHA-256 as computed, by path).
   */
  provenance(digests: ReadonlyMap<string, string>): P;
  /** Releases connections or spools. */
  close?(): Promise<void>;
}

/** A source the pipeline can import: resolves itself once. */
export interface Source<P = unknown> {
  resolve(signal?: AbortSignal): Promise<ResolvedSource<P>>;
}
