import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { collect, render, ruleless, updated } from '../error-rules.mjs';

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
    const found = collect(repo);
    expect(fs.readFileSync(path.join(repo, 'spec/errors.md'), 'utf8')).toBe(updated(repo, found));
    // Every throw site names its rule (or passes on the one of the error it wraps): none is left bare.
    expect(ruleless(found)).toEqual([]);
  });

  it('reads literal, typed and run-time rules with their codes, and lists the sites that name none', () => {
    const root = tree({
      'packages/a/src/x.ts': [
        "throw new TensorFSError('malformed', 'm', { details: { rule: 'a.bad_header', offset: 1 } });",
        "throw new TensorFSError('corrupt', 'm', { details: { rule: 'a.bad_header' } });",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template rule, on purpose
        'throw new TensorFSError(`not_found`, `m`, { details: { rule: `a.${why}` } });',
        "throw new TensorFSError('io', 'no rule here');",
        "throw new TensorFSError('io', 'no rule', { details: { path } });",
        "type ARule = 'a.one' | 'a.two';",
        "function typed(rule: ARule) { return new TensorFSError('conflict', 'm', { details: { rule } }); }",
        "function loose(rule: string) { return new TensorFSError('conflict', 'm', { details: { rule } }); }",
        "const pick = (x: boolean) => new TensorFSError('denied', 'm', { details: { rule: x ? 'a.yes' : 'a.no' } });",
        "function wrap(e: any) { return new TensorFSError(e.code, 'm', { details: { ...e.details, tensor: 't' } }); }",
      ].join('\n'),
      'packages/a/test/y.ts': "throw new TensorFSError('io', 'tests are not counted');",
    });
    const got = collect(root);
    expect(got.sites).toBe(9);
    expect([...got.rules.keys()].sort()).toEqual(['a.*', 'a.bad_header', 'a.no', 'a.one', 'a.two', 'a.yes']);
    expect([...got.rules.get('a.bad_header')!.codes].sort()).toEqual(['corrupt', 'malformed']);
    expect([...got.rules.get('a.*')!.codes]).toEqual(['(computed)']);
    expect([...got.rules.get('a.one')!.codes]).toEqual(['conflict']);
    expect([...got.inherited]).toEqual([['packages/a/src/x.ts', 1]]);
    expect(ruleless(got)).toEqual(['packages/a/src/x.ts:4', 'packages/a/src/x.ts:5', 'packages/a/src/x.ts:8']);
    const md = render(got);
    expect(md).toContain('| `a.bad_header` | corrupt, malformed | `packages/a/src/x.ts` |');
    expect(md).toContain(
      '9 throw sites of `new TensorFSError` in `packages/*/src`: 5 name their rule (a literal, or a parameter typed ' +
        "with the area's rule type), 1 pass on the rule of the error they wrap (`details: { ...error.details, … }`, `rule: problem.rule`), " +
        '3 name none; 6 distinct rules',
    );
    expect(md).toContain('| `packages/a/src/x.ts` | 4, 5, 8 |');
  });

  it('`pnpm errors` fails while a throw site names no rule', () => {
    const root = tree({
      'packages/a/src/x.ts': "throw new TensorFSError('io', 'no rule here');",
      'spec/errors.md': '# Error rules\n',
    });
    const script = fileURLToPath(new URL('../error-rules.mjs', import.meta.url));
    const run = spawnSync(process.execPath, [script, root], { encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('1 throw sites name no rule');
    expect(run.stderr).toContain('packages/a/src/x.ts:1');
    fs.writeFileSync(
      path.join(root, 'packages/a/src/x.ts'),
      "throw new TensorFSError('io', 'm', { details: { rule: 'a.io' } });",
    );
    const fixed = spawnSync(process.execPath, [script, root], { encoding: 'utf8' });
    expect(fixed.status).toBe(0);
    const again = spawnSync(process.execPath, [script, '--check', root], { encoding: 'utf8' });
    expect(again.status).toBe(0);
  });
});
