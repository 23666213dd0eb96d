import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll } from 'vitest';
import { run } from '../src/index.js';

/**
 * The default store of in-process runs that pass no `--store` and no `TENSORFS_HOME`: a folder of
 * this test file's own (absent until a command creates it), never the user's `~/.cache/tensorfs`,
 * which the quick start creates.
 */
const home = join(mkdtempSync(join(tmpdir(), 'tfs-home-')), 'store');
afterAll(() => rmSync(dirname(home), { recursive: true, force: true }));

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
  const code = await run(argv, { ...c.io, env: { TENSORFS_HOME: home, ...env } });
  return { code, ...c.text(), bytes: c.bytes() };
}
