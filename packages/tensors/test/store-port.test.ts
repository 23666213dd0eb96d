// tensors depends on the cas store port only: every import of @tensorfs/cas in src/ is type-only,
// so no implementation (LocalStore, its SQLite) can creep in. The suites that run against both
// LocalStore and MemoryStore (open, writer, compose) prove the port's methods are enough.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

describe('tensors and the store port', () => {
  it('imports nothing but types from @tensorfs/cas', () => {
    const imports: string[] = [];
    for (const name of readdirSync(SRC, { recursive: true }) as string[]) {
      if (!name.endsWith('.ts')) continue;
      const text = readFileSync(join(SRC, name), 'utf8');
      for (const m of text.matchAll(/^(import|export)\b[^;]*?from '@tensorfs\/cas';/gms)) imports.push(m[0]);
    }
    expect(imports.length).toBeGreaterThan(0);
    for (const statement of imports) expect(statement).toMatch(/^import type \{[^}]*\} from '@tensorfs\/cas';$/);
  });
});
