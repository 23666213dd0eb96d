/**
 * Every command that writes a destination answers the same way when something is in the way
 * (`pnpm build` first: these run the built `dist/bin.js`, as a user would):
 * - `export` onto an existing regular file (a snapshot, a checkpoint, `--portable`): `conflict`,
 *   rule `export.not_a_folder`, exit 7, a message that says to remove it or choose another folder;
 * - `cat -o` / `lanes derive --out` onto a folder: `conflict`, rule `cli.output_type`, exit 7;
 *   into a folder that does not exist: `not_found`, rule `cli.output_folder`, exit 6;
 * - onto an existing regular file, `cat -o` and `--out` replace it (atomically), like `cp`;
 * and nothing is half-written, and no message names a local absolute path.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { safetensorsBytes } from '@tensorfs/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

let work: string;
let store: string;

/** Runs the built `tfs` in `work` with a watchdog; fails naming the command if it does not finish. */
function tfs(...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args, '--store', store], {
    cwd: work,
    timeout: 60_000,
    encoding: 'utf8',
  });
  if (r.error || r.signal) throw new Error(`tfs ${args.join(' ')} did not finish: ${r.error?.message ?? r.signal}`);
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The `--json` error of a failed run, with its exit code checked against the family's. */
function jsonError(args: string[], exit: number) {
  const r = tfs(...args, '--json');
  expect(r.code, `exit code of tfs ${args.join(' ')} (${r.stderr})`).toBe(exit);
  expect(r.stderr).not.toContain(work);
  const { error } = JSON.parse(r.stderr) as {
    error: { code: string; message: string; details: Record<string, unknown> };
  };
  return error;
}

// One folder for the whole file (testkit's tempDir is emptied after each test).
afterAll(() => rmSync(work, { recursive: true, force: true }));
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'tfs-dest-'));
  store = join(work, 'store');
  writeFileSync(join(work, 'm.safetensors'), safetensorsBytes([{ name: 'w', data: new Uint8Array([1, 2, 3, 4]) }]));
  expect(tfs('import', 'm.safetensors', '--name', 'local/m').code).toBe(0);
  expect(tfs('convert', 'local/m', '--name', 'local/cp').code).toBe(0);
}, 120_000);

describe('tfs export onto an existing regular file', () => {
  it.each([
    ['a snapshot', ['export', 'local/m', 'taken']],
    ['a checkpoint', ['export', 'local/cp', 'taken']],
    ['a checkpoint, --portable', ['export', 'local/cp', 'taken', '--portable']],
    ['a checkpoint, --cozytensors', ['export', 'local/cp', 'taken', '--cozytensors']],
  ])('%s: conflict (exit 7), export.not_a_folder, says what to do; the file is untouched', (_name, args) => {
    writeFileSync(join(work, 'taken'), 'keep me');
    const error = jsonError(args, 7);
    expect(error).toEqual({
      code: 'conflict',
      message: 'export destination taken exists and is not a folder: remove it or choose another folder',
      details: { rule: 'export.not_a_folder', path: 'taken' },
    });
    expect(readFileSync(join(work, 'taken'), 'utf8')).toBe('keep me');
    // Without --json: the same family on stderr, the same exit code.
    const r = tfs(...args);
    expect(r.code).toBe(7);
    expect(r.stderr).toBe(
      'error[conflict]: export destination taken exists and is not a folder: remove it or choose another folder\n',
    );
  });

  it('a file on the way to the destination (taken/sub) is the same conflict', () => {
    writeFileSync(join(work, 'taken'), 'keep me');
    for (const ref of ['local/m', 'local/cp']) {
      const error = jsonError(['export', ref, 'taken/sub'], 7);
      expect(error.code).toBe('conflict');
      expect(error.details.rule).toBe('export.not_a_folder');
    }
  });

  it('an existing folder is fine: the export goes into it', () => {
    const dir = join(work, 'out-existing');
    mkdirSync(dir);
    writeFileSync(join(dir, 'other.txt'), 'left alone');
    expect(tfs('export', 'local/m', 'out-existing').code).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(['m.safetensors', 'other.txt']);
  });
});

describe('tfs cat -o and lanes derive --out', () => {
  const writers: [string, (dest: string) => string[]][] = [
    ['cat -o', (dest) => ['cat', 'local/m', 'w', '-o', dest]],
    ['lanes derive --out', (dest) => ['lanes', 'derive', 'local/m', '--name', 'probe', '--out', dest]],
  ];

  it.each(writers)('%s onto a folder: conflict (exit 7), cli.output_type, says what to do', (name, argv) => {
    mkdirSync(join(work, 'folder'), { recursive: true });
    const flag = name.split(' ').pop();
    const error = jsonError(argv('folder'), 7);
    expect(error).toEqual({
      code: 'conflict',
      message: `${flag} must name a file, and folder is a folder: remove it or name another path`,
      details: { rule: 'cli.output_type', path: 'folder' },
    });
  });

  it.each(writers)('%s into a folder that does not exist: not_found (exit 6), cli.output_folder', (name, argv) => {
    const flag = name.split(' ').pop();
    const error = jsonError(argv('missing/x.bin'), 6);
    expect(error).toEqual({
      code: 'not_found',
      message: `the folder for ${flag} x.bin does not exist: create it first`,
      details: { rule: 'cli.output_folder', path: 'x.bin' },
    });
    expect(readdirSync(work)).not.toContain('missing');
  });

  it.each(writers)('%s onto an existing regular file replaces it, leaving no temp behind', (_name, argv) => {
    const dir = join(work, `replace-${_name.replace(/\W+/g, '-')}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'old'), 'old bytes');
    const r = tfs(...argv(join(dir, 'old')));
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(dir, 'old'), 'utf8')).not.toBe('old bytes');
    expect(readdirSync(dir)).toEqual(['old']);
  });

  it('cat -o writes the tensor bytes exactly', () => {
    expect(tfs('cat', 'local/m', 'w', '-o', 'w.bin').code).toBe(0);
    expect([...readFileSync(join(work, 'w.bin'))]).toEqual([1, 2, 3, 4]);
  });
});
