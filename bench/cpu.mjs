// Interleaved, CPU-timed comparisons for a shared machine (the perf session's helpers).
// Wall time moves with whatever else runs on the cores; process CPU time (user + system, all
// threads of this process) moves much less, so each case prints both and the ratio of each.
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Wall and CPU ms of one call. */
export async function measure(fn) {
  globalThis.gc?.();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { wall, cpu: (c.user + c.system) / 1000 };
}

/**
 * Runs `cases` (name → fn) round-robin `runs` times after `warmup` rounds, so load bursts hit
 * every case alike; returns name → { wall, cpu } medians.
 */
export async function interleave(cases, { runs = 7, warmup = 1 } = {}) {
  const names = Object.keys(cases);
  const samples = Object.fromEntries(names.map((n) => [n, { wall: [], cpu: [] }]));
  for (let r = 0; r < warmup + runs; r++) {
    // Alternate the order too, so neither case always runs right after the other's garbage.
    const order = r % 2 ? [...names].reverse() : names;
    for (const n of order) {
      const m = await measure(cases[n]);
      if (r >= warmup) {
        samples[n].wall.push(m.wall);
        samples[n].cpu.push(m.cpu);
      }
    }
  }
  return Object.fromEntries(names.map((n) => [n, { wall: median(samples[n].wall), cpu: median(samples[n].cpu) }]));
}

/** Prints one comparison with the 1-minute load average, and returns the CPU ratio. */
export function compare(name, ours, baselineName, baseline, extra = '') {
  const rw = ours.wall / baseline.wall;
  const rc = ours.cpu / baseline.cpu;
  const load = loadavg()[0].toFixed(1);
  console.log(
    `${name.padEnd(44)} ours ${ours.wall.toFixed(1)} / ${ours.cpu.toFixed(1)} ms | ${baselineName} ${baseline.wall.toFixed(1)} / ${baseline.cpu.toFixed(1)} ms | ratio wall ${rw.toFixed(2)} cpu ${rc.toFixed(2)} | load ${load}${extra ? ` | ${extra}` : ''}`,
  );
  return rc;
}

/** Preloaded into a child: at exit, writes its own CPU time (all threads, from process start) to fd 3. */
const REPORT_CPU =
  "data:text/javascript,import{writeSync}from'node:fs';process.on('exit',()=>{const u=process.cpuUsage();try{writeSync(3,String((u.user+u.system)/1000))}catch{}})";

/** Runs `node ...args` (stdout discarded) and returns its wall and CPU ms. */
export function runNode(args) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--import', REPORT_CPU, ...args], {
    stdio: ['ignore', 'ignore', 'inherit', 'pipe'],
  });
  const wall = performance.now() - t0;
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited with ${r.status}`);
  return { wall, cpu: Number(r.output[3].toString()) };
}

/** `runNode` for each case round-robin; medians of wall and CPU after one warm-up round. */
export function interleaveProcesses(cases, { runs = 7 } = {}) {
  const names = Object.keys(cases);
  const samples = Object.fromEntries(names.map((n) => [n, { wall: [], cpu: [] }]));
  for (let r = 0; r <= runs; r++) {
    for (const n of r % 2 ? [...names].reverse() : names) {
      const m = runNode(cases[n]);
      if (r > 0) {
        samples[n].wall.push(m.wall);
        samples[n].cpu.push(m.cpu);
      }
    }
  }
  return Object.fromEntries(names.map((n) => [n, { wall: median(samples[n].wall), cpu: median(samples[n].cpu) }]));
}
