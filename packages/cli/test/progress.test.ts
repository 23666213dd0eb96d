import { PassThrough } from 'node:stream';
import type { Progress } from '@tensorfs/format';
import { describe, expect, it } from 'vitest';
import { formatBytes, ProgressLine, renderProgress } from '../src/progress.js';

function stream(tty: boolean) {
  const s = new PassThrough();
  let text = '';
  s.on('data', (d) => (text += d));
  Object.assign(s, { isTTY: tty });
  return { s, text: () => text };
}

const bytes = (done: number, total?: number): Progress => ({
  phase: 'import',
  unit: 'bytes',
  done,
  ...(total === undefined ? {} : { total }),
  bytes: done,
  ...(total === undefined ? {} : { bytesTotal: total }),
});

describe('ProgressLine', () => {
  it('draws nothing when stderr is not a terminal', () => {
    const { s, text } = stream(false);
    const p = new ProgressLine(s, 'import');
    p.update(bytes(50, 100));
    p.done();
    expect(text()).toBe('');
  });

  it('draws bytes, percentage, ETA and rate on a terminal, then clears the line', () => {
    const { s, text } = stream(true);
    const p = new ProgressLine(s, 'import');
    p.update(bytes(1048576, 4 * 1048576));
    expect(text()).toMatch(/^\r\x1b\[2Kimport 1\.0 MiB \/ 4\.0 MiB \(25%\) ETA \d+s [\d.]+ (B|KiB|MiB|GiB|TiB)\/s$/);
    p.update(bytes(2 * 1048576, 4 * 1048576)); // throttled: within 100 ms of the last draw
    expect(text().split('\r').length).toBe(2);
    p.done();
    expect(text().endsWith('\r\x1b[2K')).toBe(true);
  });

  it('json: one line per event, exactly the event; throttled, but the first of a phase and the last always', () => {
    const { s, text } = stream(false);
    let now = 1000;
    const p = new ProgressLine(s, 'gc', 'json', () => now);
    const list: Progress = { phase: 'list', unit: 'objects', done: 1000, objects: 1000 };
    const mark1: Progress = { phase: 'mark', unit: 'objects', done: 1, objects: 1 };
    const mark2: Progress = { phase: 'mark', unit: 'objects', done: 2, objects: 2 };
    const mark3: Progress = { phase: 'mark', unit: 'objects', done: 3, objects: 3 };
    p.update(list);
    p.update(mark1); // a new phase: written at once
    p.update(mark2); // same phase, same instant: held
    now += 150;
    p.update(mark3); // 150 ms later: written (mark2 superseded)
    const sweep: Progress = { phase: 'sweep', unit: 'objects', done: 5, total: 9, objects: 5, objectsTotal: 9 };
    const sweepEnd: Progress = { phase: 'sweep', unit: 'objects', done: 9, total: 9, objects: 9, objectsTotal: 9 };
    p.update(sweep);
    p.update(sweepEnd); // held until done()
    p.done();
    expect(
      text()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
    ).toEqual([list, mark1, mark3, sweep, sweepEnd]);
  });

  it('none draws nothing, even on a terminal', () => {
    const { s, text } = stream(true);
    const p = new ProgressLine(s, 'import', 'none');
    p.update(bytes(1, 2));
    p.done();
    expect(text()).toBe('');
  });
});

describe('renderProgress: one line for every operation', () => {
  it('bytes with a total, counts without one, steps named after the label', () => {
    expect(renderProgress('import', bytes(1048576, 4 * 1048576), 1)).toBe(
      'import 1.0 MiB / 4.0 MiB (25%) ETA 3s 1.0 MiB/s',
    );
    expect(renderProgress('convert', { phase: 'write', unit: 'bytes', done: 2048, bytes: 2048 }, 2)).toBe(
      'convert 2.0 KiB 1.0 KiB/s',
    );
    expect(
      renderProgress(
        'gc',
        { phase: 'sweep', unit: 'objects', done: 30, total: 120, objects: 30, objectsTotal: 120 },
        3,
      ),
    ).toBe('gc sweep 30 objects / 120 objects (25%) ETA 9s 10.0 objects/s');
    expect(
      renderProgress(
        'bind',
        {
          phase: 'T4',
          unit: 'tensors',
          done: 4,
          total: 8,
          tensors: 4,
          tensorsTotal: 8,
          tensor: 'w',
          path: 'm.safetensors',
        },
        2,
      ),
    ).toBe('bind T4 4 tensors / 8 tensors (50%) ETA 2s 2.0 tensors/s');
  });

  it('formats sizes in binary units', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(3 * 1024 ** 3)).toBe('3.0 GiB');
  });
});
