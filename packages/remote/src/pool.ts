/** A bounded worker pool that stops every worker at the first failure. */
import { isTensorFSError, cancelledError } from '@tensorfs/format';

/**
 * Runs `fn` over `items` with at most `concurrency` at once. The first failure aborts the
 * signal handed to the others and is rethrown once they have all stopped (a `cancelled` of the
 * outer signal wins over the failures it caused). Each worker gets a signal of its own, so
 * however high `concurrency` is, no signal carries more than one worker's listeners (a shared
 * one passed 10 in-flight requests and Node warned `MaxListenersExceededWarning` on stderr).
 */
export async function runPool<T>(
  items: readonly T[],
  concurrency: number,
  signal: AbortSignal | undefined,
  fn: (item: T, signal: AbortSignal) => Promise<void>,
): Promise<void> {
  const workers = Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, () => new AbortController());
  let stopped = false;
  const stop = () => {
    stopped = true;
    for (const w of workers) w.abort();
  };
  signal?.addEventListener('abort', stop, { once: true });
  if (signal?.aborted) stop();
  let next = 0;
  let failure: unknown;
  const worker = async (ctl: AbortController) => {
    while (next < items.length && !stopped) {
      const item = items[next++]!;
      try {
        await fn(item, ctl.signal);
      } catch (err) {
        if (failure === undefined || (isTensorFSError(failure) && failure.code === 'cancelled')) failure = err;
        stop();
      }
    }
  };
  try {
    await Promise.all(workers.map(worker));
  } finally {
    signal?.removeEventListener('abort', stop);
  }
  if (signal?.aborted) throw cancelledError();
  if (failure !== undefined) throw failure;
}
