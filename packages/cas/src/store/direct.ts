/**
 * Direct (O_DIRECT) temp writes from page-aligned memory. A buffered write copies every byte into
 * fresh page-cache pages, which costs more system CPU than hashing the same bytes on some machines
 * (on the development VM 0.4–2 s per GiB; an import that hashes on every core has no CPU to spare
 * for it), and then the fdatasync writes the pages out anyway. With O_DIRECT the device reads the
 * bytes straight from the import's read buffer; the fdatasync that follows still commits the
 * file's size and extents and flushes the device cache, so durability is unchanged.
 *
 * Linux only (elsewhere `O_DIRECT` is undefined and every write is buffered). O_DIRECT needs the
 * memory address, the file offset and the length aligned (to the device's logical block or DMA
 * alignment); {@link DIRECT_ALIGN} covers every common device. Memory comes from
 * `WebAssembly.Memory`, whose base is page-aligned (the only page-aligned allocation JavaScript
 * offers); a record's bytes qualify only when they start at an aligned offset of such memory and
 * the rounded-up length still lies inside it (the padding is written too, then cut off with
 * ftruncate before the sync). A filesystem that refuses O_DIRECT (EINVAL) turns it off for the
 * store's lifetime and the write is redone buffered.
 */
import * as fs from 'node:fs';
import type { FileHandle } from 'node:fs/promises';

/** Alignment of address, offset and length of every direct write (a page; ≥ any logical block size). */
export const DIRECT_ALIGN = 4096;

/** Records shorter than this are written buffered (a small write gains nothing from O_DIRECT). */
export const DIRECT_MIN_BYTES = 256 * 1024;

/** `O_DIRECT`, or 0 where Node does not define it (not Linux). */
export const O_DIRECT: number = fs.constants.O_DIRECT ?? 0;

/** Backing buffers known to start on a page boundary. */
const pageAligned = new WeakSet<ArrayBufferLike>();

interface WasmMemoryCtor {
  new (d: { initial: number; maximum: number; shared?: boolean }): { buffer: ArrayBuffer | SharedArrayBuffer };
}
const WasmMemory = (globalThis as { WebAssembly?: { Memory: WasmMemoryCtor } }).WebAssembly?.Memory;
const WASM_PAGE = 65536;

/**
 * `size` bytes of zeroed memory starting on a page boundary (shared between threads when `shared`),
 * backed by a buffer of a whole number of 64 KiB pages; plain memory where that cannot be had.
 */
export function allocateAligned(size: number, shared: boolean): Uint8Array {
  const pages = Math.max(1, Math.ceil(size / WASM_PAGE));
  if (WasmMemory !== undefined && O_DIRECT !== 0 && pages <= 65536) {
    try {
      const { buffer } = new WasmMemory({ initial: pages, maximum: pages, shared });
      pageAligned.add(buffer);
      return new Uint8Array(buffer, 0, size);
    } catch {
      // address space exhausted or limited (ulimit -v): plain memory below
    }
  }
  return shared ? new Uint8Array(new SharedArrayBuffer(size)) : new Uint8Array(size);
}

/**
 * Writes all of `view` (aligned address and length) at `position` of a file opened with
 * O_DIRECT. A short write leaves an unaligned rest no later call could write, so it fails like
 * a refusal: an error with code `EINVAL`, the answer of a filesystem without direct I/O.
 */
export async function writeDirect(fh: FileHandle, view: Uint8Array, position: number): Promise<void> {
  for (let done = 0; done < view.length; ) {
    const { bytesWritten } = await fh.write(view, done, view.length - done, position + done);
    if (bytesWritten <= 0 || bytesWritten % DIRECT_ALIGN !== 0)
      throw Object.assign(new Error('short direct write'), { code: 'EINVAL' });
    done += bytesWritten;
  }
}

/** Rounds up to a multiple of {@link DIRECT_ALIGN}. */
export function alignUp(n: number): number {
  return Math.ceil(n / DIRECT_ALIGN) * DIRECT_ALIGN;
}

/**
 * The view to write with O_DIRECT for a record held in `chunks` (its length rounded up to
 * {@link DIRECT_ALIGN}, padding taken from the memory after it), or null when the bytes do not
 * qualify: several pieces, too short, not on an aligned address, or no room for the padding.
 */
export function directView(chunks: readonly Uint8Array[], length: number): Uint8Array | null {
  if (O_DIRECT === 0 || chunks.length !== 1 || length < DIRECT_MIN_BYTES) return null;
  const c = chunks[0]!;
  if (c.length !== length || c.byteOffset % DIRECT_ALIGN !== 0 || !pageAligned.has(c.buffer)) return null;
  const padded = alignUp(length);
  if (c.byteOffset + padded > c.buffer.byteLength) return null;
  return new Uint8Array(c.buffer, c.byteOffset, padded);
}

/** `StoreOptions.directIO` from `TENSORFS_DIRECT_IO`: `1` true, `0` false, anything else the default (undefined). */
export function directFromEnv(): boolean | undefined {
  const v = process.env.TENSORFS_DIRECT_IO;
  return v === '1' ? true : v === '0' ? false : undefined;
}
