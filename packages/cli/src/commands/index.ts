import type { TfsCommand } from '../command.js';
import { convertCommand } from './checkpoint.js';
import { diffCommand } from './diff.js';
import { envCommand } from './env.js';
import { inspectCommand } from './inspect.js';
import { bindCommand, lanesCommand } from './lanes.js';
import { planCommand } from './plan.js';
import { duCommand, exportCommand, gcCommand, importCommand, lsCommand, refCommand, verifyCommand } from './store.js';
import { pullCommand, pushCommand, remoteCommand, serveCommand } from './remote.js';
import { catCommand, composeCommand, tensorsCommand } from './tensors.js';

/** Every `tfs` command, in the order `tfs --help` lists them. */
// biome-ignore lint/suspicious/noExplicitAny: commands differ in their argument types
export const commands: TfsCommand<any>[] = [
  inspectCommand,
  planCommand,
  importCommand,
  convertCommand,
  lsCommand,
  refCommand,
  exportCommand,
  verifyCommand,
  gcCommand,
  duCommand,
  tensorsCommand,
  catCommand,
  composeCommand,
  lanesCommand,
  bindCommand,
  pullCommand,
  pushCommand,
  serveCommand,
  remoteCommand,
  diffCommand,
  envCommand,
];
