// One load in a fresh process (for bench/load.bench.mjs): opens the store at argv[2], loads ref
// argv[3] (prefix argv[4] if given) with loadTensors, prints the in-process wall and CPU ms and the
// minor page faults of open + load.
import { performance } from 'node:perf_hooks';
import { LocalStore } from '@tensorfs/cas';
import { loadTensors, openTensors } from '@tensorfs/tensors';

const [root, ref, prefix] = process.argv.slice(2);
const store = await LocalStore.open(root);
const f0 = process.resourceUsage().minorPageFault;
const t0 = performance.now();
const c0 = process.cpuUsage();
const set = await openTensors(store, ref);
const loaded = await loadTensors(set, prefix ? { prefix } : {});
const ms = performance.now() - t0;
const c = process.cpuUsage(c0);
const faults = process.resourceUsage().minorPageFault - f0;
process.stdout.write(`${JSON.stringify({ ms, cpu: (c.user + c.system) / 1000, faults, tensors: loaded.size })}\n`);
await store.close();
