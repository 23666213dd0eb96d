/**
 * `@tensorfs/testkit`: helpers shared by the packages' tests (private; never imported by `src/`).
 * @packageDocumentation
 */
export { expectCode, expectCodeSync } from './errors.js';
export { tempDir, REPO_ROOT, SAMPLES, fixturesOf } from './files.js';
export { idOf, sha256Hex, noise, bytesOf, randomOf, sameBytes } from './bytes.js';
export { acceptedCounter } from './property.js';
export { objectFile, storedObjects } from './store-files.js';
export { MemoryStore } from './memory-store.js';
export { blobEntry } from './manifest.js';
export { safetensorsBytes, type StTensor } from './safetensors.js';
export { freePort, startMoto, type Moto } from './moto.js';
export {
  startSwift,
  startS3,
  S3_KINDS,
  type S3Kind,
  type S3Service,
  type Swift,
  type SwiftOptions,
  SWIFT_ACCESS_KEY,
  SWIFT_SECRET,
  SWIFT_UNPRIVILEGED_KEY,
} from './swift.js';
export {
  startFakeHub,
  fakeHubFixture,
  type FakeHubFixture,
  gitBlobId,
  type FakeHub,
  type FakeHubOptions,
  type FakeRepo,
  type FakeRequest,
} from './fake-hf.js';
export {
  assertWrongArgumentsProperty,
  brokenSource,
  callRejectingOnlyTensorFSErrors,
  publicFunctions,
  wrongArgument,
  wrongNonString,
  inTempWorkingDir,
} from './arguments.js';
export { expectConformant, outcomes } from './conformance.js';
export { startNginx, type RunningNginx } from './nginx.js';
