/**
 * `@tensorfs/format/store`: the storage contract every TensorFS store and origin implements (named
 * capabilities: objects, refs, leases, batches, parts, streams), the ref-name and object-id rules,
 * what implementations share ({@link StoreBase}, {@link recordsSourceOf}) and the in-memory
 * implementation. No I/O of its own, no `node:*`.
 * @packageDocumentation
 */
export * from './contract.js';
export * from './names.js';
export {
  StoreBase,
  RecordingLease,
  recordsSourceOf,
  type PieceReader,
  sha256Id,
  chunkList,
  concatChunks,
  unsupportedCapability,
  objectNotFound,
  digestMismatch,
  casConflict,
} from './base.js';
export { MemoryStore } from './memory.js';
export {
  FILE_SHA256_MAGIC,
  isSideRef,
  fileSha256Ref,
  fileRecordsKey,
  encodeFileSha256,
  decodeFileSha256,
  readFileSha256List,
} from './file-sha256.js';
