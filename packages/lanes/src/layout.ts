/**
 * Topologies from headers, and layouts: `quant(topology)`, always computed, never stored.
 */
import { globMatcher, TensorFSError } from '@tensorfs/format';
import { documentDigest } from './canonical.js';
import type { DocRef, RuleDoc, TopologyComponent, TopologyDoc } from './documents.js';
import { refOf } from './documents.js';
import { evalExpr } from './expr.js';

/** One tensor as a header states it: name, dtype, shape. */
export interface HeaderTensor {
  name: string;
  dtype: string;
  shape: readonly number[];
}

/** A banked reference header (`spec/v2/headers/*.json`). */
export interface BankedHeader {
  __source__?: Record<string, unknown>;
  tensors: HeaderTensor[];
}

/** Options for {@link deriveTopology}. */
export interface DeriveOptions {
  name: string;
  version?: number;
  /** Component name for the header's tensors. @default "model" */
  component?: string;
  /** How the header is referred to in `derived_from.header`. */
  header: string;
}

/**
 * Derives a topology mechanically from a header: every tensor's name and shape, dtypes dropped,
 * keys sorted. Duplicate names are `malformed` (`lanes.duplicate_key`).
 */
export function deriveTopology(header: BankedHeader, opts: DeriveOptions): TopologyDoc {
  const keys: Record<string, number[]> = {};
  for (const t of [...header.tensors].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (Object.hasOwn(keys, t.name))
      throw new TensorFSError('malformed', `the header names ${t.name} twice`, {
        details: { rule: 'lanes.duplicate_key', tensor: t.name },
      });
    keys[t.name] = t.shape.map((d) => {
      if (!Number.isSafeInteger(d) || d < 0)
        throw new TensorFSError('malformed', `${t.name} has a dimension that is not a safe integer`, {
          details: { rule: 'lanes.shape', tensor: t.name },
        });
      return d;
    });
  }
  return {
    kind: 'tensorfs.lanes.topology',
    name: opts.name,
    version: opts.version ?? 1,
    derived_from: { header: opts.header, digest: documentDigest({ ...header }) },
    components: { [opts.component ?? 'model']: { keys, optional: [] } },
  };
}

/** One tensor of a layout. */
export interface LayoutPart {
  /** Tensor name in the layout. */
  name: string;
  /** The topology key it carries. */
  key: string;
  /** `dense`, or the emission role (`codes`, `scale`...). */
  role: string;
  /** Accepted dtypes (the first is preferred). */
  dtypes: readonly string[];
  shape: readonly number[];
}

/** One topology key in a layout, and the tensors that carry it. */
export interface LayoutEntry {
  key: string;
  /** The logical shape from the topology. */
  shape: readonly number[];
  optional: boolean;
  /** True when the rule quantizes this key. */
  quantized: boolean;
  parts: LayoutPart[];
}

/** One component of a layout. */
export interface LayoutComponent {
  entries: LayoutEntry[];
  /** Every layout tensor by name. */
  byName: Map<string, LayoutPart>;
}

/** `quant(topology)`: the header a runtime expects. */
export interface Layout {
  topology: DocRef;
  rule: DocRef;
  components: Record<string, LayoutComponent>;
}

// Rule globs are in the one dialect of every pattern a user types (`--tensors`, `--include`,
// token scopes), through its one matcher; tensor keys hold no `/`, so `*` spans any run of a key.
const globCache = new Map<string, (key: string) => boolean>();
function glob(pattern: string): (key: string) => boolean {
  let match = globCache.get(pattern);
  if (!match) {
    match = globMatcher(pattern);
    globCache.set(pattern, match);
  }
  return match;
}

/** True when `rule` quantizes a tensor with this key and logical shape. */
export function isEligible(rule: RuleDoc, key: string, shape: readonly number[]): boolean {
  const e = rule.eligible;
  if (!e || shape.length !== e.rank) return false;
  if (!e.include.some((g) => glob(g)(key)) || e.exclude.some((g) => glob(g)(key))) return false;
  const vars = dimVars(shape);
  return e.divisible.every(({ dim, by }) => {
    const v = vars[dim];
    return v !== undefined && v % by === 0;
  });
}

function dimVars(shape: readonly number[]): Record<string, number> {
  const vars: Record<string, number> = {};
  shape.forEach((d, i) => {
    vars[`D${i}`] = d;
  });
  if (shape.length >= 1) vars.K = shape[shape.length - 1] as number;
  if (shape.length >= 2) vars.N = shape.slice(0, -1).reduce((a, b) => a * b, 1);
  return vars;
}

/** The emissions of `rule` for one eligible key: pure functions of its dims. */
export function emissionsOf(rule: RuleDoc, key: string, shape: readonly number[]): LayoutPart[] {
  const vars = dimVars(shape);
  return rule.emit.map((e) => ({
    name: key + e.suffix,
    key,
    role: e.role,
    dtypes: [e.dtype],
    shape: e.shape.map((s) => evalExpr(s, vars)),
  }));
}

function layoutComponent(rule: RuleDoc, comp: TopologyComponent, where: string): LayoutComponent {
  const optional = new Set(comp.optional);
  const entries: LayoutEntry[] = [];
  const byName = new Map<string, LayoutPart>();
  for (const [key, shape] of Object.entries(comp.keys)) {
    const quantized = isEligible(rule, key, shape);
    const parts = quantized
      ? emissionsOf(rule, key, shape)
      : [{ name: key, key, role: 'dense', dtypes: rule.dense.dtypes, shape }];
    for (const p of parts) {
      if (byName.has(p.name))
        throw new TensorFSError('conflict', `${where}: the layout names ${p.name} twice`, {
          details: { rule: 'lanes.layout_collision', tensor: p.name },
        });
      byName.set(p.name, p);
    }
    entries.push({ key, shape, optional: optional.has(key), quantized, parts });
  }
  return { entries, byName };
}

/** Computes the layout `rule(topology)`. */
export function computeLayout(topology: TopologyDoc, rule: RuleDoc): Layout {
  const where = `${refOf(topology)}+${refOf(rule)}`;
  const components: Record<string, LayoutComponent> = {};
  for (const [c, comp] of Object.entries(topology.components)) components[c] = layoutComponent(rule, comp, where);
  return { topology: refOf(topology), rule: refOf(rule), components };
}

/** A JSON form of a layout: `{lane, components: {c: {name: {key, role, dtypes, shape}}}}`. */
export function layoutToJson(layout: Layout): Record<string, unknown> {
  const components: Record<string, unknown> = {};
  for (const [c, comp] of Object.entries(layout.components)) {
    const tensors: Record<string, unknown> = {};
    for (const e of comp.entries)
      for (const p of e.parts)
        tensors[p.name] = {
          key: p.key,
          role: p.role,
          dtypes: [...p.dtypes],
          shape: [...p.shape],
          ...(e.optional ? { optional: true } : {}),
        };
    components[c] = { tensors };
  }
  return { lane: `${layout.topology}+${layout.rule}`, components };
}
