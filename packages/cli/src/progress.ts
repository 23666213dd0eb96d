import type { Writable } from 'node:stream';
import type { Progress } from '@tensorfs/format';

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

/** How progress is shown: a bar on a terminal (`auto`), one JSON line per event (`json`), or not at all. */
export type ProgressMode = 'auto' | 'json' | 'none';

/** The progress modes `--progress` accepts. */
export const PROGRESS_MODES: readonly ProgressMode[] = ['auto', 'json', 'none'];

/** Phases that are steps of a longer operation: named after the label (`gc sweep`, `bind T4`). */
const STEPS = new Set(['list', 'mark', 'sweep', 'structural', 'T4']);

/**
 * The one rendering of a {@link Progress} event as a terminal line, whatever operation sent it:
 * `<label>[ <phase>] <done>[ / <total> (<pct>%) ETA <s>s] <rate>/s`. Bytes are in binary units,
 * other units counted (`12 tensors`); a phase that is one step of several is named after the
 * label (`gc sweep`, `bind T4`). `seconds` is the time spent in this phase so far (for the rate and ETA).
 */
export function renderProgress(label: string, p: Progress, seconds: number): string {
  const amount = (n: number): string => (p.unit === 'bytes' ? formatBytes(n) : `${n} ${p.unit}`);
  const secs = Math.max(seconds, 1e-3);
  const rate = p.done / secs;
  let line = `${STEPS.has(p.phase) ? `${label} ${p.phase}` : label} ${amount(p.done)}`;
  if (p.total !== undefined && p.total > 0) {
    const pct = Math.min(100, (p.done / p.total) * 100);
    const eta = rate > 0 ? Math.max(0, (p.total - p.done) / rate) : 0;
    line += ` / ${amount(p.total)} (${pct.toFixed(0)}%) ETA ${eta.toFixed(0)}s`;
  }
  line += p.unit === 'bytes' ? ` ${formatBytes(rate)}/s` : ` ${rate.toFixed(1)} ${p.unit}/s`;
  return line;
}

/**
 * Where a command's {@link Progress} events go. `auto`: one self-rewriting line on a terminal
 * stream (drawn by {@link renderProgress}, at most 10 times a second), nothing when the stream is
 * not a TTY, so pipes and CI logs stay clean. `json`: each event as one JSON line (the event
 * exactly as the library sent it), at most 10 a second, but always the first of each phase and,
 * at {@link ProgressLine.done}, the last one. `none`: nothing.
 */
export class ProgressLine {
  private readonly draw: boolean;
  private phaseStarted: number;
  private phase: string | undefined;
  private lastWrite = Number.NEGATIVE_INFINITY;
  private drawn = false;
  private pending: Progress | undefined;

  constructor(
    private readonly stream: Writable,
    private readonly label: string,
    private readonly mode: ProgressMode = 'auto',
    private readonly now: () => number = Date.now,
  ) {
    this.draw = mode === 'json' || (mode === 'auto' && (stream as Writable & { isTTY?: boolean }).isTTY === true);
    this.phaseStarted = now();
  }

  /** Reports one event (pass it as the library's `onProgress`). */
  readonly update = (p: Progress): void => {
    if (!this.draw) return;
    const now = this.now();
    const newPhase = p.phase !== this.phase;
    if (newPhase) {
      this.phase = p.phase;
      this.phaseStarted = now;
    }
    if (!newPhase && now - this.lastWrite < 100) {
      this.pending = p;
      return;
    }
    this.lastWrite = now;
    this.write(p, now);
  };

  private write(p: Progress, now: number): void {
    this.pending = undefined;
    if (this.mode === 'json') {
      this.stream.write(`${JSON.stringify(p)}\n`);
      return;
    }
    this.stream.write(`\r\x1b[2K${renderProgress(this.label, p, (now - this.phaseStarted) / 1000)}`);
    this.drawn = true;
  }

  /** Ends the display: clears the terminal line; in `json` mode writes the last event not yet written. */
  done(): void {
    if (this.mode === 'json' && this.pending) this.write(this.pending, this.now());
    this.pending = undefined;
    if (this.drawn) this.stream.write('\r\x1b[2K');
    this.drawn = false;
  }
}
