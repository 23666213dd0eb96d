// Child process for the fault tests: works on a store until killed (or done), printing one line
// per committed step so the parent knows what was durable before the kill.
//   node fault-child.mjs cycle <store> <srcA> <srcB> <rounds>   import, move a ref with CAS, GC
//   node fault-child.mjs import <store> <prefix> <rounds> <src...>   import each src as <prefix>/<i>
//   node fault-child.mjs gc <store> <rounds>                     GC with no grace period, repeatedly
import { LocalStore } from '@tensorfs/cas';

const [mode, root, ...rest] = process.argv.slice(2);
const store = await LocalStore.open(root);
const say = (line) => process.stdout.write(`${line}\n`);

if (mode === 'cycle') {
  const [srcA, srcB, rounds] = rest;
  for (let i = 0; i < Number(rounds); i++) {
    const src = i % 2 === 0 ? srcA : srcB;
    const r = await store.importPath(src, { name: `cycle/${i}`, threads: 1 });
    say(`committed cycle/${i} ${r.snapshot} ${i % 2}`);
    const cur = await store.getRef('moving');
    await store.setRef('moving', r.snapshot, { expected: cur });
    say(`moved ${r.snapshot} ${i % 2}`);
    if (i >= 2) await store.deleteRef(`cycle/${i - 2}`);
    say(`deleted cycle/${i - 2}`);
    await store.gc({ graceMs: 0 });
    say(`gc ${i}`);
  }
} else if (mode === 'import') {
  const [prefix, rounds, ...srcs] = rest;
  for (let i = 0; i < Number(rounds); i++) {
    const k = i % srcs.length;
    const r = await store.importPath(srcs[k], { name: `${prefix}/${i}`, threads: 1 });
    say(`committed ${prefix}/${i} ${r.snapshot} ${k}`);
    // Garbage for the concurrent GC to collect: an object nothing references or leases.
    await store.put(new TextEncoder().encode(`orphan ${prefix} ${i} ${process.pid}`));
  }
} else if (mode === 'gc') {
  for (let i = 0; i < Number(rest[0]); i++) {
    const r = await store.gc({ graceMs: 0 });
    say(`gc ${r.removed}`);
  }
}
await store.close();
say('done');
