/** Internal: the growth step shared by the manifest encoders' output buffers. */

/**
 * A buffer that holds `used + n` bytes, starting with the first `used` bytes of `buf`: its length
 * doubled until it is large enough (the caller keeps `buf` itself when it already is).
 */
export function grown(buf: Uint8Array, used: number, n: number): Uint8Array<ArrayBuffer> {
  let size = buf.length * 2;
  while (size < used + n) size *= 2;
  const next = new Uint8Array(size);
  next.set(buf.subarray(0, used));
  return next;
}
