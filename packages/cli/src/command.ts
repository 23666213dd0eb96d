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
