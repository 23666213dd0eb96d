import { bytesSource, RECORD_GRID_BYTES, TensorFSError } from '@tensorfs/format';
import {
  ALIGNED_RECORD_MIN,
  checkTensorSeams,
  cutTensor,
  type Hasher,
  nobleHasher,
  type Plan,
  type PlannedRecord,
  planAndHash,
  planToJSON,
} from '@tensorfs/planner';
import { expectCode } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { ggufBytes, safetensorsBytes, seededBytes, sha256Id, testHasher, virtualSource } from './helpers.js';

const hasher = testHasher();
const MiB = 1024 * 1024;

async function plan(bytes: Uint8Array, options: Parameters<typeof planAndHash>[1] = {}): Promise<Plan> {
  return planAndHash(bytesSource(bytes), { hasher, ...options });
}

/** The records a plan should have, from explicit [offset, length] cuts of `bytes`. */
function expected(bytes: Uint8Array, cuts: [number, number][]) {
  return cuts.map(([o, n]) => ({ digest: sha256Id(bytes.subarray(o, o + n)), length: n }));
}

describe('blob-v1', () => {
  it('plans an unrecognised file as one record named by its SHA-256', async () => {
    const bytes = seededBytes(1, 1000);
    expect(await plan(bytes)).toEqual({ profile: 'blob-v1', size: 1000, records: expected(bytes, [[0, 1000]]) });
  });

  it('plans an empty file as zero records', async () => {
    expect(await plan(new Uint8Array(0))).toEqual({ profile: 'blob-v1', size: 0, records: [] });
  });

  it('falls back to blob-v1 for truncated or corrupt tensor files, never an error', async () => {
    const good = safetensorsBytes([{ name: 'a', data: seededBytes(2, 64) }]);
    const cases = [
      good.subarray(0, good.length - 1),
      good.subarray(0, 4),
      Uint8Array.from([...good.subarray(0, 8), 0x5b, ...good.subarray(9)]),
      ggufBytes({}, [{ name: 'w', values: 4 }]).subarray(0, 30),
      Uint8Array.from([0x47, 0x47, 0x55, 0x46, 9, 0, 0, 0]),
    ];
    for (const bytes of cases) {
      const p = await plan(bytes);
      expect(p.profile).toBe('blob-v1');
      expect(p.records).toEqual(expected(bytes, [[0, bytes.length]]));
    }
  });

  it('streams a blob larger than a buffer and reports it to onRecord without bytes', async () => {
    const bytes = seededBytes(3, RECORD_GRID_BYTES + 12345);
    const seen: [PlannedRecord, unknown][] = [];
    const p = await plan(bytes, { onRecord: (r, b) => void seen.push([r, b]) });
    expect(p.records).toEqual(expected(bytes, [[0, bytes.length]]));
    expect(seen).toEqual([[{ index: 0, offset: 0, length: bytes.length, digest: p.records[0]!.digest }, null]]);
  });

  it('rejects seams on a blob-v1 file', async () => {
    expect(
      (await expectCode(plan(seededBytes(4, 100), { seams: { a: [1] } }), 'invalid_argument')).details,
    ).toMatchObject({ rule: 'planner.seam_tensor', profile: 'blob-v1' });
  });
});

