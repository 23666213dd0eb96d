/**
 * `@tensorfs/cli`: the `tfs` command, also callable in-process (`run`).
 * @packageDocumentation
 */
export type { CliIO } from './context.js';
export { EXIT_CODES } from './exit-codes.js';
export { run } from './shell.js';
export { VERSION } from './version.js';
export { type ReadGrant, type WebHandler, type WebHandlerOptions, webHandler } from './web/handler.js';
export type { WebRef, WebRefDetail, WebStore, WebTensor } from './web/api.js';
