/** Candidate variants over a lane, shared by the bind tests and the baselines. */
import type { CandidateTensor, Catalog, LaneRef } from '@tensorfs/lanes';

export type Variant = {
  name: string;
  candidate: Record<string, CandidateTensor[]>;
  conventions?: Record<string, string>;
};

/** The lane's layout written out as a candidate: every tensor at its preferred dtype. */
export function exactCandidate(catalog: Catalog, lane: LaneRef): Record<string, CandidateTensor[]> {
  const out: Record<string, CandidateTensor[]> = {};
  for (const [c, comp] of Object.entries(catalog.layout(lane).components))
    out[c] = comp.entries.flatMap((e) =>
      e.parts.map((p) => ({ name: p.name, dtype: p.dtypes[0] as string, shape: [...p.shape] })),
    );
  return out;
}

const mapAll = (
  cand: Record<string, CandidateTensor[]>,
  f: (t: CandidateTensor, c: string) => CandidateTensor | null,
) =>
  Object.fromEntries(
    Object.entries(cand).map(([c, ts]) => [c, ts.map((t) => f(t, c)).filter((t): t is CandidateTensor => t !== null)]),
  );

/** exact, each morphism neighbour, cast, quantized, one wrong shape, one missing key, one extra key. */
export function variants(catalog: Catalog, lane: LaneRef): Variant[] {
  const exact = exactCandidate(catalog, lane);
  const layout = catalog.layout(lane);
  const out: Variant[] = [{ name: 'exact', candidate: exact }];
  for (const e of catalog.edges.get(lane.topology) ?? [])
    out.push({ name: `from:${e.to}`, candidate: exactCandidate(catalog, { topology: e.to, rule: lane.rule }) });
  const roleOf = new Map<string, string>();
  for (const comp of Object.values(layout.components)) for (const p of comp.byName.values()) roleOf.set(p.name, p.role);
  out.push({
    name: 'cast',
    candidate: mapAll(exact, (t) => {
      const role = roleOf.get(t.name);
      if (role === 'dense') return { ...t, dtype: 'F64' };
      if (role === 'scale' || role === 'global_scale') return { ...t, dtype: 'F16' };
      return t;
    }),
  });
  const none = lane.rule === 'none@1';
  out.push({
    name: none ? 'quantized:int8-rowwise' : 'quantized:dense-bf16',
    candidate: exactCandidate(catalog, { topology: lane.topology, rule: none ? 'int8-rowwise@1' : 'none@1' }),
  });
  const c0 = Object.keys(exact)[0] as string;
  const ts = exact[c0] as CandidateTensor[];
  const victim = ts.find((t) => t.shape.length === 2 && t.shape[0] !== t.shape[1]) ?? (ts[0] as CandidateTensor);
  const wrong =
    victim.shape.length === 2
      ? [victim.shape[1] as number, victim.shape[0] as number]
      : victim.shape.map((d, i) => (i === 0 ? d + 1 : d));
  out.push({
    name: 'wrong-shape',
    candidate: mapAll(exact, (t) => (t.name === victim.name ? { ...t, shape: wrong } : t)),
  });
  const last = ts[ts.length - 1] as CandidateTensor;
  out.push({ name: 'missing-key', candidate: mapAll(exact, (t) => (t.name === last.name ? null : t)) });
  out.push({
    name: 'extra-key',
    candidate: { ...exact, [c0]: [...ts, { name: 'lanes.extra.weight', dtype: 'F32', shape: [8] }] },
  });
  // Where a rule's identity includes layout conventions, candidates declare them (as a cozytensors
  // encoding does), and one more variant shows the same header undeclared.
  const conv = catalog.rule(lane.rule).conventions;
  const declared = Object.fromEntries(
    ['nibble_order', 'scale_layout'].filter((k) => k in conv).map((k) => [k, conv[k] as string]),
  );
  if (Object.keys(declared).length && catalog.rule(lane.rule).encoding?.scheme === 'nvfp4') {
    for (const v of out) v.conventions = declared;
    out.push({ name: 'exact-undeclared', candidate: exact });
  }
  return out;
}
