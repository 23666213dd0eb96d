// Property: random wrong-typed arguments to any public function of @tensorfs/format (every entry
// point) return or throw a TensorFSError, never a TypeError or anything else, and never hang.
import * as format from '@tensorfs/format';
import * as codecs from '@tensorfs/format/codecs';
import * as cozytensors from '@tensorfs/format/cozytensors';
import * as encodings from '@tensorfs/format/encodings';
import * as errors from '@tensorfs/format/errors';
import * as gguf from '@tensorfs/format/gguf';
import * as manifest from '@tensorfs/format/manifest';
import * as safetensors from '@tensorfs/format/safetensors';
import { assertWrongArgumentsProperty, brokenSource } from '@tensorfs/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

/** Valid values in some positions, so the checks of later arguments are reached too. */
const fill = fc.oneof(
  brokenSource,
  fc.constantFrom<unknown>(
    format.bytesSource(new Uint8Array(16)),
    new Uint8Array(32),
    'F32',
    'a/b',
    0,
    1,
    [1, 2],
    [2n, 3n],
    { entries: [] },
    { tensors: {} },
    { metadata: {}, tensors: [] },
  ),
);

describe('@tensorfs/format public functions with wrong-typed arguments', () => {
  it('return or throw a TensorFSError, never anything else', async () => {
    await assertWrongArgumentsProperty(
      { format, codecs, cozytensors, encodings, errors, gguf, manifest, safetensors },
      { fill, numRuns: 100, minFunctions: 90 },
    );
  }, 120_000);
});

describe('the wrong-arguments property itself', () => {
  /** The failure the property reports (fast-check keeps the predicate's error as the cause). */
  const failure = async (run: Promise<unknown>): Promise<string> => {
    const error = await run.then(
      () => expect.fail('the property passed'),
      (err: Error) => err,
    );
    return String((error.cause as Error | undefined)?.message ?? error.message);
  };

  it('fails on a function that lets a TypeError out, or on one that hangs', async () => {
    const leaky = { read: (x: { y: { z: number } }) => x.y.z };
    expect(await failure(assertWrongArgumentsProperty({ leaky }, { numRuns: 20 }))).toMatch(
      /^leaky\.read\(.*TypeError/s,
    );
    const hangs = { wait: (_x: unknown) => new Promise(() => {}) };
    expect(await failure(assertWrongArgumentsProperty({ hangs }, { numRuns: 1, deadlineMs: 50 }))).toMatch(
      /hangs\.wait did not settle within 50 ms/,
    );
  });
});
