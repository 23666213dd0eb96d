#!/usr/bin/env node
// Layer check: a package may depend on and import only packages below it, only through their
// published entry points, and `format`/`planner` may not import Node builtins.
//   format < planner < cas < tensors < lanes | remote < cli   (lanes and remote never import each other)
// `testkit` is test-only: it may import any package, any package's tests may import it, and no
// package's src/ or (non-dev) dependencies may name it.
// Usage: node scripts/check-layers.mjs [repoRoot]   — exits 1 and lists every violation.
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** What each package may depend on (transitively below it). */
export const ALLOWED = {
  format: [],
  planner: ['format'],
  cas: ['format', 'planner'],
  tensors: ['format', 'planner', 'cas'],
  lanes: ['format', 'planner', 'cas', 'tensors'],
  remote: ['format', 'planner', 'cas', 'tensors'],
  cli: ['format', 'planner', 'cas', 'tensors', 'lanes', 'remote'],
  testkit: ['format', 'planner', 'cas', 'tensors', 'lanes', 'remote', 'cli'],
};
/** Packages only tests may use (never published, never a runtime dependency). */
export const TEST_ONLY = new Set(['testkit']);
/** Packages that must run anywhere: no Node builtins. */
export const PORTABLE = new Set(['format', 'planner']);

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

/** The subpath entry points (`./x`) a workspace package declares in its `exports`. */
function exportedSubpaths(pkgsDir, name) {
  const file = path.join(pkgsDir, name, 'package.json');
  if (!fs.existsSync(file)) return new Set();
  const exp = JSON.parse(fs.readFileSync(file, 'utf8')).exports;
  return new Set(exp && typeof exp === 'object' ? Object.keys(exp).filter((k) => k !== '.' && k.startsWith('./')) : []);
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
    const pj = JSON.parse(fs.readFileSync(path.join(pkgsDir, dir, 'package.json'), 'utf8'));
    for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies', 'devDependencies']) {
      for (const dep of Object.keys(pj[field] ?? {})) {
        if (!dep.startsWith('@tensorfs/')) continue;
        const target = dep.slice('@tensorfs/'.length);
        if (TEST_ONLY.has(target) && field === 'devDependencies') continue;
        if (TEST_ONLY.has(target)) problems.push(`packages/${dir}/package.json: ${field} on ${dep} (test-only)`);
        else if (!allowed.has(target))
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
            } else if (name !== dir && !allowed.has(name))
              problems.push(`${rel(file)}: imports ${spec} (not below ${dir})`);
            if (rest.length && !exportedSubpaths(pkgsDir, name).has(`./${rest.join('/')}`))
              problems.push(`${rel(file)}: imports ${spec} (only package entry points may be imported)`);
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
  }
  return problems;
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
