import { TensorFSError, toTensorFSError } from '@tensorfs/format';
import type { LazyCommand, TfsCommand } from './command.js';
import { type CliIO, CommandContext, escapeControls, type GlobalArgs, toJson } from './context.js';
import { EXIT_CODES } from './exit-codes.js';
import { PROGRESS_MODES } from './progress.js';
import { VERSION } from './version.js';

/**
 * Runs `tfs` with `argv` (without `node` and the script) and returns the exit code.
 * Never throws and never calls `process.exit`.
 */
export async function run(argv: readonly string[], io: CliIO): Promise<number> {
  if (versionOnly(argv)) return runCommands(argv, io, []);
  // The commands (and the store, tensors, remote and lanes packages they import) load only for a
  // command: `tfs --version` costs little more than starting Node. The build splits them into
  // their own chunk, so this import is what loads them.
  const { commands } = await import('./commands/index.js');
  return runCommands(argv, io, commands);
}

/** `tfs --version` alone (or `-V`): answered before the parser and the commands load. */
function versionOnly(argv: readonly string[]): boolean {
  return argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V');
}

/** {@link run} over a given command list (internal; tests use it to exercise the shell). */
export async function runCommands(
  argv: readonly string[],
  io: CliIO,
  // biome-ignore lint/suspicious/noExplicitAny: commands differ in their argument types
  available: readonly (TfsCommand<any> | LazyCommand)[],
): Promise<number> {
  // `tfs --version` answers before the parser and the commands load: start-up is nearly all it costs.
  if (versionOnly(argv)) {
    io.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const { default: yargs } = await import('yargs');
  const wantsJson = jsonRequested(argv);
  // yargs leaves everything after `--` out of the positionals, so `tfs import -- -file` found no
  // path. Pass those operands under placeholders that cannot look like options, and put the
  // real text back into the parsed arguments.
  const operands = new Map<string, string>();
  const dashdash = argv.indexOf('--');
  if (dashdash >= 0) {
    argv = [
      ...argv.slice(0, dashdash),
      ...argv.slice(dashdash + 1).map((text, i) => {
        const key = `\u0000operand${i}\u0000`;
        operands.set(key, text);
        return key;
      }),
    ];
  }
  const restore = (v: unknown): unknown =>
    typeof v === 'string' ? (operands.get(v) ?? v) : Array.isArray(v) ? v.map(restore) : v;
  let failure: TensorFSError | undefined;

  const parser = yargs([...argv])
    .scriptName('tfs')
    .usage('$0 <command> [options]\n\nStore, move and read model checkpoints, one tensor at a time.')
    .option('json', { type: 'boolean', default: false, global: true, describe: 'Machine-readable output on stdout' })
    .option('store', {
      type: 'string',
      global: true,
      describe: 'Store directory (default: $TENSORFS_HOME, else ~/.cache/tensorfs)',
    })
    .option('offline', {
      type: 'boolean',
      default: false,
      global: true,
      describe: 'Open no network connection; what needs one fails (exit 9); also $TENSORFS_OFFLINE=1',
    })
    .option('progress', {
      choices: PROGRESS_MODES,
      default: 'auto',
      global: true,
      describe: 'Progress on stderr: a bar on a terminal (auto), one JSON line per event (json), or none',
    })
    .strict()
    .strictCommands()
    .demandCommand(1, 'Name a command; `tfs --help` lists them.')
    .version('version', 'Show the version', VERSION)
    .alias('version', 'V')
    .help('help')
    .alias('help', 'h')
    .wrap(Math.min(100, process.stdout.columns ?? 100))
    .exitProcess(false)
    .fail((message: string | undefined, err: Error | undefined) => {
      failure = err
        ? toTensorFSError(err, 'invalid_argument')
        : new TensorFSError('invalid_argument', (message ?? 'invalid arguments').replace(/\s*\n\s*/g, ' '), {
            details: { rule: 'cli.usage' },
          });
      throw failure;
    });

  for (const entry of available) {
    // A lazy command's module loads only when yargs parses that command (its builder runs first,
    // for `tfs <cmd> --help` too); yargs awaits a builder that returns a promise.
    // biome-ignore lint/suspicious/noExplicitAny: yargs' overloads cannot express a command list of mixed argument types
    (parser as any).command({
      command: entry.command,
      describe: entry.describe,
      builder: (y: never) => {
        if (!('load' in entry)) return entry.builder ? entry.builder(y) : y;
        return entry.load().then((cmd) => (cmd.builder ? cmd.builder(y) : y));
      },
      handler: async (args: never) => {
        const a = args as GlobalArgs & Record<string, unknown>;
        for (const k of Object.keys(a)) a[k] = restore(a[k]);
        try {
          const cmd = 'load' in entry ? await entry.load() : entry;
          await cmd.handler(a, new CommandContext(io, a));
        } catch (err) {
          failure = toTensorFSError(err);
        }
      },
    });
  }

  // Before running a command's handler, yargs renders that command's whole help text and keeps
  // it for a handler that might call showHelp() (ours never do): loading string-width and cliui
  // and wrapping every option costs ~20 ms of every run. Skipped when yargs exposes the hook;
  // help and usage errors render as before.
  // biome-ignore lint/suspicious/noExplicitAny: yargs' internal methods are not in its types
  const usage = (parser as any).getInternalMethods?.()?.getUsageInstance?.();
  if (typeof usage?.cacheHelpMessage === 'function') usage.cacheHelpMessage = () => {};
  let output = '';
  try {
    await parser.parseAsync([...argv], {}, (_err: unknown, _args: unknown, out: string) => {
      output = out;
    });
  } catch (err) {
    failure ??= toTensorFSError(err, 'invalid_argument');
  }
  if (output) {
    // Help and version text go to stdout; yargs' usage errors to stderr below.
    if (!failure) io.stdout.write(output.endsWith('\n') ? output : `${output}\n`);
    else if (!wantsJson) io.stderr.write(output.endsWith('\n') ? output : `${output}\n`);
  }
  if (failure) return report(failure, io, wantsJson);
  return 0;
}

function report(err: TensorFSError, io: CliIO, json: boolean): number {
  if (json) io.stderr.write(`${toJson({ error: err.toJSON() })}\n`);
  else io.stderr.write(`${humanError(err)}\n`);
  return EXIT_CODES[err.code];
}

/** Detail keys that say which file, ref or shard is at fault, in the order they are shown. */
const WHERE = ['ref', 'shard', 'path', 'file', 'tensor'] as const;

/**
 * `error[<code>]: <message> (<where>)`: the file, ref or shard at fault is named in human mode too
 * (unless the message already says it). Control characters are escaped; a message of several
 * lines has its later lines indented, so nothing can start a line of its own.
 */
export function humanError(err: TensorFSError): string {
  const where: string[] = [];
  for (const k of WHERE) {
    const v = err.details[k];
    if (typeof v === 'string' && v.length > 0 && !err.message.includes(v)) where.push(`${k} ${v}`);
  }
  const text = where.length > 0 ? `${err.message} (${where.join(', ')})` : err.message;
  return `error[${err.code}]: ${text.split('\n').map(escapeControls).join('\n  ')}`;
}

/** True when `--json` is on: `--json`, `--json=true`, or `--json true` (last one wins, `--no-json` too). */
function jsonRequested(argv: readonly string[]): boolean {
  let on = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') break;
    if (a === '--json') on = argv[i + 1] !== 'false';
    else if (a === '--json=true') on = true;
    else if (a === '--json=false' || a === '--no-json') on = false;
  }
  return on;
}
