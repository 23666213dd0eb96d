/**
 * `@tensorfs/planner`: choose a profile from a file's bytes, cut it into records and hash them.
 * Runs anywhere; the SHA-256 implementation is injected ({@link Hasher}).
 * @packageDocumentation
 */
export { checkTensorSeams, cutTensor, type Seams } from './cuts.js';
export { type Hasher, type HashStream, nobleHasher, webCryptoHasher } from './hasher.js';
export {
  type Plan,
  type PlanJSON,
  type PlannedRecord,
  type ReadRecord,
  type PlanOptions,
  ALIGNED_RECORD_MIN,
  planAndHash,
  planToJSON,
} from './plan.js';
export { canReadInto, type ReadIntoSource, readInto } from './read.js';
