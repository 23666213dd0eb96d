import { describe, expect, it } from 'vitest';
import { MemoryStore, supports, validateRefName } from '../src/store/index.js';
import { CONFORMANCE_CHECKS, formatConformance, runConformance } from '../src/store/conformance.js';

describe('the storage contract over the in-memory store', () => {
  it('passes every conformance check and prints what it ran against', async () => {
    const store = new MemoryStore();
    const report = await runConformance({
      name: 'memory store',
      store,
      plantBadRef: async (name) => {
        store.refs.set(name, 'not an id' as never);
      },
    });
    const text = formatConformance([report]);
    console.log(text);
    expect(text).toContain('memory store [');
    expect(report.results.filter((r) => r.outcome === 'failed')).toEqual([]);
    // Everything applies to the memory store except nothing: it announces every write capability.
    expect(report.results.map((r) => r.outcome)).toEqual(
      CONFORMANCE_CHECKS.map((c) => (c.name.startsWith('absent capabilities') ? 'not applicable' : 'passed')),
    );
  });

  it('a check that finds a violation fails with the reason (a store whose CAS lets everyone win)', async () => {
    const store = new MemoryStore();
    const lax = Object.create(store) as MemoryStore;
    lax.setRef = async (name, id) => {
      await new Promise((r) => setTimeout(r, 1));
      store.refs.set(name, id);
    };
    const report = await runConformance({ name: 'lax', store: lax }, { only: ['concurrent'] });
    expect(report.ok).toBe(false);
    expect(report.results[0]!.reason).toMatch(/8 of 8 creates won/);
  });

  it('the derived members are checked too (a recordsSource that trusts record lengths, a resolve that trusts ids)', async () => {
    const store = new MemoryStore();
    const trusting = Object.create(store) as MemoryStore;
    // Reads each record's declared length without comparing it with the object's.
    trusting.recordsSource = (records) => {
      const size = records.reduce((n, r) => n + r.length, 0);
      const read = async (offset: number, length: number) => {
        const whole = new Uint8Array(size);
        let at = 0;
        for (const r of records) {
          const bytes = await store.readObject(r.digest);
          whole.set(bytes.subarray(0, r.length), at);
          at += r.length;
        }
        return whole.slice(offset, offset + length);
      };
      return { size, read, readInto: async (offset, target) => target.set(await read(offset, target.length)) };
    };
    const sources = await runConformance({ name: 'trusting', store: trusting }, { only: ['recordsSource'] });
    expect(sources.ok).toBe(false);
    expect(sources.results[0]!.reason).toMatch(/a record longer than its object: expected corrupt, but it resolved/);

    const lax = Object.create(store) as MemoryStore;
    lax.resolve = async (refOrId) => (refOrId.startsWith('sha256:') ? (refOrId as never) : store.resolve(refOrId));
    const resolved = await runConformance({ name: 'lax resolve', store: lax }, { only: ['resolve'] });
    expect(resolved.ok).toBe(false);
    expect(resolved.results[0]!.reason).toMatch(/resolve\(absent id\): expected not_found, but it resolved/);
  });

  it('capabilities are asked by name', () => {
    const store = new MemoryStore();
    expect(supports(store, 'objects.batch')).toBe(true);
    expect(supports(store, 'objects.part')).toBe(false);
    expect(validateRefName('a/b')).toBe('a/b');
  });
});
