import { PassThrough } from 'node:stream';
import { run } from '../src/index.js';

/** In-memory stdout/stderr for running `tfs` in-process. */
export function capture() {
  const out = new PassThrough();
  const err = new PassThrough();
  const chunks: Buffer[] = [];
  let stderr = '';
  out.on('data', (d: Buffer) => chunks.push(d));
  err.on('data', (d) => (stderr += d));
  return {
    io: { stdout: out, stderr: err, env: {} as NodeJS.ProcessEnv },
    bytes: () => Buffer.concat(chunks),
    text: () => ({ stdout: Buffer.concat(chunks).toString('utf8'), stderr }),
  };
}

/** Runs `tfs` in-process and returns the exit code and everything it printed. */
export async function tfs(argv: string[], env: NodeJS.ProcessEnv = {}) {
  const c = capture();
  const code = await run(argv, { ...c.io, env });
  return { code, ...c.text(), bytes: c.bytes() };
}
