/**
 * The worker-pool hasher keeps one abort listener per signal, however many jobs wait on it
 * (issue 11: a listener per job made Node warn `MaxListenersExceededWarning` on stderr).
 */
import { getEventListeners } from 'node:events';
import { createNodeHasher } from '@tensorfs/cas';
import { expectCode, noise, sha256Hex } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

const hex = (d: Uint8Array) => Buffer.from(d).toString('hex');

describe('createNodeHasher with many jobs on one signal', () => {
  it('one abort listener while 64 jobs wait, none after; the digests are right', async () => {
    const hasher = createNodeHasher({ threads: 2, inlineBelow: 1 });
    try {
      const signal = new AbortController().signal;
      const pieces = Array.from({ length: 64 }, (_, i) => noise(4096, i + 1));
      const jobs = pieces.map((p) => hasher.digest([p], signal));
      expect(getEventListeners(signal, 'abort')).toHaveLength(1);
      expect((await Promise.all(jobs)).map(hex)).toEqual(pieces.map((p) => sha256Hex(p)));
      expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    } finally {
      await hasher.close();
    }
  });

  it('aborting cancels every waiting job (cancelled) and leaves no listener', async () => {
    const hasher = createNodeHasher({ threads: 2, inlineBelow: 1 });
    try {
      const c = new AbortController();
      const jobs = Array.from({ length: 32 }, (_, i) => hasher.digest([noise(1 << 20, i + 1)], c.signal));
      c.abort(new Error('stop'));
      for (const j of jobs) await expectCode(j, 'cancelled');
      expect(getEventListeners(c.signal, 'abort')).toHaveLength(0);
      // The pool still works for another signal afterwards.
      const again = new AbortController().signal;
      expect(hex(await hasher.digest([noise(10, 3)], again))).toBe(sha256Hex(noise(10, 3)));
    } finally {
      await hasher.close();
    }
  });
});
