/**
 * Variants: the `.cozytensors` checkpoint headers a tree holds. The variant name is the middle of
 * the file name: `model.int8.cozytensors` is `int8`, `unet/model.fp16.cozytensors` is `fp16`,
 * `model.cozytensors` is the unnamed variant `''`.
 */
import { requireObject, requireObjects, requireString } from '../args.js';
import { TensorFSError } from '../errors.js';
import type { Manifest, ManifestFileEntry } from '../manifest/index.js';

/** The file suffix of a checkpoint header in a tree. */
export const COZYTENSORS_SUFFIX = '.cozytensors';

/** One variant of a tree. */
export interface TreeVariant {
  /** `''` for the unnamed variant. */
  name: string;
  path: string;
  entry: ManifestFileEntry;
}

/** The variant name of a tree path, or null when the path is not a `.cozytensors` file. */
export function variantNameOf(path: string): string | null {
  requireString(path, 'path', 'repo');
  if (!path.endsWith(COZYTENSORS_SUFFIX)) return null;
  const base = path.slice(path.lastIndexOf('/') + 1, path.length - COZYTENSORS_SUFFIX.length);
  const dot = base.indexOf('.');
  return dot < 0 ? '' : base.slice(dot + 1);
}

/** Every `.cozytensors` file of a tree, in path order. */
export function treeVariants(manifest: Manifest): TreeVariant[] {
  requireObject(manifest, 'manifest', 'repo');
  requireObjects(manifest.entries, 'manifest.entries', 'repo');
  const out: TreeVariant[] = [];
  for (const e of manifest.entries) {
    if (e.kind !== 'file') continue;
    const name = variantNameOf(e.path);
    if (name !== null) out.push({ name, path: e.path, entry: e });
  }
  return out;
}

const shown = (name: string) => (name === '' ? '(unnamed)' : name);

/**
 * The variant a reader gets: the one named, or the only one. Null when the tree holds no
 * `.cozytensors` file and none was named (the tree is read as its files).
 * @throws {TensorFSError} `invalid_argument` `repo.variant_required` (several, none named; details
 * `variants`), `not_found` `repo.no_such_variant` (the name is not there), `invalid_argument`
 * `repo.variant_ambiguous` (two files have the name).
 */
export function selectVariant(manifest: Manifest, variant?: string): TreeVariant | null {
  const all = treeVariants(manifest);
  if (variant !== undefined) requireString(variant, 'variant', 'repo');
  const names = [...new Set(all.map((v) => v.name))];
  if (variant === undefined) {
    if (all.length === 0) return null;
    if (all.length === 1) return all[0]!;
    throw new TensorFSError(
      'invalid_argument',
      `the tree has ${all.length} variants; name one with --variant: ${names.map(shown).join(', ')}`,
      { details: { rule: 'repo.variant_required', variants: names } },
    );
  }
  const hits = all.filter((v) => v.name === variant);
  if (hits.length === 0) {
    throw new TensorFSError(
      'not_found',
      `no variant ${JSON.stringify(variant)} in the tree (variants: ${names.length === 0 ? 'none' : names.map(shown).join(', ')})`,
      { details: { rule: 'repo.no_such_variant', variant, variants: names } },
    );
  }
  if (hits.length > 1) {
    throw new TensorFSError('invalid_argument', `variant ${JSON.stringify(variant)} names ${hits.length} files`, {
      details: { rule: 'repo.variant_ambiguous', variant, paths: hits.map((h) => h.path) },
    });
  }
  return hits[0]!;
}
