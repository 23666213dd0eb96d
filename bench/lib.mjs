// Shared benchmark helpers. Every case prints: our figure, the baseline's figure measured in
// the same run, and the ratio (ours / baseline; below 1 means faster than the baseline).
import { execFileSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { writeSafetensorsHeader } from '@tensorfs/format';

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

/**
 * Waits until memory freed by the previous case is in the same state for every case: the VM's
 * balloon reports freed guest pages to the host after about 2 s, and a page reported is slow to
 * touch again. Without this, whichever transfer runs right after another's files were deleted
 * writes into still-mapped pages at a fraction of the cost (measured: 1 GiB of 4 MiB writes
 * 0.3 s right after a delete, 0.8–1.5 s after 4 s). A no-op where that does not apply costs 3 s.
 */
export function settle(ms = 3000) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The median of `xs`. */
export function median(xs) {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)];
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

/** Medians of alternating runs of `ours` and `baseline` (a GC before each, when exposed). */
export async function paired(ours, baseline, runs = 5) {
  const a = [];
  const b = [];
  await ours();
  await baseline();
  for (let i = 0; i < runs; i++) {
    globalThis.gc?.();
    a.push(await time(ours, { runs: 1, warmup: 0 }));
    globalThis.gc?.();
    b.push(await time(baseline, { runs: 1, warmup: 0 }));
  }
  const median = (xs) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  return [median(a), median(b)];
}

/**
 * Writes a safetensors file of `tensors` distinct BF16 `[rows, rows]` tensors named
 * `model.layers.NNN.weight` (random bytes, each tensor's first word its index); returns the
 * header's tensor infos.
 */
export async function writeLayersModel(file, tensors, rows) {
  const names = Array.from({ length: tensors }, (_, i) => `model.layers.${String(i).padStart(3, '0')}.weight`);
  const { bytes: header, tensors: infos } = writeSafetensorsHeader(
    names.map((name) => ({ name, dtype: 'BF16', shape: [BigInt(rows), BigInt(rows)] })),
    { metadata: new Map([['format', 'pt']]), order: 'given' },
  );
  const noise = randomFillSync(new Uint8Array(rows * rows * 2));
  const fh = await fsp.open(file, 'w');
  try {
    await fh.write(header);
    for (let i = 0; i < tensors; i++) {
      new DataView(noise.buffer).setUint32(0, i); // every tensor distinct
      await fh.write(noise);
    }
  } finally {
    await fh.close();
  }
  return infos;
}

/** Every file below `dir` (paths), depth first. */
export async function listFiles(dir) {
  const out = [];
  for (const e of await fsp.readdir(dir, { withFileTypes: true })) {
    const full = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...(await listFiles(full)));
    else out.push(full);
  }
  return out;
}
