/** Concurrency: how many requests are served at once, and who waits for the count to reach zero. */

/** Counts requests in flight against a bound. */
export class Concurrency {
  private inFlight = 0;
  private readonly idle: (() => void)[] = [];

  constructor(readonly max: number) {}

  /** Requests being served now. */
  get active(): number {
    return this.inFlight;
  }

  /** Takes a slot; false when all `max` are taken (the caller answers 503). */
  enter(): boolean {
    if (this.inFlight >= this.max) return false;
    this.inFlight++;
    return true;
  }

  /** Gives a slot back; runs the waiters once nothing is in flight. */
  leave(): void {
    this.inFlight--;
    if (this.inFlight === 0) for (const f of this.idle.splice(0)) f();
  }

  /** Runs `f` now when nothing is in flight, else once the last request ends. */
  whenIdle(f: () => void): void {
    if (this.inFlight === 0) f();
    else this.idle.push(f);
  }
}
