import { execFileSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { recordsSourceOf, type Store } from '@tensorfs/cas';
import { isTensorFSError, type RecordRef, writeSafetensorsHeader } from '@tensorfs/format';
import { objectFile } from '@tensorfs/testkit';
import { decode } from '@tensorfs/format/encodings';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CheckpointWriter,
  openCheckpoint,
  openTensors,
  planSlice,
  readEncodedSlice,
  type SliceRange,
  sliceReadBytes,
  sliceReads,
  TensorPool,
} from '../src/index.js';
import { FIXTURES, type TestStore, tempStore } from './helpers.js';

interface Spec {
  name: string;
  dtype: string;
  shape: number[];
}

const WIDTH: Record<string, number> = { F32: 4, BF16: 2, I8: 1, U8: 1, I64: 8, F16: 2 };

/** Writes a safetensors file of random tensors; returns its bytes and the tensors' infos. */
function safetensors(specs: Spec[]): {
  bytes: Uint8Array;
  infos: { name: string; byteOffset: number; byteLength: number }[];
} {
  const { bytes: header, tensors } = writeSafetensorsHeader(
    specs.map((s) => ({ name: s.name, dtype: s.dtype, shape: s.shape.map(BigInt) })),
    { order: 'given' },
  );
  const size = tensors.reduce((n, t) => Math.max(n, t.byteOffset + t.byteLength), header.length);
  const out = new Uint8Array(size);
  out.set(header);
  randomFillSync(out, header.length);
  return { bytes: out, infos: tensors };
}

/**
 * numpy's slicing of each case: the tensor read straight from the file with `np.frombuffer`, cut
 * with `a[s0:e0, s1:e1, ...]`, `tobytes()` in hex. python3 and numpy must be there (no skip).
 */
function numpySlices(
  file: string,
  cases: { offset: number; dtype: string; shape: number[]; ranges: number[][] }[],
): string[] {
  const script = `
import json, sys
import numpy as np
cases = json.load(sys.stdin)
data = open(sys.argv[1], 'rb').read()
types = {'F32': np.float32, 'BF16': np.uint16, 'F16': np.float16, 'I8': np.int8, 'U8': np.uint8, 'I64': np.int64}
out = []
for c in cases:
    t = types[c['dtype']]
    n = int(np.prod(c['shape'])) if c['shape'] else 1
    a = np.frombuffer(data, dtype=t, count=n, offset=c['offset']).reshape(c['shape'])
    out.append(a[tuple(slice(s, e) for s, e in c['ranges'])].tobytes().hex())
print(json.dumps(out))
`;
  const stdout = execFileSync('python3', ['-c', script, file], { input: JSON.stringify(cases) });
  return JSON.parse(stdout.toString());
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('hex');
}

function codeOf(fn: () => unknown): { code: string; rule: unknown; axis: unknown } | string {
  try {
    fn();
    return 'no error';
  } catch (e) {
    if (!isTensorFSError(e)) throw e;
    return { code: e.code, rule: e.details.rule, axis: e.details.axis };
  }
}

async function rejection(p: Promise<unknown>): Promise<{ code: string; rule: unknown } | string> {
  try {
    await p;
    return 'no error';
  } catch (e) {
    if (!isTensorFSError(e)) throw e;
    return { code: e.code, rule: e.details.rule };
  }
}

/** The store, with every object whose bytes are read (by any method) counted. */
function countingStore(inner: Store): { store: Store; touched: Set<string>; reset(): void } {
  const touched = new Set<string>();
  const store: Store = Object.create(inner);
  Object.assign(store, {
    readObject: async (id: string, o?: { verify?: boolean }) => {
      touched.add(id);
      return inner.readObject(id as RecordRef['digest'], o);
    },
    readObjectRange: async (id: string, offset: number, length: number) => {
      touched.add(id);
      return inner.readObjectRange(id as RecordRef['digest'], offset, length);
    },
    recordsSource: (records: readonly RecordRef[]) =>
      recordsSourceOf(records, async (r, start, target) => {
        touched.add(r.digest);
        target.set(await inner.readObjectRange(r.digest, start, target.length));
      }),
  });
  return { store, touched, reset: () => touched.clear() };
}

