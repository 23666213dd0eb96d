// Builders for hand-made safetensors files (shared by the safetensors test files).
import { expect } from 'vitest';
import { isTensorFSError, type TensorFSError } from '../src/index.js';

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

/** Runs `fn`, expects a TensorFSError and returns it. */
export function caught(fn: () => unknown): TensorFSError {
  try {
    fn();
  } catch (error) {
    if (isTensorFSError(error)) return error;
    throw new Error(`expected a TensorFSError, got ${String(error)}`);
  }
  throw new Error('expected a TensorFSError, nothing was thrown');
}

/** Awaits `promise`, expects a TensorFSError and returns it. */
export async function rejected(promise: Promise<unknown>): Promise<TensorFSError> {
  try {
    await promise;
  } catch (error) {
    if (isTensorFSError(error)) return error;
    throw new Error(`expected a TensorFSError, got ${String(error)}`);
  }
  throw new Error('expected a TensorFSError, nothing was thrown');
}

/** Asserts a TensorFSError's code and rule (and any other details given). */
export function expectError(
  error: TensorFSError,
  code: string,
  rule: string,
  details: Record<string, unknown> = {},
): void {
  expect({ code: error.code, rule: error.details.rule }).toEqual({ code, rule });
  for (const [k, v] of Object.entries(details)) expect(error.details[k], k).toEqual(v);
}
