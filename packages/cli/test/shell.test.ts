import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { TensorFSError } from '@tensorfs/format';
import { describe, expect, it } from 'vitest';
import { defineCommand, lazyCommand, type TfsCommand } from '../src/command.js';
import { commands } from '../src/commands/index.js';
import { SPECS } from '../src/commands/specs.js';
import { EXIT_CODES, run, VERSION } from '../src/index.js';
import { runCommands } from '../src/shell.js';
import { capture } from './helpers.js';

const fail = defineCommand<{ code: string }>({
  command: 'fail <code>',
  describe: 'Throws a TensorFSError of the given family',
  builder: (y) => y.positional('code', { type: 'string', demandOption: true, describe: 'error family' }),
  handler: async (args) => {
    throw new TensorFSError(args.code as never, 'it failed', { details: { n: 2n ** 64n } });
  },
});
const echo = defineCommand<{ word: string }>({
  command: 'echo <word>',
  describe: 'Prints its argument and the store directory',
  builder: (y) => y.positional('word', { type: 'string', demandOption: true, describe: 'what to print' }),
  handler: async (args, ctx) => ctx.result({ word: args.word, store: ctx.storeDir }, () => args.word),
});
const crash = defineCommand({
  command: 'crash',
  describe: 'Throws a plain Error',
  handler: async () => {
    throw new Error('not ours');
  },
});
// biome-ignore lint/suspicious/noExplicitAny: commands differ in their argument types
const cmds: TfsCommand<any>[] = [fail, echo, crash];

/** The table README.md and packages/cli/README.md promise, written out: scripts depend on it. */

