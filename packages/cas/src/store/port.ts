/**
 * The store port is the storage contract of `@tensorfs/format/store`: one interface for the local
 * store, the in-memory store, the origins and the store that fetches on a miss. Re-exported here so
 * `import type { Store } from '@tensorfs/cas'` keeps working. See docs/architecture.md
 * "The storage contract".
 */
export type { Store } from '@tensorfs/format/store';
