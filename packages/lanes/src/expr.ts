/**
 * Shape expressions: how a quant rule's emissions and a morphism's seams state their dims as pure
 * functions of source dims and declared parameters. Grammar: integers, identifiers (`N`, `K`,
 * parameters such as `n_head`), `+ - * /`, parentheses, `ceil_div(a, b)` and `round_up(a, b)`.
 * `/` is exact division: a remainder is an error, never a silent floor.
 */
import { TensorFSError } from '@tensorfs/format';

type Node =
  | { t: 'num'; v: number }
  | { t: 'var'; name: string }
  | { t: 'bin'; op: '+' | '-' | '*' | '/'; a: Node; b: Node }
  | { t: 'call'; fn: 'ceil_div' | 'round_up'; args: [Node, Node] };

function bad(src: string, why: string): never {
  throw new TensorFSError('malformed', `shape expression "${src}": ${why}`, {
    details: { rule: 'lanes.expression', expression: src },
  });
}

const cache = new Map<string, Node>();

/** Parses a shape expression (cached). `malformed` (`lanes.expression`) on a syntax error. */
export function parseExpr(src: string): Node {
  const hit = cache.get(src);
  if (hit) return hit;
  const toks = src.match(/\s*(\d+|[A-Za-z_][A-Za-z0-9_]*|[-+*/(),])\s*/gy);
  if (!toks || toks.join('').length !== src.length) bad(src, 'unexpected character');
  const ts = toks.map((t) => t.trim());
  let i = 0;
  const peek = () => ts[i];
  const next = () => ts[i++];
  const primary = (): Node => {
    const t = next();
    if (t === undefined) bad(src, 'unexpected end');
    if (t === '(') {
      const e = sum();
      if (next() !== ')') bad(src, 'missing )');
      return e;
    }
    if (/^\d+$/.test(t)) return { t: 'num', v: Number(t) };
    if (/^[A-Za-z_]/.test(t)) {
      if (peek() === '(') {
        if (t !== 'ceil_div' && t !== 'round_up') bad(src, `unknown function ${t}`);
        next();
        const a = sum();
        if (next() !== ',') bad(src, `${t} takes two arguments`);
        const b = sum();
        if (next() !== ')') bad(src, 'missing )');
        return { t: 'call', fn: t, args: [a, b] };
      }
      return { t: 'var', name: t };
    }
    return bad(src, `unexpected ${t}`);
  };
  const product = (): Node => {
    let a = primary();
    while (peek() === '*' || peek() === '/') {
      const op = next() as '*' | '/';
      a = { t: 'bin', op, a, b: primary() };
    }
    return a;
  };
  const sum = (): Node => {
    let a = product();
    while (peek() === '+' || peek() === '-') {
      const op = next() as '+' | '-';
      a = { t: 'bin', op, a, b: product() };
    }
    return a;
  };
  const root = sum();
  if (i !== ts.length) bad(src, `unexpected ${ts[i]}`);
  cache.set(src, root);
  return root;
}

function evalNode(n: Node, vars: Readonly<Record<string, number>>, src: string): number {
  switch (n.t) {
    case 'num':
      return n.v;
    case 'var': {
      const v = vars[n.name];
      if (v === undefined) bad(src, `unknown name ${n.name}`);
      return v;
    }
    case 'bin': {
      const a = evalNode(n.a, vars, src);
      const b = evalNode(n.b, vars, src);
      if (n.op === '+') return a + b;
      if (n.op === '-') return a - b;
      if (n.op === '*') return a * b;
      if (b === 0 || a % b !== 0) bad(src, `${a} is not divisible by ${b}`);
      return a / b;
    }
    case 'call': {
      const a = evalNode(n.args[0], vars, src);
      const b = evalNode(n.args[1], vars, src);
      if (b <= 0) bad(src, `${n.fn} by ${b}`);
      const q = Math.ceil(a / b);
      return n.fn === 'ceil_div' ? q : q * b;
    }
  }
}

/** Evaluates `src` with `vars`; the result must be a non-negative safe integer. */
export function evalExpr(src: string, vars: Readonly<Record<string, number>>): number {
  const v = evalNode(parseExpr(src), vars, src);
  if (!Number.isSafeInteger(v) || v < 0) bad(src, `evaluates to ${v}`);
  return v;
}
