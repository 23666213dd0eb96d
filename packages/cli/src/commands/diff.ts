/**
 * `tfs diff <refA> <refB>`: what changed between two snapshots or checkpoints (tensors paired by
 * the model's names, whatever file or shard holds them), from headers and object ids.
 */
import { resolveModelId, VARIANT_OPTION } from './revision.js';
import { LocalStore } from '@tensorfs/cas';
import { type DiffTensor, diffSnapshots, type SnapshotDiff } from '@tensorfs/tensors';
import { defineCommand } from '../command.js';
import { formatBytes } from '../progress.js';
import { SPECS } from './specs.js';

function where(t: DiffTensor): string {
  return `${t.file}: ${t.name}`;
}

function facts(t: DiffTensor): string {
  return `${t.dtype} [${t.shape.join(', ')}]`;
}

/** The human form of a diff: one line per tensor or file that differs, then the totals. */
export function humanDiff(d: SnapshotDiff): string[] {
  const lines: string[] = [`a ${d.a} (${d.kinds[0]})`, `b ${d.b} (${d.kinds[1]})`];
  const t = d.tensors;
  for (const x of t.changed) {
    const what: string[] = [];
    if (x.dtypeChanged) what.push(`dtype ${x.before.dtype} -> ${x.after.dtype}`);
    if (x.shapeChanged) what.push(`shape [${x.before.shape.join(', ')}] -> [${x.after.shape.join(', ')}]`);
    if (what.length === 0) what.push('bytes');
    lines.push(`~ ${where(x.after)}  ${what.join(', ')}`);
  }
  for (const x of t.renamed) lines.push(`> ${where(x.from)} -> ${where(x.to)}  ${facts(x.to)}`);
  for (const x of t.removed) lines.push(`- ${where(x)}  ${facts(x)}`);
  for (const x of t.added) lines.push(`+ ${where(x)}  ${facts(x)}`);
  for (const f of d.files) lines.push(`file ${f.status} ${f.path}`);
  for (const c of d.configs) {
    if (c.error !== undefined) lines.push(`config ${c.path}: ${c.error}`);
    for (const ch of c.changes) {
      const before = ch.status === 'added' ? '' : JSON.stringify(ch.before);
      const after = ch.status === 'removed' ? '' : JSON.stringify(ch.after);
      lines.push(
        `config ${c.path} ${ch.pointer || '/'}: ${before}${ch.status === 'changed' ? ' -> ' : ''}${after} (${ch.status})`,
      );
    }
  }
  lines.push(
    `tensors: ${t.changed.length} changed, ${t.renamed.length} renamed, ${t.removed.length} removed, ${t.added.length} added, ${t.unchanged} unchanged`,
  );
  lines.push(`pull of b with a: ${d.pull.objects} objects, ${formatBytes(d.pull.bytes)}`);
  return lines;
}

/** `tfs diff <refA> <refB>`. */
export const diffCommand = defineCommand<{
  refA: string;
  refB: string;
  file?: string;
  component?: string;
  variant?: string;
}>({
  ...SPECS.diff,
  builder: (y) =>
    y
      .positional('refA', {
        type: 'string',
        demandOption: true,
        describe: 'the old side: ref name, snapshot or checkpoint id',
      })
      .positional('refB', {
        type: 'string',
        demandOption: true,
        describe: 'the new side: ref name, snapshot or checkpoint id',
      })
      .option('file', { type: 'string', describe: 'compare this tensor file (or shard index) only, on both sides' })
      .option('component', {
        type: 'string',
        describe:
          "compare this component only (a checkpoint's component, or a snapshot's top folder of that name; model for files at its root)",
      })
      .option('variant', { ...VARIANT_OPTION, describe: `${VARIANT_OPTION.describe}, on both sides` }),
  handler: async (args, ctx) => {
    const store = await LocalStore.open(ctx.existingStoreDir(), { readOnly: true });
    try {
      const side = (spec: string) => (args.variant === undefined ? spec : resolveModelId(store, spec, args.variant));
      const d = await diffSnapshots(store, await side(args.refA), await side(args.refB), {
        signal: ctx.signal,
        ...(args.file !== undefined ? { file: args.file } : {}),
        ...(args.component !== undefined ? { component: args.component } : {}),
      });
      ctx.result(d, () => humanDiff(d));
    } finally {
      await store.close();
    }
  },
});
