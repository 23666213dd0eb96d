/** Loopback servers the remote CLI tests start and stop: nginx, moto_server and `tfs serve`. */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export { freePort, startMoto } from '@tensorfs/testkit';

export const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

/** Runs `tfs` (the built CLI) to completion. */
export function tfsSync(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    timeout: 120_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Runs `tfs` asynchronously (for commands talking to a server started by the same test). */
export function tfs(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A background process with its first stdout line. */
export interface Running {
  proc: ChildProcess;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

function stopper(proc: ChildProcess) {
  return async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
    const done = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
    proc.kill(signal);
    return done;
  };
}

/** `tfs serve …` on a free port; resolves once it printed its URL. */
export async function tfsServe(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Running & { url: string }> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--json', ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
  });
  let out = '';
  let err = '';
  proc.stderr.on('data', (d) => (err += d));
  const url = await new Promise<string>((resolve, reject) => {
    proc.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n')[0];
      if (out.includes('\n')) resolve(JSON.parse(line!).url);
    });
    proc.once('exit', (code) => reject(new Error(`tfs serve exited ${code}: ${err}`)));
  });
  return { proc, url, stop: stopper(proc) };
}

export { startNginx } from '@tensorfs/testkit';
