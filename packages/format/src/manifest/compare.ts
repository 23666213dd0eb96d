/**
 * The public forms of the two comparators: a wrong-typed argument is `invalid_argument` (rule
 * `manifest.argument`), never a `TypeError` or a silent `NaN`. Format's own sorts use the
 * unchecked ones.
 */
import { requireBytes, requireString } from '../args.js';
import { comparePaths as comparePathsRaw } from '../order.js';
import { compareBytes as compareBytesRaw } from './cbor.js';

/** {@inheritDoc comparePathsRaw} */
export function comparePaths(a: string, b: string): number {
  if (typeof a !== 'string' || typeof b !== 'string') {
    requireString(a, 'a', 'manifest');
    requireString(b, 'b', 'manifest');
  }
  return comparePathsRaw(a, b);
}

/** {@inheritDoc compareBytesRaw} */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  if (!(a instanceof Uint8Array) || !(b instanceof Uint8Array)) {
    requireBytes(a, 'a', 'manifest');
    requireBytes(b, 'b', 'manifest');
  }
  return compareBytesRaw(a, b);
}
