/**
 * `@tensorfs/format/store/conformance`: the conformance suite of the storage contract, as plain
 * async checks any test runner (or none) can call. {@link runConformance} runs every check
 * against one implementation and says, per check, passed / failed (with the error) / not
 * applicable (a capability the implementation does not announce); {@link formatConformance}
 * prints the reports, naming every implementation they ran against.
 * @packageDocumentation
 */
import { isTensorFSError, TensorFSError } from '../errors.js';
import type { ErrorCode } from '../errors.js';
import type { ObjectId } from '../ids.js';
import { sha256Id } from './base.js';
import { type Capability, type Store, supports } from './contract.js';

/** An implementation under test. */
export interface ConformanceSubject {
  /** How the report names it (`local store`, `s3 (moto)`, ...). */
  name: string;
  /** The store under test (a fresh one, or one whose refs under `conformance/` are free). */
  store: Store;
  /**
   * Makes objects and refs exist behind a store that cannot write them itself (a read-only
   * origin over a folder someone else fills). Writable stores are seeded through the contract.
   */
  seed?(objects: readonly Uint8Array[], refs: Readonly<Record<string, ObjectId>>): Promise<void>;
  /**
   * Plants an entry named `name` where refs live that is not a readable ref (garbage content, a
   * symlink…), for the listing check. Without it that check is not applicable.
   */
  plantBadRef?(name: string): Promise<void>;
}

/** The outcome of one check. */
export interface ConformanceResult {
  check: string;
  outcome: 'passed' | 'failed' | 'not applicable';
  /** Why not applicable, or what failed. */
  reason?: string;
  error?: unknown;
}

/** What {@link runConformance} found for one implementation. */
export interface ConformanceReport {
  implementation: string;
  capabilities: Capability[];
  results: ConformanceResult[];
  /** True when no check failed. */
  ok: boolean;
}

/** One check: what it needs, and the body (throws on a violation). */
export interface ConformanceCheck {
  name: string;
  /** Capabilities it needs (absent ones make it not applicable). */
  needs?: readonly Capability[];
  /** Needs objects/refs to exist before: seeded through the contract or the subject's `seed`. */
  seeded?: boolean;
  /** Throws on a violation; may resolve with a note (`not applicable: …` when it cannot apply). */
  run(ctx: CheckContext): Promise<unknown>;
}

/** What a check gets. */
export interface CheckContext {
  subject: ConformanceSubject;
  store: Store;
  /** Seeded objects (random bytes, fresh per run) and their ids. */
  objects: readonly { bytes: Uint8Array; id: ObjectId }[];
  /** A seeded ref naming `objects[0]`. */
  ref: string;
  /** A fresh ref name under `conformance/` for this run. */
  fresh(label: string): string;
  /** Fresh random bytes with their id (not stored). */
  fresh_bytes(length: number): Promise<{ bytes: Uint8Array; id: ObjectId }>;
}

class CheckFailure extends Error {}

function fail(message: string): never {
  throw new CheckFailure(message);
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function describeError(err: unknown): string {
  if (isTensorFSError(err)) {
    const rule = (err as TensorFSError).details?.rule;
    return `${(err as TensorFSError).code}${rule ? ` (${String(rule)})` : ''}: ${(err as Error).message}`;
  }
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** Runs `fn` and checks it rejects with a `TensorFSError` of `code`. */
async function expectCode(what: string, code: ErrorCode, fn: () => Promise<unknown>): Promise<TensorFSError> {
  let result: unknown;
  try {
    result = await fn();
  } catch (err) {
    if (isTensorFSError(err) && (err as TensorFSError).code === code) return err as TensorFSError;
    fail(`${what}: expected ${code}, got ${describeError(err)}`);
  }
  fail(`${what}: expected ${code}, but it resolved (${typeof result})`);
}

function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let at = 0; at < n; at += 65536) {
    globalThis.crypto.getRandomValues(out.subarray(at, Math.min(n, at + 65536)));
  }
  return out;
}

function aborted(): AbortSignal {
  const c = new AbortController();
  c.abort(new Error('conformance: aborted on purpose'));
  return c.signal;
}

