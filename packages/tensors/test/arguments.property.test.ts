// Property: random wrong-typed arguments to @tensorfs/tensors's public functions return or throw a
// TensorFSError, never a TypeError, never hang; and the exact rule of each checked argument.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openStore } from '@tensorfs/cas';
import * as tensors from '@tensorfs/tensors';
import {
  assertWrongArgumentsProperty,
  expectCode,
  MemoryStore,
  safetensorsBytes,
  tempDir,
  inTempWorkingDir,
  wrongNonString,
} from '@tensorfs/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

// Strings are left out (wrongNonString). A store is sometimes given so later arguments are reached.

describe('@tensorfs/tensors with wrong-typed arguments', () => {
  inTempWorkingDir();

  it('return or throw a TensorFSError, never anything else', async () => {
    const store = new MemoryStore();
    const fill = fc.oneof(wrongNonString, fc.constantFrom<unknown>(store, {}, [], 0));
    const n = await assertWrongArgumentsProperty(
      { tensors },
      { wrong: wrongNonString, fill, numRuns: 60, minFunctions: 20 },
    );
    expect(n).toBeGreaterThanOrEqual(20);
  }, 120_000);

  it('name the argument', async () => {
    const store = new MemoryStore();
    const view = { name: 't', dtype: 'F32', shape: [1], digests: [] };
    const cases: [() => unknown, string][] = [
      [() => tensors.openTensors(null as never, 'main'), 'store'],
      [() => tensors.openTensors({ resolve: 5 } as never, 'main'), 'store.resolve'],
      [() => tensors.openTensors(store, 5 as never), 'refOrId'],
      [() => tensors.openTensors(store, 'main', null as never), 'options'],
      [() => tensors.openCheckpoint(store, null as never), 'source'],
      [() => tensors.commit(store, null as never), 'options'],
      [() => tensors.commit(store, { put: [null] } as never), 'options.put[]'],
      [() => tensors.commit(store, { remove: [5] } as never), 'options.remove[]'],
      [() => tensors.compose(store, 'main', 'a', null as never), 'changes'],
      [() => tensors.rekey(store, 'main', 'a', null as never), 'map'],
      [() => tensors.trim(store, 'main', 'a', null as never), 'select'],
      [() => tensors.diffSnapshots(store, 'a', 'b', { signal: {} } as never), 'options.signal'],
      [() => tensors.diffTensors(null as never, null as never), 'a'],
      [() => tensors.diffInputs([] as never), 'set'],
      [() => tensors.diffTensorLists([null] as never, []), 'a[]'],
      [() => tensors.diffJson(1n, 2n), 'before/after'],
      [() => tensors.checkpointDiffInputs({} as never), 'checkpoint'],
      [() => tensors.exportCheckpoint(store as never, {} as never, 'd'), 'checkpoint'],
      [() => tensors.importPortable(store, null as never), 'dir'],
      [() => tensors.convertSnapshot(store, 'main', null as never), 'options'],
      [() => tensors.decodedDtypeOf(null as never), 'view'],
      [() => tensors.decodedByteLength(view as never, 'F64' as never), 'dtype'],
      [() => tensors.readDecoded({ dtype: 5 } as never), 'view'],
      [() => tensors.readDecodedInto(view as never, null as never), 'buffer'],
      [() => tensors.readDecodedInto(view as never, new Uint8Array(4), -1), 'offset'],
      [() => tensors.readEncoding(view as never, null as never), 'options'],
      [() => tensors.viewEncoding(view as never, 5 as never), 'bytes'],
    ];
    for (const [call, argument] of cases) {
      const error = await expectCode(call, 'invalid_argument', 'tensors.argument');
      expect(error.details.argument, String(call)).toBe(argument);
    }
  });

  it('the writers check their arguments too (and a bad inherit rejects, it does not throw)', async () => {
    const store = new MemoryStore();
    const cases: [() => unknown, string][] = [
      [() => new tensors.TensorWriter(null as never, 'model.safetensors'), 'store'],
      [() => new tensors.TensorWriter(store, 'model.safetensors', null as never), 'options'],
      [() => new tensors.TensorWriter(store, 'model.safetensors').inherit(null as never), 'view'],
      [
        () =>
          new tensors.TensorWriter(store, 'model.safetensors').inherit(
            { dtype: 'F32', shape: [1] } as never,
            null as never,
          ),
        'options',
      ],
      [() => new tensors.CheckpointWriter(null as never), 'store'],
      [() => new tensors.CheckpointWriter(store, null as never), 'options'],
      [() => new tensors.CheckpointWriter(store).pipeline(5 as never), 'pipeline'],
      [() => new tensors.CheckpointWriter(store).component(5 as never, { cls: 'c', config: {} }), 'name'],
      [() => new tensors.CheckpointWriter(store).component('model', null as never), 'options'],
    ];
    for (const [call, argument] of cases) {
      const error = await expectCode(call, 'invalid_argument', 'tensors.argument');
      expect(error.details.argument, String(call)).toBe(argument);
    }
    const writer = new tensors.CheckpointWriter(store);
    writer.component('model', { cls: 'C', config: {} });
    const pending = writer.inherit(null as never);
    expect(pending).toBeInstanceOf(Promise);
    await expectCode(pending, 'invalid_argument', 'tensors.argument', { argument: 'view' });
  });
});

describe('@tensorfs/tensors views with wrong-typed arguments', () => {
  it('read, readInto and pieces return the bytes or throw a TensorFSError', async () => {
    const store = await openStore(tempDir());
    try {
      const file = join(tempDir(), 'm.safetensors');
      const data = Uint8Array.from({ length: 16 }, (_, i) => i);
      writeFileSync(file, safetensorsBytes([{ name: 'w', data }]));
      await store.importPath(file, { name: 'local/m', threads: 1 });
      const view = [...(await tensors.openTensors(store, 'local/m'))][0]!;
      const methods = {
        read: (o: unknown) => view.read(o as never),
        readInto: (b: unknown, o: unknown, p: unknown) => view.readInto(b as never, o as never, p as never),
        readIntoBuffer: (o: unknown, p: unknown) => view.readInto(new Uint8Array(20), o as never, p as never),
        pieces: async (o: unknown) => {
          for await (const _ of view.pieces(o as never)) break;
        },
      };
      await assertWrongArgumentsProperty(
        { view: methods },
        { fill: fc.constantFrom<unknown>(undefined, 0, {}), numRuns: 60 },
      );
      await expectCode(view.readInto(null as never), 'invalid_argument', 'tensors.argument', { argument: 'buffer' });
      await expectCode(view.readInto(new Uint8Array(16), 1n as never), 'invalid_argument', 'tensors.argument', {
        argument: 'offset',
      });
      await expectCode(view.read(null as never), 'invalid_argument', 'tensors.argument', { argument: 'options' });
      expect(await view.readInto(new Uint8Array(20), 2)).toEqual(data);
    } finally {
      await store.close();
    }
  });
});
