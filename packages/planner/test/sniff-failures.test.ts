// A read that fails while planAndHash sniffs the format (the head read, the header reads of a
// safetensors or GGUF file) is `io` with the source's error kept as the cause, like a failing read
// of the data pass, never `internal`; a source answering something other than bytes is
// `invalid_argument` (source.contract).
import { type ByteSource, bytesSource, writeGguf } from '@tensorfs/format';
import { nobleHasher, planAndHash } from '@tensorfs/planner';
import { expectCode, safetensorsBytes } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

const hasher = nobleHasher();
const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

const FILES: [string, Uint8Array, string][] = [
  [
    'safetensors',
    safetensorsBytes([
      { name: 'a', data: bytes(24, 1) },
      { name: 'b', data: bytes(40, 2) },
    ]),
    'safetensors-v1',
  ],
  [
    'gguf',
    writeGguf({
      metadata: [{ key: 'general.name', type: 'string', value: 'x'.repeat(300) }],
      tensors: [
        { name: 'w', type: 'F32', dims: [4, 2], data: bytes(32, 3) },
        { name: 'v', type: 'F32', dims: [3], data: bytes(12, 4) },
      ],
    }),
    'gguf-v1',
  ],
];

/** A source over `file` whose read number `failAt` (0-based) answers `answer()` instead of bytes. */
function failingAt(file: Uint8Array, failAt: number, answer: () => Promise<unknown>): ByteSource & { reads: number } {
  const inner = bytesSource(file);
  const source = {
    size: file.length,
    reads: 0,
    read(offset: number, length: number): Promise<Uint8Array> {
      return source.reads++ === failAt ? (answer() as Promise<Uint8Array>) : inner.read(offset, length);
    },
  };
  return source;
}

describe('planAndHash with a source that fails while the format is sniffed', () => {
  it.each(FILES)('%s: a failing read at any point is io with the cause kept', async (_name, file, profile) => {
    // How many reads the sniffing and the data pass take: fail each of them in turn.
    const counter = failingAt(file, -1, async () => undefined);
    expect((await planAndHash(counter, { hasher })).profile).toBe(profile);
    expect(counter.reads, 'reads of a clean plan (head, header, data)').toBeGreaterThanOrEqual(3);
    for (let k = 0; k < counter.reads; k++) {
      const cause = Object.assign(new Error('disk on fire'), { code: 'EIO' });
      const source = failingAt(file, k, () => Promise.reject(cause));
      const error = await expectCode(planAndHash(source, { hasher }), 'io', 'source.read');
      expect(error.cause, `read ${k}: the source's error is the cause`).toBe(cause);
      expect(error.message).toBe('read failed (EIO)');
    }
  });

  it.each(FILES)(
    '%s: a read resolving null or a string at any point is invalid_argument (source.contract)',
    async (_name, file) => {
      const counter = failingAt(file, -1, async () => undefined);
      await planAndHash(counter, { hasher });
      for (let k = 0; k < counter.reads; k++) {
        for (const wrong of [null, 'bytes', [1, 2, 3]]) {
          const source = failingAt(file, k, async () => wrong);
          await expectCode(planAndHash(source, { hasher }), 'invalid_argument', 'source.contract');
        }
      }
    },
  );

  it('a read that throws a non-Error (a string) while sniffing is io too', async () => {
    const source = failingAt(FILES[0]![1], 0, () => Promise.reject('EIO'));
    const error = await expectCode(planAndHash(source, { hasher }), 'io', 'source.read');
    expect(error.cause).toBe('EIO');
  });
});
