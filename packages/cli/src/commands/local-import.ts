/**
 * Every CLI verb that reads a local file or folder into the store (`import`, `convert`, `upload`,
 * `bind --apply`) goes through the one import pipeline with the local adapter: the same records,
 * objects, snapshot id and whole-file SHA-256 list whichever verb imported the bytes.
 */
import type { Store } from '@tensorfs/format/store';
import type { ImportSourcesOptions, ImportSourcesResult, LocalProvenance } from '@tensorfs/remote';

/** `importSources(store, localSource(path), options)`, with the pipeline loaded only when a verb imports. */
export async function importLocal(
  store: Store,
  path: string,
  options: ImportSourcesOptions = {},
): Promise<ImportSourcesResult<LocalProvenance>> {
  const { importSources, localSource } = await import('@tensorfs/remote');
  return importSources(store, localSource(path), options);
}
