/**
 * The one glob dialect (issue 23 item 7): `globMatcher` is the only matcher of patterns a user
 * types — `--tensors`, `--trim`, `--include`, token scopes and lanes' rule globs (lane keys).
 */
import fs from 'node:fs';
import path from 'node:path';
import { globMatcher } from '@tensorfs/format';
import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

const packages = path.resolve(import.meta.dirname, '..', '..');

function* sources(dir: string): Generator<string> {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) yield* sources(p);
    else if (/\.[cm]?tsx?$/.test(e.name)) yield p;
  }
}

describe('globMatcher', () => {
  it('* stays inside a path segment, ** crosses them; dot names match', () => {
    const m = globMatcher('model.layers.*');
    expect([m('model.layers.0.mlp.weight'), m('model.layers'), m('a/model.layers.0')]).toEqual([true, false, false]);
    const deep = globMatcher('**/*.safetensors');
    expect([deep('a/b/c.safetensors'), deep('c.safetensors'), deep('.cache/x.safetensors'), deep('a/b.bin')]).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(globMatcher('*')('.hidden')).toBe(true);
  });

  it('? is one character, [...] a class, {a,b} alternatives, a leading ! negates, a list is any-of', () => {
    const q = globMatcher('layer.?');
    expect([q('layer.1'), q('layer.12')]).toEqual([true, false]);
    const c = globMatcher('w[0-2]');
    expect([c('w1'), c('w3')]).toEqual([true, false]);
    const b = globMatcher('*.{q,k}_proj.weight');
    expect([b('attn.q_proj.weight'), b('attn.v_proj.weight')]).toEqual([true, false]);
    const n = globMatcher('!*.bias');
    expect([n('x.weight'), n('x.bias')]).toEqual([true, false]);
    const any = globMatcher(['*.json', 'tokenizer.*']);
    expect(['config.json', 'tokenizer.model', 'model.bin'].filter(any)).toEqual(['config.json', 'tokenizer.model']);
  });

  it('backslashes are never path separators (POSIX on every platform)', () => {
    expect(globMatcher('a/*')('a\\b')).toBe(false);
    expect(globMatcher('a*')('a\\b')).toBe(true);
  });

  it('an empty list matches nothing; an empty pattern or a non-string is invalid_argument', () => {
    expect(globMatcher([])('anything')).toBe(false);
    expect(expectCodeSync(() => globMatcher(''), 'invalid_argument').details.rule).toBe('glob.empty_pattern');
    expect(expectCodeSync(() => globMatcher(['a', '']), 'invalid_argument').details.rule).toBe('glob.empty_pattern');
    expect(expectCodeSync(() => globMatcher([1] as never), 'invalid_argument').details).toMatchObject({
      rule: 'glob.argument',
      argument: 'patterns[]',
    });
    expect(expectCodeSync(() => globMatcher(0 as never), 'invalid_argument').details.rule).toBe('glob.argument');
  });

  it('is the only place any package calls picomatch', () => {
    const callers: string[] = [];
    for (const pkg of fs.readdirSync(packages)) {
      const src = path.join(packages, pkg, 'src');
      if (!fs.existsSync(src)) continue;
      for (const f of sources(src))
        if (/from ['"]picomatch/.test(fs.readFileSync(f, 'utf8'))) callers.push(path.relative(packages, f));
    }
    expect(callers).toEqual([path.join('format', 'src', 'glob.ts')]);
  });
});