describe('safetensors-v1', () => {
  const a = seededBytes(10, 100);
  const b = seededBytes(11, 3000);
  const file = safetensorsBytes(
    [
      { name: 'a', data: a },
      { name: 'empty', shape: [0, 4], data: new Uint8Array(0) },
      { name: 'b', data: b },
    ],
    { format: 'pt' },
  );
  const dataStart = file.length - 3100;

  it('cuts the header region, then one record per non-empty tensor in data order', async () => {
    const p = await plan(file);
    expect(p.profile).toBe('safetensors-v1');
    expect(p.size).toBe(file.length);
    expect(p.records).toEqual(
      expected(file, [
        [0, dataStart],
        [dataStart, 100],
        [dataStart + 100, 3000],
      ]),
    );
    expect([...p.tensors!]).toEqual([
      ['a', [1, 1]],
      ['b', [2, 2]],
    ]);
    expect(p.records[1]!.digest).toBe(sha256Id(a));
  });

  it('gives the same plan with every hasher and concurrency', async () => {
    const reference = await plan(file);
    for (const concurrency of [1, 2, 5]) {
      expect(await plan(file, { concurrency })).toEqual(reference);
      expect(await plan(file, { concurrency, hasher: nobleHasher() })).toEqual(reference);
    }
  });

  it('cuts a tensor over 64 MiB every 64 MiB from the tensor start, not the file start', async () => {
    const big = seededBytes(12, RECORD_GRID_BYTES * 2 + 5);
    const f = safetensorsBytes([
      { name: 'small', data: seededBytes(13, 7) },
      { name: 'big', data: big },
    ]);
    const start = f.length - big.length;
    const p = await plan(f, { concurrency: 2 });
    expect(p.records.map((r) => r.length)).toEqual([start - 7, 7, RECORD_GRID_BYTES, RECORD_GRID_BYTES, 5]);
    expect(p.records.slice(2).map((r) => r.digest)).toEqual([
      sha256Id(big.subarray(0, RECORD_GRID_BYTES)),
      sha256Id(big.subarray(RECORD_GRID_BYTES, 2 * RECORD_GRID_BYTES)),
      sha256Id(big.subarray(2 * RECORD_GRID_BYTES)),
    ]);
    expect(p.tensors!.get('big')).toEqual([2, 4]);
  });

  it('seams split a tensor and restart the grid, so fused and split forms share objects', async () => {
    const q = seededBytes(20, 300);
    const k = seededBytes(21, 200);
    const v = seededBytes(22, 500);
    const fused = safetensorsBytes([{ name: 'qkv', data: Uint8Array.from([...q, ...k, ...v]) }]);
    const split = safetensorsBytes([
      { name: 'q', data: q },
      { name: 'k', data: k },
      { name: 'v', data: v },
    ]);
    const pf = await plan(fused, { seams: { qkv: [500, 300, 300] } });
    const ps = await plan(split);
    expect(pf.records.slice(1)).toEqual(ps.records.slice(1));
    expect(pf.tensors!.get('qkv')).toEqual([1, 3]);
    // without seams the fused tensor is one object
    expect((await plan(fused)).records).toHaveLength(2);
  });

  it('rejects seams that name no tensor or fall outside it', async () => {
    for (const [seams, rule] of [
      [{ nope: [1] }, 'planner.seam_tensor'],
      [{ empty: [1] }, 'planner.seam_offset'],
      [{ a: [0] }, 'planner.seam_offset'],
      [{ a: [100] }, 'planner.seam_offset'],
      [{ a: [1.5] }, 'planner.seam_offset'],
      [{ a: 5 }, 'planner.seams_type'],
    ] as const) {
      expect((await expectCode(plan(file, { seams: seams as never }), 'invalid_argument')).details).toMatchObject({
        rule,
      });
    }
  });

  it('calls onRecord in order with exactly the hashed bytes, and progress up to the size', async () => {
    const f = safetensorsBytes([
      { name: 'x', data: seededBytes(30, RECORD_GRID_BYTES - 10) },
      { name: 'y', data: seededBytes(31, 50) },
      { name: 'z', data: seededBytes(32, 30) },
    ]);
    const got: Uint8Array[] = [];
    const indexes: number[] = [];
    const progress: number[] = [];
    const p = await plan(f, {
      concurrency: 2,
      onRecord: async (r, bytes) => {
        await new Promise((resolve) => setTimeout(resolve, 1));
        indexes.push(r.index);
        expect(bytes).not.toBeNull();
        const joined = Buffer.concat(bytes!);
        expect(joined.length).toBe(r.length);
        expect(sha256Id(joined)).toBe(r.digest);
        got.push(Uint8Array.from(joined));
      },
      onProgress: (e) => {
        // The one progress shape: done/total are the bytes counters.
        expect(e).toEqual({
          phase: 'plan',
          unit: 'bytes',
          done: e.bytes,
          total: f.length,
          bytes: e.bytes,
          bytesTotal: f.length,
        });
        progress.push(e.done);
      },
    });
    expect(indexes).toEqual([0, 1, 2, 3]);
    expect(Buffer.concat(got).equals(Buffer.from(f))).toBe(true);
    expect(progress.at(-1)).toBe(f.length);
    expect([...progress].sort((x, y) => x - y)).toEqual(progress);
    expect(p.records).toHaveLength(4);
  });
});

