/**
 * Re-exports of `@tensorfs/format`'s read helpers, kept here for compatibility: the one
 * read-fully/read-into implementation lives with `ByteSource` in format.
 */
export { canReadInto, type ReadIntoSource, readInto } from '@tensorfs/format';
