/**
 * `@tensorfs/lanes`: topologies, quant rules, morphisms and the bind engine. Headers only, no
 * Node built-ins: runs in browsers as it runs in Node.
 * @packageDocumentation
 */
import { BUNDLED } from './bundled.js';
import { type Catalog, loadCatalog } from './catalog.js';

export {
  bind,
  bindOrThrow,
  type BindOptions,
  type BindRefusal,
  type BindRefusalRule,
  type BindResult,
  type BindStep,
  type CandidateHeaders,
  type CandidateTensor,
  type Tier,
} from './bind.js';
export { candidateFromGguf, candidateFromSafetensors, candidateFromTensors } from './candidates.js';
export { canonicalJson, documentDigest } from './canonical.js';
export { Catalog, type CatalogInput, documentText, type LaneRef, loadCatalog, type MorphismEdge } from './catalog.js';
export {
  type CatalogIndex,
  checkDocument,
  type DocRef,
  type Evidence,
  type LaneDocument,
  type MorphismDoc,
  type MorphismEntry,
  refOf,
  type RuleDoc,
  type RuleEligibility,
  type RuleEmission,
  type TopologyComponent,
  type TopologyDoc,
} from './documents.js';
export { byteLength, castIsExact } from './dtypes.js';
export { evalExpr } from './expr.js';
export {
  type BankedHeader,
  computeLayout,
  type DeriveOptions,
  deriveTopology,
  emissionsOf,
  type HeaderTensor,
  isEligible,
  type Layout,
  type LayoutComponent,
  type LayoutEntry,
  type LayoutPart,
  layoutToJson,
} from './layout.js';
export { type AppliedOp, applyOps, type MorphismOp, morphismOps, rotaryRowOrder } from './morphism.js';
export { laneSeams } from './seams.js';
export { sha256 } from './sha256.js';

/** The documents bundled with this package (the committed `spec/v2/` catalog). */
export const BUNDLED_CATALOG = BUNDLED;

let cached: Catalog | undefined;

/** The bundled catalog, loaded and verified once (digests, morphism re-derivation, graph checks). */
export function defaultCatalog(): Catalog {
  cached ??= loadCatalog(BUNDLED);
  return cached;
}
