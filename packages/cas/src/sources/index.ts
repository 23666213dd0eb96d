/**
 * The one import pipeline ({@link importSources}) and its source adapter contract, with the
 * adapters that need nothing above the store: local files and folders ({@link localSource}),
 * entries scanned elsewhere ({@link scannedSource}; the Hugging Face cache's `hfCacheSource`) and
 * the spool a resumable download keeps its partial bytes in ({@link openSpool}). Network sources
 * (`hf://`, `https://`, `civitai://`) are adapters in `@tensorfs/remote`.
 */
export { importSources, type ImportSourcesOptions, type ImportSourcesResult } from './pipeline.js';
export { localSource, type LocalProvenance, scannedSource } from './local.js';
export { openSpool, spoolKey, type SpoolIdentity } from './spool.js';
export { MAX_PROBE_BYTES, RemoteFile, STREAM_RESUMES } from './remote-file.js';
export type {
  AnnouncedDigest,
  FileReader,
  OpenedRange,
  ResolvedSource,
  Source,
  SourceArea,
  SourceFile,
  SourceLink,
  SourceVoice,
  Spool,
} from './source.js';
