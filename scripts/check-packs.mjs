#!/usr/bin/env node
// Packs every package and proves each one installs and works on its own: a scratch project
// that installs only that package's tarball (and its @tensorfs/* dependencies' tarballs) can
// import it by name (ESM, and CJS where offered) and its types resolve under NodeNext. The
// portable layers (`@tensorfs/format`, `@tensorfs/tensors`, `@tensorfs/lanes`) must also install
// with no native module at all (no better-sqlite3, no `.node` file, no node-gyp package in the
// installed tree), and tensors must write and read a tensor over the in-memory store there.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const typeRoots = path.join(root, 'node_modules', '@types');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tfs-packs-'));
/** Packages whose installed tree must hold no native module (DESIGN.md: "pulls in no native module"). */
export const NATIVE_FREE = ['@tensorfs/format', '@tensorfs/tensors', '@tensorfs/lanes'];

/** Every native module under `nodeModules`: packages with a `.node` file, a binding.gyp or `gypfile`. */
function nativeModules(nodeModules) {
  const found = [];
  const visit = (dir, pkg) => {
    let entries;
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name === 'node_modules') scanModules(p);
        else visit(p, pkg);
      } else if (e.name.endsWith('.node') || e.name === 'binding.gyp')
        found.push(`${pkg} (${path.relative(nodeModules, p)})`);
    }
  };
  const scanPackage = (dir) => {
    let pj = {};
    try {
      pj = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    } catch {}
    const name = pj.name ?? path.basename(dir);
    if (pj.gypfile) found.push(`${name} (gypfile)`);
    visit(dir, name);
  };
  const scanModules = (modules) => {
    let entries;
    try {
      entries = fs.readdirSync(modules, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (!e.isDirectory() || e.name.startsWith('.')) continue;
      const p = path.join(modules, e.name);
      if (e.name.startsWith('@')) {
        for (const s of fs.readdirSync(p, { withFileTypes: true }))
          if (s.isDirectory()) scanPackage(path.join(p, s.name));
      } else scanPackage(p);
    }
  };
  scanModules(nodeModules);
  return [...new Set(found)].sort();
}

/** What runs in the scratch project of a native-free package: the layer works with no native module. */
const SMOKE = {
  '@tensorfs/tensors': `
    import { MemoryStore } from '@tensorfs/format/store';
    import { TensorWriter, commit, openTensors } from '@tensorfs/tensors';
    const store = new MemoryStore();
    const w = new TensorWriter(store, 'model.safetensors');
    await w.add('w', 'F32', [2n], new Uint8Array([0, 0, 128, 63, 0, 0, 0, 64]));
    const entry = await w.finish();
    await commit(store, { put: [entry], ref: 'smoke' });
    await w.close();
    const bytes = await (await openTensors(store, 'smoke')).get('w').read();
    if (bytes.join() !== '0,0,128,63,0,0,0,64') throw new Error('tensors over the memory store read ' + bytes.join());
  `,
  '@tensorfs/format': `
    import { MemoryStore } from '@tensorfs/format/store';
    import { runConformance } from '@tensorfs/format/store/conformance';
    const r = await runConformance({ name: 'memory store', store: new MemoryStore() });
    if (!r.ok) throw new Error(JSON.stringify(r.results.filter((x) => x.outcome === 'failed')));
  `,
};
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });

