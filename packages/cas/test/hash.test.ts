import { createNodeHasher } from '@tensorfs/cas';
import { bytesSource, isTensorFSError, toHex } from '@tensorfs/format';
import { planAndHash } from '@tensorfs/planner';
import fc from 'fast-check';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { sha256Hex } from '@tensorfs/testkit';
import { afterAll, describe, expect, it } from 'vitest';

const sha = sha256Hex;

const pooled = createNodeHasher({ threads: 2, inlineBelow: 1024 });
const inline = createNodeHasher({ threads: 1 });
afterAll(async () => {
  await pooled.close();
  await inline.close();
});

describe('createNodeHasher', () => {
  it('matches node:crypto for random inputs, inline and on workers, in one piece or several', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.uint8Array({ maxLength: 5000 }), { maxLength: 4 }), async (pieces) => {
        const want = sha(...pieces);
        expect(toHex(await inline.digest(pieces))).toBe(want);
        expect(toHex(await pooled.digest(pieces))).toBe(want);
        const shared = pieces.map((p) => {
          const s = new Uint8Array(new SharedArrayBuffer(p.length + 8), 4, p.length);
          s.set(p);
          return s;
        });
        expect(toHex(await pooled.digest(shared))).toBe(want);
      }),
      { numRuns: 200 },
    );
  });

  it('hashes large records in parallel without modifying or detaching the pieces', async () => {
    const records = Array.from({ length: 6 }, () => randomBytes(3 * 1024 * 1024 + 7));
    const views = records.map((r) => new Uint8Array(r.buffer, r.byteOffset, r.length));
    const digests = await Promise.all(views.map((v) => pooled.digest([v.subarray(1), v.subarray(0, 1)])));
    digests.forEach((d, i) => {
      expect(toHex(d)).toBe(sha(records[i]!.subarray(1), records[i]!.subarray(0, 1)));
      expect(views[i]!.length).toBe(records[i]!.length);
      expect(sha(views[i]!)).toBe(sha(records[i]!));
    });
  });

  it('streams', async () => {
    const bytes = randomBytes(100_000);
    const s = pooled.stream();
    await s.update(bytes.subarray(0, 30_000));
    await s.update(bytes.subarray(30_000));
    expect(toHex(await s.digest())).toBe(sha(bytes));
  });

  it('allocates shared buffers only when it has workers', () => {
    expect(pooled.allocate!(16).buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(inline.allocate!(16).buffer).toBeInstanceOf(ArrayBuffer);
    expect(pooled.parallelism).toBe(2);
  });

  it('gives planAndHash the same plan with one thread or two', async () => {
    const file = new Uint8Array(randomBytes(5_000_000));
    const a = await planAndHash(bytesSource(file), { hasher: inline });
    const b = await planAndHash(bytesSource(file), { hasher: pooled });
    expect(b).toEqual(a);
    expect(a.records[0]!.digest).toBe(`sha256:${sha(file)}`);
  });

  it('rejects with cancelled when the signal aborts', async () => {
    await expect(pooled.digest([new Uint8Array(10)], AbortSignal.abort())).rejects.toMatchObject({ code: 'cancelled' });
    const controller = new AbortController();
    const pending = pooled.digest([new Uint8Array(32 * 1024 * 1024)], controller.signal);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ code: 'cancelled' });
  });

  it('refuses bad thread counts', () => {
    for (const threads of [0, -1, 1.5, 1000]) {
      let code: unknown;
      try {
        createNodeHasher({ threads });
      } catch (err) {
        code = isTensorFSError(err) ? err.code : err;
      }
      expect(code).toBe('invalid_argument');
    }
  });

  it('closes: pending digests reject, later ones are refused, close is idempotent', async () => {
    const h = createNodeHasher({ threads: 2, inlineBelow: 0 });
    const pending = Array.from({ length: 8 }, () =>
      h.digest([new Uint8Array(8 * 1024 * 1024)]).then(
        () => 'done',
        (err: unknown) => (isTensorFSError(err) ? err.code : err),
      ),
    );
    await h.close();
    const outcomes = await Promise.all(pending);
    expect(outcomes.filter((o) => o !== 'done').every((o) => o === 'cancelled')).toBe(true);
    expect(outcomes.at(-1)).toBe('cancelled');
    await expect(h.digest([new Uint8Array(1)])).rejects.toMatchObject({ code: 'invalid_argument' });
    await h.close();
  });

  it('never keeps the process alive, closed or not', () => {
    const root = fileURLToPath(new URL('../../..', import.meta.url));
    const script = `
      import { createNodeHasher } from '@tensorfs/cas';
      const h = createNodeHasher({ threads: 2, inlineBelow: 0 });
      const d = await h.digest([new Uint8Array(1 << 20)]);
      console.log(Buffer.from(d).toString('hex'));
    `;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: root,
      timeout: 20_000,
      encoding: 'utf8',
    });
    expect(out.trim()).toBe(sha(new Uint8Array(1 << 20)));
  });
});

describe('buffer reuse', () => {
  it('gives released buffers back to the next allocate of the same size', async () => {
    const h = createNodeHasher({ threads: 2 });
    const a = h.allocate!(1024);
    h.release!(a);
    h.release!(a);
    expect(h.allocate!(1024)).toBe(a);
    expect(h.allocate!(1024)).not.toBe(a);
    expect(h.allocate!(2048).length).toBe(2048);
    await h.close();
  });

  it('lets consecutive plans reuse their read buffers', async () => {
    const h = createNodeHasher({ threads: 2 });
    const allocate = h.allocate!.bind(h);
    let fresh = 0;
    h.allocate = (size) => {
      const b = allocate(size);
      fresh += b.every((x) => x === 0) ? 1 : 0;
      return b;
    };
    const file = new Uint8Array(randomBytes(2_000_000));
    const first = await planAndHash(bytesSource(file), { hasher: h });
    const afterFirst = fresh;
    const second = await planAndHash(bytesSource(file), { hasher: h });
    expect(second).toEqual(first);
    expect(afterFirst).toBeGreaterThan(0);
    expect(fresh).toBe(afterFirst);
    await h.close();
  });
});
