/**
 * Dtype facts the engine prices steps with: byte lengths (safetensors dtypes and GGML block types)
 * and whether a cast between two dtypes is exact.
 */
import { ggmlTypeByName, safetensorsDtype } from '@tensorfs/format';

interface Num {
  kind: 'float' | 'int' | 'uint' | 'bool';
  /** Exponent bits (floats). */
  exp: number;
  /** Mantissa bits (floats) or value bits (ints, sign excluded). */
  man: number;
}

const NUM: Record<string, Num> = {
  F64: { kind: 'float', exp: 11, man: 52 },
  F32: { kind: 'float', exp: 8, man: 23 },
  F16: { kind: 'float', exp: 5, man: 10 },
  BF16: { kind: 'float', exp: 8, man: 7 },
  F8_E4M3: { kind: 'float', exp: 4, man: 3 },
  F8_E5M2: { kind: 'float', exp: 5, man: 2 },
  I64: { kind: 'int', exp: 0, man: 63 },
  I32: { kind: 'int', exp: 0, man: 31 },
  I16: { kind: 'int', exp: 0, man: 15 },
  I8: { kind: 'int', exp: 0, man: 7 },
  U64: { kind: 'uint', exp: 0, man: 64 },
  U32: { kind: 'uint', exp: 0, man: 32 },
  U16: { kind: 'uint', exp: 0, man: 16 },
  U8: { kind: 'uint', exp: 0, man: 8 },
  BOOL: { kind: 'bool', exp: 0, man: 1 },
};

/** True for GGML block-quantized types (`Q8_0`, `Q4_K`, ...): not castable element by element. */
export function isBlockType(dtype: string): boolean {
  const g = ggmlTypeByName(dtype);
  return g !== undefined && g.blockSize > 1;
}

/** True when `dtype` is a safetensors dtype or a GGML type name. */
export function isKnownDtype(dtype: string): boolean {
  return safetensorsDtype(dtype) !== undefined || ggmlTypeByName(dtype) !== undefined;
}

/** Bytes a tensor of `dtype` and `shape` occupies (GGML types by block geometry). */
export function byteLength(dtype: string, shape: readonly number[]): number {
  const n = shape.reduce((a, b) => a * b, 1);
  const st = safetensorsDtype(dtype);
  if (st) return Math.ceil((n * st.bits) / 8);
  const g = ggmlTypeByName(dtype);
  if (g && g.blockSize > 0) return Math.ceil(n / g.blockSize) * g.typeSize;
  return 0;
}

/** True when every value of `from` is exactly representable in `to`. */
export function castIsExact(from: string, to: string): boolean {
  if (from === to) return true;
  const a = NUM[from];
  const b = NUM[to];
  if (!a || !b) return false;
  if (a.kind === 'bool') return true;
  if (b.kind === 'bool') return false;
  if (b.kind === 'float') {
    if (a.kind === 'float') return b.exp >= a.exp && b.man >= a.man;
    return a.man <= b.man + 1;
  }
  if (a.kind === 'float') return false;
  if (b.kind === 'int') return a.man <= b.man;
  return a.kind === 'uint' && a.man <= b.man;
}

/** The accepted dtype a cast from `from` should target: the first exact one, else the widest. */
export function castTarget(from: string, accepted: readonly string[]): string {
  let memo = targets.get(accepted);
  if (!memo) targets.set(accepted, (memo = new Map()));
  let t = memo.get(from);
  if (t === undefined) memo.set(from, (t = pickTarget(from, accepted)));
  return t;
}

const targets = new WeakMap<readonly string[], Map<string, string>>();

function pickTarget(from: string, accepted: readonly string[]): string {
  const exact = accepted.find((d) => castIsExact(from, d));
  if (exact) return exact;
  let best = accepted[0] as string;
  for (const d of accepted) if ((NUM[d]?.man ?? 0) > (NUM[best]?.man ?? 0)) best = d;
  return best;
}
