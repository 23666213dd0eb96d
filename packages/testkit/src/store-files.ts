import * as fsp from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The path of an object's file in a local store (`objects/sha256/ab/cd/<hex>`, docs/store.md),
 * spelled out independently of the store's own layout code.
 */
export function objectFile(root: string, id: string): string {
  const hex = id.slice('sha256:'.length);
  return join(root, 'objects', 'sha256', hex.slice(0, 2), hex.slice(2, 4), hex);
}

/** The names (hex digests) of every object file of a local store, by walking `objects/`. */
export async function storedObjects(root: string): Promise<Set<string>> {
  const out = new Set<string>();
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await fsp.readdir(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else out.add(entry.name);
    }
  };
  await walk(join(root, 'objects'));
  return out;
}
