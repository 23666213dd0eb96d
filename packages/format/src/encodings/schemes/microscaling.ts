/**
 * Block-scaled small floats: `mxfp8` (E4M3 × E8M0 per 32), `mxfp4` (E2M1 × E8M0 per 32) and
 * `nvfp4` (E2M1 × E4M3 per 16 × F32 global). Storage may be padded (`padded_shape`) and the block
 * scales may be row-major or in cuBLAS's 128×4 tiled layout (`scale_layout`).
 */
import { E2M1, E4M3FN, E8M0 } from '../floats.js';
import {
  Params,
  type Part,
  describingOnly,
  expectCount,
  expectShape,
  floats,
  onlyParts,
  part,
  roundUp,
} from '../params.js';
import type { Encoded, PreparedDecoder } from '../types.js';
import { malformed } from '../types.js';
import { described, prepared } from './common.js';

/** Flat index of scale (r, c) in the cuBLAS 128×4 tiled layout with `c4` (= roundup(C, 4)) columns. */
export function cublasIndex(r: number, c: number, c4: number): number {
  return ((r >> 7) * (c4 >> 2) + (c >> 2)) * 512 + (r & 31) * 16 + ((r & 127) >> 5) * 4 + (c & 3);
}

interface Geometry {
  p: Params;
  rows: number;
  cols: number;
  rp: number;
  kp: number;
  sc: number;
  swizzled: boolean;
  c4: number;
}

function geometry(enc: Encoded, block: number, extra: readonly string[]): Geometry {
  const p = new Params(enc);
  p.only(['block_size', 'scale_layout', 'padded_shape', ...extra]);
  p.int('block_size', { oneOf: [block] });
  const layout = p.oneOf('scale_layout', ['row_major', 'cublas_128x4'] as const);
  const { rows, cols } = p.matrix();
  let rp = rows;
  let kp = cols;
  if (p.has('padded_shape')) {
    const ps = p.dims('padded_shape');
    if (ps.length !== 2 || (ps[0] as number) < rows || (ps[1] as number) < cols) {
      throw malformed(
        enc.scheme,
        'padded_shape',
        'params.padded_shape must be [rows, cols] at least the logical matrix',
        {
          param: 'padded_shape',
        },
      );
    }
    rp = ps[0] as number;
    kp = ps[1] as number;
  }
  if (kp % block !== 0) {
    throw malformed(enc.scheme, 'block_divides', `the stored row length ${kp} is not a multiple of ${block}`, {
      param: p.has('padded_shape') ? 'padded_shape' : 'shape',
      actual: kp,
    });
  }
  const sc = kp / block;
  return { p, rows, cols, rp, kp, sc, swizzled: layout === 'cublas_128x4', c4: roundUp(sc, 4) };
}

function checkScales(enc: Encoded, g: Geometry, s: Part): void {
  if (g.swizzled) expectShape(enc.scheme, s, [[roundUp(g.rp, 128), g.c4]]);
  else {
    expectCount(enc.scheme, s, g.rp * g.sc);
    if (s.shape.length > 0 && s.shape[s.shape.length - 1] !== g.sc) {
      throw malformed(enc.scheme, 'part_shape', `part "${s.role}" rows must hold ${g.sc} block scales`, {
        part: s.role,
        actual: [...s.shape],
      });
    }
  }
}

function scaleIndexer(g: Geometry): (r: number, c: number) => number {
  const { sc, c4 } = g;
  return g.swizzled ? (r, c) => cublasIndex(r, c, c4) : (r, c) => r * sc + c;
}

/** Per-byte tables of the first and second E2M1 value a byte holds in the given nibble order. */
function pairTables(order: 'lo_first' | 'hi_first'): [Float32Array, Float32Array] {
  const first = new Float32Array(256);
  const second = new Float32Array(256);
  for (let b = 0; b < 256; b++) {
    const lo = E2M1[b & 15] as number;
    const hi = E2M1[b >> 4] as number;
    first[b] = order === 'lo_first' ? lo : hi;
    second[b] = order === 'lo_first' ? hi : lo;
  }
  return [first, second];
}

