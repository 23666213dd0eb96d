#!/usr/bin/env node
import { TensorFSError } from '@tensorfs/format';
import { run } from './shell.js';

const controller = new AbortController();
let interrupted = false;
const stop = (signal: string): void => {
  // The first SIGINT (Ctrl-C) or SIGTERM cancels the running command cleanly (temps removed,
  // nothing committed, exit 12); a second one leaves at once.
  if (interrupted) process.exit(12);
  interrupted = true;
  // The reason is what a platform `signal.throwIfAborted()` would throw: make it `cancelled`.
  controller.abort(new TensorFSError('cancelled', 'interrupted', { details: { signal } }));
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));

const code = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: controller.signal,
});
// A command that finished anyway (its work committed) reports its own code, not 12.
process.exitCode = code;