describe('tfs shell', () => {
  it('maps every family to its stable exit code, human and JSON', async () => {
    for (const [code, exit] of Object.entries(EXIT_CODES)) {
      const c = capture();
      expect(await runCommands(['fail', code], c.io, cmds)).toBe(exit);
      expect(c.text().stderr).toBe(`error[${code}]: it failed\n`);
      expect(c.text().stdout).toBe('');
      const j = capture();
      expect(await runCommands(['fail', code, '--json'], j.io, cmds)).toBe(exit);
      expect(JSON.parse(j.text().stderr)).toEqual({
        error: { code, message: 'it failed', details: { n: '18446744073709551616' } },
      });
    }
  });

  it('exits 2 on an unknown command, an unknown option and a missing command', async () => {
    for (const argv of [['frob'], ['echo', 'x', '--nope'], [], ['fail']]) {
      const c = capture();
      expect(await runCommands(argv, c.io, cmds)).toBe(2);
      expect(c.text().stderr).toMatch(/error\[invalid_argument\]: /);
    }
    const j = capture();
    expect(await runCommands(['frob', '--json'], j.io, cmds)).toBe(2);
    expect(JSON.parse(j.text().stderr).error.code).toBe('invalid_argument');
  });

  it('turns a foreign error into internal (exit 1)', async () => {
    const c = capture();
    expect(await runCommands(['crash'], c.io, cmds)).toBe(1);
    expect(c.text().stderr).toBe('error[internal]: not ours\n');
  });

  it('prints help, per-command help and the version on stdout with exit 0', async () => {
    const h = capture();
    expect(await runCommands(['--help'], h.io, cmds)).toBe(0);
    expect(h.text().stdout).toContain('tfs echo <word>');
    expect(h.text().stdout).toContain('--store');
    const e = capture();
    expect(await runCommands(['echo', '--help'], e.io, cmds)).toBe(0);
    expect(e.text().stdout).toContain('what to print');
    const v = capture();
    expect(await runCommands(['--version'], v.io, cmds)).toBe(0);
    expect(v.text().stdout).toBe(`${VERSION}\n`);
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('resolves the store from --store, then TENSORFS_HOME', async () => {
    const a = capture();
    await runCommands(['echo', 'hi', '--json', '--store', '/tmp/s1'], a.io, cmds);
    expect(JSON.parse(a.text().stdout)).toEqual({ word: 'hi', store: '/tmp/s1' });
    const b = capture();
    await runCommands(['echo', 'hi', '--json'], { ...b.io, env: { TENSORFS_HOME: '/tmp/s2' } }, cmds);
    expect(JSON.parse(b.text().stdout).store).toBe('/tmp/s2');
    const c = capture();
    await runCommands(['echo', 'hi'], c.io, cmds);
    expect(c.text().stdout).toBe('hi\n');
  });

  it('the built bin behaves the same as a process', () => {
    const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
    const help = spawnSync(process.execPath, [bin, '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('tfs <command>');
    const ver = spawnSync(process.execPath, [bin, '--version'], { encoding: 'utf8' });
    expect(ver.stdout.trim()).toBe(VERSION);
    const bad = spawnSync(process.execPath, [bin, 'no-such-command'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('error[invalid_argument]');
  });
});

describe('lazy commands', () => {
  /** `echo` and `fail` behind loaders that count their loads. */
  const counted = () => {
    const loads = { echo: 0, fail: 0 };
    const list = [
      lazyCommand(echo, async () => {
        loads.echo++;
        return echo;
      }),
      lazyCommand(fail, async () => {
        loads.fail++;
        return fail;
      }),
    ];
    return { loads, list };
  };

  it('loads a command module only for its own command, once', async () => {
    const { loads, list } = counted();
    const c = capture();
    expect(await runCommands(['echo', 'hi'], c.io, list)).toBe(0);
    expect(c.text()).toEqual({ stdout: 'hi\n', stderr: '' });
    expect(loads).toEqual({ echo: 1, fail: 0 });
    const f = capture();
    expect(await runCommands(['fail', 'corrupt'], f.io, list)).toBe(EXIT_CODES.corrupt);
    expect(f.text().stderr).toBe('error[corrupt]: it failed\n');
    expect(loads).toEqual({ echo: 1, fail: 1 });
  });

  it('lists every command in --help without loading any, and loads one for its own --help', async () => {
    const { loads, list } = counted();
    const h = capture();
    expect(await runCommands(['--help'], h.io, list)).toBe(0);
    expect(h.text().stdout).toContain('tfs echo <word>');
    expect(h.text().stdout).toContain('Throws a TensorFSError of the given family');
    expect(loads).toEqual({ echo: 0, fail: 0 });
    const e = capture();
    expect(await runCommands(['echo', '--help'], e.io, list)).toBe(0);
    expect(e.text().stdout).toContain('what to print');
    expect(loads).toEqual({ echo: 1, fail: 0 });
    const u = capture();
    expect(await runCommands(['echo'], u.io, list)).toBe(2);
    expect(u.text().stderr).toMatch(/error\[invalid_argument\]: Not enough non-option arguments/);
  });

  it('yargs still has the help-cache hook the shell turns off (or the ~20 ms come back unnoticed)', async () => {
    const { default: yargs } = await import('yargs');
    // biome-ignore lint/suspicious/noExplicitAny: yargs' internal methods are not in its types
    const usage = (yargs([]) as any).getInternalMethods().getUsageInstance();
    expect(typeof usage.cacheHelpMessage).toBe('function');
  });

  it('every entry of the command list loads the command its spec names', async () => {
    expect(commands.map((c) => c.command)).toEqual(Object.values(SPECS).map((s) => s.command));
    for (const entry of commands) {
      const cmd = await entry.load();
      expect({ command: cmd.command, describe: cmd.describe }).toEqual({
        command: entry.command,
        describe: entry.describe,
      });
      expect(typeof cmd.handler).toBe('function');
    }
  });
});

describe('tfs env', () => {
  it('reports the version and the store directory as JSON', async () => {
    const c = capture();
    expect(await run(['env', '--json', '--store', '/nonexistent/tfs-store'], c.io)).toBe(0);
    const j = JSON.parse(c.text().stdout);
    expect(j).toMatchObject({ version: VERSION, store: '/nonexistent/tfs-store', store_exists: false });
  });
});
