// `tfs --version` answers before yargs loads; it must print what the parser prints.
import { describe, expect, it } from 'vitest';
import { run, VERSION } from '../src/index.js';
import { capture } from './helpers.js';

describe('tfs start-up', () => {
  it('prints the version alone the same way with and without the parser', async () => {
    for (const argv of [['--version'], ['-V'], ['--version', '--store', '/nonexistent'], ['-V', '--json']]) {
      const c = capture();
      expect(await run(argv, c.io)).toBe(0);
      expect(c.text()).toEqual({ stdout: `${VERSION}\n`, stderr: '' });
    }
  });
});