describe('onRead', () => {
  it('hands every buffered record its bytes before its digest, awaited before onRecord', async () => {
    const f = safetensorsBytes([
      { name: 'x', data: seededBytes(33, RECORD_GRID_BYTES - 10) },
      { name: 'y', data: seededBytes(34, 50) },
      { name: 'z', data: seededBytes(35, 30) },
    ]);
    const log: string[] = [];
    const early = new Map<number, Buffer>();
    const p = await plan(f, {
      concurrency: 2,
      onRead: async (r, bytes) => {
        log.push(`read ${r.index}`);
        const joined = Buffer.concat(bytes);
        expect(joined.length).toBe(r.length);
        expect(joined.equals(Buffer.from(f.subarray(r.offset, r.offset + r.length)))).toBe(true);
        early.set(r.index, Buffer.from(joined));
        // Awaited: onRecord for this record must wait for it.
        await new Promise((resolve) => setTimeout(resolve, 5));
        log.push(`read done ${r.index}`);
      },
      onRecord: (r, bytes) => {
        log.push(`record ${r.index}`);
        expect(sha256Id(early.get(r.index)!)).toBe(r.digest);
        expect(Buffer.concat(bytes!).equals(early.get(r.index)!)).toBe(true);
      },
    });
    expect(p.records).toHaveLength(4);
    for (let i = 0; i < 4; i++) {
      expect(log.indexOf(`read ${i}`)).toBeGreaterThanOrEqual(0);
      expect(log.indexOf(`read done ${i}`)).toBeLessThan(log.indexOf(`record ${i}`));
    }
    expect(log.filter((l) => l.startsWith('record '))).toEqual(['record 0', 'record 1', 'record 2', 'record 3']);
  });

  it('is not called for a blob larger than a buffer, and its failure fails the plan', async () => {
    const big = seededBytes(36, RECORD_GRID_BYTES + 1);
    let calls = 0;
    await plan(big, { onRead: () => void calls++ });
    expect(calls).toBe(0);
    const f = safetensorsBytes([{ name: 'a', data: seededBytes(37, 100) }]);
    const seen: number[] = [];
    const e = await expectCode(
      plan(f, {
        onRead: async (r) => {
          if (r.index === 1) throw new TensorFSError('io', 'disk full');
        },
        onRecord: (r) => void seen.push(r.index),
      }),
      'io',
    );
    expect(e.message).toBe('disk full');
    // Records are handed on one by one: the header (record 0) was done before record 1 failed.
    expect(seen).toEqual([0]);
  });
});

describe('align', () => {
  it('starts every record of at least 256 KiB at an aligned buffer offset, with room to round it up', async () => {
    // Odd lengths on purpose: packed, t1 and t3 would start at unaligned offsets.
    const f = safetensorsBytes([
      { name: 't0', data: seededBytes(60, ALIGNED_RECORD_MIN + 3) },
      { name: 't1', data: seededBytes(61, 1000) },
      { name: 't2', data: seededBytes(62, 3 * ALIGNED_RECORD_MIN + 5) },
      { name: 't3', data: seededBytes(63, ALIGNED_RECORD_MIN) },
    ]);
    const align = 4096;
    const packed = await plan(f);
    const seen: [number, number, number, number][] = [];
    const aligned = await plan(f, {
      align,
      concurrency: 2,
      onRead: (r, bytes) => {
        expect(bytes).toHaveLength(1);
        const b = bytes[0]!;
        expect(Buffer.from(b).equals(Buffer.from(f.subarray(r.offset, r.offset + r.length)))).toBe(true);
        seen.push([r.index, r.length, b.byteOffset, b.buffer.byteLength]);
      },
      onRecord: (r, bytes) => {
        expect(sha256Id(...bytes!)).toBe(r.digest);
      },
    });
    expect(aligned).toEqual(packed);
    // The buffers are the file's size (rounded up): the aligned slots do not all fit one.
    expect(seen.map((s) => s[0])).toEqual([0, 1, 2, 3, 4]);
    for (const [, length, at, room] of seen) {
      if (length < ALIGNED_RECORD_MIN) continue;
      expect(at % align).toBe(0);
      expect(at + Math.ceil(length / align) * align).toBeLessThanOrEqual(room);
    }
    expect(seen.filter((s) => s[1] >= ALIGNED_RECORD_MIN)).toHaveLength(3);
  });

  it('must be a power of two up to 1 MiB', async () => {
    const f = safetensorsBytes([{ name: 'a', data: seededBytes(65, 10) }]);
    for (const align of [0, 3, 4097, 2 << 20, 1.5]) {
      const e = await expectCode(plan(f, { align }), 'invalid_argument');
      expect(e.details).toEqual({ rule: 'planner.align', actual: align });
    }
    expect((await plan(f, { align: 1 << 20 })).records).toHaveLength(2);
  });
});

