/** The store port ({@link Store}) and the local store ({@link LocalStore}) implementing it. */
export type { Store } from './port.js';
export { LocalStore, openStore, DEFAULT_GRACE_MS } from './store.js';
export type { InitOptions, InitResult } from './store.js';
export { RefFolder, type RefFolderProblem } from './ref-folder.js';
export type {
  StoreOptions,
  RootEntry,
  Usage,
  RefUsage,
  RepositoryUsage,
  ExportOptions,
  RefProblem,
  RefListing,
  RefFileListing,
  LocalSetRefOptions,
  CacheListing,
  CachedRefInfo,
  CachedObjectInfo,
} from './store.js';
export type { PruneOptions, PruneResult, PrunedUnit } from './prune.js';
export { parseSize, parseDuration, DEFAULT_USE_FLUSH_MS } from './cache.js';
export type { Lease, LeaseOptions } from './leases.js';
export { DEFAULT_LEASE_TTL_MS } from './leases.js';
export type { PutResult, Chunks, ObjectStreamOptions } from './objects.js';
export type { ObjectPart, BatchItem, BatchOutcome } from './staging.js';
export type { ReadOptions, PieceReader } from './read.js';
export { recordsSourceOf } from './read.js';
export type { RefEntry } from './refs.js';
export { validateRefName, MAX_REF_NAME } from './layout.js';
export type { GcOptions, GcResult } from './gc.js';
export type { RemoveOptions, RemoveResult } from './remove.js';
export type { VerifyOptions, VerifyResult } from './verify.js';
export type { ImportOptions, ImportResult } from './import.js';
/** The one progress shape of every `onProgress` (from `@tensorfs/format`). */
export type { Progress } from '@tensorfs/format';
export { type FileSource, fileHandleSource, openFileSource } from './file-source.js';
export { siblingTemp } from './fsutil.js';
export {
  type HfCacheForm,
  type HfCacheRepo,
  type HfCacheScan,
  type HfCacheSnapshot,
  type HfRepoType,
  LFS_MIN_BYTES,
  detectHfCache,
  isLfsFile,
  parseRepoFolder,
  hfRepoOf,
  DATASET_PREFIX,
  scanHfCache,
} from './hf-cache.js';
export {
  type HfCacheCommitResult,
  type HfCacheImportOptions,
  type HfCacheImportResult,
  type HfCacheProvenance,
  type HfCacheRepoResult,
  hfCacheSource,
  importHfCache,
} from './hf-cache-import.js';
export { type HfCacheExportOptions, type HfCacheExportResult, exportHfCache, hfCommitOf } from './hf-cache-export.js';
export type { Found, ContentDigest, Stamp } from './import.js';
export { scanTree, stampChange, stampOf } from './import.js';
export {
  copyFileSha256,
  fileSha256Ref,
  mayHaveFileSha256,
  type FileHash,
  type FileSha256Writer,
  readFileSha256,
  recordFileSha256,
  recordsKey,
  WholeFileHashes,
} from './file-sha256.js';
