/**
 * `@tensorfs/format`: TensorFS byte formats with no I/O. Runs in Node, browsers and workers.
 * @packageDocumentation
 */
export * from './errors.js';
export { type ArgumentArea, requireCallOptions, wrongArgument } from './args.js';
export { globMatcher } from './glob.js';
export * from './progress.js';
export * from './ids.js';
export * from './json.js';
export * from './source.js';
export * from './safetensors/index.js';
export * from './gguf/index.js';
export * from './manifest/index.js';
export * from './references.js';
export * from './codecs.js';
export * from './records.js';
export * from './cozytensors/index.js';
export * from './repository/index.js';