describe('gguf-v1', () => {
  it('cuts header, tensors and alignment padding; equal paddings are one object', async () => {
    const w1 = seededBytes(40, 12);
    const w2 = seededBytes(41, 40);
    const w3 = seededBytes(42, 12);
    const f = ggufBytes({ 'general.name': 'tiny' }, [
      { name: 'w1', values: 3, data: w1 },
      { name: 'w2', values: 10, data: w2 },
      { name: 'w3', values: 3, data: w3 },
    ]);
    const dataStart = f.length - (32 + 64 + 32);
    const p = await plan(f);
    expect(p.profile).toBe('gguf-v1');
    expect(p.records).toEqual(
      expected(f, [
        [0, dataStart],
        [dataStart, 12],
        [dataStart + 12, 20],
        [dataStart + 32, 40],
        [dataStart + 72, 24],
        [dataStart + 96, 12],
        [dataStart + 108, 20],
      ]),
    );
    expect(p.records[2]!.digest).toBe(p.records[6]!.digest);
    expect(p.records[2]!.digest).toBe(sha256Id(new Uint8Array(20)));
    expect([...p.tensors!]).toEqual([
      ['w1', [1, 1]],
      ['w2', [3, 3]],
      ['w3', [5, 5]],
    ]);
  });
});

describe('bounds', () => {
  /** A safetensors prefix declaring one U8 tensor of `length` bytes; the data is virtual zeros. */
  function hugeSource(length: number) {
    let json = JSON.stringify({ t: { dtype: 'U8', shape: [length], data_offsets: [0, length] } });
    while (json.length % 8 !== 0) json += ' ';
    const prefix = new Uint8Array(8 + json.length);
    new DataView(prefix.buffer).setBigUint64(0, BigInt(json.length), true);
    prefix.set(new TextEncoder().encode(json), 8);
    return virtualSource(prefix, prefix.length + length);
  }

  it('plans a file needing more than 1,000,000 records as blob-v1', async () => {
    const source = hugeSource(RECORD_GRID_BYTES * 1_000_000);
    // Seams are checked before any byte is hashed; the error names the profile the file got.
    expect(
      (await expectCode(planAndHash(source, { hasher, seams: { t: [1] } }), 'invalid_argument')).details,
    ).toMatchObject({ rule: 'planner.seam_tensor', profile: 'blob-v1' });
  });

  it('plans exactly 1,000,000 records as a tensor file, and refuses seams that push past it', async () => {
    const source = hugeSource(RECORD_GRID_BYTES * 999_999);
    expect(
      (await expectCode(planAndHash(source, { hasher, seams: { t: [1] } }), 'limit_exceeded')).details,
    ).toMatchObject({ rule: 'planner.records_limit', limit: 1_000_000 });
    const controller = new AbortController();
    const seen: PlannedRecord[] = [];
    await expectCode(
      planAndHash(source, {
        hasher,
        signal: controller.signal,
        onRecord: (r) => {
          seen.push(r);
          if (r.index === 1) controller.abort();
        },
      }),
      'cancelled',
    );
    expect(seen[0]!.length).toBeLessThan(RECORD_GRID_BYTES);
    expect(seen[1]).toMatchObject({ index: 1, length: RECORD_GRID_BYTES, offset: seen[0]!.length });
  });
});

describe('memory', () => {
  it('keeps at most min(parallelism, 8) + 1 buffers by default, and concurrency + 1 when asked', async () => {
    const length = RECORD_GRID_BYTES * 20;
    let json = JSON.stringify({ t: { dtype: 'U8', shape: [length], data_offsets: [0, length] } });
    while (json.length % 8 !== 0) json += ' ';
    const prefix = new Uint8Array(8 + json.length);
    new DataView(prefix.buffer).setBigUint64(0, BigInt(json.length), true);
    prefix.set(new TextEncoder().encode(json), 8);
    const header = virtualSource(prefix, prefix.length + length);
    // The data pass reads into the planner's own (zeroed) buffers: nothing to copy for zeros.
    const source = { ...header, readInto: async () => {} };
    for (const [concurrency, most] of [
      [undefined, 9],
      [2, 3],
    ] as const) {
      let buffers = 0;
      const wide: Hasher = {
        ...hasher,
        parallelism: 100,
        allocate: (n) => {
          buffers++;
          return new Uint8Array(n);
        },
        digest: async () => new Uint8Array(32),
      };
      const plan = await planAndHash(source, { hasher: wide, ...(concurrency ? { concurrency } : {}) });
      expect(plan.records).toHaveLength(21);
      expect(buffers).toBe(most);
    }
  });
});

