/**
 * The three lane documents (topology, quant rule, morphism) and the catalog index that pins them
 * by digest. JSON Schemas for all four live in `spec/v2/schemas/`; {@link checkDocument} enforces
 * the same structure at load without a schema engine, so the loader runs in a browser as is.
 */
import { TensorFSError } from '@tensorfs/format';
import { parseExpr } from './expr.js';

/** A reference to a versioned document: `name@version`. */
export type DocRef = `${string}@${number}`;

/** `{component -> {key -> logical shape}}`, dtype-free and shard-flattened. */
export interface TopologyDoc {
  kind: 'tensorfs.lanes.topology';
  name: string;
  version: number;
  /** Which banked header it was derived from, and that header's digest (canonical JSON). */
  derived_from: { header: string; digest: string };
  components: Record<string, TopologyComponent>;
}

/** One component of a topology. */
export interface TopologyComponent {
  /** Key -> logical shape. */
  keys: Record<string, number[]>;
  /** Keys a candidate may omit (sorted). */
  optional: string[];
}

/** Which tensors a quant rule quantizes: decided from keys and shapes only. */
export interface RuleEligibility {
  /** Exact rank of an eligible logical shape (`[N, K]` for 2). */
  rank: number;
  /** Globs (`*` = any run of characters) a key must match one of. */
  include: string[];
  /** Globs that make a key ineligible even when included. */
  exclude: string[];
  /** Divisibility the dims must satisfy (`dim` is `N` or `K`). */
  divisible: { dim: string; by: number }[];
}

/** One tensor a quant rule emits per eligible key: the key plus `suffix`. */
export interface RuleEmission {
  suffix: string;
  /** `codes`, `scale`, `global_scale`, ... */
  role: string;
  dtype: string;
  /** Dims as shape expressions over `N`, `K` (see `expr.ts`). */
  shape: string[];
}

/** A quant rule: a function from a topology to a layout. */
export interface RuleDoc {
  kind: 'tensorfs.lanes.rule';
  name: string;
  version: number;
  description: string;
  /** The encoding (scheme and params of `@tensorfs/format` encodings) that decodes an emission; `null` for dense. */
  encoding: { scheme: string; params: Record<string, string | number | boolean> } | null;
  /** The dequant equation, as text. */
  dequant: string;
  /** Convention facts (nibble order, scale layout, scale span, row slicing...): part of the identity. */
  conventions: Record<string, string>;
  /** Dtypes accepted for tensors the rule does not quantize (the first is preferred). */
  dense: { dtypes: string[] };
  eligible: RuleEligibility | null;
  emit: RuleEmission[];
}

/** A rename, a row permutation or a seam, from a key template to one or more key templates. */
export type MorphismEntry =
  | { from: string; to: string }
  | {
      from: string;
      to: string;
      permute: { kind: 'rotary_halves_to_pairs' | 'rotary_pairs_to_halves'; axis: 0; heads: string };
    }
  | { from: string; to: string[]; split: { axis: number; sizes: string[] } };

/** Evidence: the reference code or test that shows a mapping. */
export interface Evidence {
  claim: string;
  source: string;
  locator: string;
}

/** A topology -> topology map, applied to every `pairs` entry with that pair's params. */
export interface MorphismDoc {
  kind: 'tensorfs.lanes.morphism';
  name: string;
  version: number;
  description: string;
  pairs: { from: DocRef; to: DocRef; params: Record<string, number> }[];
  map: MorphismEntry[];
  evidence: Evidence[];
}

/** The catalog index: every document by `name@version`, pinned by digest. */
export interface CatalogIndex {
  kind: 'tensorfs.lanes.catalog';
  version: 1;
  topologies: Record<string, string>;
  rules: Record<string, string>;
  morphisms: Record<string, string>;
}

/** Any lane document. */
export type LaneDocument = TopologyDoc | RuleDoc | MorphismDoc;

function bad(what: string, path: string, why: string): never {
  throw new TensorFSError('malformed', `${what}: ${path} ${why}`, {
    details: { rule: 'lanes.schema', document: what, path },
  });
}

const NAME_RE = /^[a-z0-9][a-z0-9._-]*$/;
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isDim = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const isStr = (v: unknown): v is string => typeof v === 'string';
const isStrArr = (v: unknown): v is string[] => Array.isArray(v) && v.every(isStr);

