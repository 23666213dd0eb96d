import { jsonInteger, type SafetensorsHeader } from '@tensorfs/format';

/** One tensor in the {@link describeSafetensors} form. */
export interface SafetensorsTensorDescription {
  name: string;
  dtype: string;
  shape: (number | string)[];
  data_offsets: [number | string, number | string];
}

/** The `tfs inspect --json` form of a safetensors header. */
export interface SafetensorsDescription {
  format: 'safetensors';
  header_size: number;
  /** `__metadata__` as an object (null-prototype, so `__proto__` is an ordinary key), or null. */
  metadata: Record<string, string> | null;
  /** Tensors in data order. */
  tensors: SafetensorsTensorDescription[];
}

/**
 * The JSON-ready description of a header, exactly what `tfs inspect --json` prints:
 * `{"format":"safetensors","header_size":N,"metadata":{…}|null,"tensors":[{"name","dtype","shape","data_offsets"}]}`.
 * Integers up to 2^53 − 1 are numbers, larger ones decimal strings ({@link jsonInteger}).
 * Tensors are listed in data order. JavaScript objects enumerate integer-like keys first, so
 * `metadata` key order follows the file only for non-numeric keys.
 */
export function describeSafetensors(h: SafetensorsHeader): SafetensorsDescription {
  let metadata: Record<string, string> | null = null;
  if (h.metadata !== null) {
    metadata = Object.create(null) as Record<string, string>;
    for (const [key, value] of h.metadata) {
      Object.defineProperty(metadata, key, { value, enumerable: true, writable: true, configurable: true });
    }
  }
  return {
    format: 'safetensors',
    header_size: h.headerSize,
    metadata,
    tensors: h.tensors.map((t) => ({
      name: t.name,
      dtype: t.dtype,
      shape: t.shape.map(jsonInteger),
      data_offsets: [jsonInteger(t.dataOffsets[0]), jsonInteger(t.dataOffsets[1])],
    })),
  };
}