try {
  const dirs = fs.readdirSync(path.join(root, 'packages')).sort();
  const manifests = new Map();
  const tarballs = new Map();
  for (const dir of dirs) {
    const pkgDir = path.join(root, 'packages', dir);
    const pj = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
    if (pj.private) continue; // test-only workspace packages (testkit) are never published
    manifests.set(pj.name, pj);
    const out = run('pnpm', ['pack', '--pack-destination', work], pkgDir).trim().split('\n').pop();
    tarballs.set(pj.name, path.isAbsolute(out) ? out : path.join(work, path.basename(out)));
  }
  const closure = (name, seen = new Set()) => {
    if (seen.has(name)) return seen;
    seen.add(name);
    for (const dep of Object.keys(manifests.get(name).dependencies ?? {})) if (manifests.has(dep)) closure(dep, seen);
    return seen;
  };
  let failed = 0;
  for (const [name, pj] of manifests) {
    const scratch = path.join(work, `use-${name.split('/')[1]}`);
    fs.mkdirSync(scratch);
    const local = Object.fromEntries([...closure(name)].map((n) => [n, `file:${tarballs.get(n)}`]));
    fs.writeFileSync(
      path.join(scratch, 'package.json'),
      JSON.stringify({ name: 'scratch', private: true, type: 'module', dependencies: local, overrides: local }),
    );
    // Every code subpath of `exports` ('.', './gguf', ...) must import and typecheck on its own.
    const subpaths = Object.keys(pj.exports ?? { '.': null }).filter((k) => k !== './package.json');
    const specifiers = subpaths.map((k) => (k === '.' ? name : `${name}/${k.slice(2)}`));
    fs.writeFileSync(
      path.join(scratch, 'check.ts'),
      specifiers.map((s, i) => `import * as m${i} from '${s}';\n`).join('') +
        `const names: string[] = [${specifiers.map((_, i) => `...Object.keys(m${i})`).join(', ')}];\nexport default names;\n`,
    );
    const checks = [`const m = await import('${name}'); console.log(Object.keys(m).length);`];
    if (pj.exports?.['.']?.require) {
      checks.push(
        `import { createRequire } from 'node:module'; const m = createRequire(import.meta.url)('${name}'); console.log(Object.keys(m).length);`,
      );
    }
    const subChecks = specifiers
      .slice(1)
      .flatMap((s) => [
        `const m = await import('${s}'); if (Object.keys(m).length === 0) throw new Error('${s}: no exports');`,
        ...(pj.exports[subpaths[specifiers.indexOf(s)]]?.require
          ? [
              `import { createRequire } from 'node:module'; const m = createRequire(import.meta.url)('${s}'); if (Object.keys(m).length === 0) throw new Error('${s} (CJS): no exports');`,
            ]
          : []),
      ]);
    try {
      run('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], scratch);
      const counts = checks.map((code) => Number(run(process.execPath, ['--input-type=module', '-e', code], scratch)));
      for (const code of subChecks) run(process.execPath, ['--input-type=module', '-e', code], scratch);
      if (counts.length === 2 && counts[0] !== counts[1])
        throw new Error(`ESM has ${counts[0]} exports, CJS ${counts[1]}`);
      run(
        process.execPath,
        [
          tsc,
          '--noEmit',
          '--strict',
          '--module',
          'nodenext',
          '--moduleResolution',
          'nodenext',
          '--target',
          'es2022',
          '--types',
          'node',
          '--typeRoots',
          typeRoots,
          'check.ts',
        ],
        scratch,
      );
      let native = '';
      if (NATIVE_FREE.includes(name)) {
        const found = nativeModules(path.join(scratch, 'node_modules'));
        if (found.length > 0) throw new Error(`native modules in the installed tree: ${found.join(', ')}`);
        if (fs.existsSync(path.join(scratch, 'node_modules', '@tensorfs', 'cas'))) {
          throw new Error('@tensorfs/cas is in the installed tree');
        }
        if (SMOKE[name]) run(process.execPath, ['--input-type=module', '-e', SMOKE[name]], scratch);
        native = ', no native module';
      } else if (name === '@tensorfs/cas') {
        // The detector itself is proved on the one package that must have a native module.
        const found = nativeModules(path.join(scratch, 'node_modules'));
        if (!found.some((f) => f.startsWith('better-sqlite3'))) {
          throw new Error(`the native-module detector missed better-sqlite3 under @tensorfs/cas (${found.join(', ')})`);
        }
        native = `, native: ${found.filter((f) => f.startsWith('better-sqlite3'))[0]}`;
      }
      const what = counts.length === 2 ? 'ESM+CJS' : 'ESM';
      const subs = specifiers.length > 1 ? `, subpaths ${subpaths.slice(1).join(' ')}` : '';
      console.log(
        `packs: ${name} ok (${what}, types, ${counts[0] ? `${counts[0]} exports` : 'no exports yet'}${subs}${native})`,
      );
    } catch (err) {
      failed++;
      console.error(`packs: ${name} FAILED\n${err.stdout ?? ''}${err.stderr ?? err.message}`);
    }
  }
  if (failed) process.exitCode = 1;
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
