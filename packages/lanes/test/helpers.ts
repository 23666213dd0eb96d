import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalStore } from '@tensorfs/cas';
import type { CatalogIndex, LaneDocument } from '@tensorfs/lanes';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const V2 = path.join(ROOT, 'spec/v2');

/** A committed JSON file; the caller states (and the test checks) what it holds. */
export const readJson = <T = unknown>(p: string): T => JSON.parse(fs.readFileSync(p, 'utf8')) as T;

/** Every committed document and the index, straight from spec/v2/ (not from the bundle). */
export function specCatalog(): { index: CatalogIndex; documents: LaneDocument[] } {
  const index = readJson<CatalogIndex>(path.join(V2, 'catalog.json'));
  const documents: LaneDocument[] = [];
  for (const dir of ['topologies', 'rules', 'morphisms'])
    for (const f of fs.readdirSync(path.join(V2, dir)).sort())
      documents.push(readJson<LaneDocument>(path.join(V2, dir, f)));
  return { index, documents };
}

export const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v));

/** Opens the store at `root` for `fn`, closed afterwards whatever happens. */
export async function withStoreAt<R>(root: string, fn: (s: LocalStore) => Promise<R>): Promise<R> {
  const s = await LocalStore.open(root);
  try {
    return await fn(s);
  } finally {
    await s.close();
  }
}
