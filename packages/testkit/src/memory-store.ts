/**
 * The in-memory store is a real implementation of the storage contract now
 * (`@tensorfs/format/store`); the test kit re-exports it so existing tests keep their import.
 */
export { MemoryStore } from '@tensorfs/format/store';
