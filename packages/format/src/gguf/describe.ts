/**
 * The JSON description of a GGUF header (`tfs inspect --json`).
 */
import { jsonInteger } from '../json.js';
import type { GgufArray, GgufHeader, GgufScalar, GgufValue } from './types.js';

/** JSON form of a GGUF header, as printed by `tfs inspect --json`. */
export interface GgufDescription {
  format: 'gguf';
  version: 2 | 3;
  endianness: 'little' | 'big';
  alignment: number;
  data_start: number | string;
  metadata: Record<string, unknown>;
  tensors: {
    name: string;
    type: string;
    dims: (number | string)[];
    shape: (number | string)[];
    offset: number | string;
    byte_length: number | string;
  }[];
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
