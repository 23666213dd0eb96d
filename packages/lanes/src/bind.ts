/**
 * The bind engine: does a checkpoint, known by its headers only, bind to a lane? One
 * implementation, fail-closed: `admit` when the candidate IS the layout, `derivable` with priced
 * steps, `refuse` naming the first disagreeing tensor.
 */
import { TensorFSError } from '@tensorfs/format';
import type { Catalog, LaneRef, MorphismEdge } from './catalog.js';
import type { DocRef, RuleDoc } from './documents.js';
import { byteLength, castIsExact, castTarget, isBlockType, isKnownDtype } from './dtypes.js';
import type { LayoutComponent, LayoutEntry, LayoutPart } from './layout.js';

/** One tensor of a candidate: name, dtype (safetensors or GGML spelling), shape. */
export interface CandidateTensor {
  name: string;
  dtype: string;
  shape: readonly number[];
}

/** Candidate headers in the neutral shape: `{component -> [{name, dtype, shape}]}`. */
export type CandidateHeaders = Readonly<Record<string, readonly CandidateTensor[]>>;

/** A storage tier: T1 rekey, T2 contiguous seam, T3 interleaved seam or permutation, T4 quantize/cast. */
export type Tier = 'T1' | 'T2' | 'T3' | 'T4';

/** One priced step of a derivation. */
export interface BindStep {
  tier: Tier;
  /** `rekey`, `split`, `fuse`, `permute`, `cast`, `quantize`, `dequantize`, `requantize`, `relayout`. */
  op: string;
  component: string;
  /** What the step applies: a morphism (`name@v`, with `inverse`) or a dtype/rule change (`F64->F32`). */
  via: string;
  /** True when the step loses information (narrowing cast, quantization); lossy steps are gated. */
  lossy: boolean;
  /**
   * Tensors read (source names) and written (target names), one row per op; a permutation carries
   * its kind and head count, a seam its axis and part sizes.
   */
  tensors: {
    from: string[];
    to: string[];
    permute?: { kind: string; heads: number };
    seam?: { axis: number; sizes: number[] };
  }[];
  /** Bytes of the source tensors the step reads. */
  bytes: number;
  /** New bytes the step stores: 0 for T1 and T2. */
  newBytes: number;
}

/** Why a bind was refused: the first disagreeing tensor. */
/** The rules a bind refuses by: the error rule of {@link BindRefusal}. */
export type BindRefusalRule =
  | 'lanes.missing_tensor'
  | 'lanes.shape_mismatch'
  | 'lanes.same_count_wrong_dims'
  | 'lanes.extra_tensor'
  | 'lanes.convention_undeclared'
  | 'lanes.convention_mismatch'
  | 'lanes.extra_component'
  | 'lanes.missing_component';

export interface BindRefusal {
  /** `lanes.missing_tensor`, `lanes.shape_mismatch`, `lanes.same_count_wrong_dims`, `lanes.extra_tensor`, `lanes.convention_undeclared`, `lanes.convention_mismatch`, `lanes.extra_component`, `lanes.missing_component`. */
  rule: BindRefusalRule;
  component: string;
  tensor: string;
  expected: { shape: number[]; dtypes: string[] } | null;
  actual: { shape: number[]; dtype: string } | null;
  /** The layout the candidate was compared with (its closest source in the catalog). */
  against: string;
  message: string;
}

/** The answer of {@link bind}. */
export interface BindResult {
  verdict: 'admit' | 'derivable' | 'refuse';
  lane: string;
  /** For `derivable`: the layout the candidate was recognised as (`topology+rule`). */
  source: string | null;
  steps: BindStep[];
  refuse: BindRefusal | null;
  /** True when any step is lossy (then applying needs an explicit allowance). */
  lossy: boolean;
  /** Sum of `newBytes` over the steps. */
  newBytes: number;
}

/** Options for {@link bind}. */
export interface BindOptions {
  /** Bind only this component of the lane (the candidate's component of the same name, or its only one). */
  component?: string;
  /**
   * Convention facts the candidate declares (for example from a cozytensors encoding:
   * `{scale_layout: 'row_major', nibble_order: 'lo_first'}`). Needed when two rules' layouts
   * coincide in names, dtypes and shapes and differ only by convention.
   */
  conventions?: Readonly<Record<string, string>>;
}

