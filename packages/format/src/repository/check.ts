/** Argument checks shared by the repository functions (not part of the entry point). */
import { requireFunction, requireObject } from '../args.js';
import type { Store } from '../store/contract.js';

/** `invalid_argument` unless `store` is a store (the repository functions' argument check). */
export function requireStore(store: unknown): asserts store is Store {
  requireObject(store, 'store', 'repo');
  requireFunction((store as Store).getRef, 'store.getRef', 'repo');
}
