/**
 * Morphisms: topology -> topology maps made of renames, row permutations and seams. Each document
 * is written in one direction; the inverse is derived (a rename reversed, a permutation inverted,
 * a split read as a fuse), never authored twice.
 */
import { TensorFSError } from '@tensorfs/format';
import type { MorphismDoc, TopologyComponent } from './documents.js';
import { evalExpr } from './expr.js';

/** One operation of a morphism in one direction, over key templates. */
export type MorphismOp =
  | { kind: 'rekey'; from: [string]; to: [string] }
  | {
      kind: 'permute';
      from: [string];
      to: [string];
      perm: 'rotary_halves_to_pairs' | 'rotary_pairs_to_halves';
      heads: string;
    }
  | { kind: 'split'; from: [string]; to: string[]; axis: number; sizes: string[] }
  | { kind: 'fuse'; from: string[]; to: [string]; axis: number; sizes: string[] };

/** One op applied to concrete keys. */
export interface AppliedOp {
  kind: MorphismOp['kind'];
  from: string[];
  to: string[];
  /** For split/fuse: true when the seam is along axis 0 (parts are contiguous byte ranges). */
  contiguous: boolean;
  /** For permute: the kind and the head count it was applied with. */
  perm?: { kind: string; heads: number };
  /** For split/fuse: the axis and part sizes along it. */
  seam?: { axis: number; sizes: number[] };
}

/** The ops of a morphism document, forward or inverse. */
export function morphismOps(doc: MorphismDoc, inverse: boolean): MorphismOp[] {
  return doc.map.map((m): MorphismOp => {
    if ('split' in m) {
      return inverse
        ? { kind: 'fuse', from: [...m.to], to: [m.from], axis: m.split.axis, sizes: m.split.sizes }
        : { kind: 'split', from: [m.from], to: [...m.to], axis: m.split.axis, sizes: m.split.sizes };
    }
    if ('permute' in m) {
      const kind = m.permute.kind;
      const inv = kind === 'rotary_halves_to_pairs' ? 'rotary_pairs_to_halves' : 'rotary_halves_to_pairs';
      return inverse
        ? { kind: 'permute', from: [m.to], to: [m.from], perm: inv, heads: m.permute.heads }
        : { kind: 'permute', from: [m.from], to: [m.to], perm: kind, heads: m.permute.heads };
    }
    return inverse ? { kind: 'rekey', from: [m.to], to: [m.from] } : { kind: 'rekey', from: [m.from], to: [m.to] };
  });
}

interface Template {
  re: RegExp;
  names: string[];
  /** The literal text before the first placeholder and after the last: a cheap pre-check. */
  prefix: string;
  suffix: string;
}
const tplCache = new Map<string, Template>();
function template(t: string): Template {
  let c = tplCache.get(t);
  if (!c) {
    const names: string[] = [];
    const src = t
      .split(/(\{[a-z_]+\})/)
      .map((part) => {
        const m = /^\{([a-z_]+)\}$/.exec(part);
        if (m) {
          names.push(m[1] as string);
          return '(\\d+)';
        }
        return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      })
      .join('');
    const first = t.indexOf('{');
    const last = t.lastIndexOf('}');
    c = {
      re: new RegExp(`^${src}$`),
      names,
      prefix: first < 0 ? t : t.slice(0, first),
      suffix: last < 0 ? t : t.slice(last + 1),
    };
    tplCache.set(t, c);
  }
  return c;
}

function matchTpl(t: string, key: string): Record<string, string> | null {
  const { re, names, prefix, suffix } = template(t);
  if (!key.startsWith(prefix) || !key.endsWith(suffix)) return null;
  const m = re.exec(key);
  if (!m) return null;
  const out: Record<string, string> = {};
  names.forEach((n, i) => {
    out[n] = m[i + 1] as string;
  });
  return out;
}

function fill(t: string, vars: Record<string, string>): string {
  return t.replace(/\{([a-z_]+)\}/g, (_, n: string) => {
    const v = vars[n];
    if (v === undefined)
      throw new TensorFSError('malformed', `key template ${t} uses {${n}}, which its source does not bind`, {
        details: { rule: 'lanes.morphism_template', template: t },
      });
    return v;
  });
}

/** The rules a morphism document breaks. */
type MorphismRule =
  | 'lanes.morphism_ambiguous'
  | 'lanes.morphism_permute'
  | 'lanes.morphism_seam'
  | 'lanes.morphism_unmapped';

function fail(where: string, rule: MorphismRule, msg: string, details: Record<string, unknown> = {}): never {
  throw new TensorFSError(rule === 'lanes.morphism_ambiguous' ? 'conflict' : 'malformed', `${where}: ${msg}`, {
    details: { rule, morphism: where, ...details },
  });
}

/**
 * Applies `ops` to one topology component. Every source key must be consumed by exactly one op
 * (`lanes.morphism_unmapped` otherwise; two ops claiming a key or writing the same key is
 * `lanes.morphism_ambiguous`), seams must add up (`lanes.morphism_seam`), and a permutation
 * needs rows divisible by `2 × heads` (`lanes.morphism_permute`).
 */
