// Every verb that reads local files into the store (import, convert, upload, bind --apply) goes
// through the one import pipeline (`importLocal` → `importSources(store, localSource(path))`), so
// what a verb stores from the same bytes cannot drift from what `tfs import` stores.
import * as fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const src = path.join(import.meta.dirname, '..', 'src');

function sources(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((d) =>
      d.isDirectory() ? sources(path.join(dir, d.name)) : d.name.endsWith('.ts') ? [path.join(dir, d.name)] : [],
    );
}

describe('the CLI imports local files one way', () => {
  it('calls importSources only through importLocal, and never LocalStore.importPath or convertPath', () => {
    const found: string[] = [];
    for (const f of sources(src)) {
      const text = fs.readFileSync(f, 'utf8');
      const rel = path.relative(src, f);
      if (/\.importPath\(/.test(text)) found.push(`${rel}: importPath`);
      if (/\bconvertPath\(/.test(text)) found.push(`${rel}: convertPath`);
      if (/\bimportSources\(/.test(text) && rel !== path.join('commands', 'local-import.ts'))
        if (/localSource\(/.test(text)) found.push(`${rel}: importSources(localSource)`);
    }
    expect(found).toEqual([]);
    // The four verbs do call it.
    const callers = sources(src)
      .filter((f) => /\bimportLocal\(/.test(fs.readFileSync(f, 'utf8')))
      .map((f) => path.basename(f))
      .sort();
    expect(callers).toEqual(['checkpoint.ts', 'lanes.ts', 'local-import.ts', 'store.ts', 'upload.ts']);
  });
});