interface Match {
  topology: DocRef;
  rule: DocRef;
  path: MorphismEdge[];
  comp: LayoutComponent;
  missing: LayoutPart[];
  shape: { part: LayoutPart; t: CandidateTensor }[];
  dtype: { part: LayoutPart; t: CandidateTensor }[];
  extra: CandidateTensor[];
  /** First disagreement in layout order. */
  first: BindRefusal | null;
}

/** Code dtypes identify an encoding: a candidate whose codes differ is not that rule's layout. */
const CODE_ROLES = new Set(['codes', 'blocks']);

const sameShape = (a: readonly number[], b: readonly number[]) =>
  a.length === b.length && a.every((d, i) => d === b[i]);
const count = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);

function checkCandidate(c: string, tensors: readonly CandidateTensor[]): Map<string, CandidateTensor> {
  const m = new Map<string, CandidateTensor>();
  for (const t of tensors) {
    if (!t || typeof t.name !== 'string' || typeof t.dtype !== 'string' || !Array.isArray(t.shape))
      throw new TensorFSError('invalid_argument', `component ${c}: a candidate tensor is {name, dtype, shape}`, {
        details: { rule: 'lanes.candidate' },
      });
    if (m.has(t.name))
      throw new TensorFSError('invalid_argument', `component ${c}: ${t.name} appears twice`, {
        details: { rule: 'lanes.candidate', tensor: t.name },
      });
    const big = t.shape.find((d) => Number.isInteger(d) && d > Number.MAX_SAFE_INTEGER);
    if (big !== undefined)
      throw new TensorFSError(
        'limit_exceeded',
        `${t.name}: a dimension exceeds 2^53 − 1, the largest TensorFS addresses`,
        {
          details: { rule: 'lanes.dimension_limit', tensor: t.name },
        },
      );
    if (!t.shape.every((d) => Number.isSafeInteger(d) && d >= 0))
      throw new TensorFSError('invalid_argument', `${t.name}: dims must be non-negative safe integers`, {
        details: { rule: 'lanes.candidate', tensor: t.name },
      });
    if (!isKnownDtype(t.dtype))
      throw new TensorFSError('unsupported', `${t.name}: dtype ${t.dtype} is neither a safetensors nor a GGML type`, {
        details: { rule: 'lanes.candidate_dtype', tensor: t.name, actual: t.dtype },
      });
    m.set(t.name, t);
  }
  return m;
}

function match(
  cand: Map<string, CandidateTensor>,
  comp: LayoutComponent,
  topology: DocRef,
  rule: DocRef,
  path: MorphismEdge[],
  c: string,
  full: boolean,
): Match {
  const against = `${topology}+${rule}`;
  const m: Match = { topology, rule, path, comp, missing: [], shape: [], dtype: [], extra: [], first: null };
  let present = 0;
  for (const e of comp.entries) {
    for (const p of e.parts) {
      const t = cand.get(p.name);
      if (t) present++;
      if (!t) {
        if (!e.optional) {
          m.missing.push(p);
          m.first ??= {
            rule: 'lanes.missing_tensor',
            component: c,
            tensor: p.name,
            expected: { shape: [...p.shape], dtypes: [...p.dtypes] },
            actual: null,
            against,
            message: `${p.name} is missing (expected [${p.shape}] ${p.dtypes.join('|')})`,
          };
          if (!full) return m;
        }
      } else if (!sameShape(t.shape, p.shape)) {
        m.shape.push({ part: p, t });
        if (!m.first) {
          const same = count(t.shape) === count(p.shape);
          m.first = {
            rule: same ? 'lanes.same_count_wrong_dims' : 'lanes.shape_mismatch',
            component: c,
            tensor: p.name,
            expected: { shape: [...p.shape], dtypes: [...p.dtypes] },
            actual: { shape: [...t.shape], dtype: t.dtype },
            against,
            message: same
              ? `${p.name} is [${t.shape}], expected [${p.shape}]: the same element count in different dims (a reshape is not a derivation)`
              : `${p.name} is [${t.shape}], expected [${p.shape}]`,
          };
        }
        if (!full) return m;
      } else if (!p.dtypes.includes(t.dtype)) {
        m.dtype.push({ part: p, t });
        if (!full && CODE_ROLES.has(p.role)) return m;
      }
    }
  }
  if (cand.size !== present) {
    for (const t of cand.values())
      if (!comp.byName.has(t.name)) {
        m.extra.push(t);
        m.first ??= {
          rule: 'lanes.extra_tensor',
          component: c,
          tensor: t.name,
          expected: null,
          actual: { shape: [...t.shape], dtype: t.dtype },
          against,
          message: `${t.name} is not part of the layout: nothing may be left over`,
        };
        if (!full) return m;
      }
  }
  return m;
}

