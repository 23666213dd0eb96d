/** A bounded worker pool that stops every worker at the first failure. */
import { isTensorFSError } from '@tensorfs/format';
import { cancelled } from './http.js';

/**
 * Runs `fn` over `items` with at most `concurrency` at once. The first failure aborts the
 * signal handed to the others and is rethrown once they have all stopped (a `cancelled` of the
 * outer signal wins over the failures it caused).
 */
export async function runPool<T>(
  items: readonly T[],
  concurrency: number,
  signal: AbortSignal | undefined,
  fn: (item: T, signal: AbortSignal) => Promise<void>,
): Promise<void> {
  const ctl = new AbortController();
  const onAbort = () => ctl.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) ctl.abort();
  let next = 0;
  let failure: unknown;
  const worker = async () => {
    while (next < items.length && !ctl.signal.aborted) {
      const item = items[next++]!;
      try {
        await fn(item, ctl.signal);
      } catch (err) {
        if (failure === undefined || (isTensorFSError(failure) && failure.code === 'cancelled')) failure = err;
        ctl.abort();
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker));
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  if (signal?.aborted) throw cancelled();
  if (failure !== undefined) throw failure;
}
