/**
 * The catalog: every topology, rule and morphism, each checked against the digest its index pins,
 * every morphism re-applied and compared with its committed target, the morphism graph checked
 * for cycles and ambiguity. A catalog that loads is one the engine can trust.
 */
import { TensorFSError } from '@tensorfs/format';
import { canonicalJson, documentDigest } from './canonical.js';
import type {
  CatalogIndex,
  DocRef,
  LaneDocument,
  MorphismDoc,
  RuleDoc,
  TopologyComponent,
  TopologyDoc,
} from './documents.js';
import { checkDocument, refOf } from './documents.js';
import { computeLayout, type Layout } from './layout.js';
import { type AppliedOp, applyOps, morphismOps } from './morphism.js';

/** What {@link loadCatalog} reads: the index and the documents it pins. */
export interface CatalogInput {
  index: CatalogIndex;
  documents: readonly unknown[];
}

/** A step from one topology to a neighbour through a morphism (forward or inverse). */
export interface MorphismEdge {
  from: DocRef;
  to: DocRef;
  morphism: DocRef;
  inverse: boolean;
  params: Readonly<Record<string, number>>;
}

/** A lane: a topology and a rule, both resolved to versions. */
export interface LaneRef {
  topology: DocRef;
  rule: DocRef;
}

const KIND_FIELD = {
  'tensorfs.lanes.topology': 'topologies',
  'tensorfs.lanes.rule': 'rules',
  'tensorfs.lanes.morphism': 'morphisms',
} as const;

/** A loaded, verified catalog. */
export class Catalog {
  readonly topologies = new Map<DocRef, TopologyDoc>();
  readonly rules = new Map<DocRef, RuleDoc>();
  readonly morphisms = new Map<DocRef, MorphismDoc>();
  /** Edges out of each topology (forward and inverse morphisms). */
  readonly edges = new Map<DocRef, MorphismEdge[]>();
  /** The digest of every document. */
  readonly digests = new Map<DocRef, string>();
  private readonly layouts = new Map<string, Layout>();
  private readonly applied = new Map<string, { component: string; applied: AppliedOp[] }[]>();

  /** The layout `rule(topology)`, computed once per catalog. */
  layout(lane: LaneRef): Layout {
    const key = `${lane.topology}+${lane.rule}`;
    let l = this.layouts.get(key);
    if (!l) {
      l = computeLayout(this.topology(lane.topology), this.rule(lane.rule));
      this.layouts.set(key, l);
    }
    return l;
  }

  topology(ref: string): TopologyDoc {
    const t = this.topologies.get(this.resolve(ref, this.topologies, 'topology') as DocRef);
    return t as TopologyDoc;
  }

  rule(ref: string): RuleDoc {
    return this.rules.get(this.resolve(ref, this.rules, 'rule') as DocRef) as RuleDoc;
  }

  /** Resolves `name` or `name@v` to a versioned ref (no version: the highest). `not_found` otherwise. */
  resolve(ref: string, docs: ReadonlyMap<DocRef, { name: string; version: number }>, what: string): DocRef {
    const at = ref.lastIndexOf('@');
    const name = at < 0 ? ref : ref.slice(0, at);
    const version = at < 0 ? undefined : Number(ref.slice(at + 1));
    let best: { name: string; version: number } | undefined;
    for (const d of docs.values())
      if (d.name === name && (version === undefined ? !best || d.version > best.version : d.version === version))
        best = d;
    if (!best)
      throw new TensorFSError('not_found', `no ${what} ${ref} in the lane catalog`, {
        details: { rule: 'lanes.unknown_document', document: ref },
      });
    return refOf(best);
  }

  /**
   * Parses `<topology>[@v][+<rule>[@v]]` (rule defaults to `none`). `invalid_argument`
   * (`lanes.lane_syntax`) for a malformed string, `not_found` for an unknown document.
   */
  lane(spec: string): LaneRef {
    const m = /^([a-z0-9][a-z0-9._-]*(?:@[1-9][0-9]*)?)(?:\+([a-z0-9][a-z0-9._-]*(?:@[1-9][0-9]*)?))?$/.exec(spec);
    if (!m)
      throw new TensorFSError(
        'invalid_argument',
        `a lane is '<topology>[@v][+<rule>[@v]]', not ${JSON.stringify(spec)}`,
        {
          details: { rule: 'lanes.lane_syntax' },
        },
      );
    return {
      topology: this.resolve(m[1] as string, this.topologies, 'topology'),
      rule: this.resolve(m[2] ?? 'none', this.rules, 'rule'),
    };
  }

