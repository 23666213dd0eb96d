/**
 * `@tensorfs/remote`: origins (folder, static HTTP, the hub, S3-compatible storage), pull of
 * just what is missing with verify-then-promote, push with compare-and-swap, and the hub server.
 * The wire protocol is spec/v1/remote.md.
 * @packageDocumentation
 */
export type { Credential, TokenProvider } from './credentials.js';
export {
  HttpClient,
  type HttpBody,
  type HttpOptions,
  type HttpRequest,
  type HttpResponse,
  displayUrl,
} from './http.js';
export type {
  BatchRead,
  CallOptions,
  ReadOptions,
  ObjectRead,
  Origin,
  OriginRef,
  OriginRefListing,
  OriginRefProblem,
  WriteOptions,
} from './origin.js';
export { authorFor, originDestination, type OriginDestinationOptions } from './author.js';
export { FolderOrigin } from './folder.js';
/** The one glob dialect (from `@tensorfs/format`, re-exported so remote's API is unchanged). */
export { globMatcher } from '@tensorfs/format';
export {
  HubOrigin,
  type HubIdentity,
  StaticHttpOrigin,
  type HttpOriginOptions,
  type MultipartOptions,
  MULTIPART_PART,
  MULTIPART_THRESHOLD,
} from './http-origin.js';
export { S3Origin, type S3OriginOptions, type S3ErrorContext, parseS3Url, s3ConfigFromEnv } from './s3.js';
export { LocalRefsOrigin } from './local-refs.js';
export { StoreOrigin, originOf, type ServableStore } from './store-origin.js';
export { OriginBase, isOrigin } from './origin.js';
export { connectOrigin, openOrigin, type OpenOriginOptions } from './open.js';
export { fetchSelection, pull, type PullOptions, type PullResult, type SelectionResult } from './pull.js';
export {
  isRepoSpec,
  publishTree,
  type PublishOptions,
  type PublishResult,
  pullRevision,
  type PullRevisionOptions,
  type PullRevisionResult,
} from './repo.js';
export {
  fetchObjects,
  BATCH_OBJECT_BYTES,
  type FetchOptions,
  type TransferCounts,
} from './transfer.js';
export { FetchingStore, type FetchingStoreOptions } from './fetching-store.js';
export { push, type PushOptions, type PushResult, sendClosure, type SendResult } from './push.js';
export {
  serveHub,
  parseTokensConfig,
  BATCH_MAX_IDS,
  type Hub,
  type HubOptions,
  type TokenGrant,
  type TokensConfig,
  type UpstreamOptions,
} from './hub.js';
export { referencesOf, type Reference } from './references.js';
export {
  HF_DEFAULT_ENDPOINT,
  HuggingFaceRepo,
  huggingFaceSource,
  importHuggingFace,
  parseHfUrl,
  type HfFile,
  type HfImportOptions,
  type HfImportResult,
  type HfOptions,
  type HfProvenance,
  type HfRepoSpec,
} from './hf/index.js';
export {
  DEFAULT_REMOTE_GRACE_MS,
  gcBacking,
  gcOrigin,
  markReachable,
  sweepStore,
  sweeperOf,
  type RemoteGcOptions,
  type RemoteGcResult,
  type SweepableObject,
  type Sweeper,
} from './gc.js';
export {
  CIVITAI_DEFAULT_ENDPOINT,
  civitaiSource,
  isCivitaiHost,
  isCivitaiSource,
  parseCivitaiUrl,
  type CivitaiFile,
  type CivitaiOptions,
  type CivitaiProvenance,
  type CivitaiSpec,
} from './sources/civitai.js';
export {
  httpsSource,
  isHttpsUrl,
  type HttpsProvenance,
  type HttpsSourceOptions,
} from './sources/https.js';
/** The one import pipeline and its source contract (from `@tensorfs/cas`, re-exported so remote's API is unchanged). */
export {
  importSources,
  type ImportSourcesOptions,
  type ImportSourcesResult,
  localSource,
  type LocalProvenance,
  type AnnouncedDigest,
  type FileReader,
  type OpenedRange,
  type ResolvedSource,
  type Source,
  type SourceFile,
  type SourceLink,
  type SourceVoice,
  type Spool,
} from '@tensorfs/cas';
