import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { formatBytes, Progress } from '../src/progress.js';

function stream(tty: boolean) {
  const s = new PassThrough();
  let text = '';
  s.on('data', (d) => (text += d));
  Object.assign(s, { isTTY: tty });
  return { s, text: () => text };
}

describe('Progress', () => {
  it('draws nothing when stderr is not a terminal', () => {
    const { s, text } = stream(false);
    const p = new Progress(s, 'import', 100);
    p.update(50);
    p.done();
    expect(text()).toBe('');
  });

  it('draws bytes, percentage, ETA and rate on a terminal, then clears the line', () => {
    const { s, text } = stream(true);
    const p = new Progress(s, 'import', 4 * 1048576);
    p.update(1048576);
    expect(text()).toMatch(/^\r\x1b\[2Kimport 1\.0 MiB \/ 4\.0 MiB \(25%\) ETA \d+s [\d.]+ (B|KiB|MiB|GiB|TiB)\/s$/);
    p.update(2 * 1048576); // throttled: within 100 ms of the last draw
    expect(text().split('\r').length).toBe(2);
    p.done();
    expect(text().endsWith('\r\x1b[2K')).toBe(true);
  });

  it('formats sizes in binary units', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(3 * 1024 ** 3)).toBe('3.0 GiB');
  });
});
