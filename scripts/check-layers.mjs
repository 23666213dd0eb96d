#!/usr/bin/env node
// Layer check: a package may depend on and import only packages below it, only through their
// published entry points, and `format`/`planner`/`lanes` may not import Node builtins; no package
// has an import cycle among its own source files.
//   format < planner < cas < remote < cli;  format < planner < tensors < lanes | remote
// tensors and lanes take the storage contract (`@tensorfs/format/store`), never cas, so they
// install without a native module; their tests may still use cas (a devDependency).
// `testkit` is test-only: it may import any package, any package's tests may import it, and no
// package's src/ or (non-dev) dependencies may name it.
// Usage: node scripts/check-layers.mjs [repoRoot]   — exits 1 and lists every violation.
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** What each package's src/ and runtime dependencies may name (transitively below it). */
export const ALLOWED = {
  format: [],
  planner: ['format'],
  cas: ['format', 'planner'],
  tensors: ['format', 'planner'],
  lanes: ['format', 'planner', 'tensors'],
  remote: ['format', 'planner', 'cas', 'tensors'],
  cli: ['format', 'planner', 'cas', 'tensors', 'lanes', 'remote'],
  testkit: ['format', 'planner', 'cas', 'tensors', 'lanes', 'remote', 'cli'],
};
/** What each package's test/ and devDependencies may name besides {@link ALLOWED}. */
export const TEST_ALLOWED = {
  tensors: ['cas'],
  lanes: ['cas'],
};
/** Packages only tests may use (never published, never a runtime dependency). */
export const TEST_ONLY = new Set(['testkit']);
/** Packages that must run anywhere: no Node builtins. */
export const PORTABLE = new Set(['format', 'planner', 'lanes']);
// Entries of other packages that must run anywhere too: nothing they reach (relative imports,
// followed) imports a Node builtin, uses Buffer, or imports an entry that is not portable.
export const PORTABLE_ENTRIES = { tensors: ['src/read.ts'] };
const portableSpec = (spec) => {
  const [, name, ...rest] = spec.split('/');
  return PORTABLE.has(name) || (PORTABLE_ENTRIES[name] ?? []).includes(`src/${rest.join('/')}.ts`);
};

const BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
const SOURCE_RE = /\.(?:[cm]?[jt]sx?)$/;
// import ... from 'x' | export ... from 'x' | import('x') | require('x') | import 'x'
const IMPORT_RE = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|\bimport\s+)(['"])([^'"\n]+)\1/g;

function* walk(dir) {
  if (!fs.existsSync(dir)) return;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'dist' || e.name.startsWith('.')) continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) yield* walk(p);
    else if (SOURCE_RE.test(e.name) && !e.name.endsWith('.d.ts')) yield p;
  }
}

