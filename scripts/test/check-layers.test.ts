import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { checkLayers } from '../check-layers.mjs';

const script = fileURLToPath(new URL('../check-layers.mjs', import.meta.url));
const repo = fileURLToPath(new URL('../..', import.meta.url));
const PKGS = ['format', 'planner', 'cas', 'tensors', 'lanes', 'remote', 'cli'];
const temps: string[] = [];

/**
 * A minimal clean tree: each package depends on the one below it and imports it by name (tensors
 * on planner: it takes the storage contract, never cas; remote on tensors).
 */
function cleanTree(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tfs-layers-'));
  temps.push(root);
  PKGS.forEach((p, i) => {
    const dir = path.join(root, 'packages', p, 'src');
    fs.mkdirSync(dir, { recursive: true });
    const below = p === 'remote' ? 'tensors' : p === 'tensors' ? 'planner' : i > 0 ? PKGS[i - 1] : undefined;
    const deps = below ? { [`@tensorfs/${below}`]: 'workspace:^' } : {};
    fs.writeFileSync(
      path.join(root, 'packages', p, 'package.json'),
      JSON.stringify({ name: `@tensorfs/${p}`, dependencies: deps }),
    );
    fs.writeFileSync(
      path.join(dir, 'index.ts'),
      below ? `import { x } from '@tensorfs/${below}';\nexport const y = x;\n` : 'export const x = 1;\n',
    );
  });
  return root;
}

function plant(root: string, pkg: string, file: string, text: string) {
  fs.writeFileSync(path.join(root, 'packages', pkg, 'src', file), text);
}

afterEach(() => {
  for (const t of temps.splice(0)) fs.rmSync(t, { recursive: true, force: true });
});

