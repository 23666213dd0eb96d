import type { SafetensorsDtype } from '../dtypes.js';

/** Options for {@link parseSafetensorsHeader} and {@link readSafetensorsHeader}. */
export interface SafetensorsParseOptions {
  /**
   * Strict mode: byte 0 of the header must be `{`, only ASCII spaces (0x20) may follow the
   * object, and descriptor fields other than `dtype`, `shape`, `data_offsets` are rejected.
   * @default false (reference-compatible: JSON whitespace around the object, unknown descriptor fields ignored)
   */
  strict?: boolean;
  /**
   * Largest accepted header length N in bytes. May be lowered, never raised above the reference
   * limit of 100,000,000 (a larger value is `invalid_argument`).
   * @default 100_000_000
   */
  maxHeaderSize?: number;
  /**
   * The real file size, when `bytes` given to {@link parseSafetensorsHeader} hold only the prefix and
   * header. Ignored by {@link readSafetensorsHeader} unless it contradicts the source's size.
   * @default bytes.length
   */
  fileSize?: number;
  /** Aborts {@link readSafetensorsHeader} between reads. */
  signal?: AbortSignal;
}

/** One tensor of a safetensors file. */
export interface SafetensorsTensorInfo {
  /** The decoded tensor name (any Unicode, `""` and `__proto__` included). */
  name: string;
  /** The wire dtype. */
  dtype: SafetensorsDtype;
  /** Dimensions, exact (each 0…2^64−1); `[]` for a scalar. */
  shape: bigint[];
  /** `[begin, end)` relative to the data section, exactly as in the header. */
  dataOffsets: [bigint, bigint];
  /** Absolute offset of the first byte in the file: `8 + N + begin`. */
  byteOffset: number;
  /** `end − begin`. */
  byteLength: number;
}

/**
 * A validated safetensors header. Tensor names are slices of the decoded header text, so a
 * header object keeps that text (about N bytes) alive while it is referenced.
 */
export interface SafetensorsHeader {
  /** N, the header length from the 8-byte prefix (padding included). */
  headerSize: number;
  /** `8 + N`: where the data section starts. */
  dataStart: number;
  /** Size of the whole file (`dataStart` + the data section). */
  fileSize: number;
  /** The `__metadata__` map in file order; `null` when absent or JSON `null`. */
  metadata: Map<string, string> | null;
  /** Tensors in data order (sorted by `data_offsets`; ties keep header order). */
  tensors: SafetensorsTensorInfo[];
  /** The same tensors by name. */
  byName: Map<string, SafetensorsTensorInfo>;
}
