import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { collect, render, updated } from '../error-rules.mjs';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const temps: string[] = [];
afterEach(() => {
  for (const t of temps.splice(0)) fs.rmSync(t, { recursive: true, force: true });
});

function tree(files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tfs-rules-'));
  temps.push(root);
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  }
  return root;
}

describe('the error rule table', () => {
  it('spec/errors.md holds the table of the code as it is (run `pnpm errors` after changing a throw)', () => {
    expect(fs.readFileSync(path.join(repo, 'spec/errors.md'), 'utf8')).toBe(updated(repo));
  });

  it('reads literal and run-time rules with their codes, and counts sites that name none', () => {
    const root = tree({
      'packages/a/src/x.ts': [
        "throw new TensorFSError('malformed', 'm', { details: { rule: 'a.bad_header', offset: 1 } });",
        "throw new TensorFSError('corrupt', 'm', { details: { rule: 'a.bad_header' } });",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template rule, on purpose
        'throw new TensorFSError(`not_found`, `m`, { details: { rule: `a.${why}` } });',
        "throw new TensorFSError('io', 'no rule here');",
        "throw new TensorFSError('io', 'no rule', { details: { path } });",
      ].join('\n'),
      'packages/a/test/y.ts': "throw new TensorFSError('io', 'tests are not counted');",
    });
    const got = collect(root);
    expect(got.sites).toBe(5);
    expect([...got.rules.keys()].sort()).toEqual(['a.*', 'a.bad_header']);
    expect([...got.rules.get('a.bad_header')!.codes].sort()).toEqual(['corrupt', 'malformed']);
    expect([...got.rules.get('a.*')!.codes]).toEqual(['(computed)']);
    expect([...got.unnamed]).toEqual([['packages/a/src/x.ts', 2]]);
    const md = render(got);
    expect(md).toContain('| `a.bad_header` | corrupt, malformed | `packages/a/src/x.ts` |');
    expect(md).toContain(
      '5 throw sites of `new TensorFSError` in `packages/*/src`; 3 name their rule there, 2 distinct rules',
    );
    expect(md).toContain('| `packages/a/src/x.ts` | 2     |');
  });
});
