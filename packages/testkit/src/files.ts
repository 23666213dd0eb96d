import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';

const dirs: string[] = [];

/** A fresh temp directory, removed (with everything in it) after the current test. */
export function tempDir(prefix = 'tfs-test-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

// Removing a store of 100,000 objects takes more than the default hook limit on a busy machine,
// and asynchronously: a synchronous removal that long blocks the test worker past vitest's fixed
// 60 s for its own calls, which fails the run ("Timeout calling onTaskUpdate") with every test green.
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
}, 600_000);

/** The repository's root folder. */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The committed sample model (`samples/`) and its Python-computed expectations. */
export const SAMPLES = join(REPO_ROOT, 'samples');

/** The fixture folder `test/fixtures/` of a package (`format`, `tensors`, ...). */
export function fixturesOf(pkg: string): string {
  return join(REPO_ROOT, 'packages', pkg, 'test', 'fixtures');
}
