#!/usr/bin/env node
// Packs every package and proves each one installs and works on its own: a scratch project
// that installs only that package's tarball (and its @tensorfs/* dependencies' tarballs) can
// import it by name (ESM, and CJS where offered) and its types resolve under NodeNext.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const typeRoots = path.join(root, 'node_modules', '@types');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tfs-packs-'));
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
      const what = counts.length === 2 ? 'ESM+CJS' : 'ESM';
      const subs = specifiers.length > 1 ? `, subpaths ${subpaths.slice(1).join(' ')}` : '';
      console.log(
        `packs: ${name} ok (${what}, types, ${counts[0] ? `${counts[0]} exports` : 'no exports yet'}${subs})`,
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