export function prepareMxfp8(enc: Encoded): PreparedDecoder {
  const g = geometry(enc, 32, []);
  onlyParts(enc, ['q', 'scale']);
  const q = part(enc, 'q', ['F8_E4M3', 'U8']);
  expectCount(enc.scheme, q, g.rp * g.kp);
  const s = part(enc, 'scale', ['F8_E8M0', 'U8']);
  checkScales(enc, g, s);
  if (describingOnly()) return described(g.p);
  const idx = scaleIndexer(g);
  const qb = q.bytes;
  const sb = s.bytes;
  const { cols, kp } = g;
  return prepared(g.p, (r0, r1, out) => {
    let o = 0;
    for (let r = r0; r < r1; r++) {
      const base = r * kp;
      for (let c0 = 0, c = 0; c0 < cols; c0 += 32, c++) {
        const sv = E8M0[sb[idx(r, c)] as number] as number;
        const end = Math.min(c0 + 32, cols);
        for (let k = c0; k < end; k++) out[o++] = (E4M3FN[qb[base + k] as number] as number) * sv;
      }
    }
  });
}

function fp4(enc: Encoded, block: number, nv: boolean): PreparedDecoder {
  const g = geometry(enc, block, ['nibble_order']);
  const order = g.p.oneOf('nibble_order', ['lo_first', 'hi_first'] as const);
  onlyParts(enc, nv ? ['q', 'block_scale', 'global_scale'] : ['q', 'scale']);
  const q = part(enc, 'q', ['U8']);
  expectCount(enc.scheme, q, (g.rp * g.kp) / 2);
  const s = part(enc, nv ? 'block_scale' : 'scale', nv ? ['F8_E4M3', 'U8'] : ['F8_E8M0', 'U8']);
  checkScales(enc, g, s);
  let global = 1;
  if (nv) {
    const gp = part(enc, 'global_scale', ['F32']);
    expectShape(enc.scheme, gp, [[], [1]]);
    // the global scale is checked whenever its bytes are here (a converter reads them: 4 bytes)
    global = gp.described ? 1 : (floats(gp)[0] as number);
    if (!Number.isFinite(global)) {
      throw malformed(enc.scheme, 'global_scale', 'the global scale is not finite', {
        part: 'global_scale',
        index: 0,
        actual: String(global),
      });
    }
  }
  if (describingOnly()) return described(g.p);
  const slut = nv ? E4M3FN : E8M0;
  const [first, second] = pairTables(order);
  const qb = q.bytes;
  const sb = s.bytes;
  const { cols, kp } = g;
  const half = block >> 1;
  const nBlocks = Math.ceil(cols / block);
  const full = Math.floor(cols / block);
  const rowScales = new Float32Array(nBlocks);
  return prepared(g.p, (r0, r1, out) => {
    let o = 0;
    for (let r = r0; r < r1; r++) {
      const base = (r * kp) / 2;
      rowScaleValues(rowScales, nBlocks, sb, slut, g.swizzled, r, g.sc, g.c4, nv ? global : 1);
      fp4Blocks(out, o, qb, base, full, half, first, second, rowScales);
      o += full * block;
      for (let k = full * block; k < cols; k++) {
        const byte = qb[base + (k >> 1)] as number;
        out[o++] = ((k & 1 ? second[byte] : first[byte]) as number) * (rowScales[full] as number);
      }
    }
  });
}

/**
 * The block scales of row r (times the global scale; ×1 is exact), reading the row-major or the
 * cuBLAS 128×4 tiled layout without a per-block index call.
 */
function rowScaleValues(
  dst: Float32Array,
  n: number,
  sb: Uint8Array,
  slut: Float32Array,
  swizzled: boolean,
  r: number,
  sc: number,
  c4: number,
  global: number,
): void {
  if (swizzled) {
    const rowBase = (r >> 7) * (c4 >> 2) * 512 + (r & 31) * 16 + ((r & 127) >> 5) * 4;
    for (let c = 0; c < n; c++) dst[c] = (slut[sb[rowBase + (c >> 2) * 512 + (c & 3)] as number] as number) * global;
  } else {
    const rowBase = r * sc;
    for (let c = 0; c < n; c++) dst[c] = (slut[sb[rowBase + c] as number] as number) * global;
  }
}

/** `count` whole blocks of one row: a small function V8 optimizes per call. */
function fp4Blocks(
  out: Float32Array,
  o: number,
  qb: Uint8Array,
  base: number,
  count: number,
  half: number,
  first: Float32Array,
  second: Float32Array,
  scales: Float32Array,
): void {
  let b = base;
  for (let c = 0; c < count; c++) {
    const sv = scales[c] as number;
    for (let j = 0; j < half; j++, b++) {
      const byte = qb[b] as number;
      out[o++] = (first[byte] as number) * sv;
      out[o++] = (second[byte] as number) * sv;
    }
  }
}

export function prepareMxfp4(enc: Encoded): PreparedDecoder {
  return fp4(enc, 32, false);
}

export function prepareNvfp4(enc: Encoded): PreparedDecoder {
  return fp4(enc, 16, true);
}
