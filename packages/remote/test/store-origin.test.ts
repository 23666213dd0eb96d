import { LocalStore } from '@tensorfs/cas';
import { bytesOf, expectCode, idOf, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { StoreOrigin, serveHub } from '../src/index.js';
import { after } from './helpers.js';

// 3.5 pieces of the 1 MiB pieces the store origin reads: buffers are reused across pieces.
const BIG = bytesOf(3.5 * 1024 * 1024 + 17, 5);

async function storeHolding(bytes: Uint8Array) {
  const store = await LocalStore.open(tempDir());
  after(() => store.close());
  await store.put(bytes);
  return store;
}

async function drain(body: AsyncIterable<Uint8Array>, done?: (c: Uint8Array) => void): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of body) {
    out.push(Buffer.from(c)); // a copy: the chunk's memory is handed back below
    done?.(c);
  }
  return Buffer.concat(out);
}

describe('StoreOrigin reads', () => {
  it('reuse the buffers a consumer gives back, from any offset, without changing a byte', async () => {
    const store = await storeHolding(BIG);
    const origin = new StoreOrigin(store);
    const id = idOf(BIG);
    for (const offset of [0, 1, 1024 * 1024, BIG.length - 1, BIG.length]) {
      const r = await origin.read(id, offset);
      expect(r.size).toBe(BIG.length);
      const seen = new Set<ArrayBufferLike>();
      const got = await drain(r.body, (c) => {
        seen.add(c.buffer);
        r.recycle!(c);
      });
      expect(got.equals(Buffer.from(BIG.subarray(offset)))).toBe(true);
      // Every piece after the first read into the one buffer given back.
      if (BIG.length - offset > 1024 * 1024) expect(seen.size).toBe(1);
    }
    // Without recycling every piece has its own memory (a consumer may keep them all).
    const r = await origin.read(id, 0);
    const kept: Uint8Array[] = [];
    for await (const c of r.body) kept.push(c);
    expect(new Set(kept.map((c) => c.buffer)).size).toBe(kept.length);
    expect(Buffer.concat(kept).equals(Buffer.from(BIG))).toBe(true);
    await expectCode(origin.read(idOf(bytesOf(5, 1)), 0), 'not_found');
    // A small object is read into a buffer of its own size, not a whole piece (a hub answering
    // thousands of small objects would otherwise allocate a MiB for each).
    const small = bytesOf(4099, 2);
    await store.put(small);
    const rs = await origin.read(idOf(small), 0);
    const chunks: Uint8Array[] = [];
    for await (const c of rs.body) chunks.push(c);
    expect(chunks.map((c) => c.buffer.byteLength)).toEqual([4099]);
  });

  it('cancel before or during a read closes it', async () => {
    const store = await storeHolding(BIG);
    const origin = new StoreOrigin(store);
    const r = await origin.read(idOf(BIG), 0);
    r.cancel();
    const r2 = await origin.read(idOf(BIG), 0);
    for await (const _ of r2.body) break;
    r2.cancel();
    // The store still reads (no descriptor held, nothing broken).
    expect(idOf(await store.readObject(idOf(BIG)))).toBe(idOf(BIG));
  });

  it('the hub serves large objects whole and by range through reused buffers', async () => {
    const store = await storeHolding(BIG);
    const hub = await serveHub(new StoreOrigin(store));
    after(() => hub.close());
    const url = `${hub.url}/v1/objects/${idOf(BIG).slice(7)}`;
    const [a, b] = await Promise.all([fetch(url), fetch(url)]);
    expect(idOf(new Uint8Array(await a.arrayBuffer()))).toBe(idOf(BIG));
    expect(idOf(new Uint8Array(await b.arrayBuffer()))).toBe(idOf(BIG));
    const start = 1024 * 1024 - 3;
    const part = await fetch(url, { headers: { range: `bytes=${start}-${start + 2 * 1024 * 1024}` } });
    expect(part.status).toBe(206);
    const got = Buffer.from(await part.arrayBuffer());
    expect(got.equals(Buffer.from(BIG.subarray(start, start + 2 * 1024 * 1024 + 1)))).toBe(true);
  });
});

describe('LocalStore.objectStream', () => {
  it('starts at an offset, reads into spare buffers, and refuses verify with an offset', async () => {
    const store = await storeHolding(BIG);
    const id = idOf(BIG);
    const spare = [new Uint8Array(1 << 20)];
    const first = spare[0]!;
    const chunks: Buffer[] = [];
    let firstUsed = false;
    for await (const c of store.objectStream(id, { offset: 5, chunkSize: 1 << 20, spare })) {
      if (c.buffer === first.buffer) firstUsed = true;
      chunks.push(Buffer.from(c));
    }
    expect(firstUsed).toBe(true);
    expect(Buffer.concat(chunks).equals(Buffer.from(BIG.subarray(5)))).toBe(true);
    const it = store.objectStream(id, { offset: 5, verify: true })[Symbol.asyncIterator]();
    expect((await expectCode(it.next(), 'invalid_argument')).details.actual).toBe(5);
    await expectCode(store.objectStream(id, { offset: -1 })[Symbol.asyncIterator]().next(), 'invalid_argument');
  });
});