/** Conventions only matter where a layout quantizes something. */
const quantizes = (c: LayoutComponent) => c.entries.some((e) => e.quantized);
const fits = (m: Match) =>
  m.missing.length === 0 &&
  m.shape.length === 0 &&
  m.extra.length === 0 &&
  !m.dtype.some((d) => CODE_ROLES.has(d.part.role));
const misfit = (m: Match) => m.missing.length + m.shape.length + m.extra.length;

/** Topologies with a morphism path to `target`, nearest first, with the path (source -> target). */
function sourcesOf(catalog: Catalog, target: DocRef): { topology: DocRef; path: MorphismEdge[] }[] {
  const out = [{ topology: target, path: [] as MorphismEdge[] }];
  const seen = new Set<string>([target]);
  for (let i = 0; i < out.length; i++) {
    const cur = out[i] as { topology: DocRef; path: MorphismEdge[] };
    for (const e of catalog.edges.get(cur.topology) ?? []) {
      if (seen.has(e.to)) continue;
      seen.add(e.to);
      // e goes cur -> e.to; the derivation runs e.to -> cur: the opposite edge.
      const back = (catalog.edges.get(e.to) ?? []).find(
        (x) => x.to === cur.topology && x.morphism === e.morphism,
      ) as MorphismEdge;
      out.push({ topology: e.to, path: [back, ...cur.path] });
    }
  }
  return out;
}

const CONVENTION_PARAMS = new Set(['nibble_order', 'scale_layout']);

function conventionsDiffer(a: RuleDoc, b: RuleDoc): boolean {
  const ka = Object.keys(a.conventions);
  const kb = Object.keys(b.conventions);
  return ka.length !== kb.length || ka.some((k) => a.conventions[k] !== b.conventions[k]);
}

function declaredFits(rule: RuleDoc, declared: Readonly<Record<string, string>>): boolean {
  return Object.entries(declared).every(([k, v]) => !(k in rule.conventions) || rule.conventions[k] === v);
}

/** Same scheme and params once convention facts are set aside: converting is a lossless relayout. */
function sameValues(a: RuleDoc, b: RuleDoc): boolean {
  if (!a.encoding || !b.encoding || a.encoding.scheme !== b.encoding.scheme) return false;
  const strip = (p: Record<string, unknown>) =>
    JSON.stringify(
      Object.keys(p)
        .filter((k) => !CONVENTION_PARAMS.has(k))
        .sort()
        .map((k) => [k, p[k]]),
    );
  return strip(a.encoding.params) === strip(b.encoding.params);
}

class Steps {
  readonly list: BindStep[] = [];
  private readonly by = new Map<string, BindStep>();
  add(
    s: Omit<BindStep, 'tensors' | 'bytes' | 'newBytes'>,
    from: string[],
    to: string[],
    bytes: number,
    newBytes: number,
    extra?: { permute?: { kind: string; heads: number }; seam?: { axis: number; sizes: number[] } },
  ): void {
    const key = s.component + '|' + s.tier + '|' + s.op + '|' + s.via + (s.lossy ? '|1' : '|0');
    let step = this.by.get(key);
    if (!step) {
      step = { ...s, tensors: [], bytes: 0, newBytes: 0 };
      this.by.set(key, step);
      this.list.push(step);
    }
    step.tensors.push(extra ? { from, to, ...extra } : { from, to });
    step.bytes += bytes;
    step.newBytes += newBytes;
  }
}

