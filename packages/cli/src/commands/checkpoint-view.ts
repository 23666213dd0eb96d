/**
 * How the CLI shows a checkpoint: the `tfs inspect` shape and lines, the `tfs tensors` rows. Kept
 * apart from the commands so `store.ts`, `tensors.ts` and `checkpoint.ts` share it without a cycle.
 */
import type { LocalStore } from '@tensorfs/cas';
import { type CheckpointHeader, isCheckpointHeader, type ObjectId } from '@tensorfs/format';
import type { Checkpoint } from '@tensorfs/tensors';
import { formatBytes } from '../progress.js';

/** True when `id` is a checkpoint header (reads its first four bytes). */
export async function isCheckpoint(
  store: Pick<LocalStore, 'objectSize' | 'readObjectRange'>,
  id: ObjectId,
): Promise<boolean> {
  const size = await store.objectSize(id);
  return size >= 4 && isCheckpointHeader(await store.readObjectRange(id, 0, 4));
}

/** The `tfs inspect --json` form of a checkpoint header (issue 12's exact shape). */
export function inspectCheckpoint(id: ObjectId, header: CheckpointHeader) {
  return {
    format: 'cozytensors',
    id,
    pipeline: header.pipeline === null ? null : { cls: header.pipeline.cls, config: header.pipeline.config },
    components: header.components.map((c) => ({
      name: c.name,
      cls: c.cls,
      config: c.config,
      tensors: c.tensors.map((t) => ({
        name: t.name,
        dtype: t.dtype,
        shape: t.shape,
        encoding:
          t.encoding === undefined
            ? null
            : {
                scheme: t.encoding.scheme,
                params: t.encoding.params,
                parts: Object.fromEntries(
                  Object.entries(t.encoding.parts).map(([role, p]) => [role, { dtype: p.dtype, shape: p.shape }]),
                ),
              },
      })),
      assets: c.assets.map((a) => ({ name: a.name, size: a.records.reduce((n, r) => n + r.length, 0) })),
    })),
  };
}

/** Human lines for an inspected checkpoint. */
export function checkpointLines(d: ReturnType<typeof inspectCheckpoint>): string[] {
  const lines = [`cozytensors checkpoint ${d.id}${d.pipeline ? `, pipeline ${d.pipeline.cls || '(no class)'}` : ''}`];
  for (const c of d.components) {
    lines.push(`  ${c.name} (${c.cls || 'no class'}): ${c.tensors.length} tensors, ${c.assets.length} assets`);
    for (const t of c.tensors) {
      const enc = t.encoding
        ? `  ${t.encoding.scheme} ${paramsText(t.encoding.params)} [${Object.entries(t.encoding.parts)
            .map(([role, p]) => `${role}: ${p.dtype} [${p.shape.join(', ')}]`)
            .join('; ')}]`
        : '';
      lines.push(`    ${t.name}  ${t.dtype}  [${t.shape.join(', ')}]${enc}`);
    }
    for (const a of c.assets) lines.push(`    asset ${a.name}  ${formatBytes(a.size)}`);
  }
  return lines;
}

/** An encoding's params for a human line: compact JSON without the logical shape and dtype (shown already). */
function paramsText(params: unknown): string {
  if (params === null || typeof params !== 'object' || Array.isArray(params)) return JSON.stringify(params);
  const { shape: _shape, dtype: _dtype, ...rest } = params as Record<string, unknown>;
  return JSON.stringify(rest);
}

/** The `tfs tensors --json` rows of a checkpoint (optionally one component). */
export function checkpointTensorRows(cp: Checkpoint, component?: string) {
  const comps = component === undefined ? [...cp.components.values()] : [cp.component(component)];
  return comps.flatMap((c) =>
    [...c.tensors.values()].map((v) => ({
      component: c.name,
      name: v.name,
      dtype: v.dtype,
      shape: v.shape.map(Number),
      bytes: v.allRecords.reduce((n, r) => n + r.length, 0),
      objects: v.allRecords.map((r) => r.digest),
      encoding: v.encoding === null ? null : v.encoding.scheme,
    })),
  );
}
