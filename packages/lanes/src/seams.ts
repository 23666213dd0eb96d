/**
 * Planner seams from a bind answer: where a fused tensor's parts begin, as byte offsets, so an
 * import cuts its objects there and a T2 split (or a later fuse) costs no new tensor byte.
 */
import { type BindOptions, bind, type CandidateHeaders } from './bind.js';
import type { Catalog, LaneRef } from './catalog.js';
import { byteLength } from './dtypes.js';

/**
 * The seams (`tensor name → byte offsets`, as `planAndHash`/`importPath` take them) that make
 * every T2 split of binding `candidate` to `lane` fall on object boundaries. Empty when the
 * answer splits nothing (admit, refuse, or no contiguous seam). Headers only.
 *
 * @example
 * ```ts
 * const seams = laneSeams(candidateFromSafetensors(header), 'phi-3-mini-split', defaultCatalog());
 * await store.importPath(dir, { name: 'local/phi3', seams: { 'model.safetensors': seams } });
 * ```
 */
export function laneSeams(
  candidate: CandidateHeaders,
  lane: string | LaneRef,
  catalog: Catalog,
  options: BindOptions = {},
): Record<string, number[]> {
  const r = bind(candidate, lane, catalog, options);
  const out: Record<string, number[]> = {};
  if (r.verdict !== 'derivable') return out;
  const byName = new Map(Object.values(candidate).flatMap((ts) => ts.map((t) => [t.name, t] as const)));
  // Names a rekey gave before the split: follow them back to the candidate's.
  const original = new Map<string, string>();
  for (const s of r.steps) {
    if (s.op === 'rekey')
      for (const row of s.tensors)
        for (const [i, to] of row.to.entries())
          original.set(to, original.get(row.from[i] as string) ?? (row.from[i] as string));
    if (s.tier !== 'T2' || s.op !== 'split') continue;
    for (const row of s.tensors) {
      if (row.from.length !== 1 || !row.seam || row.seam.axis !== 0) continue;
      const name = original.get(row.from[0] as string) ?? (row.from[0] as string);
      const t = byName.get(name);
      if (!t || t.shape.length === 0 || t.shape[0] === 0) continue;
      const rowBytes = byteLength(t.dtype, t.shape) / (t.shape[0] as number);
      if (!Number.isSafeInteger(rowBytes)) continue;
      const offsets: number[] = [];
      let at = 0;
      for (const size of row.seam.sizes.slice(0, -1)) offsets.push((at += size) * rowBytes);
      if (offsets.length) out[name] = offsets;
    }
  }
  return out;
}
