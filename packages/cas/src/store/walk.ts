/** Enumerates the object files of a store (the filesystem is the only record of existence). */
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { type ObjectId, throwIfAborted } from '@tensorfs/format';
import { errnoOf, ioError } from './fsutil.js';
import type { Layout } from './layout.js';

/** One stored object file. */
export interface StoredObject {
  id: ObjectId;
  size: number;
  mtimeMs: number;
}

const HEX2 = /^[0-9a-f]{2}$/;
const HEX64 = /^[0-9a-f]{64}$/;

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await fsp.readdir(dir);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return [];
    throw ioError(err, 'readdir', 'objects/');
  }
}

/**
 * Every object file under `objects/sha256/xx/yy/`, whose name is 64 hex digits and whose path
 * matches its prefix (anything else is ignored: it is not an object).
 */
export async function* listObjects(layout: Layout, signal?: AbortSignal): AsyncGenerator<StoredObject> {
  for (const a of (await readdirOrEmpty(layout.objects)).sort()) {
    if (!HEX2.test(a)) continue;
    for (const b of (await readdirOrEmpty(join(layout.objects, a))).sort()) {
      if (!HEX2.test(b)) continue;
      const dir = join(layout.objects, a, b);
      throwIfAborted(signal);
      for (const hex of (await readdirOrEmpty(dir)).sort()) {
        if (!HEX64.test(hex) || hex.slice(0, 2) !== a || hex.slice(2, 4) !== b) continue;
        try {
          const st = await fsp.stat(join(dir, hex));
          if (st.isFile()) yield { id: `sha256:${hex}`, size: st.size, mtimeMs: st.mtimeMs };
        } catch (err) {
          if (errnoOf(err) !== 'ENOENT') throw ioError(err, 'stat', `objects/sha256/${a}/${b}/${hex}`);
        }
      }
    }
  }
}
