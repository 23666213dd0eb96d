// The exit codes are a promise to scripts: pinned here as a literal, and checked against the
// table the README prints, so neither can drift from the code unnoticed.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/index.js';

const PROMISED = {
  internal: 1,
  invalid_argument: 2,
  malformed: 3,
  corrupt: 4,
  unsupported: 5,
  not_found: 6,
  conflict: 7,
  denied: 8,
  unavailable: 9,
  limit_exceeded: 10,
  io: 11,
  cancelled: 12,
};

describe('exit codes', () => {
  it('are exactly the literal table', () => {
    expect({ ...EXIT_CODES }).toEqual(PROMISED);
  });

  it('are the table the cli README promises', () => {
    const readme = readFileSync(join(REPO_ROOT, 'packages', 'cli', 'README.md'), 'utf8');
    const rows = new Map<number, string>();
    for (const line of readme.split('\n')) {
      const cells = line.split('|').map((c) => c.trim());
      for (let i = 1; i + 1 < cells.length; i += 2) {
        if (/^\d+$/.test(cells[i]!)) rows.set(Number(cells[i]), cells[i + 1]!.split(' ')[0]!);
      }
    }
    const fromReadme = Object.fromEntries([...rows].filter(([n]) => n > 0).map(([n, family]) => [family, n]));
    expect(fromReadme).toEqual(PROMISED);
    expect(rows.get(0)).toBe('ok');
  });

  it('are the sentence the root README promises', () => {
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8').replace(/\s+/g, ' ');
    expect(readme).toContain(
      'exits with a stable code: 1 internal, 2 invalid_argument/usage, 3 malformed, 4 corrupt, 5 unsupported, 6 not_found, 7 conflict, 8 denied, 9 unavailable, 10 limit_exceeded, 11 io, 12 cancelled (also Ctrl-C).',
    );
  });
});
