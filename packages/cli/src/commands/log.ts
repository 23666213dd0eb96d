/**
 * `tfs log <repo>[@<branch>] [--from <origin>]`: a branch's moves, newest first (time, author,
 * message, previous head → new head), read from the branch head's revision document: one object
 * read on any origin.
 */
import { LocalStore } from '@tensorfs/cas';
import { branchLog, parseRepoSpec } from '@tensorfs/format';
import type { Store } from '@tensorfs/format/store';
import type { Argv } from 'yargs';
import { defineCommand } from '../command.js';
import type { GlobalArgs } from '../context.js';
import { type TokenArgs, originOf, tokenOption } from './remote.js';
import { SPECS } from './specs.js';

interface LogArgs extends TokenArgs {
  branch: string;
  from?: string;
}

export const logCommand = defineCommand<LogArgs>({
  ...SPECS.log,
  builder: (y) =>
    tokenOption(
      y
        .positional('branch', {
          type: 'string',
          demandOption: true,
          describe: 'owner/name[@branch] (default branch: main)',
        })
        .option('from', {
          type: 'string',
          describe: 'origin to read (remote name, URL or folder); default: the local store',
        }),
    ) as unknown as Argv<LogArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    const spec = parseRepoSpec(args.branch);
    const branch = spec.revision ?? 'main';
    const origin = args.from !== undefined ? await originOf(ctx, args.from, args) : undefined;
    const store = origin === undefined ? await LocalStore.open(ctx.existingStoreDir(), { readOnly: true }) : undefined;
    const src: Store = origin ?? store!;
    try {
      const entries = await branchLog(src, spec.repo, branch);
      ctx.result({ repo: spec.repo, branch, entries }, () =>
        entries.map((e) => [
          e.time === null ? '(before repositories)' : new Date(e.time).toISOString(),
          e.author ?? '-',
          `${e.previous ?? 'none'} -> ${e.commit}`,
          `tree ${e.target}`,
          e.message ?? '',
        ]),
      );
    } finally {
      await store?.close();
      await origin?.close();
    }
  },
});
