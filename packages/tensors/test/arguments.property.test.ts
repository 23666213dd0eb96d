// Property: random wrong-typed arguments to @tensorfs/tensors's public functions return or throw a
// TensorFSError, never a TypeError, never hang; and the exact rule of each checked argument.
import * as tensors from '@tensorfs/tensors';
import { assertWrongArgumentsProperty, expectCode, MemoryStore, tempDir, wrongArgument } from '@tensorfs/testkit';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

// Strings are left out (the right type for refs and paths; a random one as an export folder
// would write outside the test's folder). A store is sometimes given so later arguments are reached.
const notString = wrongArgument.filter((v) => typeof v !== 'string');
const cwd = process.cwd();

describe('@tensorfs/tensors with wrong-typed arguments', () => {
  beforeEach(() => {
    process.chdir(tempDir());
  });
  afterEach(() => {
    process.chdir(cwd);
  });

  it('return or throw a TensorFSError, never anything else', async () => {
    const store = new MemoryStore();
    const fill = fc.oneof(notString, fc.constantFrom<unknown>(store, {}, [], 0));
    const n = await assertWrongArgumentsProperty({ tensors }, { fill, numRuns: 60, minFunctions: 20 });
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
