import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { run } from '../src/index.js';

/** The committed sample model and the Python-computed expectations. */
export const SAMPLES = fileURLToPath(new URL('../../../samples/', import.meta.url));

/** Runs `tfs` in-process and returns the exit code and everything it printed. */
export async function tfs(argv: string[], env: NodeJS.ProcessEnv = {}) {
  const out = new PassThrough();
  const err = new PassThrough();
  let stdout = '';
  let stderr = '';
  out.on('data', (d) => (stdout += d));
  err.on('data', (d) => (stderr += d));
  const code = await run(argv, { stdout: out, stderr: err, env });
  return { code, stdout, stderr };
}
