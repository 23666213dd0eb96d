import type { Writable } from 'node:stream';

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** `1536` → `1.5 KiB`. */
export function formatBytes(n: number): string {
  let i = 0;
  let v = n;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${UNITS[i]}`;
}

/**
 * A single self-rewriting progress line (bytes, rate, ETA) on a terminal stream.
 * Draws nothing when the stream is not a TTY, so pipes and CI logs stay clean.
 */
export class Progress {
  private readonly tty: boolean;
  private readonly started = Date.now();
  private lastDraw = 0;
  private drawn = false;

  constructor(
    private readonly stream: Writable,
    private readonly label: string,
    private total?: number,
  ) {
    this.tty = (stream as Writable & { isTTY?: boolean }).isTTY === true;
  }

  /** Reports `done` bytes (of `total`, if it is now known). Redraws at most 10 times a second. */
  update(done: number, total?: number): void {
    if (total !== undefined) this.total = total;
    if (!this.tty) return;
    const now = Date.now();
    if (now - this.lastDraw < 100) return;
    this.lastDraw = now;
    const secs = Math.max((now - this.started) / 1000, 1e-3);
    const rate = done / secs;
    let line = `${this.label} ${formatBytes(done)}`;
    if (this.total !== undefined && this.total > 0) {
      const pct = Math.min(100, (done / this.total) * 100);
      const eta = rate > 0 ? Math.max(0, (this.total - done) / rate) : 0;
      line += ` / ${formatBytes(this.total)} (${pct.toFixed(0)}%) ETA ${eta.toFixed(0)}s`;
    }
    line += ` ${formatBytes(rate)}/s`;
    this.stream.write(`\r\x1b[2K${line}`);
    this.drawn = true;
  }

  /** Clears the line. */
  done(): void {
    if (this.drawn) this.stream.write('\r\x1b[2K');
    this.drawn = false;
  }
}
