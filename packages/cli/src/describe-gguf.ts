/**
 * The JSON description of a GGUF header (`tfs inspect --json`).
 */
import { type GgufArray, type GgufHeader, type GgufScalar, type GgufValue, jsonInteger } from '@tensorfs/format';

/** JSON form of a GGUF header, as printed by `tfs inspect --json`. */
export interface GgufDescription {
  /** Always `gguf`. */
  format: 'gguf';
  /** GGUF version. */
  version: 2 | 3;
  /** Byte order of the file. */
  endianness: 'little' | 'big';
  /** Data alignment in bytes. */
  alignment: number;
  /** Absolute offset of the data section. */
  data_start: number | string;
  /** Every KV by key, in file order (values as described on {@link describeGguf}). */
  metadata: Record<string, unknown>;
  /** Every tensor, in tensor-info (= data) order. */
  tensors: GgufTensorDescription[];
}

/** One tensor in {@link GgufDescription}. */
export interface GgufTensorDescription {
  /** Tensor name. */
  name: string;
  /** ggml type name (`F32`, `Q4_K`...). */
  type: string;
  /** Dimensions in ggml order (`ne[0]` first). */
  dims: (number | string)[];
  /** Dimensions in row-major order (reversed `dims`). */
  shape: (number | string)[];
  /** Offset relative to `data_start`. */
  offset: number | string;
  /** Exact data bytes, without padding. */
  byte_length: number | string;
}

/**
 * The `tfs inspect --json` form of a header: `{format, version, endianness, alignment, data_start, metadata,
 * tensors}`. Metadata values: integers via {@link jsonInteger} (numbers up to 2^53 − 1, decimal strings
 * above), floats as JSON numbers (the exact value of a float32; `NaN`, `Infinity`, `-Infinity` as those
 * strings since JSON has no such numbers), bools, strings, arrays as JSON arrays in full. Keys keep file
 * order (except that JS puts integer-like keys first). Tensors: `type` is the ggml type name, `dims` in
 * ggml order, `shape` row-major, `offset` relative to the data section.
 */
export function describeGguf(h: GgufHeader): GgufDescription {
  const metadata: Record<string, unknown> = Object.create(null);
  for (const kv of h.metadata) metadata[kv.key] = describeValue(kv.value);
  return {
    format: 'gguf',
    version: h.version,
    endianness: h.endianness,
    alignment: h.alignment,
    data_start: jsonInteger(h.dataStart),
    metadata,
    tensors: h.tensors.map((t) => ({
      name: t.name,
      type: t.typeName,
      dims: t.dims.map(jsonInteger),
      shape: t.shape.map(jsonInteger),
      offset: jsonInteger(t.offset),
      byte_length: jsonInteger(t.byteLength),
    })),
  };
}

function describeValue(v: GgufValue): unknown {
  if (typeof v === 'object') return (v as GgufArray).items.map(describeScalar);
  return describeScalar(v);
}

function describeScalar(v: GgufScalar): unknown {
  if (typeof v === 'bigint') return jsonInteger(v);
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  return v;
}