function only(what: string, path: string, o: Record<string, unknown>, allowed: string[], required = allowed): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) bad(what, `${path}/${k}`, 'is not allowed');
  for (const k of required) if (!(k in o)) bad(what, `${path}/${k}`, 'is required');
}

function head(what: string, d: Record<string, unknown>, kind: string): void {
  if (d.kind !== kind) bad(what, '/kind', `must be "${kind}"`);
  if (!isStr(d.name) || !NAME_RE.test(d.name)) bad(what, '/name', 'must match [a-z0-9][a-z0-9._-]*');
  if (!Number.isSafeInteger(d.version) || (d.version as number) < 1) bad(what, '/version', 'must be an integer >= 1');
}

function checkTopology(d: Record<string, unknown>): void {
  const w = `topology ${String(d.name)}`;
  only(w, '', d, ['kind', 'name', 'version', 'derived_from', 'components']);
  head(w, d, 'tensorfs.lanes.topology');
  const src = d.derived_from;
  if (!isObj(src) || !isStr(src.header) || !isStr(src.digest)) bad(w, '/derived_from', 'must be {header, digest}');
  only(w, '/derived_from', src, ['header', 'digest']);
  if (!isObj(d.components) || Object.keys(d.components).length === 0)
    bad(w, '/components', 'must be a non-empty object');
  for (const [c, comp] of Object.entries(d.components)) {
    if (!isObj(comp)) bad(w, `/components/${c}`, 'must be an object');
    only(w, `/components/${c}`, comp, ['keys', 'optional']);
    if (!isObj(comp.keys)) bad(w, `/components/${c}/keys`, 'must be an object');
    for (const [k, s] of Object.entries(comp.keys))
      if (!Array.isArray(s) || !s.every(isDim)) bad(w, `/components/${c}/keys/${k}`, 'must be an array of dims');
    if (!isStrArr(comp.optional)) bad(w, `/components/${c}/optional`, 'must be an array of keys');
    for (const k of comp.optional) if (!(k in comp.keys)) bad(w, `/components/${c}/optional`, `names ${k}, not a key`);
  }
}

function checkRule(d: Record<string, unknown>): void {
  const w = `rule ${String(d.name)}`;
  only(w, '', d, [
    'kind',
    'name',
    'version',
    'description',
    'encoding',
    'dequant',
    'conventions',
    'dense',
    'eligible',
    'emit',
  ]);
  head(w, d, 'tensorfs.lanes.rule');
  if (!isStr(d.description) || !isStr(d.dequant)) bad(w, '/description', 'and /dequant must be strings');
  if (d.encoding !== null) {
    if (!isObj(d.encoding) || !isStr(d.encoding.scheme) || !isObj(d.encoding.params))
      bad(w, '/encoding', 'must be {scheme, params} or null');
    only(w, '/encoding', d.encoding, ['scheme', 'params']);
  }
  if (!isObj(d.conventions) || !Object.values(d.conventions).every(isStr))
    bad(w, '/conventions', 'must map names to strings');
  if (!isObj(d.dense) || !isStrArr(d.dense.dtypes) || d.dense.dtypes.length === 0)
    bad(w, '/dense/dtypes', 'must be a non-empty array');
  only(w, '/dense', d.dense, ['dtypes']);
  if (!Array.isArray(d.emit)) bad(w, '/emit', 'must be an array');
  if (d.eligible === null) {
    if (d.emit.length) bad(w, '/emit', 'must be empty when nothing is eligible');
    if (d.encoding !== null) bad(w, '/encoding', 'must be null when nothing is eligible');
    return;
  }
  const e = d.eligible;
  if (!isObj(e)) bad(w, '/eligible', 'must be an object or null');
  only(w, '/eligible', e, ['rank', 'include', 'exclude', 'divisible']);
  if (!isDim(e.rank) || !isStrArr(e.include) || !isStrArr(e.exclude))
    bad(w, '/eligible', 'needs rank, include, exclude');
  if (!Array.isArray(e.divisible) || !e.divisible.every((x) => isObj(x) && isStr(x.dim) && isDim(x.by) && x.by > 0))
    bad(w, '/eligible/divisible', 'must be [{dim, by}]');
  if (d.encoding === null || d.emit.length === 0) bad(w, '/emit', 'a quantizing rule needs an encoding and emissions');
  const suffixes = new Set<string>();
  d.emit.forEach((x, i) => {
    if (!isObj(x)) bad(w, `/emit/${i}`, 'must be an object');
    only(w, `/emit/${i}`, x, ['suffix', 'role', 'dtype', 'shape']);
    if (!isStr(x.suffix) || !isStr(x.role) || !isStr(x.dtype) || !isStrArr(x.shape))
      bad(w, `/emit/${i}`, 'has a wrong field type');
    if (suffixes.has(x.suffix)) bad(w, `/emit/${i}/suffix`, 'repeats another emission');
    for (const e of x.shape) parseExpr(e);
    suffixes.add(x.suffix);
  });
  if (!suffixes.has('')) bad(w, '/emit', 'must emit the key itself (suffix "")');
}