function stripComments(src) {
  return src.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

/** True when package `name` declares `./<sub>` in its `exports` (a published subpath entry). */
function declaredSubpath(pkgsDir, name, sub) {
  const file = path.join(pkgsDir, name, 'package.json');
  if (!fs.existsSync(file)) return false;
  const exports = JSON.parse(fs.readFileSync(file, 'utf8')).exports ?? {};
  return typeof exports === 'object' && `./${sub}` in exports && sub !== 'package.json';
}

/** Returns a list of human-readable violations for the repo at `root`. */
export function checkLayers(root) {
  const problems = [];
  const pkgsDir = path.join(root, 'packages');
  const dirs = fs.readdirSync(pkgsDir).filter((d) => fs.existsSync(path.join(pkgsDir, d, 'package.json')));
  for (const dir of dirs) {
    const rel = (p) => path.relative(root, p);
    if (!(dir in ALLOWED)) {
      problems.push(`packages/${dir}: not a known layer (add it to ALLOWED in scripts/check-layers.mjs)`);
      continue;
    }
    const allowed = new Set(ALLOWED[dir]);
    const allowedInTests = new Set([...ALLOWED[dir], ...(TEST_ALLOWED[dir] ?? [])]);
    const pj = JSON.parse(fs.readFileSync(path.join(pkgsDir, dir, 'package.json'), 'utf8'));
    for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies', 'devDependencies']) {
      for (const dep of Object.keys(pj[field] ?? {})) {
        if (!dep.startsWith('@tensorfs/')) continue;
        const target = dep.slice('@tensorfs/'.length);
        if (TEST_ONLY.has(target) && field === 'devDependencies') continue;
        if (TEST_ONLY.has(target)) problems.push(`packages/${dir}/package.json: ${field} on ${dep} (test-only)`);
        else if (!(field === 'devDependencies' ? allowedInTests : allowed).has(target))
          problems.push(`packages/${dir}/package.json: ${field} on ${dep} (not below ${dir})`);
      }
    }
    for (const sub of ['src', 'test']) {
      for (const file of walk(path.join(pkgsDir, dir, sub))) {
        const src = stripComments(fs.readFileSync(file, 'utf8'));
        for (const m of src.matchAll(IMPORT_RE)) {
          const spec = m[2];
          if (spec.startsWith('@tensorfs/')) {
            const [, name, ...rest] = spec.split('/');
            if (TEST_ONLY.has(name) && name !== dir) {
              if (sub !== 'test')
                problems.push(`${rel(file)}: imports ${spec} (test-only; tests may use it, src/ may not)`);
            } else if (name !== dir && !(sub === 'test' ? allowedInTests : allowed).has(name))
              problems.push(`${rel(file)}: imports ${spec} (not below ${dir})`);
            if (rest.length && !declaredSubpath(pkgsDir, name, rest.join('/'))) {
              problems.push(`${rel(file)}: imports ${spec} (only package entry points may be imported)`);
            }
          } else if (spec.startsWith('.')) {
            const resolved = path.resolve(path.dirname(file), spec);
            const inside = path.relative(path.join(pkgsDir, dir), resolved);
            if (inside.startsWith('..'))
              problems.push(`${rel(file)}: imports ${spec} (reaches outside packages/${dir})`);
          } else if (sub === 'src' && PORTABLE.has(dir) && BUILTINS.has(spec)) {
            problems.push(`${rel(file)}: imports Node builtin ${spec} (packages/${dir} must run anywhere)`);
          }
        }
        if (sub === 'src' && PORTABLE.has(dir) && /\bBuffer\s*[.(]/.test(src)) {
          problems.push(`${rel(file)}: uses Buffer (packages/${dir} must run anywhere; use Uint8Array)`);
        }
      }
    }
    for (const entry of PORTABLE_ENTRIES[dir] ?? []) {
      const seen = new Set();
      const queue = [path.join(pkgsDir, dir, entry)].filter((f) => fs.existsSync(f));
      while (queue.length) {
        const file = queue.pop();
        if (seen.has(file)) continue;
        seen.add(file);
        queue.push(...localImports(file));
        const src = stripComments(fs.readFileSync(file, 'utf8'));
        for (const m of src.matchAll(IMPORT_RE)) {
          const spec = m[2];
          if (BUILTINS.has(spec))
            problems.push(
              `${rel(file)}: imports Node builtin ${spec} (reached from the portable entry ${dir}/${entry})`,
            );
          else if (spec.startsWith('@tensorfs/') && !portableSpec(spec))
            problems.push(`${rel(file)}: imports ${spec}, which is not portable (reached from ${dir}/${entry})`);
        }
        if (/\bBuffer\s*[.(]/.test(src))
          problems.push(`${rel(file)}: uses Buffer (reached from the portable entry ${dir}/${entry})`);
      }
    }
    for (const cycle of importCycles(path.join(pkgsDir, dir, 'src'))) {
      const inPkg = (f) => path.relative(path.join(pkgsDir, dir, 'src'), f);
      problems.push(`packages/${dir}/src: import cycle ${cycle.map(inPkg).join(' -> ')}`);
    }
  }
  return problems;
}

/** The relative imports of a source file, resolved to files of the same tree (`.js` → `.ts`). */
function localImports(file) {
  const out = [];
  const src = stripComments(fs.readFileSync(file, 'utf8'));
  for (const m of src.matchAll(IMPORT_RE)) {
    const spec = m[2];
    if (!spec.startsWith('.')) continue;
    const base = path.resolve(path.dirname(file), spec);
    const candidates = [
      base,
      base.replace(/\.[cm]?js$/, '.ts'),
      base.replace(/\.[cm]?js$/, '.tsx'),
      `${base}.ts`,
      path.join(base, 'index.ts'),
    ];
    const hit = candidates.find((c) => fs.existsSync(c) && fs.statSync(c).isFile());
    if (hit) out.push(hit);
  }
  return out;
}

/**
 * Every import cycle among the files under `dir` (type-only imports included: a cycle of types
 * is still two files that cannot be understood apart): one per strongly connected component of
 * more than one file (or a file importing itself), shown as a closed path through it.
 */
export function importCycles(dir) {
  const files = [...walk(dir)];
  const edges = new Map(files.map((f) => [f, localImports(f)]));
  // Tarjan's strongly connected components.
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const sccs = [];
  const visit = (v) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!edges.has(w)) continue;
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const scc = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (edges.get(v) ?? []).includes(v)) sccs.push(scc);
    }
  };
  for (const f of files.sort()) if (!idx.has(f)) visit(f);
  // One closed path per component: from its first file (by name), the shortest way back to it.
  return sccs
    .map((scc) => {
      const inside = new Set(scc);
      const start = [...scc].sort()[0];
      const prev = new Map([[start, null]]);
      const queue = [start];
      let end = null;
      while (queue.length && end === null) {
        const v = queue.shift();
        for (const w of edges.get(v) ?? []) {
          if (!inside.has(w)) continue;
          if (w === start) {
            end = v;
            break;
          }
          if (!prev.has(w)) {
            prev.set(w, v);
            queue.push(w);
          }
        }
      }
      const pathBack = [];
      for (let v = end; v !== null; v = prev.get(v)) pathBack.unshift(v);
      return [...pathBack, start];
    })
    .sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));
  const problems = checkLayers(root);
  if (problems.length) {
    console.error(`layer check: ${problems.length} violation(s)`);
    for (const p of problems) console.error(`  ${p}`);
    process.exit(1);
  }
  console.log('layer check: ok');
}
