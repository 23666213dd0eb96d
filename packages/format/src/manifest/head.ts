/**
 * The one CBOR head writer of the generic codec (`cbor.ts`) and the TFM1 fast encoder
 * (`tfm1-fast.ts`), so both write every head in the same shortest form.
 * @internal
 */

/**
 * Writes the head of major type `major` with argument `arg` (an integer in 0…2^53 − 1) in its
 * shortest form at `b[at]`, and returns the index after it. The caller has reserved 9 bytes.
 */
export function putHead(b: Uint8Array, at: number, major: number, arg: number): number {
  const m = major << 5;
  if (arg < 24) {
    b[at] = m | arg;
    return at + 1;
  }
  if (arg < 0x100) {
    b[at] = m | 24;
    b[at + 1] = arg;
    return at + 2;
  }
  if (arg < 0x10000) {
    b[at] = m | 25;
    b[at + 1] = arg >>> 8;
    b[at + 2] = arg & 0xff;
    return at + 3;
  }
  if (arg <= 0xffffffff) {
    b[at] = m | 26;
    b[at + 1] = arg >>> 24;
    b[at + 2] = (arg >>> 16) & 0xff;
    b[at + 3] = (arg >>> 8) & 0xff;
    b[at + 4] = arg & 0xff;
    return at + 5;
  }
  const hi = Math.floor(arg / 0x100000000);
  const lo = arg >>> 0;
  b[at] = m | 27;
  b[at + 1] = hi >>> 24;
  b[at + 2] = (hi >>> 16) & 0xff;
  b[at + 3] = (hi >>> 8) & 0xff;
  b[at + 4] = hi & 0xff;
  b[at + 5] = lo >>> 24;
  b[at + 6] = (lo >>> 16) & 0xff;
  b[at + 7] = (lo >>> 8) & 0xff;
  b[at + 8] = lo & 0xff;
  return at + 9;
}