describe('readSlice', () => {
  let t: TestStore;
  beforeEach(async () => {
    t = await tempStore('local');
  });
  afterEach(async () => {
    await t.close();
  });

  const specs: Spec[] = [
    { name: 'cube', dtype: 'F32', shape: [6, 5, 4] },
    { name: 'mat', dtype: 'BF16', shape: [16, 12] },
    { name: 'vec', dtype: 'I8', shape: [7] },
    { name: 'empty', dtype: 'U8', shape: [3, 0, 2] },
    { name: 'scalar', dtype: 'F32', shape: [] },
    { name: 'wide', dtype: 'I64', shape: [2, 3, 2, 5] },
  ];
  const cases: { name: string; ranges: number[][] }[] = [
    { name: 'cube', ranges: [[1, 4]] },
    {
      name: 'cube',
      ranges: [
        [0, 6],
        [2, 3],
      ],
    },
    {
      name: 'cube',
      ranges: [
        [2, 5],
        [1, 4],
        [1, 3],
      ],
    },
    {
      name: 'cube',
      ranges: [
        [0, 6],
        [0, 5],
        [3, 4],
      ],
    },
    { name: 'cube', ranges: [[3, 3]] },
    { name: 'cube', ranges: [] },
    { name: 'mat', ranges: [[4, 8]] },
    {
      name: 'mat',
      ranges: [
        [0, 16],
        [3, 9],
      ],
    },
    {
      name: 'mat',
      ranges: [
        [15, 16],
        [11, 12],
      ],
    },
    { name: 'vec', ranges: [[2, 7]] },
    { name: 'empty', ranges: [[1, 2]] },
    { name: 'scalar', ranges: [] },
    {
      name: 'wide',
      ranges: [
        [1, 2],
        [0, 3],
        [1, 2],
        [1, 4],
      ],
    },
    {
      name: 'wide',
      ranges: [
        [0, 2],
        [1, 2],
      ],
    },
  ];

  it('gives exactly the bytes of numpy slicing of the original, for rows, columns and blocks', async () => {
    const { bytes, infos } = safetensors(specs);
    const file = path.join(t.scratch, 'm.safetensors');
    await fsp.writeFile(file, bytes);
    const dir = path.join(t.scratch, 'tree');
    await fsp.mkdir(dir);
    await fsp.copyFile(file, path.join(dir, 'm.safetensors'));
    await t.local!.importPath(dir, { name: 'm', threads: 1 });
    const set = await openTensors(t.store, 'm');
    const expected = numpySlices(
      file,
      cases.map((c) => {
        const s = specs.find((x) => x.name === c.name)!;
        const info = infos.find((x) => x.name === c.name)!;
        return { offset: info.byteOffset, dtype: s.dtype, shape: s.shape, ranges: c.ranges };
      }),
    );
    expect(expected.length).toBe(cases.length);
    for (const [i, c] of cases.entries()) {
      const view = set.get(c.name);
      const got = await view.readSlice(c.ranges as unknown as SliceRange[], { verify: i % 2 === 0 });
      expect(hex(got), `${c.name} ${JSON.stringify(c.ranges)}`).toBe(expected[i]);
      const s = specs.find((x) => x.name === c.name)!;
      const shape = planSlice(view, c.ranges as unknown as SliceRange[]).shape.map(Number);
      expect(shape).toEqual(s.shape.map((d, axis) => (c.ranges[axis] ? c.ranges[axis]![1]! - c.ranges[axis]![0]! : d)));
      expect(got.length).toBe(shape.reduce((a, b) => a * b, 1) * WIDTH[s.dtype]!);
    }
    // bigint ranges are the same as numbers
    expect(hex(await set.get('mat').readSlice([[4n, 8n]]))).toBe(expected[6]);
    // into: the slice fills the caller's buffer from its start
    const into = new Uint8Array(200).fill(7);
    const got = await set.get('mat').readSlice(
      [
        [0, 16],
        [3, 9],
      ],
      { into },
    );
    expect(got.buffer).toBe(into.buffer);
    expect(hex(got)).toBe(expected[7]);
    expect(into[got.length]).toBe(7);
    expect(await rejection(set.get('mat').readSlice([[0, 16]], { into }))).toEqual({
      code: 'invalid_argument',
      rule: 'tensors.slice_into',
    });
    // pool: the slice owns a pooled buffer; given back, it is detached and the next slice of the
    // same size reuses its memory, exact; a failed slice gives its buffer back at once.
    const pool = new TensorPool();
    const rows = [
      [0, 16],
      [3, 9],
    ] as unknown as SliceRange[];
    const first = await set.get('mat').readSlice(rows, { pool });
    expect(hex(first)).toBe(expected[7]);
    expect(first.buffer.byteLength).toBe(first.length);
    pool.give(first);
    expect(first.byteLength).toBe(0);
    expect(pool.byteLength).toBe(got.length);
    const again = await set.get('mat').readSlice(rows, { pool, verify: true });
    expect(hex(again)).toBe(expected[7]);
    expect(pool.byteLength).toBe(0);
    pool.give(again);
    const ac = new AbortController();
    ac.abort();
    expect(await rejection(set.get('mat').readSlice(rows, { pool, signal: ac.signal }))).toMatchObject({
      code: 'cancelled',
    });
    expect(pool.byteLength).toBe(got.length);
    expect(await rejection(set.get('mat').readSlice(rows, { pool, into }))).toEqual({
      code: 'invalid_argument',
      rule: 'tensors.slice_into',
    });
  });

  it('rejects bad ranges with invalid_argument naming the axis', async () => {
    const { bytes } = safetensors(specs);
    await fsp.writeFile(path.join(t.scratch, 'm.safetensors'), bytes);
    await t.local!.importPath(path.join(t.scratch, 'm.safetensors'), { name: 'm', threads: 1 });
    const set = await openTensors(t.store, 'm');
    const cube = set.get('cube');
    const bad = (ranges: unknown) => codeOf(() => planSlice(cube, ranges as SliceRange[]));
    expect(bad([[0, 7]])).toEqual({ code: 'invalid_argument', rule: 'tensors.slice_range', axis: 0 });
    expect(
      bad([
        [0, 6],
        [3, 2],
      ]),
    ).toEqual({ code: 'invalid_argument', rule: 'tensors.slice_range', axis: 1 });
    expect(
      bad([
        [0, 6],
        [0, 5],
        [-1, 2],
      ]),
    ).toEqual({ code: 'invalid_argument', rule: 'tensors.slice_range', axis: 2 });
    expect(
      bad([
        [0, 1],
        [0, 1],
        [0, 1],
        [0, 1],
      ]),
    ).toEqual({
      code: 'invalid_argument',
      rule: 'tensors.slice_range',
      axis: 3,
    });
    expect(bad([[0.5, 2]])).toEqual({ code: 'invalid_argument', rule: 'tensors.slice_range', axis: 0 });
    expect(bad([[1]])).toEqual({ code: 'invalid_argument', rule: 'tensors.slice_range', axis: 0 });
    expect(await rejection(cube.readSlice([[0, 9]]))).toEqual({
      code: 'invalid_argument',
      rule: 'tensors.slice_range',
    });
  });

  it('reads only the objects a slice touches (counted on a wrapping store)', async () => {
    // 'mat' [16, 12] BF16 is 24 bytes a row; seams cut it into 4 objects of 4 rows each.
    const { bytes } = safetensors([
      { name: 'mat', dtype: 'BF16', shape: [16, 12] },
      { name: 'other', dtype: 'F32', shape: [8] },
    ]);
    await fsp.writeFile(path.join(t.scratch, 'm.safetensors'), bytes);
    await t.local!.importPath(path.join(t.scratch, 'm.safetensors'), {
      name: 'm',
      threads: 1,
      seams: { 'm.safetensors': { mat: [96, 192, 288] } },
    });
    const counting = countingStore(t.store);
    const set = await openTensors(counting.store, 'm');
    const mat = set.get('mat');
    expect(mat.records.length).toBe(4);
    const whole = await mat.read();
    counting.reset();
    const rows = await mat.readSlice([[5, 7]]);
    expect([...counting.touched]).toEqual([mat.records[1]!.digest]);
    expect(rows).toEqual(whole.subarray(5 * 24, 7 * 24));
    counting.reset();
    await mat.readSlice([[3, 9]]);
    expect([...counting.touched].sort()).toEqual(
      [mat.records[0]!.digest, mat.records[1]!.digest, mat.records[2]!.digest].sort(),
    );
    counting.reset();
    const cols = await mat.readSlice([
      [0, 16],
      [6, 12],
    ]);
    expect(counting.touched.size).toBe(4);
    for (let r = 0; r < 16; r++)
      expect(cols.subarray(r * 12, r * 12 + 12)).toEqual(whole.subarray(r * 24 + 12, r * 24 + 24));
    // Rows 13..16 of the columns: only the last object.
    counting.reset();
    await mat.readSlice([
      [13, 16],
      [0, 2],
    ]);
    expect([...counting.touched]).toEqual([mat.records[3]!.digest]);
    // A column block reads runs of 12 bytes 24 apart as one read of the span (gaps read through).
    expect(
      sliceReadBytes(mat, [
        [0, 16],
        [6, 12],
      ]),
    ).toBe(15 * 24 + 12);
  });

  it('never reads through a gap that holds a whole object', async () => {
    // 'box' [4, 4, 6] F32: 24 bytes a row, 96 an outer block. One object is exactly rows 1..3 of
    // block 1 (bytes 120..192): the gap between the runs of box[:, 0:1] at 96 and at 192.
    const { bytes } = safetensors([{ name: 'box', dtype: 'F32', shape: [4, 4, 6] }]);
    await fsp.writeFile(path.join(t.scratch, 'b.safetensors'), bytes);
    await t.local!.importPath(path.join(t.scratch, 'b.safetensors'), {
      name: 'b',
      threads: 1,
      seams: { 'b.safetensors': { box: [120, 192] } },
    });
    const counting = countingStore(t.store);
    const box = (await openTensors(counting.store, 'b')).get('box');
    expect(box.records.map((r) => r.length)).toEqual([120, 72, 192]);
    const whole = await box.read();
    counting.reset();
    const got = await box.readSlice([
      [0, 4],
      [0, 1],
    ]);
    expect([...counting.touched].sort()).toEqual([box.records[0]!.digest, box.records[2]!.digest].sort());
    const expected = new Uint8Array(96);
    for (let i = 0; i < 4; i++) expected.set(whole.subarray(i * 96, i * 96 + 24), i * 24);
    expect(got).toEqual(expected);
    // Two reads: 0..120 (the runs at 0 and 96) and 192..312 (at 192 and 288); 120..192 is not read.
    expect(
      sliceReadBytes(box, [
        [0, 4],
        [0, 1],
      ]),
    ).toBe(120 + 120);
  });

  it('gap: 0 reads exactly the slice, one read per run; a gap at the limit is read through', async () => {
    // 'mat' [16, 12] BF16 is one object of 16 rows of 24 bytes; columns 6..12 are 16 runs of 12
    // bytes with 12-byte gaps between them.
    const specs1: Spec[] = [{ name: 'mat', dtype: 'BF16', shape: [16, 12] }];
    const { bytes, infos } = safetensors(specs1);
    const file = path.join(t.scratch, 'm.safetensors');
    await fsp.writeFile(file, bytes);
    await t.local!.importPath(file, { name: 'm', threads: 1 });
    const reads: number[] = [];
    const store: Store = Object.create(t.store);
    Object.assign(store, {
      recordsSource: (records: readonly RecordRef[]) =>
        recordsSourceOf(records, async (r, start, target) => {
          reads.push(target.length);
          target.set(await t.store.readObjectRange(r.digest, start, target.length));
        }),
    });
    const mat = (await openTensors(store, 'm')).get('mat');
    const cols: SliceRange[] = [
      [0, 16],
      [6, 12],
    ];
    const [expected] = numpySlices(file, [
      { offset: infos[0]!.byteOffset, dtype: 'BF16', shape: [16, 12], ranges: cols as unknown as number[][] },
    ]);
    const cases = [
      { gap: undefined, bytes: 15 * 24 + 12, reads: 1 },
      { gap: 12, bytes: 15 * 24 + 12, reads: 1 },
      { gap: 11, bytes: 16 * 12, reads: 16 },
      { gap: 0, bytes: 16 * 12, reads: 16 },
    ];
    for (const c of cases) {
      const options = c.gap === undefined ? {} : { gap: c.gap };
      reads.length = 0;
      const got = await mat.readSlice(cols, options);
      expect(hex(got), `gap ${c.gap}`).toBe(expected);
      expect({ bytes: reads.reduce((a, b) => a + b, 0), reads: reads.length }, `gap ${c.gap}`).toEqual({
        bytes: c.bytes,
        reads: c.reads,
      });
      expect(sliceReads(mat, cols, options)).toEqual({ bytes: c.bytes, reads: c.reads });
      expect(sliceReadBytes(mat, cols, options)).toBe(c.bytes);
    }
    // Rows are one run whatever the gap.
    reads.length = 0;
    await mat.readSlice([[2, 5]], { gap: 0 });
    expect(reads).toEqual([3 * 24]);
    for (const gap of [-1, 1.5, '4', Number.NaN]) {
      expect(await rejection(mat.readSlice(cols, { gap: gap as number }))).toEqual({
        code: 'invalid_argument',
        rule: 'tensors.argument',
      });
      expect(codeOf(() => sliceReads(mat, cols, { gap: gap as number }))).toEqual({
        code: 'invalid_argument',
        rule: 'tensors.argument',
        axis: undefined,
      });
    }
  });

  it('is cancellable (no read left running), and under verify a corrupt object is corrupt, exact runs or not', async () => {
    const { bytes } = safetensors([
      { name: 'mat', dtype: 'BF16', shape: [16, 12] },
      { name: 'other', dtype: 'BF16', shape: [16, 12] },
    ]);
    const file = path.join(t.scratch, 'm.safetensors');
    await fsp.writeFile(file, bytes);
    await t.local!.importPath(file, { name: 'm', threads: 1 });
    // A store whose reads can abort a controller after the n-th read, and that counts reads that
    // are still running.
    let abortAfter = Number.POSITIVE_INFINITY;
    let pieces = 0;
    let running = 0;
    let controller = new AbortController();
    const store: Store = Object.create(t.store);
    Object.assign(store, {
      recordsSource: (records: readonly RecordRef[], o?: { verify?: boolean }) => {
        const inner = t.store.recordsSource(records, o);
        return recordsSourceOf(records, async (r, start, target) => {
          running++;
          try {
            await new Promise((res) => setTimeout(res, 1));
            const at = records.slice(0, records.indexOf(r)).reduce((n, x) => n + x.length, 0) + start;
            target.set(await inner.read(at, target.length));
            if (++pieces === abortAfter) controller.abort();
          } finally {
            running--;
          }
        });
      },
    });
    const set = await openTensors(store, 'm');
    const cols: SliceRange[] = [
      [0, 16],
      [6, 12],
    ];
    for (const gap of [undefined, 0]) {
      const options = gap === undefined ? {} : { gap };
      controller = new AbortController();
      controller.abort();
      expect(await rejection(set.get('mat').readSlice(cols, { ...options, signal: controller.signal }))).toEqual({
        code: 'cancelled',
        rule: 'errors.cancelled',
      });
    }
    // Mid-slice: 16 exact reads, the controller aborted by the third.
    controller = new AbortController();
    pieces = 0;
    abortAfter = 3;
    const into = new Uint8Array(16 * 12).fill(7);
    const p = set.get('mat').readSlice(cols, { gap: 0, into, signal: controller.signal });
    expect(await rejection(p)).toEqual({ code: 'cancelled', rule: 'errors.cancelled' });
    expect(running).toBe(0);
    const copy = into.slice();
    await new Promise((res) => setTimeout(res, 20));
    expect(into).toEqual(copy);
    expect(pieces).toBeLessThan(16);
    abortAfter = Number.POSITIVE_INFINITY;
    // One flipped byte in mat's object: every verified slice of it is corrupt; unverified, the
    // flipped byte is what is read.
    const mat = set.get('mat');
    const whole = await mat.read();
    const victim = objectFile(t.root, mat.records[0]!.digest);
    const stored = await fsp.readFile(victim);
    stored[2 * 24 + 13] = stored[2 * 24 + 13]! ^ 0xff;
    await fsp.chmod(victim, 0o644);
    await fsp.writeFile(victim, stored);
    const unverified = await mat.readSlice(cols, { gap: 0 });
    expect(unverified[2 * 12 + 1]).toBe(whole[2 * 24 + 13]! ^ 0xff);
    // (The first verified read finds the mismatch, `store.digest`, and quarantines the object;
    // reads racing it, and later ones, are refused as quarantined: `corrupt` too.)
    for (const gap of [0, undefined]) {
      const options = gap === undefined ? {} : { gap };
      const e = await mat.readSlice(cols, { ...options, verify: true }).then(
        () => null,
        (error: unknown) => error,
      );
      expect(isTensorFSError(e) && { code: e.code, digest: e.details.digest }, `gap ${gap}`).toEqual({
        code: 'corrupt',
        digest: mat.records[0]!.digest,
      });
    }
  });

  it('slices GGUF block types on whole blocks, and says why not inside one', async () => {
    const dir = path.join(t.scratch, 'g');
    await fsp.mkdir(dir);
    await fsp.copyFile(path.join(FIXTURES, 'tiny.gguf'), path.join(dir, 'tiny.gguf'));
    await t.local!.importPath(dir, { name: 'g', threads: 1 });
    const set = await openTensors(t.store, 'g');
    const q = set.get('blk.0.attn_q.weight'); // Q8_0 [2, 32]: one 34-byte block a row
    const file = await fsp.readFile(path.join(FIXTURES, 'tiny.gguf'));
    const row1 = new Uint8Array(file.subarray(q.byteOffset + 34, q.byteOffset + 68));
    expect(await q.readSlice([[1, 2]])).toEqual(row1);
    expect(
      await q.readSlice([
        [1, 2],
        [0, 32],
      ]),
    ).toEqual(row1);
    expect(
      await rejection(
        q.readSlice([
          [0, 2],
          [0, 16],
        ]),
      ),
    ).toEqual({ code: 'unsupported', rule: 'tensors.slice_block' });
    const f16 = set.get('blk.0.ffn.weight'); // F16 [3, 7]
    expect(
      await f16.readSlice([
        [1, 3],
        [2, 5],
      ]),
    ).toEqual(
      new Uint8Array([
        ...file.subarray(f16.byteOffset + 7 * 2 + 4, f16.byteOffset + 7 * 2 + 10),
        ...file.subarray(f16.byteOffset + 14 * 2 + 4, f16.byteOffset + 14 * 2 + 10),
      ]),
    );
    // Decoded: the whole tensor decoded, then sliced (F32 values of row 1).
    const decoded = await q.read({ decode: true });
    expect(
      await q.readSlice(
        [
          [1, 2],
          [0, 16],
        ],
        { decode: true },
      ),
    ).toEqual(decoded.subarray(32 * 4, 48 * 4));
  });

  it('tensor parallelism: 4 ranks of a tiny Llama concatenate to the whole tensors exactly', async () => {
    const hidden = 64;
    const inter = 96;
    const specsLlama: (Spec & { tp: 'column' | 'row' | 'replicated' })[] = [
      { name: 'model.embed_tokens.weight', dtype: 'BF16', shape: [128, hidden], tp: 'column' },
    ];
    for (let i = 0; i < 2; i++) {
      const p = `model.layers.${i}`;
      specsLlama.push(
        { name: `${p}.input_layernorm.weight`, dtype: 'BF16', shape: [hidden], tp: 'replicated' },
        { name: `${p}.self_attn.q_proj.weight`, dtype: 'BF16', shape: [hidden, hidden], tp: 'column' },
        { name: `${p}.self_attn.k_proj.weight`, dtype: 'BF16', shape: [hidden / 2, hidden], tp: 'column' },
        { name: `${p}.self_attn.v_proj.weight`, dtype: 'BF16', shape: [hidden / 2, hidden], tp: 'column' },
        { name: `${p}.self_attn.o_proj.weight`, dtype: 'BF16', shape: [hidden, hidden], tp: 'row' },
        { name: `${p}.mlp.gate_proj.weight`, dtype: 'BF16', shape: [inter, hidden], tp: 'column' },
        { name: `${p}.mlp.up_proj.weight`, dtype: 'BF16', shape: [inter, hidden], tp: 'column' },
        { name: `${p}.mlp.down_proj.weight`, dtype: 'BF16', shape: [hidden, inter], tp: 'row' },
      );
    }
    const { bytes } = safetensors(specsLlama);
    await fsp.writeFile(path.join(t.scratch, 'model.safetensors'), bytes);
    await t.local!.importPath(path.join(t.scratch, 'model.safetensors'), { name: 'llama', threads: 1 });
    const set = await openTensors(t.store, 'llama');
    const ranks = 4;
    let sharded = 0;
    for (const s of specsLlama) {
      const view = set.get(s.name);
      const whole = await view.read();
      if (s.tp === 'replicated') {
        expect(await view.readSlice([])).toEqual(whole);
        continue;
      }
      const axis = s.tp === 'column' ? 0 : 1; // Megatron: column-parallel splits out (dim 0), row-parallel in (dim 1)
      const dim = s.shape[axis]!;
      const shards: Uint8Array[] = [];
      for (let rank = 0; rank < ranks; rank++) {
        const r: SliceRange = [(dim / ranks) * rank, (dim / ranks) * (rank + 1)];
        shards.push(await view.readSlice(axis === 0 ? [r] : [[0, s.shape[0]!], r]));
      }
      // Concatenate along the axis.
      const joined = new Uint8Array(whole.length);
      if (axis === 0) {
        let at = 0;
        for (const sh of shards) {
          joined.set(sh, at);
          at += sh.length;
        }
      } else {
        const rowBytes = s.shape[1]! * 2;
        const part = rowBytes / ranks;
        for (let row = 0; row < s.shape[0]!; row++) {
          for (let rank = 0; rank < ranks; rank++) {
            joined.set(shards[rank]!.subarray(row * part, (row + 1) * part), row * rowBytes + rank * part);
          }
        }
      }
      expect(hex(joined), s.name).toBe(hex(whole));
      sharded++;
    }
    expect(sharded).toBe(15);
  });

  it('slices encoded checkpoint tensors in stored form where the scheme allows, else unsupported', async () => {
    const rows = 8;
    const cols = 64;
    const q = randomFillSync(new Uint8Array(rows * cols));
    const scale = new Uint8Array(new Float32Array(Array.from({ length: rows }, (_, i) => 0.01 * (i + 1))).buffer);
    const codes = randomFillSync(new Uint8Array((rows * cols) / 2));
    const blocks = (rows * cols) / 64;
    const absmax = new Uint8Array(new Float32Array(Array.from({ length: blocks }, (_, i) => 1 + i)).buffer);
    const table = new Uint8Array(new Float32Array(Array.from({ length: 16 }, (_, i) => (i - 8) / 8)).buffer);
    const w = new CheckpointWriter(t.store);
    w.component('m', { cls: 'M', config: null });
    await w.putEncoded('int8.weight', {
      dtype: 'F32',
      shape: [rows, cols],
      scheme: 'int8',
      params: { shape: [rows, cols], dtype: 'F32', granularity: 'row', scale_kind: 'scale' },
      parts: { q: { dtype: 'I8', shape: [rows, cols], data: q }, scale: { dtype: 'F32', shape: [rows], data: scale } },
    });
    await w.putEncoded('nf4.weight', {
      dtype: 'F32',
      shape: [rows, cols],
      scheme: 'bnb_nf4',
      params: { shape: [rows, cols], dtype: 'F32', blocksize: 64, nibble_order: 'hi_first', nested: false },
      parts: {
        codes: { dtype: 'U8', shape: [(rows * cols) / 2], data: codes },
        absmax: { dtype: 'F32', shape: [blocks], data: absmax },
        code_table: { dtype: 'F32', shape: [16], data: table },
      },
    });
    await w.commit({ name: 'cp' });
    const cp = await openCheckpoint(t.store, 'cp');
    const comp = cp.component('m');
    for (const name of ['int8.weight', 'nf4.weight']) {
      const view = comp.tensors.get(name)!;
      const whole = new Float32Array((await view.read({ decode: true })).buffer.slice(0));
      const enc = await readEncodedSlice(view, [[2, 5]]);
      const part = decode(enc, { dtype: 'F32' });
      expect(new Float32Array(part.buffer, part.byteOffset, part.length / 4), name).toEqual(
        whole.subarray(2 * cols, 5 * cols),
      );
      // The decoded slice (whole decode, then cut) agrees.
      expect(await view.readSlice([[2, 5]], { decode: true })).toEqual(
        new Uint8Array(whole.buffer, 2 * cols * 4, 3 * cols * 4),
      );
      // The stored form cannot come out of readSlice: it has parts.
      expect(await rejection(view.readSlice([[2, 5]]))).toEqual({ code: 'unsupported', rule: 'tensors.slice_encoded' });
    }
    // int8 columns: q's columns, the row scales whole.
    const i8 = comp.tensors.get('int8.weight')!;
    const cut = await readEncodedSlice(i8, [
      [0, rows],
      [16, 48],
    ]);
    const wholeI8 = new Float32Array((await i8.read({ decode: true })).buffer.slice(0));
    const got = decode(cut, { dtype: 'F32' });
    const values = new Float32Array(got.buffer, got.byteOffset, got.length / 4);
    for (let r = 0; r < rows; r++)
      expect(values.subarray(r * 32, r * 32 + 32)).toEqual(wholeI8.subarray(r * cols + 16, r * cols + 48));
    // NF4 rows that cut a block: unsupported, saying why.
    expect(
      await rejection(
        readEncodedSlice(comp.tensors.get('nf4.weight')!, [
          [1, 2],
          [0, 32],
        ]),
      ),
    ).toEqual({
      code: 'unsupported',
      rule: 'tensors.slice_encoded',
    });
  });
});
