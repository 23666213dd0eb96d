// One fuzz worker: runs inputs [start, end) of one parser, timing each call, and reports crashers.
// The main thread watches `ctl` and terminates this worker if one call runs past the hang bound.
import { parentPort, workerData } from 'node:worker_threads';
import { makeGenerator, makeJsonGenerator } from './mutate.mjs';
import { makeTargets, seedsFor } from './targets.mjs';

const { parser, seed, start, end, limitMs, sab, distDir } = workerData;
const fmt = await import(`${distDir}/index.js`);
const enc = await import(`${distDir}/encodings.js`);
const cozy = await import(`${distDir}/cozytensors.js`);
// `self-test` checks the harness itself: a planted TypeError, a planted slow call and a planted
// infinite loop must each be reported (see docs/fuzzing.md); real TensorFSErrors must not.
const selfTest = async (b) => {
  if (b.length === 7) throw new TypeError('planted crasher');
  if (b.length === 11) {
    const t = Date.now();
    while (Date.now() - t < limitMs + 50);
  }
  if (b.length === 13 && b[0] === 0x7b) for (;;);
  return fmt.parseSafetensorsHeader(b);
};
const target = parser === 'self-test' ? selfTest : makeTargets(fmt, enc, cozy)[parser];
const seeds = seedsFor(parser === 'self-test' ? 'shard-index' : parser);
const gen = (parser === 'encodings' || parser === 'shard-index' ? makeJsonGenerator : makeGenerator)(
  parser,
  seeds,
  seed,
);

// Shared with the watchdog (fuzz.mjs): ctl [0] in-call flag, [1] input index, [2] input length,
// [4..9] the counts below (so a killed worker's counts survive); f64 [6] Date.now() at call start,
// [7] slowest call; then the input bytes.
const ctl = new Int32Array(sab, 0, 12);
const f64 = new Float64Array(sab, 0, 8);
const buf = new Uint8Array(sab, 64);
const SLOT = { inputs: 4, accepted: 5, rejected: 6, skipped: 7, crashers: 8, slow: 9 };

// Capturing stack traces dominates the cost of a rejected input; crashers are re-run with traces on.
Error.stackTraceLimit = 0;

const counts = { inputs: 0, accepted: 0, rejected: 0, skipped: 0, crashers: 0, slow: 0, maxMs: 0 };
const byCode = {};

async function runOnce(b) {
  const t0 = performance.now();
  let outcome;
  let error;
  try {
    outcome = (await target(b)) === 'skipped' ? 'skipped' : 'accepted';
  } catch (e) {
    if (fmt.isTensorFSError(e)) {
      outcome = 'rejected';
      error = e;
    } else {
      outcome = 'crash';
      error = e;
    }
  }
  return { outcome, error, ms: performance.now() - t0 };
}

for (let i = start; i < end; i++) {
  const b = gen(i);
  const n = Math.min(b.length, buf.length);
  buf.set(b.subarray(0, n));
  ctl[2] = n;
  ctl[1] = i;
  f64[6] = Date.now();
  Atomics.store(ctl, 0, 1);
  let res = await runOnce(b);
  if (res.ms > limitMs) res = await runOnce(b); // one retry: a busy machine can stall any call once
  Atomics.store(ctl, 0, 0);
  counts.inputs++;
  if (res.ms > counts.maxMs) counts.maxMs = res.ms;
  if (res.outcome === 'rejected') {
    counts.rejected++;
    byCode[res.error.code] = (byCode[res.error.code] ?? 0) + 1;
  } else counts[res.outcome === 'crash' ? 'crashers' : res.outcome]++;
  const slow = res.ms > limitMs;
  if (slow) counts.slow++;
  for (const [k, at] of Object.entries(SLOT)) ctl[at] = counts[k];
  f64[7] = counts.maxMs;
  if (res.outcome === 'crash' || slow) {
    Error.stackTraceLimit = 10;
    const again = res.outcome === 'crash' ? await runOnce(b) : res;
    Error.stackTraceLimit = 0;
    const e = again.error ?? res.error;
    parentPort.postMessage({
      type: 'crasher',
      index: i,
      kind: slow ? 'slow' : 'throw',
      ms: res.ms,
      what: e
        ? `${e?.constructor?.name ?? typeof e}: ${String(e?.message ?? e)
            .split('\n')[0]
            .slice(0, 200)}`
        : 'slow',
      stack: e?.stack ? String(e.stack).split('\n').slice(0, 6).join('\n') : undefined,
      bytes: b,
    });
  }
  if ((i - start + 1) % 50000 === 0) parentPort.postMessage({ type: 'progress', index: i, counts: { ...counts } });
}
parentPort.postMessage({ type: 'done', counts, byCode });
