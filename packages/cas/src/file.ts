/**
 * `@tensorfs/cas/file`: plain files as byte sources ({@link openFileSource}, {@link fileHandleSource}),
 * without the store. The same functions as the main entry, for programs that only read files (`tfs
 * inspect`): importing them from here does not load SQLite, the planner or the store.
 * @packageDocumentation
 */
export { type FileSource, fileHandleSource, openFileSource } from './store/file-source.js';
