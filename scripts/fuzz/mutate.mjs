// Deterministic input generation: input i of parser P under seed S depends only on (S, P, i),
// so a run can resume after a hung worker and any input can be regenerated.
import { lengthFieldsFor } from './targets.mjs';

/** FNV-1a over a string, for deriving per-input RNG seeds. */
function fnv(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** mulberry32: a small fast PRNG; returns a function giving uint32s. */
function rng32(a) {
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

const INTERESTING = [
  0n,
  1n,
  0x7fn,
  0x80n,
  0xffn,
  0x7fffn,
  0x8000n,
  0xffffn,
  2n ** 31n - 1n,
  2n ** 31n,
  2n ** 32n - 1n,
  2n ** 32n,
  2n ** 53n - 1n,
  2n ** 53n,
  2n ** 63n,
  2n ** 64n - 1n,
];
const MAX_LEN = 1 << 20; // inputs never grow past 1 MiB

function writeInt(b, off, width, le, v) {
  for (let k = 0; k < width; k++) {
    const byte = Number((v >> BigInt(8 * k)) & 0xffn);
    const at = le ? off + k : off + width - 1 - k;
    if (at >= 0 && at < b.length) b[at] = byte;
  }
}
function readInt(b, off, width, le) {
  let v = 0n;
  for (let k = 0; k < width; k++) {
    const at = le ? off + k : off + width - 1 - k;
    v |= BigInt(at < b.length ? b[at] : 0) << BigInt(8 * k);
  }
  return v;
}

/** The mutation operators, by name (recorded in docs/fuzzing.md). */
export const OPERATORS = [
  'bitflip',
  'byteset',
  'insert',
  'delete',
  'splice',
  'interesting',
  'length-field',
  'truncate',
  'ascii-digit',
  'generate',
];

/** Makes the generator for one parser: `(i) => Uint8Array`. */
export function makeGenerator(parser, seeds, seed) {
  const base = fnv(`${seed}:${parser}`);
  return (i) => {
    const r = rng32((base ^ Math.imul(i + 1, 0x9e3779b1)) >>> 0);
    const below = (n) => (n <= 0 ? 0 : r() % n);
    // 1 in 64 inputs is freshly generated random bytes (short), the rest mutate a seed.
    if (below(64) === 0) {
      const out = new Uint8Array(below(256));
      for (let k = 0; k < out.length; k++) out[k] = r() & 0xff;
      // Keep the magic half the time so the generated input gets past the first check.
      const s = seeds[below(seeds.length)];
      if (below(2) === 0) out.set(s.subarray(0, Math.min(8, out.length)));
      return out;
    }
    let b = seeds[below(seeds.length)].slice();
    const rounds = 1 + below(below(2) ? 2 : 8);
    for (let n = 0; n < rounds; n++) {
      switch (below(9)) {
        case 0: // bit flips
          if (b.length) for (let k = 1 + below(4); k > 0; k--) b[below(b.length)] ^= 1 << below(8);
          break;
        case 1: // random byte overwrite
          if (b.length) b[below(b.length)] = r() & 0xff;
          break;
        case 2: {
          // insert 1..16 bytes (random or a repeated byte)
          if (b.length >= MAX_LEN) break;
          const at = below(b.length + 1);
          const n2 = 1 + below(16);
          const fill = below(2) ? -1 : r() & 0xff;
          const ins = new Uint8Array(n2).map(() => (fill < 0 ? r() & 0xff : fill));
          const out = new Uint8Array(b.length + n2);
          out.set(b.subarray(0, at));
          out.set(ins, at);
          out.set(b.subarray(at), at + n2);
          b = out;
          break;
        }
        case 3: {
          // delete 1..16 bytes
          if (!b.length) break;
          const at = below(b.length);
          const n2 = Math.min(b.length - at, 1 + below(16));
          const out = new Uint8Array(b.length - n2);
          out.set(b.subarray(0, at));
          out.set(b.subarray(at + n2), at);
          b = out;
          break;
        }
        case 4: {
          // splice: head of this input + tail of another seed
          const o = seeds[below(seeds.length)];
          const at = below(b.length + 1);
          const from = below(o.length + 1);
          const out = new Uint8Array(Math.min(MAX_LEN, at + o.length - from));
          out.set(b.subarray(0, at));
          out.set(o.subarray(from, from + out.length - at), at);
          b = out;
          break;
        }
        case 5: {
          // interesting integer at a random offset, random width and byte order
          const width = [1, 2, 4, 8][below(4)];
          writeInt(b, below(b.length), width, below(2) === 0, INTERESTING[below(INTERESTING.length)]);
          break;
        }
        case 6: {
          // length-field edit: a known length field (or a random 8-byte slot) to a nearby or extreme value
          const fields = lengthFieldsFor(parser, b);
          const [off, width, le] =
            fields.length && below(4) ? fields[below(fields.length)] : [below(b.length), [1, 2, 4, 8][below(4)], true];
          const cur = readInt(b, off, width, le);
          const choices = [
            cur + 1n,
            cur - 1n,
            cur + BigInt(1 + below(64)),
            cur - BigInt(1 + below(64)),
            BigInt(b.length),
            BigInt(b.length - off),
            0n,
            INTERESTING[below(INTERESTING.length)],
          ];
          const mask = (1n << BigInt(8 * width)) - 1n;
          writeInt(b, off, width, le, choices[below(choices.length)] & mask);
          break;
        }
        case 7: // truncation
          b = b.slice(0, below(b.length + 1));
          break;
        default: {
          // textual formats: replace a digit run or a byte with an extreme decimal number
          const lit = [
            '0',
            '-1',
            '2147483648',
            '9007199254740993',
            '18446744073709551615',
            '1e999',
            '-0',
            '1.5',
            'null',
            '""',
            '[]',
            '{}',
          ][below(12)];
          const at = below(b.length + 1);
          let end = at;
          while (end < b.length && b[end] >= 0x30 && b[end] <= 0x39) end++;
          const enc = new TextEncoder().encode(lit);
          const out = new Uint8Array(at + enc.length + b.length - end);
          out.set(b.subarray(0, at));
          out.set(enc, at);
          out.set(b.subarray(end), at + enc.length);
          b = out;
        }
      }
    }
    return b;
  };
}

/** A structure-aware mutation of a JSON seed (used for the JSON-text parsers alongside byte mutations). */
export function makeJsonGenerator(parser, seeds, seed) {
  const bytesGen = makeGenerator(parser, seeds, seed);
  const values = seeds.map((s) => JSON.parse(new TextDecoder().decode(s)));
  const base = fnv(`${seed}:${parser}:json`);
  const te = new TextEncoder();
  // Strings harvested from the seeds (scheme names, dtypes, part names, keys) for substitution.
  const strings = new Set();
  const walk = (v) => {
    if (typeof v === 'string' && v.length < 40) strings.add(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object')
      for (const [k, x] of Object.entries(v)) {
        strings.add(k);
        walk(x);
      }
  };
  values.forEach(walk);
  const pool = [...strings].sort();
  const nums = [
    0,
    -1,
    1,
    2,
    3,
    4,
    7,
    8,
    16,
    32,
    64,
    256,
    2 ** 31,
    2 ** 32,
    2 ** 53,
    2 ** 64 - 1,
    1e308,
    -0,
    0.5,
    Number.NaN,
  ];
  return (i) => {
    const r = rng32((base ^ Math.imul(i + 1, 0x85ebca6b)) >>> 0);
    const below = (n) => (n <= 0 ? 0 : r() % n);
    if (below(2) === 0) return bytesGen(i);
    const v = structuredClone(values[below(values.length)]);
    for (let n = 1 + below(3); n > 0; n--) {
      // pick a random container node and key
      const nodes = [];
      const collect = (x) => {
        if (x && typeof x === 'object') {
          nodes.push(x);
          for (const y of Object.values(x)) collect(y);
        }
      };
      collect(v);
      const node = nodes[below(nodes.length)];
      const keys = Object.keys(node);
      if (!keys.length) continue;
      const k = keys[below(keys.length)];
      const old = node[k];
      switch (below(7)) {
        case 0:
          node[k] = JSON.parse(JSON.stringify(nums[below(nums.length)]) ?? 'null');
          break;
        case 1:
          node[k] = pool[below(pool.length)];
          break;
        case 2:
          if (Array.isArray(node)) node.splice(Number(k), 1);
          else delete node[k];
          break;
        case 3:
          if (Array.isArray(node)) node.push(structuredClone(old));
          else node[pool[below(pool.length)]] = structuredClone(old);
          break;
        case 4:
          node[k] = [null, true, [], {}, ''][below(5)];
          break;
        case 5:
          if (typeof old === 'number') node[k] = old + (below(2) ? 1 : -1) * (1 + below(3));
          else if (typeof old === 'string' && /^[0-9a-f]*$/.test(old) && old.length) {
            // hex payload: cut, extend or flip a nibble
            const m = below(3);
            node[k] =
              m === 0
                ? old.slice(0, 2 * below(old.length / 2))
                : m === 1
                  ? old + old.slice(0, 2 * (1 + below(8)))
                  : old.replace(/^./, (c) => ((Number.parseInt(c, 16) ^ (1 + below(15))) & 15).toString(16));
          }
          break;
        default:
          if (Array.isArray(old))
            node[k] = old.map((x) => (typeof x === 'number' && below(2) ? nums[below(nums.length)] : x));
      }
    }
    return te.encode(JSON.stringify(v));
  };
}