interface CastPlan {
  to: string;
  op: string;
  lossy: boolean;
  via: string;
}
const castPlans = new WeakMap<readonly string[], Map<string, CastPlan>>();

/** How a dense tensor of dtype `d` reaches one of `accepted` (memoized: the hot path of a cast). */
function castPlan(d: string, accepted: readonly string[]): CastPlan {
  let memo = castPlans.get(accepted);
  if (!memo) castPlans.set(accepted, (memo = new Map()));
  let plan = memo.get(d);
  if (!plan) {
    const to = castTarget(d, accepted);
    const bd = isBlockType(d);
    const bt = isBlockType(to);
    const op = bd || bt ? (bd && !bt ? 'dequantize' : bt && !bd ? 'quantize' : 'requantize') : 'cast';
    const lossy = op === 'dequantize' ? to !== 'F32' : bd || bt || !castIsExact(d, to);
    plan = { to, op, lossy, via: `${d}->${to}` };
    memo.set(d, plan);
  }
  return plan;
}

function partsBytes(parts: readonly LayoutPart[], dtypeOf: (p: LayoutPart) => string): number {
  return parts.reduce((a, p) => a + byteLength(dtypeOf(p), p.shape), 0);
}

/** Derivation steps from the matched source layout to the lane layout, for one component. */
function derive(
  catalog: Catalog,
  lane: LaneRef,
  m: Match,
  cand: Map<string, CandidateTensor>,
  c: string,
  steps: Steps,
): void {
  const srcRule = catalog.rule(m.rule);
  // dtype of each (key, role) as the candidate holds it; follows the keys through the morphisms.
  const dt = new Map<string, Map<string, string>>();
  const dget = (key: string, role: string) => dt.get(key)?.get(role);
  const dset = (key: string, role: string, d: string) => {
    let r = dt.get(key);
    if (!r) dt.set(key, (r = new Map()));
    r.set(role, d);
  };
  for (const e of m.comp.entries)
    for (const p of e.parts) {
      const t = cand.get(p.name);
      if (t) dset(e.key, p.role, t.dtype);
    }
  const tiled = srcRule.conventions.row_slicing === 'tiled';
  for (const edge of m.path) {
    const fromLayout = catalog.layout({ topology: edge.from, rule: m.rule }).components[c];
    if (!fromLayout) continue;
    const entries = new Map(fromLayout.entries.map((e) => [e.key, e]));
    const via = `${edge.morphism}${edge.inverse ? ' (inverse)' : ''}`;
    for (const { component, applied } of catalog.appliedOps(edge)) {
      if (component !== c) continue;
      for (const op of applied) {
        const srcEntries = op.from
          .map((k) => entries.get(k))
          .filter(
            (e): e is LayoutEntry =>
              e !== undefined && (!e.optional || e.parts.some((p) => dget(e.key, p.role) !== undefined)),
          );
        if (srcEntries.length === 0) continue;
        const srcParts = srcEntries.flatMap((e) => e.parts);
        const dOf = (p: LayoutPart) => dget(p.key, p.role) ?? (p.dtypes[0] as string);
        const bytes = partsBytes(srcParts, dOf);
        const quantized = srcEntries.some((e) => e.quantized);
        const toLayout = catalog.layout({ topology: edge.to, rule: m.rule }).components[c];
        const toEntries = op.to
          .map((k) => toLayout?.entries.find((e) => e.key === k))
          .filter((e): e is LayoutEntry => e !== undefined);
        const names = (es: LayoutEntry[]) => es.flatMap((e) => e.parts.map((p) => p.name));
        let tier: Tier;
        if (op.kind === 'rekey' && op.from[0] === op.to[0]) continue;
        if (op.kind === 'rekey') tier = 'T1';
        else if (op.kind === 'permute') tier = 'T3';
        else tier = op.contiguous && !(quantized && tiled) ? 'T2' : 'T3';
        steps.add(
          { tier, op: op.kind, component: c, via, lossy: false },
          names(srcEntries),
          names(toEntries),
          bytes,
          tier === 'T1' || tier === 'T2' ? 0 : bytes,
          op.perm ? { permute: op.perm } : op.seam ? { seam: op.seam } : undefined,
        );
        // carry dtypes to the new keys
        const first = srcEntries[0] as LayoutEntry;
        for (const k of op.to)
          for (const p of first.parts) {
            const d = dget(first.key, p.role);
            if (d) dset(k, p.role, d);
          }
      }
    }
  }
  // Now at the lane's topology, still in the source rule: rule and dtype changes.
  const cur = catalog.layout({ topology: lane.topology, rule: m.rule }).components[c] as LayoutComponent;
  const want = catalog.layout(lane).components[c] as LayoutComponent;
  const dstRule = catalog.rule(lane.rule);
  const wantBy = new Map(want.entries.map((e) => [e.key, e]));
  for (const e of cur.entries) {
    const w = wantBy.get(e.key) as LayoutEntry;
    const roles = dt.get(e.key);
    const have = (p: LayoutPart) => roles?.get(p.role);
    if (e.optional && !e.parts.some((p) => have(p) !== undefined)) continue;
    if (!e.quantized && !w.quantized) {
      // The common case, kept lean: one dense tensor, maybe a cast.
      const p = e.parts[0] as LayoutPart;
      const d = roles?.get(p.role) ?? (p.dtypes[0] as string);
      const wp = w.parts[0] as LayoutPart;
      if (wp.dtypes.includes(d)) continue;
      const plan = castPlan(d, wp.dtypes);
      steps.add(
        { tier: 'T4', op: plan.op, component: c, via: plan.via, lossy: plan.lossy },
        [p.name],
        [wp.name],
        byteLength(d, p.shape),
        byteLength(plan.to, wp.shape),
      );
      continue;
    }
    const dOf = (p: LayoutPart) => have(p) ?? (p.dtypes[0] as string);
    const srcBytes = partsBytes(e.parts, dOf);
    const srcNames = e.parts.map((p) => p.name);
    const dstNames = w.parts.map((p) => p.name);
    if (e.quantized && w.quantized && m.rule === lane.rule) {
      for (const p of e.parts) {
        const d = dOf(p);
        if (p.dtypes.includes(d)) continue;
        const to = p.dtypes[0] as string;
        steps.add(
          { tier: 'T4', op: 'cast', component: c, via: `${d}->${to}`, lossy: !castIsExact(d, to) },
          [p.name],
          [p.name],
          byteLength(d, p.shape),
          byteLength(to, p.shape),
        );
      }
    } else if (!e.quantized && w.quantized) {
      steps.add(
        {
          tier: 'T4',
          op: 'quantize',
          component: c,
          via: `${dOf(e.parts[0] as LayoutPart)}->${lane.rule}`,
          lossy: true,
        },
        srcNames,
        dstNames,
        srcBytes,
        partsBytes(w.parts, (p) => p.dtypes[0] as string),
      );
    } else if (e.quantized && !w.quantized) {
      const wp = w.parts[0] as LayoutPart;
      const to = wp.dtypes.includes('F32') ? 'F32' : (wp.dtypes[0] as string);
      steps.add(
        { tier: 'T4', op: 'dequantize', component: c, via: `${m.rule}->${to}`, lossy: to !== 'F32' },
        srcNames,
        dstNames,
        srcBytes,
        byteLength(to, wp.shape),
      );
    } else if (sameValues(srcRule, dstRule)) {
      const out = partsBytes(w.parts, (p) => p.dtypes[0] as string);
      steps.add(
        { tier: 'T3', op: 'relayout', component: c, via: `${m.rule}->${lane.rule}`, lossy: false },
        srcNames,
        dstNames,
        srcBytes,
        out,
      );
    } else {
      const out = partsBytes(w.parts, (p) => p.dtypes[0] as string);
      steps.add(
        { tier: 'T4', op: 'requantize', component: c, via: `${m.rule}->${lane.rule}`, lossy: true },
        srcNames,
        dstNames,
        srcBytes,
        out,
      );
    }
  }
}

