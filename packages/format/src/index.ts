/**
 * `@tensorfs/format`: TensorFS byte formats with no I/O. Runs in Node, browsers and workers.
 * @packageDocumentation
 */
export * from './errors.js';
