/** Raw container files for tests, written by hand (not by the writers under test). */

export interface StTensor {
  name: string;
  dtype?: string;
  shape?: number[];
  data: Uint8Array;
}

/**
 * A safetensors file: the header JSON as written (padded with spaces to 8 bytes; dtype `U8` and
 * shape `[length]` unless given) and the tensors' data in the given order.
 */
export function safetensorsBytes(tensors: StTensor[], metadata?: Record<string, string>): Uint8Array {
  const header: Record<string, unknown> = Object.create(null);
  if (metadata) header.__metadata__ = metadata;
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = {
      dtype: t.dtype ?? 'U8',
      shape: t.shape ?? [t.data.length],
      data_offsets: [offset, offset + t.data.length],
    };
    offset += t.data.length;
  }
  let json = JSON.stringify(header);
  while ((json.length + 8) % 8 !== 0) json += ' ';
  const jsonBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + jsonBytes.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(jsonBytes.length), true);
  out.set(jsonBytes, 8);
  let at = 8 + jsonBytes.length;
  for (const t of tensors) {
    out.set(t.data, at);
    at += t.data.length;
  }
  return out;
}
