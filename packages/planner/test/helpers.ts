import { type ByteSource, TensorFSError } from '@tensorfs/format';
import type { Hasher } from '@tensorfs/planner';
import { createHash } from 'node:crypto';

export { safetensorsBytes, type StTensor } from '@tensorfs/testkit';

/** A node:crypto hasher on the calling thread (the cas package has the real one; planner tests sit below it). */
export function testHasher(): Hasher {
  return {
    async digest(pieces) {
      const h = createHash('sha256');
      for (const p of pieces) h.update(p);
      return new Uint8Array(h.digest());
    },
    stream() {
      const h = createHash('sha256');
      return {
        update: (b) => {
          h.update(b);
        },
        digest: async () => new Uint8Array(h.digest()),
      };
    },
  };
}

/** `sha256:<hex>` of the concatenation, computed independently of the planner. */
export function sha256Id(...pieces: Uint8Array[]): string {
  const h = createHash('sha256');
  for (const p of pieces) h.update(p);
  return `sha256:${h.digest('hex')}`;
}

/** MurmurHash3's 32-bit finaliser: a cheap, well-mixed counter-based byte generator (mirrored in scripts/vectors). */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** `n` deterministic bytes: little-endian words `fmix32(j + seed·0x9e3779b9 mod 2^32)`. */
export function seededBytes(seed: number, n: number): Uint8Array {
  const words = new Uint32Array(Math.ceil(n / 4));
  const base = Math.imul(seed, 0x9e3779b9) >>> 0;
  for (let j = 0; j < words.length; j++) words[j] = fmix32((base + j) >>> 0);
  return new Uint8Array(words.buffer, 0, n);
}

export interface GgufTensor {
  name: string;
  /** F32 elements. */
  values: number;
  data?: Uint8Array;
}

/** A little-endian GGUF v3 file with string KVs and F32 tensors, each padded to `alignment`. */
export function ggufBytes(kvs: Record<string, string>, tensors: GgufTensor[], alignment = 32): Uint8Array {
  const parts: number[] = [];
  const u32 = (v: number) => parts.push(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff);
  const u64 = (v: number) => {
    u32(v % 2 ** 32);
    u32(Math.floor(v / 2 ** 32));
  };
  const str = (s: string) => {
    const b = new TextEncoder().encode(s);
    u64(b.length);
    parts.push(...b);
  };
  const pad = (n: number) => (alignment - (n % alignment)) % alignment;
  parts.push(0x47, 0x47, 0x55, 0x46);
  u32(3);
  u64(tensors.length);
  const entries = Object.entries(kvs);
  u64(entries.length + (alignment === 32 ? 0 : 1));
  if (alignment !== 32) {
    str('general.alignment');
    u32(4);
    u32(alignment);
  }
  for (const [k, v] of entries) {
    str(k);
    u32(8);
    str(v);
  }
  let offset = 0;
  const datas = tensors.map((t) => t.data ?? new Uint8Array(t.values * 4));
  tensors.forEach((t, i) => {
    str(t.name);
    u32(1);
    u64(t.values);
    u32(0);
    u64(offset);
    offset += datas[i]!.length + pad(datas[i]!.length);
  });
  parts.push(...new Array(pad(parts.length)).fill(0));
  const head = Uint8Array.from(parts);
  const out = new Uint8Array(head.length + offset);
  out.set(head);
  let at = head.length;
  for (const d of datas) {
    out.set(d, at);
    at += d.length + pad(d.length);
  }
  return out;
}

/** A source of `size` bytes: `prefix` then zeros, never materialised (for bound tests on huge files). */
export function virtualSource(prefix: Uint8Array, size: number): ByteSource {
  return {
    size,
    async read(offset, length) {
      if (offset + length > size) throw new TensorFSError('invalid_argument', 'read outside the source');
      const out = new Uint8Array(length);
      if (offset < prefix.length) out.set(prefix.subarray(offset, Math.min(prefix.length, offset + length)));
      return out;
    },
  };
}
