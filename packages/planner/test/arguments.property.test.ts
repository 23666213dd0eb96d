// Property: random wrong-typed arguments to @tensorfs/planner's public functions return or throw a
// TensorFSError (invalid_argument for the arguments themselves), never a TypeError, never hang.
import { bytesSource } from '@tensorfs/format';
import * as planner from '@tensorfs/planner';
import {
  assertWrongArgumentsProperty,
  brokenSource,
  expectCode,
  expectCodeSync,
  wrongArgument,
} from '@tensorfs/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const source = bytesSource(new Uint8Array(40));

describe('@tensorfs/planner public functions with wrong-typed arguments', () => {
  it('return or throw a TensorFSError, never anything else', async () => {
    const fill = fc.oneof(brokenSource, fc.constantFrom<unknown>(source, {}, 16, [8]));
    const n = await assertWrongArgumentsProperty({ planner }, { fill, numRuns: 80, minFunctions: 7 });
    expect(n).toBeGreaterThanOrEqual(7);
  }, 60_000);

  it('planAndHash: every wrong-typed option is invalid_argument naming the option', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('signal', 'hasher', 'onProgress', 'onRecord', 'onRead'),
        wrongArgument.filter((v) => v !== undefined && typeof v !== 'function'),
        async (option, value) => {
          if (option === 'hasher' && typeof value === 'object' && value !== null) return; // an object is checked member-wise below
          if (option === 'signal' && typeof (value as { aborted?: unknown } | null)?.aborted === 'boolean') return;
          const error = await expectCode(
            planner.planAndHash(source, { [option]: value }),
            'invalid_argument',
            'planner.argument',
          );
          expect(error.details.argument).toBe(`options.${option}`);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('names the exact rule of each wrong argument', async () => {
    await expectCode(planner.planAndHash(source, null as never), 'invalid_argument', 'planner.argument', {
      argument: 'options',
      actual: 'null',
    });
    await expectCode(planner.planAndHash(source, { hasher: {} as never }), 'invalid_argument', 'planner.argument', {
      argument: 'options.hasher.digest',
    });
    expectCodeSync(() => planner.planToJSON(null as never), 'invalid_argument', 'planner.argument', {
      argument: 'plan',
    });
    expectCodeSync(() => planner.planToJSON({ records: [null] } as never), 'invalid_argument', 'planner.argument', {
      argument: 'plan.records[]',
    });
    expectCodeSync(() => planner.cutTensor(-1), 'invalid_argument', 'planner.argument');
    expectCodeSync(() => planner.cutTensor(Number.NaN), 'invalid_argument', 'planner.argument');
    expectCodeSync(() => planner.cutTensor(10, 5 as never), 'invalid_argument', 'planner.argument');
    // A length past what a plan may hold is refused before any array is built (it used to run out of memory).
    expectCodeSync(() => planner.cutTensor(2 ** 52), 'limit_exceeded', 'planner.records_limit');
    expectCodeSync(() => planner.checkTensorSeams('t', [Number.NaN], 10), 'invalid_argument', 'planner.seam_offset');
  });
});
