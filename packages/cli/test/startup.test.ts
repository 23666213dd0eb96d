// `tfs --version` answers before yargs loads; it must print what the parser prints. A command
// that prints no help does not load yargs' text layout (cliui, string-width: an Intl.Segmenter
// and Unicode tables, a third of importing yargs; patches/yargs@18.2.0.patch defers them).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, SAMPLES, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { run, VERSION } from '../src/index.js';
import { capture } from './helpers.js';

/** The files under node_modules (or `packages/`, with `ours`) that `tfs <argv>` (the built CLI) opens, seen with strace. */
function modulesOpened(argv: string[], ours = false): { files: string[]; stdout: string } {
  const log = join(tempDir('tfs-startup-'), 'trace');
  const bin = join(REPO_ROOT, 'packages/cli/dist/bin.js');
  const stdout = execFileSync(
    'strace',
    ['-f', '-qq', '-o', log, '-e', 'trace=openat', process.execPath, bin, ...argv],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const files = [];
  for (const line of readFileSync(log, 'utf8').split('\n')) {
    const m = (
      ours ? /openat\([^"]*"([^"]+\/(?:node_modules|packages)\/[^"]+)"/ : /openat\([^"]*"([^"]+\/node_modules\/[^"]+)"/
    ).exec(line);
    if (m && !line.includes('ENOENT')) files.push(m[1]!);
  }
  return { files, stdout };
}

const LAYOUT = /\/node_modules\/(cliui|string-width|wrap-ansi|emoji-regex)\//;

describe('tfs start-up', () => {
  it('prints the version alone the same way with and without the parser', async () => {
    for (const argv of [['--version'], ['-V'], ['--version', '--store', '/nonexistent'], ['-V', '--json']]) {
      const c = capture();
      expect(await run(argv, c.io)).toBe(0);
      expect(c.text()).toEqual({ stdout: `${VERSION}\n`, stderr: '' });
    }
  });

  it('loads the text layout only where help is printed', () => {
    const inspect = modulesOpened(['inspect', join(SAMPLES, 'tiny-model/model.gguf')]);
    expect(inspect.stdout).toContain('token_embd.weight');
    expect(inspect.files.some((f) => f.includes('/node_modules/yargs/'))).toBe(true);
    expect(inspect.files.filter((f) => LAYOUT.test(f))).toEqual([]);
    const help = modulesOpened(['inspect', '--help']);
    expect(help.stdout).toContain('tfs inspect');
    expect(help.files.some((f) => LAYOUT.test(f))).toBe(true);
  });

  it('imports a local file without loading the remote or tensors packages or the HTTP client', () => {
    const store = join(tempDir('tfs-startup-'), 'store');
    const out = modulesOpened(
      ['--store', store, 'import', join(SAMPLES, 'tiny-model/model.safetensors'), '--json'],
      true,
    );
    expect(JSON.parse(out.stdout).files).toBe(1);
    expect(out.files.some((f) => f.includes('/packages/cas/dist/'))).toBe(true);
    expect(out.files.filter((f) => /\/packages\/(remote|tensors)\/|\/node_modules\/(\.pnpm\/)?undici/.test(f))).toEqual(
      [],
    );
  });
});
