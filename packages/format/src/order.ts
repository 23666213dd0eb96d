/** The one string order of TensorFS: UTF-8 byte order. */

/**
 * THE path order of TensorFS: the order of the paths' UTF-8 bytes (TFM1 sorts entries by it),
 * computed without encoding. UTF-16 code-unit order (`a < b`) differs from it exactly when a
 * surrogate (an astral character) meets a unit at or above U+E000 (the private-use area, CJK
 * compatibility forms, `\uFFFD`...); at the first differing unit this maps both to code-point
 * order. Use it for every sort of paths (import walks, manifests, listings).
 * @returns negative, zero or positive, as `Array.prototype.sort` wants.
 */
export function comparePaths(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** A UTF-16 unit's rank in code-point order: surrogates (astral characters) after the whole BMP. */
function codePointRank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  if (unit >= 0xe000) return unit - 0x800;
  return unit;
}
