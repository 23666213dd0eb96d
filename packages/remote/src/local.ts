/** What pull, push and the hub need of a local store (the methods of `@tensorfs/cas`'s store). */
import type { Store } from '@tensorfs/cas';

/** The store methods remote uses. */
export type LocalStore = Pick<
  Store,
  | 'has'
  | 'put'
  | 'putStream'
  | 'readObject'
  | 'readObjectRange'
  | 'getRef'
  | 'setRef'
  | 'resolve'
  | 'putManifest'
  | 'lease'
>;
