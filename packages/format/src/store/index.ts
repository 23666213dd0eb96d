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
