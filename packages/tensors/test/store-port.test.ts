// tensors depends on the storage contract only (`@tensorfs/format/store`): nothing in src/ imports
// @tensorfs/cas, not even a type, and the package does not depend on it, so no implementation
// (LocalStore, its SQLite) can creep in and `npm i @tensorfs/tensors` builds no native module. The
// suites that run against both LocalStore and MemoryStore (open, writer, compose) prove the
// contract's members are enough.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
const PKG = fileURLToPath(new URL('../package.json', import.meta.url));

describe('tensors and the storage contract', () => {
  it('imports nothing from @tensorfs/cas and takes the contract from @tensorfs/format/store', () => {
    const cas: string[] = [];
    const contract: string[] = [];
    for (const name of readdirSync(SRC, { recursive: true }) as string[]) {
      if (!name.endsWith('.ts')) continue;
      const text = readFileSync(join(SRC, name), 'utf8');
      for (const m of text.matchAll(/^(import|export)\b[^;]*?from '@tensorfs\/cas[^']*';/gms))
        cas.push(`${name}: ${m[0]}`);
      for (const m of text.matchAll(/^import\b[^;]*?from '@tensorfs\/format\/store';/gms)) contract.push(m[0]);
    }
    expect(cas).toEqual([]);
    expect(contract.length).toBeGreaterThan(0);
  });

  it('does not depend on @tensorfs/cas (tests use it as a devDependency)', () => {
    const pkg = JSON.parse(readFileSync(PKG, 'utf8')) as Record<string, Record<string, string> | undefined>;
    expect(Object.keys(pkg.dependencies ?? {})).not.toContain('@tensorfs/cas');
    expect(Object.keys(pkg.peerDependencies ?? {})).not.toContain('@tensorfs/cas');
    expect(pkg.devDependencies?.['@tensorfs/cas']).toBe('workspace:^');
  });
});
