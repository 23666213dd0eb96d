#!/usr/bin/env node
import { run } from './shell.js';

const controller = new AbortController();
let interrupted = false;
process.on('SIGINT', () => {
  // First Ctrl-C cancels the running command cleanly; a second one leaves at once.
  if (interrupted) process.exit(12);
  interrupted = true;
  controller.abort(new Error('interrupted'));
});

const code = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: controller.signal,
});
// A command that finished anyway (its work committed) reports its own code, not 12.
process.exitCode = code;
