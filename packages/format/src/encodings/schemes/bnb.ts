/**
 * `bnb_nf4` / `bnb_fp4`: bitsandbytes 4-bit. The row-major flattening of the logical tensor, two codes
 * per byte; `W[j] = code_table[code_j] · absmax[j // blocksize]`, with the absmax itself optionally
 * 8-bit quantized ("nested"): `absmax[b] = nested_table[absmax_u8[b]] · nested_absmax[b // nested_blocksize] + nested_offset`.
 */
import { Params, ceilDiv, describingOnly, expectShape, floats, onlyParts, part } from '../params.js';
import type { Encoded, PreparedDecoder } from '../types.js';
import { malformed } from '../types.js';
import { described, prepared } from './common.js';

export function prepareBnb(enc: Encoded): PreparedDecoder {
  const p = new Params(enc);
  const nested = p.bool('nested');
  p.only(
    nested
      ? ['blocksize', 'nibble_order', 'nested', 'nested_blocksize', 'nested_offset']
      : ['blocksize', 'nibble_order', 'nested'],
  );
  const bs = p.int('blocksize', { min: 1, max: 1 << 20 });
  const order = p.oneOf('nibble_order', ['hi_first', 'lo_first'] as const);
  onlyParts(
    enc,
    nested ? ['codes', 'absmax', 'code_table', 'nested_absmax', 'nested_table'] : ['codes', 'absmax', 'code_table'],
  );
  const n = p.count;
  const codes = part(enc, 'codes', ['U8', 'I8', 'F16', 'BF16', 'F32']);
  const need = ceilDiv(n, 2);
  // a non-U8 quant_storage may pad the last storage element
  if (codes.byteLength < need || codes.byteLength >= need + 4) {
    throw malformed(enc.scheme, 'part_length', `part "codes" must hold ${need} bytes`, {
      part: 'codes',
      expected: need,
      actual: codes.byteLength,
    });
  }
  const nblocks = ceilDiv(n, bs);
  const tp = part(enc, 'code_table', ['F32']);
  expectShape(enc.scheme, tp, [[16]]);
  let absmax: Float32Array;
  if (nested) {
    const nbs = p.int('nested_blocksize', { min: 1, max: 1 << 20 });
    const offset = Math.fround(p.num('nested_offset'));
    const a8 = part(enc, 'absmax', ['U8']);
    expectShape(enc.scheme, a8, [[nblocks]]);
    const na = part(enc, 'nested_absmax', ['F32']);
    expectShape(enc.scheme, na, [[ceilDiv(nblocks, nbs)]]);
    const nt = part(enc, 'nested_table', ['F32']);
    expectShape(enc.scheme, nt, [[256]]);
    if (describingOnly()) return described(p);
    const nav = floats(na);
    const ntv = floats(nt);
    absmax = new Float32Array(nblocks);
    for (let b = 0; b < nblocks; b++) {
      absmax[b] = Math.fround((ntv[a8.bytes[b] as number] as number) * (nav[Math.floor(b / nbs)] as number)) + offset;
    }
  } else {
    const a = part(enc, 'absmax', ['F32']);
    expectShape(enc.scheme, a, [[nblocks]]);
    if (describingOnly()) return described(p);
    absmax = floats(a);
  }
  const table = floats(tp);
  // per byte: the value of its first and second code
  const firstCode = new Uint8Array(256);
  const secondCode = new Uint8Array(256);
  for (let b = 0; b < 256; b++) {
    firstCode[b] = order === 'hi_first' ? b >> 4 : b & 15;
    secondCode[b] = order === 'hi_first' ? b & 15 : b >> 4;
  }
  const first = new Float32Array(256);
  const second = new Float32Array(256);
  for (let b = 0; b < 256; b++) {
    first[b] = table[firstCode[b] as number] as number;
    second[b] = table[secondCode[b] as number] as number;
  }
  const cb = codes.bytes;
  const { cols } = p.matrix();
  const evenBlocks = bs % 2 === 0;
  const hiFirst = order === 'hi_first';
  return prepared(p, (r0, r1, out) => {
    const start = r0 * cols;
    const end = r1 * cols;
    let o = 0;
    let j = start;
    if (evenBlocks && (start & 1) === 0) {
      evenRows(cb, table, absmax, bs, hiFirst, start, end, out);
      return;
    }
    while (j < end) {
      const blk = Math.floor(j / bs);
      const s = absmax[blk] as number;
      const stop = Math.min(end, (blk + 1) * bs);
      if (j & 1) {
        out[o++] = (second[cb[Math.floor(j / 2)] as number] as number) * s;
        j++;
      }
      // whole bytes inside this block
      while (j + 1 < stop) {
        const byte = cb[Math.floor(j / 2)] as number;
        out[o++] = (first[byte] as number) * s;
        out[o++] = (second[byte] as number) * s;
        j += 2;
      }
      if (j < stop) {
        out[o++] = (first[cb[Math.floor(j / 2)] as number] as number) * s;
        j++;
      }
    }
  });
}

/**
 * Elements `[start, end)` (start even, blocksize even): per block the 16 code values × absmax, then
 * two table lookups per byte in a small per-block function (which V8 optimizes well).
 */
function evenRows(
  cb: Uint8Array,
  table: Float32Array,
  absmax: Float32Array,
  bs: number,
  hiFirst: boolean,
  start: number,
  end: number,
  out: Float32Array,
): void {
  const t16 = new Float32Array(16);
  let o = 0;
  let j = start;
  while (j < end) {
    const blk = Math.floor(j / bs);
    const s = absmax[blk] as number;
    const stop = Math.min(end, (blk + 1) * bs);
    const bi = j / 2;
    const pairsEnd = Math.floor(stop / 2);
    for (let c = 0; c < 16; c++) t16[c] = (table[c] as number) * s;
    if (hiFirst) pairsHi(out, o, cb, bi, pairsEnd, t16);
    else pairsLo(out, o, cb, bi, pairsEnd, t16);
    o += (pairsEnd - bi) * 2;
    j = pairsEnd * 2;
    if (j < stop) {
      const byte = cb[pairsEnd] as number;
      out[o++] = t16[hiFirst ? byte >> 4 : byte & 15] as number;
      j++;
    }
  }
}

function pairsHi(out: Float32Array, o: number, cb: Uint8Array, b0: number, b1: number, t16: Float32Array): void {
  for (let b = b0; b < b1; b++, o += 2) {
    const byte = cb[b] as number;
    out[o] = t16[byte >> 4] as number;
    out[o + 1] = t16[byte & 15] as number;
  }
}

function pairsLo(out: Float32Array, o: number, cb: Uint8Array, b0: number, b1: number, t16: Float32Array): void {
  for (let b = b0; b < b1; b++, o += 2) {
    const byte = cb[b] as number;
    out[o] = t16[byte & 15] as number;
    out[o + 1] = t16[byte >> 4] as number;
  }
}
