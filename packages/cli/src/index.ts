/**
 * `@tensorfs/cli`: the `tfs` command, also callable in-process (`run`).
 * @packageDocumentation
 */
export type { CliIO } from './context.js';
export { EXIT_CODES } from './exit-codes.js';
export { run } from './shell.js';
export { VERSION } from './version.js';