  /** The concrete ops of one edge, per component (computed at load). */
  appliedOps(edge: MorphismEdge): { component: string; applied: AppliedOp[] }[] {
    return this.applied.get(`${edge.morphism}|${edge.from}|${edge.to}`) ?? [];
  }

  /** @internal */
  setApplied(edge: MorphismEdge, ops: { component: string; applied: AppliedOp[] }[]): void {
    this.applied.set(`${edge.morphism}|${edge.from}|${edge.to}`, ops);
  }
}

function componentDiff(
  a: TopologyComponent,
  b: TopologyComponent,
): { tensor: string; expected: unknown; actual: unknown } | null {
  for (const [k, s] of Object.entries(b.keys)) {
    const got = a.keys[k];
    if (!got || got.join(',') !== s.join(',')) return { tensor: k, expected: s, actual: got ?? null };
  }
  for (const [k, s] of Object.entries(a.keys))
    if (!Object.hasOwn(b.keys, k)) return { tensor: k, expected: null, actual: s };
  if (a.optional.join('\n') !== b.optional.join('\n'))
    return { tensor: '(optional keys)', expected: b.optional, actual: a.optional };
  return null;
}

function rederive(cat: Catalog, m: MorphismDoc, edge: MorphismEdge, forwardOnly = false): void {
  const from = cat.topology(edge.from);
  const to = cat.topology(edge.to);
  const where = `${refOf(m)} (${edge.from} -> ${edge.to})`;
  const ops = morphismOps(m, edge.inverse);
  const perComponent: { component: string; applied: AppliedOp[] }[] = [];
  const fc = Object.keys(from.components).sort();
  const tc = Object.keys(to.components).sort();
  if (fc.join('\n') !== tc.join('\n'))
    throw new TensorFSError('corrupt', `${where}: components ${fc.join(',')} do not map to ${tc.join(',')}`, {
      details: { rule: 'lanes.morphism_rederive', morphism: refOf(m) },
    });
  for (const c of fc) {
    const r = applyOps(where, ops, edge.params, from.components[c] as TopologyComponent);
    const diff = componentDiff(r.component, to.components[c] as TopologyComponent);
    if (diff)
      throw new TensorFSError(
        'corrupt',
        `${where}: re-applying the morphism does not give the committed target at ${diff.tensor}`,
        {
          details: { rule: 'lanes.morphism_rederive', morphism: refOf(m), component: c, ...diff },
        },
      );
    perComponent.push({ component: c, applied: r.applied });
  }
  cat.setApplied(edge, perComponent);
  void forwardOnly;
}

/**
 * Loads and verifies a catalog. Errors: a document whose digest differs from its pin is `corrupt`
 * (`lanes.digest_mismatch`); a document the index does not pin, or a pin without its document, is
 * `malformed`/`not_found` (`lanes.unpinned`, `lanes.missing_document`); a morphism that does not
 * re-derive its target (in both directions) is `corrupt` (`lanes.morphism_rederive`); a cycle of
 * morphisms is `malformed` (`lanes.morphism_cycle`); two routes between the same topologies, or two
 * entries claiming one key, are `conflict` (`lanes.morphism_ambiguous`).
 */
