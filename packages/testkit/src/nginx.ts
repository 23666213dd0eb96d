/** nginx on a loopback port, for the static-HTTP origin tests (moved from the CLI tests to share it). */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './moto.js';

/** A running nginx. */
export interface RunningNginx {
  proc: ChildProcess;
  url: string;
  /** Stops it (SIGQUIT by default) and removes its scratch folder. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /**
   * With `{ accessLog: true }`: the requests served so far, in order (method, URI path, status);
   * nginx writes each line when the response is done, unbuffered.
   */
  requests(): { method: string; path: string; status: number }[];
}

function stopper(proc: ChildProcess) {
  return async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
    const done = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
    proc.kill(signal);
    return done;
  };
}

/** nginx serving `root` on a loopback port. Fails (never skips) when nginx is not installed. */
export async function startNginx(root: string, options: { accessLog?: boolean } = {}): Promise<RunningNginx> {
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
  ${options.accessLog ? `log_format requests '$request_method $uri $status';\n  access_log ${dir}/access.log requests;` : 'access_log off;'}
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
    requests: () => {
      let text = '';
      try {
        text = readFileSync(join(dir, 'access.log'), 'utf8');
      } catch {}
      return text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => {
          const [method = '', path = '', status = '0'] = l.split(' ');
          return { method, path, status: Number(status) };
        });
    },
  };
}
