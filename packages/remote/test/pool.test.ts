/**
 * runPool's signals (issue 11): however high the concurrency, no signal carries more than one
 * worker's listeners (a shared signal passed 10 in-flight requests and Node printed
 * `MaxListenersExceededWarning`); the first failure still stops every worker.
 */
import { getEventListeners } from 'node:events';
import { TensorFSError } from '@tensorfs/format';
import { expectCode } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { runPool } from '../src/pool.js';

/** Resolves when `signal` aborts, holding one abort listener on it meanwhile (as a request does). */
function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

describe('runPool', () => {
  it('32 workers in flight: every signal holds one listener; the outer signal one', async () => {
    const outer = new AbortController();
    const seen = new Set<AbortSignal>();
    let most = 0;
    let started = 0;
    const all = new Promise<void>((resolve) => {
      void runPool(
        Array.from({ length: 64 }, (_, i) => i),
        32,
        outer.signal,
        async (_item, signal) => {
          seen.add(signal);
          const held = untilAborted(signal);
          most = Math.max(most, getEventListeners(signal, 'abort').length);
          if (++started === 32) {
            expect(getEventListeners(outer.signal, 'abort')).toHaveLength(1);
            outer.abort();
          }
          await held;
        },
      ).catch((err) => {
        expect(err.code).toBe('cancelled');
        resolve();
      });
    });
    await all;
    expect(started).toBe(32);
    expect(seen.size).toBe(32);
    expect(most).toBe(1);
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(0);
  });

  it('the first failure aborts the other workers and is rethrown', async () => {
    let aborted = 0;
    const e = await expectCode(
      runPool([0, 1, 2, 3], 4, undefined, async (item, signal) => {
        if (item === 2) throw new TensorFSError('io', 'boom');
        await untilAborted(signal);
        aborted++;
      }),
      'io',
    );
    expect(e.message).toBe('boom');
    expect(aborted).toBe(3);
  });
});