/** Concurrent compare-and-swap calls: how many won, and the losers' failures. */
async function race(
  store: Store,
  name: string,
  ids: readonly ObjectId[],
  expected: ObjectId | null,
): Promise<{ winners: ObjectId[]; losers: unknown[] }> {
  const outcomes = await Promise.allSettled(ids.map((id) => store.setRef(name, id, { expected })));
  const winners: ObjectId[] = [];
  const losers: unknown[] = [];
  for (const [i, o] of outcomes.entries()) {
    if (o.status === 'fulfilled') winners.push(ids[i]!);
    else losers.push(o.reason);
  }
  return { winners, losers };
}

/** Concurrent setters in a race. */
export const RACERS = 8;

/** Every check of the contract, in the order they run. */
export const CONFORMANCE_CHECKS: readonly ConformanceCheck[] = [
  {
    name: 'objects: has / stat / read / range of a stored object',
    seeded: true,
    async run({ store, objects }) {
      const { bytes, id } = objects[0]!;
      if (!(await store.has(id))) fail('has() is false for a stored object');
      const size = await store.objectSize(id);
      if (size !== bytes.length) fail(`objectSize() is ${size}, the object has ${bytes.length} bytes`);
      if (!equalBytes(await store.readObject(id), bytes)) fail('readObject() returned other bytes');
      if (!equalBytes(await store.readObject(id, { verify: true }), bytes)) fail('verified readObject() differs');
      const range = await store.readObjectRange(id, 3, 10);
      if (!equalBytes(range, bytes.subarray(3, 13))) fail('readObjectRange(3, 10) returned other bytes');
      if ((await store.readObjectRange(id, bytes.length, 0)).length !== 0)
        fail('an empty range at the end is not empty');
      const lacking = await store.lacks([objects[1]!.id, id]);
      if (lacking.length !== 0) fail(`lacks() names stored objects: ${lacking.join(', ')}`);
    },
  },
  {
    name: 'objects: an absent object is not_found, a malformed id invalid_argument',
    async run({ store, fresh_bytes }) {
      const { id } = await fresh_bytes(64);
      if (await store.has(id)) fail('has() is true for an object never stored');
      const lacking = await store.lacks([id]);
      if (lacking.length !== 1 || lacking[0] !== id) fail('lacks() does not name the absent object');
      await expectCode('objectSize(absent)', 'not_found', () => store.objectSize(id));
      await expectCode('readObject(absent)', 'not_found', () => store.readObject(id));
      await expectCode('readObjectRange(absent)', 'not_found', () => store.readObjectRange(id, 0, 1));
      await expectCode('readObject(malformed id)', 'invalid_argument', () =>
        store.readObject('sha256:nope' as ObjectId),
      );
      await expectCode('has(malformed id)', 'invalid_argument', () => store.has('md5:00' as ObjectId));
    },
  },
  {
    name: 'objects: a read past the end is invalid_argument',
    seeded: true,
    async run({ store, objects }) {
      const { bytes, id } = objects[0]!;
      await expectCode('range ending past the end', 'invalid_argument', () =>
        store.readObjectRange(id, bytes.length - 1, 2),
      );
      await expectCode('range starting past the end', 'invalid_argument', () =>
        store.readObjectRange(id, bytes.length + 1, 0),
      );
      await expectCode('negative offset', 'invalid_argument', () => store.readObjectRange(id, -1, 1));
    },
  },
  {
    name: 'objects: put admits bytes under their hash; again is a no-op',
    needs: ['objects.write'],
    async run({ store, fresh_bytes }) {
      const { bytes, id } = await fresh_bytes(1000);
      const first = await store.put(bytes);
      if (first.id !== id || first.length !== bytes.length) fail(`put() gave ${first.id}/${first.length}`);
      const again = await store.put([bytes.subarray(0, 10), bytes.subarray(10)], { expected: id });
      if (again.id !== id) fail('put() of the same bytes in two chunks gave another id');
      if (!equalBytes(await store.readObject(id), bytes)) fail('read after put returned other bytes');
      const streamed = await fresh_bytes(3000);
      const s = await store.putStream(
        (async function* () {
          yield streamed.bytes.subarray(0, 1000);
          yield streamed.bytes.subarray(1000);
        })(),
        { expected: streamed.id, expectedLength: 3000 },
      );
      if (s.id !== streamed.id || !(await store.has(streamed.id))) fail('putStream() did not admit the stream');
    },
  },
  {
    name: 'objects: bytes that do not hash to the id are refused corrupt, nothing visible',
    needs: ['objects.write'],
    async run({ store, fresh_bytes }) {
      const real = await fresh_bytes(500);
      const claimed = await fresh_bytes(500);
      await expectCode('put(bytes, expected: another id)', 'corrupt', () =>
        store.put(real.bytes, { expected: claimed.id }),
      );
      await expectCode('putStream(bytes, expected: another id)', 'corrupt', () =>
        store.putStream(
          (async function* () {
            yield real.bytes;
          })(),
          { expected: claimed.id, expectedLength: real.bytes.length },
        ),
      );
      if (await store.has(claimed.id)) fail('the claimed id became visible after a refused put');
      if (await store.has(real.id)) fail('the refused bytes became visible under their own id');
      const short = await fresh_bytes(100);
      await expectCode('putStream with the wrong expectedLength', 'corrupt', () =>
        store.putStream(
          (async function* () {
            yield short.bytes;
          })(),
          { expected: short.id, expectedLength: 101 },
        ),
      );
      if (await store.has(short.id)) fail('a stream of the wrong length became visible');
    },
  },
  {
    name: 'objects: a batch refuses only its bad item',
    needs: ['objects.write', 'objects.batch'],
    async run({ store, fresh_bytes }) {
      if (!supports(store, 'objects.batch')) fail('objects.batch announced but putBatch is not callable');
      const good = await fresh_bytes(200);
      const bad = await fresh_bytes(200);
      const other = await fresh_bytes(200);
      const out = await store.putBatch([
        { bytes: good.bytes, expected: good.id },
        { bytes: bad.bytes, expected: other.id },
      ]);
      if (out.length !== 2 || !out[0]!.ok || out[1]!.ok) fail('putBatch outcomes are not [ok, refused]');
      if (!out[1]!.ok && out[1]!.error.code !== 'corrupt') fail(`bad item refused ${out[1]!.error.code}, not corrupt`);
      if (!(await store.has(good.id))) fail('the good item is not stored');
      if ((await store.has(other.id)) || (await store.has(bad.id))) fail('the bad item became visible');
    },
  },
  {
    name: 'refs: get / compare-and-swap set / delete',
    needs: ['objects.write', 'refs.write'],
    async run({ store, objects, fresh }) {
      const name = fresh('cas');
      const [a, b] = [objects[0]!.id, objects[1]!.id];
      if ((await store.getRef(name)) !== null) fail('getRef() of a ref never set is not null');
      await store.setRef(name, a, { expected: null });
      if ((await store.getRef(name)) !== a) fail('getRef() after setRef differs');
      await expectCode('create over an existing ref', 'conflict', () => store.setRef(name, b, { expected: null }));
      await expectCode('swap from the wrong id', 'conflict', () => store.setRef(name, b, { expected: b }));
      await store.setRef(name, b, { expected: a });
      if ((await store.getRef(name)) !== b) fail('compare-and-swap did not move the ref');
      await store.setRef(name, a);
      if ((await store.getRef(name)) !== a) fail('an unconditional set did not move the ref');
      await expectCode('swap of an absent ref', 'conflict', () => store.setRef(fresh('absent'), a, { expected: b }));
      await expectCode('getRef(bad name)', 'invalid_argument', () => store.getRef('../escape'));
      await expectCode('setRef(bad name)', 'invalid_argument', () => store.setRef('a/../b', a));
      if (!store.capabilities.has('refs.delete')) return 'without refs.delete: deletion not checked';
      await expectCode('delete with the wrong expected id', 'conflict', () => store.deleteRef(name, { expected: b }));
      await store.deleteRef(name, { expected: a });
      if ((await store.getRef(name)) !== null) fail('the ref is still there after deleteRef');
      await expectCode('delete of an absent ref', 'not_found', () => store.deleteRef(name));
    },
  },
  {
    name: `refs: ${RACERS} concurrent compare-and-swaps with the same expected value, exactly one winner`,
    needs: ['objects.write', 'refs.write'],
    async run({ store, fresh, fresh_bytes }) {
      const ids: ObjectId[] = [];
      for (let i = 0; i < RACERS; i++) {
        const o = await fresh_bytes(32 + i);
        await store.put(o.bytes, { expected: o.id });
        ids.push(o.id);
      }
      const name = fresh('race');
      const create = await race(store, name, ids, null);
      if (create.winners.length !== 1) fail(`${create.winners.length} of ${RACERS} creates won`);
      for (const l of create.losers) {
        if (!isTensorFSError(l) || (l as TensorFSError).code !== 'conflict')
          fail(`a losing create: ${describeError(l)}`);
      }
      const head = create.winners[0]!;
      if ((await store.getRef(name)) !== head) fail('the ref does not hold the winning create');
      const others = ids.filter((id) => id !== head);
      const swap = await race(store, name, others, head);
      if (swap.winners.length !== 1) fail(`${swap.winners.length} of ${others.length} swaps won`);
      for (const l of swap.losers) {
        if (!isTensorFSError(l) || (l as TensorFSError).code !== 'conflict') fail(`a losing swap: ${describeError(l)}`);
      }
      if ((await store.getRef(name)) !== swap.winners[0]) fail('the ref does not hold the winning swap');
      if (store.capabilities.has('refs.delete')) await store.deleteRef(name);
      return `creates: 1 of ${RACERS} won; swaps: 1 of ${others.length} won`;
    },
  },
  {
    name: 'refs: a ref whose target is not stored is refused not_found',
    needs: ['refs.write', 'refs.closure'],
    async run({ store, fresh, fresh_bytes }) {
      const { id } = await fresh_bytes(40);
      const name = fresh('closure');
      await expectCode('setRef to an absent object', 'not_found', () => store.setRef(name, id));
      if ((await store.getRef(name)) !== null) fail('the refused ref exists');
    },
  },
  {
    name: 'refs: the listing names a bad entry instead of failing',
    needs: ['refs.list'],
    seeded: true,
    async run({ subject, store, ref, objects, fresh }) {
      if (!subject.plantBadRef) return 'not applicable: the subject cannot plant a bad ref';
      const bad = fresh('bad');
      await subject.plantBadRef(bad);
      const listing = await store.scanRefs();
      const good = listing.refs.find((r) => r.name === ref);
      if (!good || good.id !== objects[0]!.id) fail(`the listing lost the good ref ${ref}`);
      if (listing.refs.some((r) => r.name === bad)) fail('the bad entry is listed as a ref');
      const problem = listing.problems.find((p) => p.name === bad);
      if (!problem) fail(`the bad entry ${bad} is not named in problems`);
      if (typeof problem.code !== 'string' || !/^[a-z_]+\.[a-z0-9_]+$/.test(problem.rule)) {
        fail(`the problem has no code/rule: ${JSON.stringify(problem)}`);
      }
      const names = listing.refs.map((r) => r.name);
      if (names.some((n, i) => i > 0 && names[i - 1]! > n)) fail('refs are not sorted by name');
      return `${bad}: ${problem.code} (${problem.rule})`;
    },
  },
  {
    name: 'derived: recordsSource reads across records; a record of the wrong length is corrupt',
    seeded: true,
    async run({ store, objects }) {
      const [a, b] = [objects[0]!, objects[1]!];
      const whole = new Uint8Array(a.bytes.length + b.bytes.length);
      whole.set(a.bytes);
      whole.set(b.bytes, a.bytes.length);
      const records = [
        { digest: a.id, length: a.bytes.length },
        { digest: b.id, length: b.bytes.length },
      ];
      for (const verify of [false, true]) {
        const src = store.recordsSource(records, { verify });
        if (src.size !== whole.length) fail(`recordsSource size ${src.size}, the records hold ${whole.length}`);
        const at = a.bytes.length - 7;
        if (!equalBytes(await src.read(at, 20), whole.subarray(at, at + 20)))
          fail(`recordsSource(verify: ${verify}).read across the record boundary returned other bytes`);
        const into = new Uint8Array(whole.length);
        await src.readInto(0, into);
        if (!equalBytes(into, whole)) fail(`recordsSource(verify: ${verify}).readInto returned other bytes`);
      }
      const wrong = store.recordsSource([{ digest: b.id, length: b.bytes.length + 1 }]);
      await expectCode('a record longer than its object', 'corrupt', () => wrong.read(0, 1));
    },
  },
  {
    name: 'derived: resolve names refs and stored ids; manifests round-trip, other bytes are malformed',
    seeded: true,
    async run({ store, objects, ref, fresh, fresh_bytes }) {
      const { bytes, id } = objects[0]!;
      if ((await store.resolve(ref)) !== id) fail('resolve(ref) is not the id the ref names');
      if ((await store.resolve(id)) !== id) fail('resolve(stored id) is not that id');
      const absent = await fresh_bytes(32);
      await expectCode('resolve(absent id)', 'not_found', () => store.resolve(absent.id));
      await expectCode('resolve(absent ref)', 'not_found', () => store.resolve(fresh('absent')));
      await expectCode('getManifest(random bytes)', 'malformed', () => store.getManifest(id));
      if (!supports(store, 'objects.write')) return 'putManifest not checked: objects.write not announced';
      const entries = [
        {
          path: 'conformance.bin',
          kind: 'file' as const,
          mode: 0o644,
          size: bytes.length,
          profile: 'blob-v1' as const,
          records: [{ digest: id, length: bytes.length }],
        },
      ];
      const m = await store.putManifest({ entries });
      const back = await store.getManifest(m);
      const e = back.entries[0];
      if (
        back.entries.length !== 1 ||
        e?.kind !== 'file' ||
        e.path !== 'conformance.bin' ||
        e.mode !== 0o644 ||
        e.size !== bytes.length ||
        e.profile !== 'blob-v1' ||
        e.records.length !== 1 ||
        e.records[0]!.digest !== id ||
        e.records[0]!.length !== bytes.length
      )
        fail('getManifest(putManifest(m)) is not m');
      if ((await store.resolve(m)) !== m) fail('resolve(manifest id) is not that id');
      return undefined;
    },
  },
  {
    name: 'cancellation: an aborted signal ends calls cancelled',
    seeded: true,
    async run({ store, objects, ref }) {
      const signal = aborted();
      const { id } = objects[0]!;
      await expectCode('has(aborted)', 'cancelled', () => store.has(id, { signal }));
      await expectCode('objectSize(aborted)', 'cancelled', () => store.objectSize(id, { signal }));
      await expectCode('readObject(aborted)', 'cancelled', () => store.readObject(id, { signal }));
      await expectCode('readObjectRange(aborted)', 'cancelled', () => store.readObjectRange(id, 0, 1, { signal }));
      await expectCode('getRef(aborted)', 'cancelled', () => store.getRef(ref, { signal }));
      if (store.capabilities.has('refs.list')) {
        await expectCode('scanRefs(aborted)', 'cancelled', () => store.scanRefs({ signal }));
      }
      if (store.capabilities.has('objects.write')) {
        const bytes = randomBytes(16);
        await expectCode('put(aborted)', 'cancelled', () => store.put(bytes, { signal }));
        if (await store.has(await sha256Id(bytes))) fail('a cancelled put became visible');
      }
      if (store.capabilities.has('refs.write')) {
        await expectCode('setRef(aborted)', 'cancelled', () => store.setRef(ref, id, { signal }));
      }
    },
  },
  {
    name: 'absent capabilities: their calls are refused unsupported',
    async run({ store, objects, fresh }) {
      const has = (c: Capability) => store.capabilities.has(c);
      if (has('objects.write') && has('refs.write') && has('refs.delete') && has('refs.list')) {
        return 'not applicable: the store writes objects and refs, deletes and lists refs';
      }
      const refused: string[] = [];
      if (!has('objects.write')) {
        await expectCode('put without objects.write', 'unsupported', () => store.put(new Uint8Array([1, 2, 3])));
        refused.push('put');
      }
      if (!has('refs.write')) {
        await expectCode('setRef without refs.write', 'unsupported', () => store.setRef(fresh('ro'), objects[0]!.id));
        refused.push('setRef');
      }
      if (!has('refs.delete')) {
        await expectCode('deleteRef without refs.delete', 'unsupported', () => store.deleteRef(fresh('ro')));
        refused.push('deleteRef');
      }
      if (!has('refs.list')) {
        await expectCode('scanRefs without refs.list', 'unsupported', () => store.scanRefs());
        refused.push('scanRefs');
      }
      return `refused unsupported: ${refused.join(', ')}`;
    },
  },
];

