// Shared benchmark helpers. Every case prints: our figure, the baseline's figure measured in
// the same run, and the ratio (ours / baseline; below 1 means faster than the baseline).
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';

/** Median wall time in ms of `fn` over `runs` runs after `warmup` runs. */
export async function time(fn, { runs = 5, warmup = 1 } = {}) {
  for (let i = 0; i < warmup; i++) await fn();
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}

/** Median wall time in ms of an external command. */
export async function timeCommand(cmd, args, opts) {
  return time(() => execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'] }), opts);
}

const rows = [];

/** Records and prints one case: `ours` and `baseline` in ms (lower is better). */
export function report(name, ours, baselineName, baseline, extra = '') {
  const ratio = ours / baseline;
  rows.push({ name, ours, baselineName, baseline, ratio });
  console.log(
    `${name.padEnd(48)} ours ${ours.toFixed(1).padStart(9)} ms | ${baselineName} ${baseline.toFixed(1).padStart(9)} ms | ratio ${ratio.toFixed(3)}${extra ? ` | ${extra}` : ''}`,
  );
  return ratio;
}

/** MiB/s for `bytes` in `ms`. */
export function mibps(bytes, ms) {
  return (bytes / 1048576 / (ms / 1000)).toFixed(0);
}

export function results() {
  return rows;
}
