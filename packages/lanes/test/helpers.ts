import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CatalogIndex } from '@tensorfs/lanes';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const V2 = path.join(ROOT, 'spec/v2');

export const readJson = (p: string): any => JSON.parse(fs.readFileSync(p, 'utf8'));

/** Every committed document and the index, straight from spec/v2/ (not from the bundle). */
export function specCatalog(): { index: CatalogIndex; documents: any[] } {
  const index = readJson(path.join(V2, 'catalog.json')) as CatalogIndex;
  const documents: any[] = [];
  for (const dir of ['topologies', 'rules', 'morphisms'])
    for (const f of fs.readdirSync(path.join(V2, dir)).sort()) documents.push(readJson(path.join(V2, dir, f)));
  return { index, documents };
}

export const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v));

export function expectCode(fn: () => unknown, code: string, rule: string): any {
  try {
    fn();
  } catch (e: any) {
    if (e?.name !== 'TensorFSError') throw e;
    if (e.code !== code || e.details?.rule !== rule)
      throw new Error(`expected ${code}/${rule}, got ${e.code}/${String(e.details?.rule)}: ${e.message}`);
    return e;
  }
  throw new Error(`expected ${code}/${rule}, nothing was thrown`);
}