/** Options of {@link runConformance}. */
export interface ConformanceOptions {
  /** Run only checks whose name contains one of these. */
  only?: readonly string[];
}

/**
 * Runs every check against `subject`. Never throws for a failing check (the report says it);
 * throws only when seeding fails, since then no check means anything.
 */
export async function runConformance(
  subject: ConformanceSubject,
  options: ConformanceOptions = {},
): Promise<ConformanceReport> {
  const store = subject.store;
  const run = randomBytes(6).reduce((s, b) => s + b.toString(16).padStart(2, '0'), '');
  const objects: { bytes: Uint8Array; id: ObjectId }[] = [];
  for (const n of [4096, 300]) {
    const bytes = randomBytes(n);
    objects.push({ bytes, id: await sha256Id(bytes) });
  }
  const ref = `conformance/${run}/seed`;
  if (store.capabilities.has('objects.write') && store.capabilities.has('refs.write')) {
    for (const o of objects) await store.put(o.bytes, { expected: o.id });
    await store.setRef(ref, objects[0]!.id, { expected: null });
  } else if (subject.seed) {
    await subject.seed(
      objects.map((o) => o.bytes),
      { [ref]: objects[0]!.id },
    );
  } else {
    throw new TensorFSError('invalid_argument', `${subject.name} cannot be seeded: it is read-only and has no seed()`, {
      details: { rule: 'store.conformance_seed' },
    });
  }
  let counter = 0;
  const ctx: CheckContext = {
    subject,
    store,
    objects,
    ref,
    fresh: (label) => `conformance/${run}/${label}-${counter++}`,
    fresh_bytes: async (length) => {
      const bytes = randomBytes(length);
      return { bytes, id: await sha256Id(bytes) };
    },
  };
  const results: ConformanceResult[] = [];
  for (const check of CONFORMANCE_CHECKS) {
    if (options.only && !options.only.some((o) => check.name.includes(o))) continue;
    const missing = (check.needs ?? []).filter((c) => !store.capabilities.has(c));
    if (missing.length > 0) {
      results.push({ check: check.name, outcome: 'not applicable', reason: `no ${missing.join(', ')}` });
      continue;
    }
    try {
      const note = await check.run(ctx);
      if (typeof note === 'string' && note.startsWith('not applicable: ')) {
        results.push({ check: check.name, outcome: 'not applicable', reason: note.slice('not applicable: '.length) });
      } else
        results.push({ check: check.name, outcome: 'passed', ...(typeof note === 'string' ? { reason: note } : {}) });
    } catch (err) {
      results.push({ check: check.name, outcome: 'failed', reason: describeError(err), error: err });
    }
  }
  return {
    implementation: subject.name,
    capabilities: [...store.capabilities].sort(),
    results,
    ok: results.every((r) => r.outcome !== 'failed'),
  };
}

/** The reports as text: one block per implementation (its name and capabilities), one line per check. */
export function formatConformance(reports: readonly ConformanceReport[]): string {
  const lines: string[] = [`storage contract conformance: ${reports.length} implementation(s)`];
  for (const r of reports) {
    const passed = r.results.filter((x) => x.outcome === 'passed').length;
    const na = r.results.filter((x) => x.outcome === 'not applicable').length;
    const failed = r.results.length - passed - na;
    lines.push(
      `\n${r.implementation} [${r.capabilities.join(', ') || 'read-only'}]: ${passed} passed, ${failed} failed, ${na} not applicable`,
    );
    for (const x of r.results) {
      const mark = x.outcome === 'passed' ? 'ok  ' : x.outcome === 'failed' ? 'FAIL' : 'n/a ';
      lines.push(`  ${mark} ${x.check}${x.reason ? ` — ${x.reason}` : ''}`);
    }
  }
  return lines.join('\n');
}
