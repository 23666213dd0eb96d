// Two copies of the store code in one process, as when two installed versions of a package each
// bring their own @tensorfs/cas and @tensorfs/format: the module registry is reset between two
// imports, so every module (cas and format alike) is evaluated twice. What an object references
// is a format fact, not state one copy was told about at run time, so GC keeps what a manifest
// reaches whichever copy wrote it and whichever collects.
import { blobEntry, bytesOf, tempDir } from '@tensorfs/testkit';
import { beforeAll, describe, expect, it, vi } from 'vitest';

type Cas = typeof import('@tensorfs/cas');
type Format = typeof import('@tensorfs/format');
let first: { cas: Cas; format: Format };
let second: { cas: Cas; format: Format };

beforeAll(async () => {
  first = { cas: await import('@tensorfs/cas'), format: await import('@tensorfs/format') };
  vi.resetModules();
  second = { cas: await import('@tensorfs/cas'), format: await import('@tensorfs/format') };
});

async function roundTrip(writer: Cas, collector: Cas) {
  const root = tempDir();
  const w = await writer.openStore(root);
  const a = (await w.put(bytesOf(300, 1))).id;
  const b = (await w.put(bytesOf(400, 2))).id;
  const snapshot = await w.putManifest({ entries: [blobEntry('a.bin', a, 300), blobEntry('b.bin', b, 400)] });
  await w.setRef('main', snapshot);
  const orphan = (await w.put(bytesOf(500, 3))).id;
  await w.close();
  const c = await collector.openStore(root, { graceMs: 0 });
  try {
    expect(await c.gc()).toMatchObject({ removed: 1, bytes: 500 });
    for (const id of [snapshot, a, b]) expect(await c.has(id)).toBe(true);
    expect(await c.has(orphan)).toBe(false);
    expect(await c.verify({ data: true })).toMatchObject({ missing: [], corrupt: [] });
  } finally {
    await c.close();
  }
}

describe('two module copies agree about what a manifest references', () => {
  it('are distinct copies of cas and format, with no run-time kind registry', () => {
    expect(second.cas.LocalStore).not.toBe(first.cas.LocalStore);
    expect(second.format.REFERENCE_KINDS).not.toBe(first.format.REFERENCE_KINDS);
    expect(second.format.REFERENCE_KINDS.map((k) => k.name)).toEqual(first.format.REFERENCE_KINDS.map((k) => k.name));
    expect('registerReferenceKind' in first.cas).toBe(false);
  });

  it('the first copy writes, the second collects', async () => {
    await roundTrip(first.cas, second.cas);
  });

  it('the second copy writes, the first collects', async () => {
    await roundTrip(second.cas, first.cas);
  });
});
