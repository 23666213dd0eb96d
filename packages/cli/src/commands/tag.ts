/**
 * `tfs tag <repo>@<revision> <tag> [--to <origin>]`: a release. The revision is resolved where
 * the tag is made (the local store, or the origin with `--to`); a tag never moves, so naming an
 * existing tag is `conflict` (`repo.tag_exists`), even for the same revision.
 */
import { LocalStore } from '@tensorfs/cas';
import { createTag, parseRepoSpec, type ObjectId } from '@tensorfs/format';
import type { Store } from '@tensorfs/format/store';
import type { Argv } from 'yargs';
import { defineCommand } from '../command.js';
import type { GlobalArgs } from '../context.js';
import { type TokenArgs, originOf, tokenOption } from './remote.js';
import { SPECS } from './specs.js';

interface TagArgs extends TokenArgs {
  revision: string;
  tag: string;
  to?: string;
}

export const tagCommand = defineCommand<TagArgs>({
  ...SPECS.tag,
  builder: (y) =>
    tokenOption(
      y
        .positional('revision', {
          type: 'string',
          demandOption: true,
          describe:
            'what to release: owner/name@branch, owner/name@tag or owner/name@sha256:<id> (bare owner/name: main)',
        })
        .positional('tag', { type: 'string', demandOption: true, describe: 'the tag (one segment, e.g. v1.0)' })
        .option('to', {
          type: 'string',
          describe: 'origin to tag on (remote name, URL or folder); default: the local store',
        }),
    ) as unknown as Argv<TagArgs & GlobalArgs>,
  handler: async (args, ctx) => {
    const spec = parseRepoSpec(args.revision);
    const origin = args.to !== undefined ? await originOf(ctx, args.to, args) : undefined;
    const store = origin === undefined ? await LocalStore.open(ctx.existingStoreDir()) : undefined;
    const dest: Store = origin ?? store!;
    try {
      const r = (await createTag(dest, { repo: spec.repo, tag: args.tag, revision: spec.revision ?? 'main' })) as
        | { head?: ObjectId; ref?: string }
        | undefined;
      const out = { repo: spec.repo, tag: args.tag, revision: spec.revision ?? 'main', ...(r ?? {}) };
      ctx.result(out, () => `${spec.repo}@${args.tag} -> ${r?.head ?? spec.revision ?? 'main'}`);
    } finally {
      await store?.close();
      await origin?.close();
    }
  },
});