function refuseResult(laneName: string, r: BindRefusal): BindResult {
  return { verdict: 'refuse', lane: laneName, source: null, steps: [], refuse: r, lossy: false, newBytes: 0 };
}

/**
 * Binds candidate headers to a lane. Headers only: no tensor byte is read. Throws only for
 * malformed input (`invalid_argument`/`unsupported`, `lanes.candidate*`) or an unknown lane
 * (`not_found`); every disagreement is a `refuse` answer, never an exception.
 */
export function bind(
  candidate: CandidateHeaders,
  lane: string | LaneRef,
  catalog: Catalog,
  options: BindOptions = {},
): BindResult {
  const ref = typeof lane === 'string' ? catalog.lane(lane) : lane;
  const laneName = `${ref.topology}+${ref.rule}`;
  const layout = catalog.layout(ref);
  const laneRule = catalog.rule(ref.rule);
  let components = Object.keys(layout.components);
  const candNames = Object.keys(candidate);
  const pick: Record<string, string> = {};
  if (options.component !== undefined) {
    if (!layout.components[options.component])
      throw new TensorFSError('not_found', `lane ${laneName} has no component ${options.component}`, {
        details: { rule: 'lanes.unknown_component', component: options.component },
      });
    components = [options.component];
    pick[options.component] = candidate[options.component]
      ? options.component
      : candNames.length === 1
        ? (candNames[0] as string)
        : options.component;
  } else {
    for (const c of components) pick[c] = c;
    if (components.length === 1 && candNames.length === 1) pick[components[0] as string] = candNames[0] as string;
    const used = new Set(Object.values(pick));
    const stray = candNames.find((n) => !used.has(n));
    if (stray !== undefined) {
      const first = candidate[stray]?.[0];
      return refuseResult(laneName, {
        rule: 'lanes.extra_component',
        component: stray,
        tensor: first?.name ?? '',
        expected: null,
        actual: first ? { shape: [...first.shape], dtype: first.dtype } : null,
        against: laneName,
        message: `component ${stray} is not part of lane ${laneName}`,
      });
    }
  }
  const steps = new Steps();
  let source: string | null = null;
  for (const c of components) {
    const tensors = candidate[pick[c] as string];
    if (!tensors)
      return refuseResult(laneName, {
        rule: 'lanes.missing_component',
        component: c,
        tensor: '',
        expected: null,
        actual: null,
        against: laneName,
        message: `the candidate has no component ${c}`,
      });
    const cand = checkCandidate(c, tensors);
    const comp = layout.components[c] as LayoutComponent;
    // Fast path: the candidate is (or nearly is) the lane's own layout.
    const own = match(cand, comp, ref.topology, ref.rule, [], c, false);
    const all: Match[] = [];
    if (fits(own) && own.dtype.length === 0) {
      all.push(own);
      for (const r of catalog.rules.values()) {
        if (r === laneRule || r.emit.length !== laneRule.emit.length || !conventionsDiffer(r, laneRule)) continue;
        const other = catalog.layout({ topology: ref.topology, rule: `${r.name}@${r.version}` as DocRef }).components[
          c
        ];
        if (other) all.push(match(cand, other, ref.topology, `${r.name}@${r.version}` as DocRef, [], c, false));
      }
    } else {
      // First pass stops at each layout's first disagreement; only a refusal needs full counts.
      const tries: { lc: LayoutComponent; topology: DocRef; rule: DocRef; path: MorphismEdge[] }[] = [];
      for (const src of sourcesOf(catalog, ref.topology))
        for (const r of [laneRule, ...[...catalog.rules.values()].filter((x) => x !== laneRule)]) {
          const rr = `${r.name}@${r.version}` as DocRef;
          const lc = catalog.layout({ topology: src.topology, rule: rr }).components[c];
          if (lc) tries.push({ lc, topology: src.topology, rule: rr, path: src.path });
        }
      for (const x of tries)
        all.push(x.lc === comp && x.path.length === 0 ? own : match(cand, x.lc, x.topology, x.rule, x.path, c, false));
      if (!all.some(fits)) {
        all.length = 0;
        for (const x of tries) all.push(match(cand, x.lc, x.topology, x.rule, x.path, c, true));
      }
    }
    const ok = all.filter(fits);
    if (ok.length === 0) {
      let best = all[0] as Match;
      for (const m of all) if (misfit(m) < misfit(best)) best = m;
      return refuseResult(laneName, best.first as BindRefusal);
    }
    // Prefer a perfect fit, then the lane's topology, then the lane's rule, then the shortest path.
    const rank = (m: Match) => [
      m.dtype.length ? 1 : 0,
      m.topology === ref.topology ? 0 : 1,
      m.rule === ref.rule ? 0 : 1,
      m.path.length,
      m.dtype.length,
    ];
    ok.sort((a, b) => {
      const ra = rank(a);
      const rb = rank(b);
      for (let i = 0; i < ra.length; i++) if (ra[i] !== rb[i]) return (ra[i] as number) - (rb[i] as number);
      return 0;
    });
    let chosen = ok[0] as Match;
    // Fail closed on conventions: layouts that coincide but decode differently need a declaration.
    const twins = ok.filter(
      (m) =>
        m !== chosen &&
        chosen.dtype.length === 0 &&
        m.dtype.length === 0 &&
        m.topology === chosen.topology &&
        quantizes(m.comp) &&
        quantizes(chosen.comp) &&
        conventionsDiffer(catalog.rule(m.rule), catalog.rule(chosen.rule)),
    );
    if (twins.length) {
      const group = [chosen, ...twins];
      const declared = options.conventions;
      const firstQuant = chosen.comp.entries.find((e) => e.quantized)?.parts[0];
      const tensor = firstQuant?.name ?? '';
      const t = cand.get(tensor);
      const refusal = (rule: BindRefusalRule, message: string): BindRefusal => ({
        rule,
        component: c,
        tensor,
        expected: firstQuant ? { shape: [...firstQuant.shape], dtypes: [...firstQuant.dtypes] } : null,
        actual: t ? { shape: [...t.shape], dtype: t.dtype } : null,
        against: group.map((m) => `${m.topology}+${m.rule}`).join(' | '),
        message,
      });
      if (!declared || Object.keys(declared).length === 0)
        return refuseResult(
          laneName,
          refusal(
            'lanes.convention_undeclared',
            `${tensor} fits ${group.map((m) => m.rule).join(' and ')} alike; they decode differently and the candidate declares no conventions`,
          ),
        );
      const fitting = group.filter((m) => declaredFits(catalog.rule(m.rule), declared));
      if (fitting.length !== 1)
        return refuseResult(
          laneName,
          refusal(
            fitting.length ? 'lanes.convention_undeclared' : 'lanes.convention_mismatch',
            fitting.length
              ? `the declared conventions do not single out one of ${group.map((m) => m.rule).join(', ')}`
              : `the declared conventions match none of ${group.map((m) => m.rule).join(', ')}`,
          ),
        );
      chosen = fitting[0] as Match;
    }
    if (chosen.topology === ref.topology && chosen.rule === ref.rule && chosen.dtype.length === 0) continue;
    source ??= `${chosen.topology}+${chosen.rule}`;
    derive(catalog, ref, chosen, cand, c, steps);
  }
  const list = steps.list;
  if (list.length === 0)
    return { verdict: 'admit', lane: laneName, source: null, steps: [], refuse: null, lossy: false, newBytes: 0 };
  return {
    verdict: 'derivable',
    lane: laneName,
    source,
    steps: list,
    refuse: null,
    lossy: list.some((s) => s.lossy),
    newBytes: list.reduce((a, s) => a + s.newBytes, 0),
  };
}

/** {@link bind}, throwing `conflict` (`details.rule` from the refusal) instead of answering `refuse`. */
export function bindOrThrow(
  candidate: CandidateHeaders,
  lane: string | LaneRef,
  catalog: Catalog,
  options: BindOptions = {},
): BindResult {
  const r = bind(candidate, lane, catalog, options);
  if (r.verdict === 'refuse' && r.refuse)
    throw new TensorFSError('conflict', `does not bind to ${r.lane}: ${r.refuse.message}`, {
      details: { ...r.refuse, lane: r.lane },
    });
  return r;
}
