/**
 * `@tensorfs/cli`: the `tfs` command, also callable in-process.
 * @packageDocumentation
 */
export { type TfsCommand, defineCommand } from './command.js';
export { type CliIO, CommandContext, type GlobalArgs, toJson } from './context.js';
export { EXIT_CODES } from './exit-codes.js';
export { formatBytes, Progress } from './progress.js';
export { run } from './shell.js';
export { VERSION } from './version.js';
