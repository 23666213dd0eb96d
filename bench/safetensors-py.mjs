// The Python safetensors baseline as a long-lived worker (bench/safetensors_worker.py): one
// command a call, its in-process time back. safetensors is installed first if missing, offline,
// from the pip index this machine's pip config names (docs/benchmarks.md "Python baselines").
import { execFileSync, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** Installs safetensors (and numpy) from the configured local index if `import safetensors` fails. */
export function ensureSafetensors() {
  try {
    execFileSync('python3', ['-c', 'import safetensors, numpy'], { stdio: 'ignore' });
    return;
  } catch {}
  // The local index is pip's configured extra-index-url (file:///...); the public index is not
  // reachable, so it is used as the only index.
  const config = execFileSync('python3', ['-m', 'pip', 'config', 'list'], { encoding: 'utf8' });
  const urls = (/extra-index-url='([^']*)'/.exec(config)?.[1] ?? '').split(/\s+/).filter(Boolean);
  const args = ['-m', 'pip', 'install', '--disable-pip-version-check', '-q'];
  if (urls.length > 0) args.push('--index-url', urls[0], ...urls.slice(1).flatMap((u) => ['--extra-index-url', u]));
  args.push('safetensors', 'numpy');
  console.log(`installing safetensors: python3 ${args.join(' ')}`);
  execFileSync('python3', args, { stdio: 'inherit' });
}

/** Starts the worker; `call(cmd)` resolves with `{ ms, cpu, bytes, faults }`. */
export function startWorker() {
  ensureSafetensors();
  const child = spawn('python3', [join(here, 'safetensors_worker.py')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const waiting = [];
  lines.on('line', (line) => waiting.shift()?.resolve(JSON.parse(line)));
  child.on('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`safetensors worker exited with ${code}`));
  });
  return {
    call(cmd) {
      return new Promise((resolve, reject) => {
        waiting.push({ resolve, reject });
        child.stdin.write(`${JSON.stringify(cmd)}\n`);
      });
    },
    version: execFileSync('python3', ['-c', 'import safetensors; print(safetensors.__version__)'], {
      encoding: 'utf8',
    }).trim(),
    close() {
      child.stdin.end();
      return new Promise((resolve) => child.on('exit', resolve));
    },
  };
}
