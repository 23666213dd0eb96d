import type { Argv } from 'yargs';
import type { CommandContext, GlobalArgs } from './context.js';

/**
 * One `tfs` command. `handler` throws a TensorFSError on failure; the shell turns it into
 * `error[<code>]: <message>` (or JSON with `--json`) and the family's exit code.
 */
export interface TfsCommand<A = Record<string, unknown>> {
  /** yargs command string, e.g. `inspect <file>`. */
  command: string;
  /** One line for `tfs --help`. */
  describe: string;
  /** Declares positionals and options (each needs a description, shown by `tfs <cmd> --help`). */
  builder?: (y: Argv<GlobalArgs>) => Argv<A & GlobalArgs>;
  /** Does the work; returns nothing (results are written through `ctx`). */
  handler: (args: A & GlobalArgs, ctx: CommandContext) => Promise<void>;
}

/** Identity helper that keeps the argument types of a command. */
export function defineCommand<A>(cmd: TfsCommand<A>): TfsCommand<A> {
  return cmd;
}

/**
 * A command known by its syntax and description only; its module (with everything it imports)
 * loads when the command is parsed or run, so one command never pays for the others.
 */
export interface LazyCommand {
  command: string;
  describe: string;
  // biome-ignore lint/suspicious/noExplicitAny: commands differ in their argument types
  load: () => Promise<TfsCommand<any>>;
}

/** A {@link LazyCommand} that loads its module at most once. */
export function lazyCommand(
  spec: { command: string; describe: string },
  // biome-ignore lint/suspicious/noExplicitAny: commands differ in their argument types
  load: () => Promise<TfsCommand<any>>,
): LazyCommand {
  // biome-ignore lint/suspicious/noExplicitAny: as above
  let loaded: Promise<TfsCommand<any>> | undefined;
  return { command: spec.command, describe: spec.describe, load: () => (loaded ??= load()) };
}
