/** Loopback servers the remote CLI tests start and stop: nginx, moto_server and `tfs serve`. */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export { freePort, startMoto } from '@tensorfs/testkit';
import { freePort } from '@tensorfs/testkit';

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

/** nginx serving `root` on a loopback port. Fails (never skips) when nginx is not installed. */
export async function startNginx(root: string): Promise<Running & { url: string }> {
  const which = spawnSync('sh', ['-c', 'command -v nginx || ls /usr/sbin/nginx'], { encoding: 'utf8' });
  const nginx = which.stdout.trim().split('\n')[0];
  if (which.status !== 0 || !nginx) {
    throw new Error('nginx is required for the static-HTTP origin tests: apt-get install -y nginx-light (or nginx)');
  }
  const dir = mkdtempSync(join(tmpdir(), 'tfs-nginx-'));
  mkdirSync(join(dir, 'tmp'));
  const port = await freePort();
  const user = process.getuid?.() === 0 ? 'user root;\n' : '';
  writeFileSync(
    join(dir, 'nginx.conf'),
    `${user}daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
events { worker_connections 64; }
http {
  access_log off;
  default_type application/octet-stream;
  client_body_temp_path ${dir}/tmp/body;
  proxy_temp_path ${dir}/tmp/proxy;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  server {
    listen 127.0.0.1:${port};
    root ${root};
    location / { }
  }
}
`,
  );
  const proc = spawn(nginx, ['-c', join(dir, 'nginx.conf'), '-p', dir, '-e', join(dir, 'error.log')], {
    stdio: 'ignore',
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      await fetch(`${url}/`);
      break;
    } catch {
      if (proc.exitCode !== null || Date.now() > deadline) {
        let log = '';
        try {
          log = readFileSync(join(dir, 'error.log'), 'utf8');
        } catch {}
        throw new Error(`nginx did not start: ${log.slice(-500)}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const stop = stopper(proc);
  return {
    proc,
    url,
    stop: async (s) => {
      const c = await stop(s ?? 'SIGQUIT');
      rmSync(dir, { recursive: true, force: true });
      return c;
    },
  };
}
