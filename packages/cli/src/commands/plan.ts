import fs from 'node:fs';
import { TensorFSError } from '@tensorfs/format';
import type { Seams } from '@tensorfs/planner';
import { defineCommand } from '../command.js';
import { formatBytes } from '../progress.js';
import { SPECS } from './specs.js';

/** `tfs plan <file>`: the records a file is stored as, without touching a store. */
export const planCommand = defineCommand<{ file: string; seams?: string; threads?: number }>({
  ...SPECS.plan,
  builder: (y) =>
    y
      .positional('file', { type: 'string', demandOption: true, describe: 'any file' })
      .option('seams', {
        type: 'string',
        describe: 'extra cut points inside tensors: JSON {"tensor":[byteOffset,...]} inline or in a file',
      })
      .option('threads', { type: 'number', describe: 'hashing threads (default: all cores)' }),
  handler: async (args, ctx) => {
    const seams = args.seams === undefined ? undefined : parseSeams(args.seams);
    // Loaded here, not at start-up: other commands need neither.
    const { createNodeHasher, openFileSource } = await import('@tensorfs/cas');
    const { planAndHash, planToJSON } = await import('@tensorfs/planner');
    const source = await openFileSource(args.file);
    const hasher = createNodeHasher(args.threads === undefined ? {} : { threads: args.threads });
    const bar = ctx.progress('plan');
    try {
      const plan = await planAndHash(source, {
        hasher,
        signal: ctx.signal,
        onProgress: bar.update,
        ...(seams ? { seams } : {}),
      });
      bar.done();
      const json = planToJSON(plan);
      ctx.result(json, () => {
        const spans = new Map<number, string>();
        for (const [name, [first]] of plan.tensors ?? []) spans.set(first, name);
        return [
          `${plan.profile}, ${formatBytes(plan.size)}, ${plan.records.length} records`,
          ...plan.records.map(
            (r, i) =>
              `${String(i).padStart(5)}  ${r.digest}  ${String(r.length).padStart(10)}${spans.has(i) ? `  ${spans.get(i)}` : ''}`,
          ),
        ];
      });
    } finally {
      bar.done();
      await hasher.close();
      await source.close();
    }
  },
});

function parseSeams(text: string): Seams {
  let raw = text.trim();
  if (!raw.startsWith('{')) {
    try {
      raw = fs.readFileSync(raw, 'utf8');
    } catch {
      throw new TensorFSError('invalid_argument', '--seams: not inline JSON and not a readable file', {
        details: { rule: 'cli.seams_file' },
      });
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new TensorFSError('invalid_argument', '--seams: not valid JSON', { details: { rule: 'cli.seams_json' } });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TensorFSError('invalid_argument', '--seams: expected an object {"tensor":[offsets]}', {
      details: { rule: 'cli.seams_shape' },
    });
  }
  const seams: Record<string, number[]> = Object.create(null);
  for (const [name, offsets] of Object.entries(value)) {
    if (!Array.isArray(offsets) || !offsets.every((o) => Number.isSafeInteger(o) && o > 0)) {
      throw new TensorFSError('invalid_argument', '--seams: offsets must be positive integers', {
        details: { rule: 'cli.seams_shape', tensor: name },
      });
    }
    seams[name] = offsets;
  }
  return seams;
}
