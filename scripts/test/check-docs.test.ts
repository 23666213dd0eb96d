import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { checkDocs } from '../check-docs.mjs';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const temps: string[] = [];
afterEach(() => {
  for (const t of temps.splice(0)) fs.rmSync(t, { recursive: true, force: true });
});

/** A tree with one package (`@tensorfs/demo`, two entry points), a one-command CLI table and `readme` as its README. */
function tree(readme: string): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tfs-docs-'));
  temps.push(root);
  const write = (rel: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  };
  write(
    'packages/demo/package.json',
    JSON.stringify({
      name: '@tensorfs/demo',
      exports: {
        '.': { '@tensorfs/source': './src/index.ts' },
        './sub': { '@tensorfs/source': './src/sub.ts' },
        './package.json': './package.json',
      },
    }),
  );
  write(
    'packages/demo/src/index.ts',
    'export interface Model { get(name: string): number }\nexport function openDemo(): Model { return { get: () => 1 }; }\n',
  );
  write('packages/demo/src/sub.ts', 'export const onlyInSub = 1;\n');
  write('packages/cli/src/commands/specs.ts', "export const SPECS = { import: { command: 'import <path>' } };\n");
  write('README.md', readme);
  return root;
}

describe('check-docs', () => {
  it("finds nothing stale in this repository's docs", () => {
    expect(checkDocs(repo)).toEqual([]);
  });

  it('passes names that exist: commands, exports, members of exported types, platform calls', () => {
    const root = tree(
      '`tfs import ./m` then `openDemo()` and `model.get(name)`; `fetch(url)`, `fsync(fd)`.\n\n' +
        "```ts\nimport { openDemo } from '@tensorfs/demo';\nimport { onlyInSub } from '@tensorfs/demo/sub';\nmyHelper(openDemo());\n```\n",
    );
    expect(checkDocs(root)).toEqual([]);
  });

  it('names each stale command, import and API call with its file and line', () => {
    const root = tree(
      'Run `tfs import x`, then\n`tfs upload dir repo`.\n\nCall `openModel(store, ref)` or `openDemo()`.\n\n' +
        "```ts\nimport { openDemo, onlyInSub } from '@tensorfs/demo';\n```\n\n```sh\n$ tfs rm old\n```\n",
    );
    expect(checkDocs(root)).toEqual([
      { file: 'README.md', line: 2, kind: 'verb', name: 'upload' },
      { file: 'README.md', line: 4, kind: 'api', name: 'openModel' },
      { file: 'README.md', line: 7, kind: 'import', name: '@tensorfs/demo: onlyInSub' },
      { file: 'README.md', line: 11, kind: 'verb', name: 'rm' },
    ]);
  });
});
