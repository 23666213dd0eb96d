#!/usr/bin/env node
// The TensorFS parser fuzz campaign (`pnpm fuzz`). Not part of CI or `pnpm test`. See docs/fuzzing.md.
//   pnpm fuzz [--parser NAME] [--iterations N] [--seed S] [--limit-ms MS] [--hang-ms MS] [--json]
// Runs against the built dist of @tensorfs/format (run `pnpm build` first). Every input must parse or
// throw a TensorFSError within --limit-ms; anything else is a crasher, saved under
// packages/format/test/fixtures/fuzz-crashers/<parser>/<sha256>.bin (the regression test replays them).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { PARSERS, ROOT } from './targets.mjs';

const { values: opt } = parseArgs({
  options: {
    parser: { type: 'string', multiple: true },
    iterations: { type: 'string', default: '1000000' },
    seed: { type: 'string', default: '1' },
    'limit-ms': { type: 'string', default: '1000' },
    'hang-ms': { type: 'string', default: '10000' },
    'max-saved': { type: 'string', default: '50' },
    out: { type: 'string' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (opt.help) {
  console.log(`usage: pnpm fuzz [--parser NAME]... [--iterations N] [--seed S] [--limit-ms MS] [--hang-ms MS] [--max-saved N] [--out DIR] [--json]
parsers: ${PARSERS.join(', ')} (and self-test, which checks the harness with planted faults)`);
  process.exit(0);
}
const parsers = opt.parser ?? PARSERS;
for (const p of parsers)
  if (!PARSERS.includes(p) && p !== 'self-test') throw new Error(`unknown parser ${p}; one of ${PARSERS.join(', ')}`);
const iterations = Number(opt.iterations);
const limitMs = Number(opt['limit-ms']);
const hangMs = Math.max(Number(opt['hang-ms']), limitMs * 2);
const maxSaved = Number(opt['max-saved']);
const distDir = join(ROOT, 'packages/format/dist');
if (!existsSync(join(distDir, 'index.js'))) {
  console.error('packages/format/dist is missing: run `pnpm build` first');
  process.exit(2);
}
const log = (s) => (opt.json ? process.stderr : process.stdout).write(`${s}\n`);

function save(parser, bytes) {
  const dir = join(opt.out ?? join(ROOT, 'packages/format/test/fixtures/fuzz-crashers'), parser);
  mkdirSync(dir, { recursive: true });
  const sha = createHash('sha256').update(bytes).digest('hex');
  writeFileSync(join(dir, `${sha}.bin`), bytes);
  return sha;
}

function runSlice(parser, start, end, onMsg) {
  // Layout: see worker.mjs.
  const sab = new SharedArrayBuffer(64 + (1 << 20) + 64);
  const ctl = new Int32Array(sab, 0, 12);
  const f64 = new Float64Array(sab, 0, 8);
  const counts = () => ({
    inputs: ctl[4],
    accepted: ctl[5],
    rejected: ctl[6],
    skipped: ctl[7],
    crashers: ctl[8],
    slow: ctl[9],
    maxMs: f64[7],
  });
  const w = new Worker(new URL('./worker.mjs', import.meta.url), {
    workerData: { parser, seed: opt.seed, start, end, limitMs, sab, distDir },
    resourceLimits: { maxOldGenerationSizeMb: 2048 },
  });
  return new Promise((resolve) => {
    let finished = false;
    const timer = setInterval(() => {
      if (Atomics.load(ctl, 0) === 1 && Date.now() - f64[6] > hangMs) {
        clearInterval(timer);
        finished = true;
        const bytes = new Uint8Array(sab, 64, ctl[2]).slice();
        const index = ctl[1];
        w.terminate().then(() => resolve({ hung: { index, bytes }, counts: counts() }));
      }
    }, 100);
    w.on('message', onMsg);
    w.on('error', (e) => {
      // An error escaping the worker (e.g. out of memory) is a crasher for the input in flight.
      if (finished) return;
      clearInterval(timer);
      finished = true;
      const bytes = new Uint8Array(sab, 64, ctl[2]).slice();
      resolve({
        hung: { index: ctl[1], bytes, what: `worker died: ${String(e?.message ?? e).slice(0, 200)}` },
        counts: counts(),
      });
    });
    w.on('exit', () => {
      if (finished) return;
      clearInterval(timer);
      finished = true;
      resolve({});
    });
  });
}

const results = [];
for (const parser of parsers) {
  const total = { inputs: 0, accepted: 0, rejected: 0, skipped: 0, crashers: 0, slow: 0, hangs: 0, maxMs: 0 };
  const byCode = {};
  const crashers = new Map(); // signature -> {count, sha[], what, stack}
  let saved = 0;
  const note = (sig, what, stack, bytes) => {
    const c = crashers.get(sig) ?? { count: 0, files: [], what, stack };
    c.count++;
    if (saved < maxSaved && c.files.length < 5) {
      c.files.push(save(parser, bytes));
      saved++;
    }
    crashers.set(sig, c);
  };
  const t0 = performance.now();
  let start = 0;
  while (start < iterations) {
    let done = null;
    const r = await runSlice(parser, start, iterations, (m) => {
      if (m.type === 'crasher')
        note(
          `${m.kind}:${m.what}:${m.stack?.split('\n')[1] ?? ''}`,
          `${m.kind} ${m.what} (${m.ms.toFixed(0)} ms)`,
          m.stack,
          m.bytes,
        );
      else if (m.type === 'progress') log(`${parser}: ${m.index + 1}/${iterations}`);
      else if (m.type === 'done') done = m;
    });
    if (done) {
      for (const k of Object.keys(total))
        if (k in done.counts)
          total[k] = k === 'maxMs' ? Math.max(total.maxMs, done.counts.maxMs) : total[k] + done.counts[k];
      for (const [k, v] of Object.entries(done.byCode)) byCode[k] = (byCode[k] ?? 0) + v;
      break;
    }
    if (!r.hung) throw new Error(`worker for ${parser} exited without finishing`);
    // The killed worker's counts come from shared memory; the input in flight counts as one input.
    for (const k of Object.keys(r.counts))
      total[k] = k === 'maxMs' ? Math.max(total.maxMs, r.counts.maxMs) : total[k] + r.counts[k];
    total.inputs++;
    total.hangs++;
    note(`hang:${r.hung.what ?? ''}`, r.hung.what ?? `hang (> ${hangMs} ms)`, undefined, r.hung.bytes);
    log(`${parser}: input ${r.hung.index} ${r.hung.what ?? 'hung'}; restarting after it`);
    start = r.hung.index + 1;
  }
  const seconds = (performance.now() - t0) / 1000;
  const row = {
    parser,
    seed: opt.seed,
    iterations,
    ...total,
    byCode,
    seconds: Number(seconds.toFixed(1)),
    inputsPerSecond: Math.round(total.inputs / seconds),
    crashers: [...crashers.values()],
  };
  results.push(row);
  log(
    `${parser}: ${total.inputs} inputs in ${seconds.toFixed(1)} s (${row.inputsPerSecond}/s): accepted ${total.accepted}, rejected ${total.rejected} ${JSON.stringify(byCode)}, skipped ${total.skipped}, crashers ${total.crashers}, slow ${total.slow}, hangs ${total.hangs}, slowest ${total.maxMs.toFixed(1)} ms`,
  );
  for (const c of crashers.values())
    log(`  CRASHER x${c.count}: ${c.what}\n    files: ${c.files.join(', ')}\n${c.stack ?? ''}`);
}
if (opt.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
process.exit(results.some((r) => r.crashers.length) ? 1 : 0);
