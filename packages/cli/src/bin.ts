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
  controller.abort(new TensorFSError('cancelled', 'interrupted', { details: { rule: 'cli.interrupted', signal } }));
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));

// A failing stdout is the reader's doing, not a bug: a closed pipe (`tfs ls | head -1`) ends
// quietly as `ls` and `git` do; anything else (ENOSPC on `> /dev/full`) is `io`, exit 11. Both
// leave at once: everything a command commits is durable before it prints its result.
const json = process.argv.includes('--json');
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  const e = new TensorFSError('io', `cannot write to stdout${err.code ? ` (${err.code})` : ''}`, {
    details: { rule: 'cli.stdout', op: 'write', path: 'stdout', ...(err.code ? { errno: err.code } : {}) },
  });
  try {
    process.stderr.write(json ? `${JSON.stringify({ error: e.toJSON() })}\n` : `error[io]: ${e.message}\n`);
  } finally {
    process.exit(11);
  }
});
process.stderr.on('error', () => {
  // Nowhere left to report to; the exit code still tells.
});

const code = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: controller.signal,
});
// A command that finished anyway (its work committed) reports its own code, not 12. Leave once
// both streams have flushed: a stray timer or socket of a failed transfer must not keep a
// finished command alive (everything a command commits is durable before it returns).
process.exitCode = code;
// A failed stdout is left to its 'error' handler above (EPIPE 0, otherwise io 11).
let pending = 2;
const done = () => {
  if (--pending === 0) process.exit(code);
};
process.stdout.write('', (err) => {
  if (!err) done();
});
process.stderr.write('', done);
