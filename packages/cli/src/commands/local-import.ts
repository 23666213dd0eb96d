/**
 * Every CLI verb that reads a local file or folder into the store (`import`, `convert`, `upload`,
 * `bind --apply`) goes through the one import pipeline with the local adapter: the same records,
 * objects, snapshot id and whole-file SHA-256 list whichever verb imported the bytes.
 */
import type { Store } from '@tensorfs/format/store';
import {
  importSources,
  type ImportSourcesOptions,
  type ImportSourcesResult,
  localSource,
  type LocalProvenance,
} from '@tensorfs/cas';

/**
 * `importSources(store, localSource(path), options)`. The pipeline and the local adapter are
 * `@tensorfs/cas`'s: a local import loads nothing of `@tensorfs/remote` (nor its HTTP client).
 */
export async function importLocal(
  store: Store,
  path: string,
  options: ImportSourcesOptions = {},
): Promise<ImportSourcesResult<LocalProvenance>> {
  return importSources(store, localSource(path), options);
}
