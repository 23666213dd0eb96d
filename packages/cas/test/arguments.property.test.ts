// Property: random wrong-typed arguments to @tensorfs/cas's public functions and to every method
// of an open LocalStore return or throw a TensorFSError, never a TypeError, never hang.
import * as cas from '@tensorfs/cas';
import * as casFile from '@tensorfs/cas/file';
import { assertWrongArgumentsProperty, expectCode, inTempWorkingDir, tempDir, wrongNonString } from '@tensorfs/testkit';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

// Strings are left out (wrongNonString): wrong types are what is tested here.
/** LocalStore's `private` methods (TypeScript-only privacy: they are on the prototype at run time). */
const PRIVATE = new Set(['live', 'readHead', 'closureOf', 'assertPresentSync', 'tops', 'refuseInsideStore']);

describe('@tensorfs/cas with wrong-typed arguments', () => {
  inTempWorkingDir();

  it('module functions return or throw a TensorFSError', async () => {
    await assertWrongArgumentsProperty(
      { cas, casFile },
      { wrong: wrongNonString, fill: wrongNonString, numRuns: 40, minFunctions: 6 },
    );
  }, 60_000);

  it('every LocalStore method returns or throws a TensorFSError', async () => {
    const store = await cas.openStore(tempDir());
    try {
      const methods: Record<string, unknown> = {};
      for (const name of Object.getOwnPropertyNames(Object.getPrototypeOf(store))) {
        // close ends the store for the calls after it; the private helpers are not API.
        if (name === 'constructor' || name === 'close' || PRIVATE.has(name)) continue;
        const value = (store as unknown as Record<string, unknown>)[name];
        if (typeof value === 'function') methods[name] = (value as (...a: unknown[]) => unknown).bind(store);
      }
      const fill = fc.oneof(wrongNonString, fc.constantFrom<unknown>(`sha256:${'0'.repeat(64)}`, 'main', {}, [], 0));
      const n = await assertWrongArgumentsProperty(
        { store: methods },
        { wrong: wrongNonString, fill, numRuns: 25, minFunctions: 25 },
      );
      expect(n).toBeGreaterThanOrEqual(25);
      // The store still works after all that.
      const put = await store.put(new Uint8Array([1, 2, 3]));
      expect(await store.readObject(put.id)).toEqual(new Uint8Array([1, 2, 3]));
    } finally {
      await store.close();
    }
  }, 120_000);
});

describe('@tensorfs/cas: the exact rule of a wrong argument', () => {
  it('names the argument', async () => {
    const store = await cas.openStore(tempDir());
    try {
      const id = `sha256:${'0'.repeat(64)}` as const;
      const cases: [() => unknown, string][] = [
        [() => store.put(null as never), 'bytes'],
        [() => store.put([new Uint8Array(1), null] as never), 'bytes[]'],
        [() => store.put(new Uint8Array(1), null as never), 'options'],
        [() => store.put(new Uint8Array(1), { lease: 5 } as never), 'options.lease'],
        [() => store.putStream(5 as never), 'chunks'],
        [() => store.openPart('k', null as never), 'options'],
        [() => store.putBatch([null] as never), 'items[]'],
        [() => store.has(5 as never), 'id'],
        [() => store.readObject(id, null as never), 'options'],
        [() => store.objectStream(null as never), 'id'],
        [() => store.recordsSource(null as never), 'records'],
        [() => store.lease(null as never), 'options'],
        [() => store.importPath(null as never), 'path'],
        [() => store.importPath('x', { signal: 5 } as never), 'options.signal'],
        [() => store.resolve({} as never), 'refOrId'],
        [() => store.getRef(Object.create(null)), 'name'],
        [() => store.setRef('main', id, null as never), 'options'],
        [() => store.deleteRef('main', null as never), 'options'],
        [() => store.checkRefs(null as never), 'options'],
        [() => store.addRoot(id, 5 as never), 'reason'],
        [() => store.exportFile(id, 'a', null as never), 'dest'],
        [() => store.exportSnapshot(id, 'd', { onProgress: 5 } as never), 'options.onProgress'],
        [() => store.verify(null as never), 'options'],
        [() => store.gc(null as never), 'options'],
        [() => store.usage(null as never), 'options'],
        [() => cas.openStore(tempDir(), null as never), 'options'],
        [() => cas.recordsSourceOf(null as never, async () => {}), 'records'],
        [() => cas.siblingTemp(null as never), 'dest'],
        [() => cas.createNodeHasher(null as never), 'options'],
      ];
      for (const [call, argument] of cases) {
        const error = await expectCode(call, 'invalid_argument', 'store.argument');
        expect(error.details.argument, String(call)).toBe(argument);
      }
      await expectCode(() => cas.validateRefName({} as never), 'invalid_argument');
    } finally {
      await store.close();
    }
  });
});

describe('@tensorfs/cas reads at any offset and length', () => {
  it('answer the exact bytes inside the object, else invalid_argument (source.range), never a RangeError', async () => {
    const store = await cas.openStore(tempDir());
    const file = join(tempDir(), 'f');
    const bytes = Uint8Array.from({ length: 40 }, (_, i) => i * 7);
    writeFileSync(file, bytes);
    const fileSource = await casFile.openFileSource(file);
    try {
      const { id } = await store.put(bytes);
      const records = store.recordsSource([
        { digest: id, length: 40 },
        { digest: id, length: 40 },
      ]);
      const number = fc.oneof(
        fc.integer({ min: -3, max: 90 }),
        fc.constantFrom(Number.NaN, 1.5, -0.5, 2 ** 53, 2 ** 60, Number.POSITIVE_INFINITY),
      );
      const readers: [string, number, (o: number, l: number) => Promise<Uint8Array>][] = [
        ['readObjectRange', 40, (o, l) => store.readObjectRange(id, o, l)],
        ['recordsSource.read', 80, (o, l) => records.read(o, l)],
        ['fileSource.read', 40, (o, l) => fileSource.read(o, l)],
      ];
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...readers), number, number, async ([name, size, read], offset, length) => {
          const valid = Number.isSafeInteger(offset) && Number.isSafeInteger(length) && offset >= 0 && length >= 0;
          if (valid && offset + length <= size) {
            const got = await read(offset, length);
            const whole = name === 'recordsSource.read' ? new Uint8Array([...bytes, ...bytes]) : bytes;
            expect(got, `${name}(${offset}, ${length})`).toEqual(whole.subarray(offset, offset + length));
          } else {
            await expectCode(read(offset, length), 'invalid_argument', 'source.range');
          }
        }),
        { numRuns: 300 },
      );
    } finally {
      await fileSource.close();
      await store.close();
    }
  });
});
