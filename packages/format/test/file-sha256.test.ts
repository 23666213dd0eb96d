/** The whole-file SHA-256 list's bytes, key and side ref (`@tensorfs/format/store` file-sha256.ts). */
import { createHash } from 'node:crypto';
import { expectCode, expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import {
  FILE_SHA256_MAGIC,
  MemoryStore,
  decodeFileSha256,
  encodeFileSha256,
  fileRecordsKey,
  fileSha256Ref,
  isSideRef,
  readFileSha256List,
} from '../src/store/index.js';

const hex = (text: string) => createHash('sha256').update(text).digest('hex');
const a = 'a'.repeat(64);
const b = 'b'.repeat(64);

describe('whole-file SHA-256 lists', () => {
  it('encode to sorted canonical lines and decode back', () => {
    const bytes = encodeFileSha256(
      new Map([
        [b, a],
        [a, b],
      ]),
    );
    expect(new TextDecoder().decode(bytes)).toBe(`tensorfs file-sha256 1\n${a} ${b}\n${b} ${a}\n`);
    expect(decodeFileSha256(bytes)).toEqual(
      new Map([
        [a, b],
        [b, a],
      ]),
    );
    expect(new TextDecoder().decode(encodeFileSha256(new Map()))).toBe(FILE_SHA256_MAGIC);
    expect(decodeFileSha256(encodeFileSha256(new Map()))).toEqual(new Map());
  });

  it('refuse what is not a list: malformed, store.file_sha256', () => {
    for (const bad of [
      '',
      'tensorfs file-sha256 1\nxyz\n',
      `tensorfs file-sha256 2\n${a} ${b}\n`,
      `tensorfs file-sha256 1\n${a} ${b}`,
      `tensorfs file-sha256 1\n${a.toUpperCase()} ${b}\n`,
    ]) {
      expectCodeSync(() => decodeFileSha256(new TextEncoder().encode(bad)), 'malformed', 'store.file_sha256');
    }
    expectCodeSync(() => decodeFileSha256(new Uint8Array([0xff, 0xfe])), 'malformed', 'store.file_sha256');
  });

  it('key a record list by the SHA-256 of its `<id> <length>` lines', async () => {
    const records = [
      { digest: `sha256:${'1'.repeat(64)}` as const, length: 5 },
      { digest: `sha256:${'2'.repeat(64)}` as const, length: 70_000_000 },
    ];
    expect(await fileRecordsKey(records)).toBe(hex(`sha256:${'1'.repeat(64)} 5\nsha256:${'2'.repeat(64)} 70000000\n`));
    expect(await fileRecordsKey([])).toBe(hex(''));
    await expectCode(() => fileRecordsKey('x' as never), 'invalid_argument', 'store.argument');
  });

  it('are named by the side ref _hf/sha256/<tree hex>, read back (empty when absent or damaged)', async () => {
    const tree = `sha256:${'c'.repeat(64)}` as const;
    expect(fileSha256Ref(tree)).toBe(`_hf/sha256/${'c'.repeat(64)}`);
    expect(isSideRef(fileSha256Ref(tree))).toBe(true);
    expect(isSideRef('team/m')).toBe(false);
    expectCodeSync(() => fileSha256Ref('main' as never), 'invalid_argument', 'store.argument');

    const store = new MemoryStore();
    expect(await readFileSha256List(store, tree)).toEqual(new Map());
    const { id } = await store.put([encodeFileSha256(new Map([[a, b]]))]);
    await store.setRef(fileSha256Ref(tree), id);
    expect(await readFileSha256List(store, tree)).toEqual(new Map([[a, b]]));
    // Damaged bytes: no list (the caller hashes what it needs).
    store.objects.set(id, new TextEncoder().encode('tensorfs file-sha256 1\nbad\n'));
    expect(await readFileSha256List(store, tree)).toEqual(new Map());
    // Cancellation is not "no list".
    const ac = new AbortController();
    ac.abort(new Error('stop'));
    await expect(readFileSha256List(store, tree, { signal: ac.signal })).rejects.toThrow();
  });
});