export function applyOps(
  where: string,
  ops: readonly MorphismOp[],
  params: Readonly<Record<string, number>>,
  comp: TopologyComponent,
): { component: TopologyComponent; applied: AppliedOp[] } {
  const claimed = new Map<string, number>();
  const applied: AppliedOp[] = [];
  const out: Record<string, number[]> = {};
  const put = (k: string, s: number[]) => {
    if (Object.hasOwn(out, k)) fail(where, 'lanes.morphism_ambiguous', `two source keys map to ${k}`, { tensor: k });
    out[k] = s;
  };
  const keys = Object.keys(comp.keys);
  for (const key of keys) {
    ops.forEach((op, i) => {
      const vars = matchTpl(op.from[0] as string, key);
      if (!vars) return;
      const sources = op.from.map((t) => fill(t, vars));
      for (const s of sources) {
        const prev = claimed.get(s);
        if (prev !== undefined && prev !== i)
          fail(where, 'lanes.morphism_ambiguous', `${s} is matched by map entries ${prev} and ${i}`, { tensor: s });
        if (!Object.hasOwn(comp.keys, s))
          fail(where, 'lanes.morphism_unmapped', `${s} is needed by a fuse but absent`, { tensor: s });
        claimed.set(s, i);
      }
      const targets = op.to.map((t) => fill(t, vars));
      const shapes = sources.map((s) => comp.keys[s] as number[]);
      const first = shapes[0] as number[];
      if (op.kind === 'rekey') {
        put(targets[0] as string, [...first]);
        applied.push({ kind: 'rekey', from: sources, to: targets, contiguous: true });
      } else if (op.kind === 'permute') {
        const heads = evalExpr(op.heads, params);
        const rows = first[0] ?? 0;
        if (first.length < 1 || heads === 0 || rows % (2 * heads) !== 0)
          fail(where, 'lanes.morphism_permute', `${key}: ${rows} rows do not split into ${heads} heads of pairs`, {
            tensor: key,
          });
        put(targets[0] as string, [...first]);
        applied.push({
          kind: 'permute',
          from: sources,
          to: targets,
          contiguous: false,
          perm: { kind: op.perm, heads },
        });
      } else {
        const axis = op.axis;
        const total =
          op.kind === 'split' ? (first[axis] ?? -1) : shapes.reduce((a, s) => a + (s[axis] ?? Number.NaN), 0);
        const sizes = op.sizes.map((s) => evalExpr(s, { ...params, D: total }));
        if (sizes.reduce((a, b) => a + b, 0) !== total)
          fail(where, 'lanes.morphism_seam', `${key}: seam sizes ${sizes.join('+')} do not add up to ${total}`, {
            tensor: key,
          });
        if (op.kind === 'split') {
          targets.forEach((t, j) => {
            const s = [...first];
            s[axis] = sizes[j] as number;
            put(t, s);
          });
        } else {
          shapes.forEach((s, j) => {
            const rest = s.filter((_, d) => d !== axis).join(',');
            if (
              s.length !== first.length ||
              rest !== first.filter((_, d) => d !== axis).join(',') ||
              s[axis] !== sizes[j]
            )
              fail(where, 'lanes.morphism_seam', `${sources[j]}: shape [${s}] does not fit the seam`, {
                tensor: sources[j],
              });
          });
          const s = [...first];
          s[axis] = total;
          put(targets[0] as string, s);
        }
        applied.push({ kind: op.kind, from: sources, to: targets, contiguous: axis === 0, seam: { axis, sizes } });
      }
    });
  }
  for (const key of keys)
    if (!claimed.has(key)) fail(where, 'lanes.morphism_unmapped', `no map entry covers ${key}`, { tensor: key });
  const sorted: Record<string, number[]> = {};
  for (const k of Object.keys(out).sort()) sorted[k] = out[k] as number[];
  const renamed = new Map<string, string>();
  for (const a of applied)
    if (a.from.length === 1 && a.to.length === 1) renamed.set(a.from[0] as string, a.to[0] as string);
  const optional = comp.optional.map((k) => {
    const r = renamed.get(k);
    if (r === undefined)
      fail(where, 'lanes.morphism_unmapped', `optional key ${k} is not carried by a rename or permutation`, {
        tensor: k,
      });
    return r;
  });
  return { component: { keys: sorted, optional: optional.sort() }, applied };
}

/**
 * The row order llama.cpp's converter gives q/k projections for rotary embeddings: rows are
 * viewed as `[heads, 2, rows/heads/2, ...]` and the middle two axes swapped. Returns `src` with
 * `out[i] = in[src[i]]` for `rotary_halves_to_pairs` (Hugging Face -> GGUF) or its inverse.
 */
export function rotaryRowOrder(
  rows: number,
  heads: number,
  kind: 'rotary_halves_to_pairs' | 'rotary_pairs_to_halves',
): Uint32Array {
  if (heads <= 0 || rows % (2 * heads) !== 0)
    throw new TensorFSError('invalid_argument', `${rows} rows do not split into ${heads} heads of pairs`, {
      details: { rule: 'lanes.morphism_permute' },
    });
  const hd = rows / heads;
  const half = hd / 2;
  const src = new Uint32Array(rows);
  for (let h = 0; h < heads; h++)
    for (let j = 0; j < half; j++)
      for (let i = 0; i < 2; i++) {
        const paired = h * hd + j * 2 + i; // [h, j, i] after the swap
        const halves = h * hd + i * half + j; // [h, i, j] before it
        if (kind === 'rotary_halves_to_pairs') src[paired] = halves;
        else src[halves] = paired;
      }
  return src;
}
