/**
 * `@tensorfs/cas`: the local content-addressed store.
 * @packageDocumentation
 */
export * from './hash/index.js';
export * from './store/index.js';
export * from './sources/index.js';