function checkMorphism(d: Record<string, unknown>): void {
  const w = `morphism ${String(d.name)}`;
  only(w, '', d, ['kind', 'name', 'version', 'description', 'pairs', 'map', 'evidence']);
  head(w, d, 'tensorfs.lanes.morphism');
  if (!isStr(d.description)) bad(w, '/description', 'must be a string');
  const REF = /^[a-z0-9][a-z0-9._-]*@[1-9][0-9]*$/;
  if (!Array.isArray(d.pairs) || d.pairs.length === 0) bad(w, '/pairs', 'must be a non-empty array');
  d.pairs.forEach((p, i) => {
    if (!isObj(p) || !isStr(p.from) || !isStr(p.to) || !REF.test(p.from) || !REF.test(p.to))
      bad(w, `/pairs/${i}`, 'needs from and to as name@version');
    only(w, `/pairs/${i}`, p, ['from', 'to', 'params']);
    if (!isObj(p.params) || !Object.values(p.params).every(isDim))
      bad(w, `/pairs/${i}/params`, 'must map names to integers');
  });
  if (!Array.isArray(d.map) || d.map.length === 0) bad(w, '/map', 'must be a non-empty array');
  d.map.forEach((m, i) => {
    if (!isObj(m) || !isStr(m.from)) bad(w, `/map/${i}`, 'needs from');
    if ('split' in m) {
      only(w, `/map/${i}`, m, ['from', 'to', 'split']);
      const s = m.split;
      if (!isStrArr(m.to) || m.to.length < 2) bad(w, `/map/${i}/to`, 'must list at least two keys for a split');
      if (!isObj(s) || !isDim(s.axis) || !isStrArr(s.sizes) || s.sizes.length !== m.to.length)
        bad(w, `/map/${i}/split`, 'needs axis and one size per key');
      for (const e of s.sizes) parseExpr(e);
    } else if ('permute' in m) {
      only(w, `/map/${i}`, m, ['from', 'to', 'permute']);
      const p = m.permute;
      if (!isStr(m.to)) bad(w, `/map/${i}/to`, 'must be a key');
      if (
        !isObj(p) ||
        (p.kind !== 'rotary_halves_to_pairs' && p.kind !== 'rotary_pairs_to_halves') ||
        p.axis !== 0 ||
        !isStr(p.heads)
      )
        bad(w, `/map/${i}/permute`, 'needs kind, axis 0 and heads');
      parseExpr(p.heads);
    } else {
      only(w, `/map/${i}`, m, ['from', 'to']);
      if (!isStr(m.to)) bad(w, `/map/${i}/to`, 'must be a key');
    }
  });
  if (!Array.isArray(d.evidence) || d.evidence.length === 0)
    bad(w, '/evidence', 'is required: a morphism without evidence is a guess');
  d.evidence.forEach((e, i) => {
    if (!isObj(e) || !isStr(e.claim) || !isStr(e.source) || !isStr(e.locator))
      bad(w, `/evidence/${i}`, 'needs claim, source, locator');
    only(w, `/evidence/${i}`, e, ['claim', 'source', 'locator']);
  });
}

/** Structural validation of a lane document; `malformed` (`lanes.schema`) naming the path. */
export function checkDocument(doc: unknown): LaneDocument {
  if (!isObj(doc))
    throw new TensorFSError('malformed', 'a lane document must be a JSON object', {
      details: { rule: 'lanes.schema' },
    });
  if (doc.kind === 'tensorfs.lanes.topology') checkTopology(doc);
  else if (doc.kind === 'tensorfs.lanes.rule') checkRule(doc);
  else if (doc.kind === 'tensorfs.lanes.morphism') checkMorphism(doc);
  else bad('document', '/kind', 'is not a lane document kind');
  return doc as unknown as LaneDocument;
}

/** `name@version` of a document. */
export function refOf(doc: { name: string; version: number }): DocRef {
  return `${doc.name}@${doc.version}`;
}