describe('layer check', () => {
  it('passes on a clean tree and on this repository', () => {
    expect(checkLayers(cleanTree())).toEqual([]);
    const r = spawnSync(process.execPath, [script, repo], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  const cases: [string, (root: string) => void, RegExp][] = [
    [
      'an import of a higher layer',
      (r) => plant(r, 'cas', 'bad.ts', "import { t } from '@tensorfs/tensors';\n"),
      /packages\/cas\/src\/bad.ts: imports @tensorfs\/tensors \(not below cas\)/,
    ],
    [
      'a dependency on a higher layer',
      (r) => {
        const f = path.join(r, 'packages', 'planner', 'package.json');
        fs.writeFileSync(
          f,
          JSON.stringify({
            name: '@tensorfs/planner',
            dependencies: { '@tensorfs/format': '*', '@tensorfs/cas': '*' },
          }),
        );
      },
      /packages\/planner\/package.json: dependencies on @tensorfs\/cas/,
    ],
    [
      'lanes importing remote',
      (r) => plant(r, 'lanes', 'bad.ts', "export * from '@tensorfs/remote';\n"),
      /lanes\/src\/bad.ts: imports @tensorfs\/remote/,
    ],
    [
      'remote importing lanes dynamically',
      (r) => plant(r, 'remote', 'bad.ts', "export const m = import('@tensorfs/lanes');\n"),
      /remote\/src\/bad.ts: imports @tensorfs\/lanes/,
    ],
    [
      'a deep import of another package',
      (r) => plant(r, 'cas', 'bad.ts', "import { p } from '@tensorfs/format/src/safetensors/index.js';\n"),
      /only package entry points/,
    ],
    [
      'a relative import into another package',
      (r) => plant(r, 'tensors', 'bad.ts', "import { s } from '../../cas/src/index.js';\n"),
      /reaches outside packages\/tensors/,
    ],
    [
      'a node: builtin in format',
      (r) => plant(r, 'format', 'bad.ts', "import fs from 'node:fs';\n"),
      /format\/src\/bad.ts: imports Node builtin node:fs/,
    ],
    [
      'a bare builtin in planner',
      (r) => plant(r, 'planner', 'bad.ts', "const c = require('crypto');\n"),
      /planner\/src\/bad.ts: imports Node builtin crypto/,
    ],
    [
      'src importing the test-only testkit',
      (r) => plant(r, 'cas', 'bad.ts', "import { expectCode } from '@tensorfs/testkit';\n"),
      /cas\/src\/bad.ts: imports @tensorfs\/testkit \(test-only/,
    ],
    [
      'a runtime dependency on the test-only testkit',
      (r) =>
        fs.writeFileSync(
          path.join(r, 'packages', 'format', 'package.json'),
          JSON.stringify({ name: '@tensorfs/format', dependencies: { '@tensorfs/testkit': '*' } }),
        ),
      /packages\/format\/package.json: dependencies on @tensorfs\/testkit \(test-only\)/,
    ],
    [
      'tensors importing cas (it takes the storage contract)',
      (r) => plant(r, 'tensors', 'bad.ts', "import type { LocalStore } from '@tensorfs/cas';\n"),
      /packages\/tensors\/src\/bad.ts: imports @tensorfs\/cas \(not below tensors\)/,
    ],
    [
      'a runtime dependency of lanes on cas',
      (r) =>
        fs.writeFileSync(
          path.join(r, 'packages', 'lanes', 'package.json'),
          JSON.stringify({ name: '@tensorfs/lanes', dependencies: { '@tensorfs/tensors': '*', '@tensorfs/cas': '*' } }),
        ),
      /packages\/lanes\/package.json: dependencies on @tensorfs\/cas \(not below lanes\)/,
    ],
    [
      'an import cycle inside a package',
      (r) => {
        plant(r, 'remote', 'a.ts', "import { b } from './b.js';\nexport const a = b;\n");
        plant(r, 'remote', 'b.ts', "import { c } from './c.js';\nexport const b = c;\n");
        plant(r, 'remote', 'c.ts', "import type { a } from './a.js';\nexport const c = 1;\n");
      },
      /packages\/remote\/src: import cycle a\.ts -> b\.ts -> c\.ts -> a\.ts(\n|$)/,
    ],
    [
      'a Node builtin reached from the portable entry @tensorfs/tensors/read',
      (r) => {
        plant(r, 'tensors', 'read.ts', "export { w } from './writer.js';\n");
        plant(r, 'tensors', 'writer.ts', "import * as fsp from 'node:fs/promises';\nexport const w = fsp;\n");
      },
      /packages\/tensors\/src\/writer.ts: imports Node builtin node:fs\/promises \(reached from the portable entry tensors\/src\/read.ts\)/,
    ],
    [
      'a non-portable entry reached from @tensorfs/tensors/read',
      (r) => plant(r, 'tensors', 'read.ts', "export { t } from '@tensorfs/tensors';\n"),
      /packages\/tensors\/src\/read.ts: imports @tensorfs\/tensors, which is not portable/,
    ],
    [
      'Buffer in format',
      (r) => plant(r, 'format', 'bad.ts', 'export const b = Buffer.from([1]);\n'),
      /format\/src\/bad.ts: uses Buffer/,
    ],
  ];
  for (const [name, mutate, expected] of cases) {
    it(`fails on ${name}`, () => {
      const root = cleanTree();
      mutate(root);
      const problems: string[] = checkLayers(root);
      expect(problems.length).toBe(1);
      expect(problems[0]).toMatch(expected);
      const r = spawnSync(process.execPath, [script, root], { encoding: 'utf8' });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(expected);
    });
  }

  it('lets the tests of tensors and lanes use cas (a devDependency), and allows imports without a cycle', () => {
    const root = cleanTree();
    for (const pkg of ['tensors', 'lanes']) {
      fs.mkdirSync(path.join(root, 'packages', pkg, 'test'));
      fs.writeFileSync(
        path.join(root, 'packages', pkg, 'test', 'a.test.ts'),
        "import { openStore } from '@tensorfs/cas';\n",
      );
      const f = path.join(root, 'packages', pkg, 'package.json');
      const pj = JSON.parse(fs.readFileSync(f, 'utf8'));
      fs.writeFileSync(f, JSON.stringify({ ...pj, devDependencies: { '@tensorfs/cas': 'workspace:^' } }));
    }
    plant(root, 'remote', 'a.ts', "import { b } from './b.js';\nexport const a = b;\n");
    plant(root, 'remote', 'b.ts', 'export const b = 1;\n');
    expect(checkLayers(root)).toEqual([]);
  });

  it('allows Node builtins in cas and in tests of format', () => {
    const root = cleanTree();
    plant(root, 'cas', 'fsio.ts', "import fs from 'node:fs';\n");
    fs.mkdirSync(path.join(root, 'packages', 'format', 'test'));
    fs.writeFileSync(path.join(root, 'packages', 'format', 'test', 'a.test.ts'), "import fs from 'node:fs';\n");
    expect(checkLayers(root)).toEqual([]);
  });

  it('lets tests of any package use testkit, and testkit import any package', () => {
    const root = cleanTree();
    const kit = path.join(root, 'packages', 'testkit');
    fs.mkdirSync(path.join(kit, 'src'), { recursive: true });
    fs.writeFileSync(
      path.join(kit, 'package.json'),
      JSON.stringify({ name: '@tensorfs/testkit', private: true, dependencies: { '@tensorfs/cli': '*' } }),
    );
    fs.writeFileSync(path.join(kit, 'src', 'index.ts'), "export * from '@tensorfs/cli';\n");
    fs.mkdirSync(path.join(root, 'packages', 'format', 'test'));
    fs.writeFileSync(
      path.join(root, 'packages', 'format', 'test', 'a.test.ts'),
      "import { expectCode } from '@tensorfs/testkit';\n",
    );
    fs.writeFileSync(
      path.join(root, 'packages', 'format', 'package.json'),
      JSON.stringify({ name: '@tensorfs/format', devDependencies: { '@tensorfs/testkit': 'workspace:*' } }),
    );
    expect(checkLayers(root)).toEqual([]);
  });

  it('allows a subpath the target package declares in exports, and only that', () => {
    const root = cleanTree();
    const pj = path.join(root, 'packages', 'format', 'package.json');
    fs.writeFileSync(pj, JSON.stringify({ name: '@tensorfs/format', exports: { '.': './i.js', './sub': './s.js' } }));
    plant(root, 'cas', 'ok.ts', "import { s } from '@tensorfs/format/sub';\n");
    expect(checkLayers(root)).toEqual([]);
    plant(root, 'cas', 'bad.ts', "import { s } from '@tensorfs/format/other';\n");
    expect(checkLayers(root)).toEqual([
      'packages/cas/src/bad.ts: imports @tensorfs/format/other (only package entry points may be imported)',
    ]);
  });
});
