// Builders for hand-made safetensors files (shared by the safetensors test files).

const encoder = new TextEncoder();

/** A file: 8-byte prefix N (default: the header's length), the header, then `data` zero bytes (or the given bytes). */
export function file(header: string | Uint8Array, data: number | Uint8Array = 0, n?: bigint): Uint8Array {
  const h = typeof header === 'string' ? encoder.encode(header) : header;
  const body = typeof data === 'number' ? new Uint8Array(data) : data;
  const out = new Uint8Array(8 + h.length + body.length);
  new DataView(out.buffer).setBigUint64(0, n ?? BigInt(h.length), true);
  out.set(h, 8);
  out.set(body, 8 + h.length);
  return out;
}

/** A descriptor JSON text. */
export function desc(
  dtype: string,
  shape: (number | bigint | string)[],
  begin: number | bigint | string,
  end: number | bigint | string,
): string {
  return `{"dtype":"${dtype}","shape":[${shape.join(',')}],"data_offsets":[${begin},${end}]}`;
}