export function loadCatalog(input: CatalogInput): Catalog {
  const { index } = input;
  if (index?.kind !== 'tensorfs.lanes.catalog' || index.version !== 1)
    throw new TensorFSError('malformed', 'not a lane catalog index', {
      details: { rule: 'lanes.schema', document: 'catalog' },
    });
  const cat = new Catalog();
  const seen = new Set<string>();
  for (const raw of input.documents) {
    const doc: LaneDocument = checkDocument(raw);
    const ref = refOf(doc);
    const field = KIND_FIELD[doc.kind];
    if (seen.has(`${field}:${ref}`))
      throw new TensorFSError('conflict', `${ref} appears twice`, {
        details: { rule: 'lanes.duplicate_document', document: ref },
      });
    seen.add(`${field}:${ref}`);
    const pinned = index[field][ref];
    if (pinned === undefined)
      throw new TensorFSError('malformed', `${ref} is not pinned by the catalog index`, {
        details: { rule: 'lanes.unpinned', document: ref },
      });
    const digest = documentDigest(doc);
    if (digest !== pinned)
      throw new TensorFSError('corrupt', `${ref} does not match its pinned digest`, {
        details: { rule: 'lanes.digest_mismatch', document: ref, expected: pinned, actual: digest },
      });
    cat.digests.set(ref, digest);
    if (doc.kind === 'tensorfs.lanes.topology') cat.topologies.set(ref, doc);
    else if (doc.kind === 'tensorfs.lanes.rule') cat.rules.set(ref, doc);
    else cat.morphisms.set(ref, doc);
  }
  for (const field of ['topologies', 'rules', 'morphisms'] as const)
    for (const ref of Object.keys(index[field]))
      if (!seen.has(`${field}:${ref}`))
        throw new TensorFSError('not_found', `the catalog pins ${ref} but the document is missing`, {
          details: { rule: 'lanes.missing_document', document: ref },
        });
  for (const t of cat.topologies.values()) cat.edges.set(refOf(t), []);

  // Graph checks first (cheap), then re-derivation.
  const forward = new Map<string, string[]>();
  const undirected = new Set<string>();
  const edges: { m: MorphismDoc; edge: MorphismEdge }[] = [];
  for (const m of cat.morphisms.values()) {
    for (const p of m.pairs) {
      for (const r of [p.from, p.to])
        if (!cat.topologies.has(r))
          throw new TensorFSError('not_found', `${refOf(m)} names topology ${r}, which the catalog does not hold`, {
            details: { rule: 'lanes.unknown_document', document: r },
          });
      if (p.from === p.to)
        throw new TensorFSError('malformed', `${refOf(m)} maps ${p.from} to itself`, {
          details: { rule: 'lanes.morphism_cycle', morphism: refOf(m) },
        });
      forward.set(p.from, [...(forward.get(p.from) ?? []), p.to]);
      edges.push({ m, edge: { from: p.from, to: p.to, morphism: refOf(m), inverse: false, params: p.params } });
    }
  }
  // A directed cycle (A -> B -> ... -> A) is a cycle.
  const state = new Map<string, 1 | 2>();
  const visit = (n: string, path: string[]): void => {
    state.set(n, 1);
    for (const next of forward.get(n) ?? []) {
      if (state.get(next) === 1)
        throw new TensorFSError('malformed', `morphisms form a cycle: ${[...path, n, next].join(' -> ')}`, {
          details: { rule: 'lanes.morphism_cycle', cycle: [...path, n, next] },
        });
      if (!state.has(next)) visit(next, [...path, n]);
    }
    state.set(n, 2);
  };
  for (const n of forward.keys()) if (!state.has(n)) visit(n, []);
  // Two routes between the same topologies (a duplicate pair or a diamond) are ambiguous.
  const parent = new Map<string, string>();
  const find = (x: string): string => {
    let r = x;
    while (parent.has(r)) r = parent.get(r) as string;
    return r;
  };
  for (const { m, edge } of edges) {
    const pair = [edge.from, edge.to].sort().join('|');
    const a = find(edge.from);
    const b = find(edge.to);
    if (undirected.has(pair) || a === b)
      throw new TensorFSError(
        'conflict',
        `${refOf(m)}: a second route between ${edge.from} and ${edge.to}; which one is right cannot be decided`,
        {
          details: { rule: 'lanes.morphism_ambiguous', morphism: refOf(m), from: edge.from, to: edge.to },
        },
      );
    undirected.add(pair);
    parent.set(a, b);
  }
  for (const { m, edge } of edges) {
    const inverse: MorphismEdge = { ...edge, from: edge.to, to: edge.from, inverse: true };
    rederive(cat, m, edge);
    rederive(cat, m, inverse);
    cat.edges.get(edge.from)?.push(edge);
    cat.edges.get(edge.to)?.push(inverse);
  }
  return cat;
}

/** The canonical JSON of a document, as committed under `spec/v2/` (with a trailing newline). */
export function documentText(doc: unknown): string {
  return `${canonicalJson(doc)}\n`;
}