describe('failures', () => {
  it('turns an aborted signal into cancelled, before or during hashing', async () => {
    const f = seededBytes(50, 3 * MiB);
    await expectCode(plan(f, { signal: AbortSignal.abort() }), 'cancelled');
    const controller = new AbortController();
    const slow: Hasher = {
      ...hasher,
      digest: (pieces, signal) =>
        new Promise((resolve, reject) => {
          controller.abort();
          signal?.addEventListener('abort', () => reject(new Error('aborted')));
          void hasher.digest(pieces).then((d) => setTimeout(() => resolve(d), 50));
        }),
    };
    await expectCode(plan(f, { hasher: slow, signal: controller.signal }), 'cancelled');
  });

  it('propagates source and hasher failures as TensorFSErrors', async () => {
    // A failing read (here while sniffing the format) is `io`, not `internal` (issue 11).
    const failing = { size: 10, read: async () => Promise.reject(new Error('disk on fire')) };
    await expectCode(planAndHash(failing, { hasher }), 'io', 'source.read');
    // A source's own TensorFSError passes through unchanged.
    const denied = new TensorFSError('denied', 'no access', { details: { rule: 'test.denied' } });
    const refusing = { size: 10, read: async () => Promise.reject(denied) };
    await expect(planAndHash(refusing, { hasher })).rejects.toBe(denied);
    // A source that breaks its contract (resolves null) is the caller's bug: invalid_argument, not a TypeError.
    const nulls = { size: 10, read: async () => null as unknown as Uint8Array };
    await expectCode(planAndHash(nulls, { hasher }), 'invalid_argument', 'source.contract');
    // Not a byte source at all: invalid_argument, not a TypeError turned internal.
    await expectCode(planAndHash(null as never, { hasher }), 'invalid_argument', 'source.argument');
    const short = { size: 10, read: async () => new Uint8Array(3) };
    await expectCode(planAndHash(short, { hasher }), 'io');
    const broken: Hasher = { ...hasher, digest: async () => Promise.reject(new Error('boom')) };
    await expectCode(plan(seededBytes(1, 10), { hasher: broken }), 'internal');
    await expectCode(plan(seededBytes(1, 10), { concurrency: 0 }), 'invalid_argument');
  });
});

describe('planToJSON', () => {
  it('gives profile, size, records and tensors in data order (any tensor name as an own key)', async () => {
    const f = safetensorsBytes([
      { name: 'z', data: seededBytes(60, 5) },
      { name: '__proto__', data: seededBytes(61, 6) },
    ]);
    const json = JSON.parse(JSON.stringify(planToJSON(await plan(f))));
    expect(Object.keys(json)).toEqual(['profile', 'size', 'records', 'tensors']);
    expect(Object.keys(json.tensors)).toEqual(['z', '__proto__']);
    expect(Object.getOwnPropertyDescriptor(json.tensors, '__proto__')?.value).toEqual([2, 2]);
    expect(planToJSON(await plan(new Uint8Array(3)))).toEqual({
      profile: 'blob-v1',
      size: 3,
      records: [{ digest: sha256Id(new Uint8Array(3)), length: 3 }],
    });
  });
});

describe('cutTensor (the one cut rule)', () => {
  const G = RECORD_GRID_BYTES;
  it('cuts every 64 MiB from the start of each seam segment', () => {
    expect(cutTensor(0)).toEqual([]);
    expect(cutTensor(5)).toEqual([5]);
    expect(cutTensor(G)).toEqual([G]);
    expect(cutTensor(2 * G + 3)).toEqual([G, G, 3]);
    expect(cutTensor(100, [10, 60])).toEqual([10, 50, 40]);
    expect(cutTensor(G + 20, [10])).toEqual([10, G, 10]);
  });
  it('checks seams: integers strictly inside, returned sorted and unique', () => {
    expect(checkTensorSeams('t', [60, 10, 60], 100)).toEqual([10, 60]);
    for (const bad of [[0], [100], [1.5], 'x']) {
      expect(() => checkTensorSeams('t', bad, 100)).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    }
  });
});
