import { type LazyCommand, lazyCommand } from '../command.js';
import { SPECS } from './specs.js';

/**
 * Every `tfs` command, in the order `tfs --help` lists them. Each module loads only for its own
 * command (the build makes each a chunk of its own): `tfs inspect` does not load the store,
 * tensors or lanes packages that other commands import.
 */
export const commands: LazyCommand[] = [
  lazyCommand(SPECS.init, async () => (await import('./store.js')).initCommand),
  lazyCommand(SPECS.inspect, async () => (await import('./inspect.js')).inspectCommand),
  lazyCommand(SPECS.plan, async () => (await import('./plan.js')).planCommand),
  lazyCommand(SPECS.import, async () => (await import('./store.js')).importCommand),
  lazyCommand(SPECS.convert, async () => (await import('./checkpoint.js')).convertCommand),
  lazyCommand(SPECS.ls, async () => (await import('./store.js')).lsCommand),
  lazyCommand(SPECS.ref, async () => (await import('./store.js')).refCommand),
  lazyCommand(SPECS.export, async () => (await import('./store.js')).exportCommand),
  lazyCommand(SPECS.verify, async () => (await import('./store.js')).verifyCommand),
  lazyCommand(SPECS.gc, async () => (await import('./store.js')).gcCommand),
  lazyCommand(SPECS.rm, async () => (await import('./store.js')).rmCommand),
  lazyCommand(SPECS.du, async () => (await import('./store.js')).duCommand),
  lazyCommand(SPECS.cache, async () => (await import('./cache.js')).cacheCommand),
  lazyCommand(SPECS.pin, async () => (await import('./cache.js')).pinCommand),
  lazyCommand(SPECS.unpin, async () => (await import('./cache.js')).unpinCommand),
  lazyCommand(SPECS.tensors, async () => (await import('./tensors.js')).tensorsCommand),
  lazyCommand(SPECS.cat, async () => (await import('./tensors.js')).catCommand),
  lazyCommand(SPECS.compose, async () => (await import('./tensors.js')).composeCommand),
  lazyCommand(SPECS.lanes, async () => (await import('./lanes.js')).lanesCommand),
  lazyCommand(SPECS.bind, async () => (await import('./lanes.js')).bindCommand),
  lazyCommand(SPECS.pull, async () => (await import('./remote.js')).pullCommand),
  lazyCommand(SPECS.push, async () => (await import('./remote.js')).pushCommand),
  lazyCommand(SPECS.serve, async () => (await import('./remote.js')).serveCommand),
  lazyCommand(SPECS.remote, async () => (await import('./remote.js')).remoteCommand),
  lazyCommand(SPECS.upload, async () => (await import('./upload.js')).uploadCommand),
  lazyCommand(SPECS.tag, async () => (await import('./tag.js')).tagCommand),
  lazyCommand(SPECS.log, async () => (await import('./log.js')).logCommand),
  lazyCommand(SPECS.download, async () => (await import('./download.js')).downloadCommand),
  lazyCommand(SPECS.diff, async () => (await import('./diff.js')).diffCommand),
  lazyCommand(SPECS.env, async () => (await import('./env.js')).envCommand),
];
