import {
  type CborValue,
  decodeCbor,
  decodeManifest,
  encodeCbor,
  encodeManifest,
  isTensorFSError,
  type Manifest,
  type ManifestEntry,
  manifestId,
  type ObjectId,
  RECORD_GRID_BYTES,
  sortManifestEntries,
  toHex,
  validatePath,
  validateSymlinkTarget,
  type ErrorCode,
} from '@tensorfs/format';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { expectCodeSync } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

/** TENSORFS_SLOW=1 runs the property tests 20 times longer. */
const SCALE = process.env.TENSORFS_SLOW ? 20 : 1;

const ascii = (s: string) => toHex(new TextEncoder().encode(s));
const D1 = `sha256:${'11'.repeat(32)}` as ObjectId;
const D2 = `sha256:${'ab'.repeat(32)}` as ObjectId;

const sample: Manifest = {
  entries: [
    { path: 'README.md', kind: 'file', mode: 0o644, size: 5, profile: 'blob-v1', records: [{ digest: D1, length: 5 }] },
    { path: 'bin/run.sh', kind: 'file', mode: 0o755, size: 0, profile: 'blob-v1', records: [] },
    { path: 'latest', kind: 'symlink', target: 'models/model.safetensors' },
    {
      path: 'models/model.safetensors',
      kind: 'file',
      mode: 0o644,
      size: 30,
      profile: 'safetensors-v1',
      records: [
        { digest: D2, length: 10 },
        { digest: D1, length: 20 },
      ],
    },
  ],
};

/** A table's short manifest rule (`entries-order`) as errors name it (`manifest.entries_order`). */
function fullRule(rule: string): string {
  return `manifest.${rule.replaceAll('-', '_')}`;
}

/** The CBOR body of `m`, edited by `edit`, as TFM1 bytes (to build non-conforming manifests). */
function tamper(m: Manifest, edit: (root: Map<string, CborValue>) => void): Uint8Array {
  const root = decodeCbor(encodeManifest(m).subarray(4)) as Map<string, CborValue>;
  edit(root);
  const body = encodeCbor(root);
  const out = new Uint8Array(4 + body.length);
  out.set(encodeManifest({ entries: [] }).subarray(0, 4));
  out.set(body, 4);
  return out;
}

const entryMaps = (root: Map<string, CborValue>) => root.get('entries') as Map<string, CborValue>[];

describe('TFM1 encoding', () => {
  it('encodes the empty manifest as TFM1 + {"entries": [], "version": 1}', () => {
    expect(toHex(encodeManifest({ entries: [] }))).toBe(
      `${ascii('TFM1')}a267${ascii('entries')}8067${ascii('version')}01`,
    );
  });

  it('encodes a file entry with digests as 32 raw bytes and canonically ordered keys', () => {
    const bytes = encodeManifest({
      entries: [
        { path: 'a', kind: 'file', mode: 0o644, size: 7, profile: 'blob-v1', records: [{ digest: D1, length: 7 }] },
      ],
    });
    const entry =
      `a6` +
      `64${ascii('kind')}64${ascii('file')}` +
      `64${ascii('mode')}1901a4` +
      `64${ascii('path')}61${ascii('a')}` +
      `64${ascii('size')}07` +
      `67${ascii('profile')}67${ascii('blob-v1')}` +
      `67${ascii('records')}81825820${'11'.repeat(32)}07`;
    expect(toHex(bytes)).toBe(`${ascii('TFM1')}a267${ascii('entries')}81${entry}67${ascii('version')}01`);
  });

  it('round-trips every entry kind and has a sha256 id', async () => {
    const bytes = encodeManifest(sample);
    expect(decodeManifest(bytes)).toEqual(sample);
    const id = await manifestId(bytes, (b) => createHash('sha256').update(b).digest());
    expect(id).toBe(`sha256:${createHash('sha256').update(bytes).digest('hex')}`);
  });

  it('sorts entries by UTF-8 bytes, not UTF-16 code units', () => {
    // U+FF5E (ef bd 9e) sorts before U+1F600 (f0 9f 98 80) in UTF-8, after it in UTF-16.
    const entries: ManifestEntry[] = ['\u{1f600}', '\uff5e', 'Z', 'a'].map((path) => ({
      path,
      kind: 'symlink',
      target: 'x',
    }));
    expect(sortManifestEntries(entries).map((e) => e.path)).toEqual(['Z', 'a', '\uff5e', '\u{1f600}']);
    expect(() => encodeManifest({ entries: sortManifestEntries(entries) })).not.toThrow();
    expectCodeSync(() => encodeManifest({ entries }), 'invalid_argument', 'manifest.entries_order');
  });

  const file = (over: Partial<Extract<ManifestEntry, { kind: 'file' }>>): ManifestEntry => ({
    path: 'f',
    kind: 'file',
    mode: 0o644,
    size: 1,
    profile: 'blob-v1',
    records: [{ digest: D1, length: 1 }],
    ...over,
  });

  it('checks entries below files in time linear in the path bytes (deep paths are no CPU bomb)', () => {
    // 1,000 files each 2,047 segments deep (4,095-byte paths): quadratic prefix hashing took
    // about 10 s on this shape; the segment trie keeps it linear in the path bytes.
    const deep = 'a/'.repeat(2046);
    const entries = Array.from({ length: 1000 }, (_, i) => file({ path: `${deep}${String(i).padStart(4, '0')}` }));
    const t0 = performance.now();
    const bytes = encodeManifest({ entries });
    expect(decodeManifest(bytes).entries).toHaveLength(1000);
    expect(performance.now() - t0).toBeLessThan(5000);
    // …and still finds an entry below a file at any depth, in either order of appearance.
    const mid = 'a/'.repeat(1000);
    const below = [file({ path: `${mid}0000` }), file({ path: `${mid}0000/x` })];
    expectCodeSync(() => encodeManifest({ entries: below }), 'invalid_argument', 'manifest.path_below_entry');
    const dash = [file({ path: 'a-b' }), file({ path: 'a/b' }), file({ path: 'a' })];
    expectCodeSync(
      () => encodeManifest({ entries: sortManifestEntries(dash) }),
      'invalid_argument',
      'manifest.path_below_entry',
    );
  });

  it.each<[string, ManifestEntry[], string]>([
    ['a duplicate path', [file({}), file({})], 'entries-order'],
    ['a path below a file', [file({}), file({ path: 'f/g' })], 'path-below-entry'],
    [
      'a path below a symlink',
      [{ path: 'd', kind: 'symlink', target: 'f' }, file({ path: 'd/x' })],
      'path-below-entry',
    ],
    [
      'a symlink target through another symlink (would escape once exported)',
      [
        { path: 'd/l', kind: 'symlink', target: '..' },
        { path: 'x', kind: 'symlink', target: 'd/l/..' },
      ],
      'symlink-through-symlink',
    ],
    [
      'a symlink target into a symlinked folder',
      [
        { path: 'a', kind: 'symlink', target: 'b' },
        file({ path: 'b/f' }),
        { path: 'c', kind: 'symlink', target: 'a/f' },
      ],
      'symlink-through-symlink',
    ],
    ['mode 0o600', [file({ mode: 0o600 })], 'file-mode'],
    ['mode 0o100644', [file({ mode: 0o100644 })], 'file-mode'],
    ['an unknown profile', [file({ profile: 'zip-v1' as 'blob-v1' })], 'profile'],
    ['size ≠ sum of lengths', [file({ size: 2 })], 'file-size'],
    ['a zero-length record', [file({ size: 0, records: [{ digest: D1, length: 0 }] })], 'record-length'],
    ['a bad digest', [file({ records: [{ digest: 'sha256:00' as ObjectId, length: 1 }] })], 'record-digest'],
    [
      'two blob-v1 records',
      [
        file({
          size: 2,
          records: [
            { digest: D1, length: 1 },
            { digest: D1, length: 1 },
          ],
        }),
      ],
      'blob-records',
    ],
    [
      'a tensor record over 64 MiB',
      [
        file({
          profile: 'gguf-v1',
          size: RECORD_GRID_BYTES + 1,
          records: [{ digest: D1, length: RECORD_GRID_BYTES + 1 }],
        }),
      ],
      'record-length',
    ],
    ['an escaping symlink', [{ path: 'a/b', kind: 'symlink', target: '../../x' }], 'symlink-escape'],
    ['an absolute symlink', [{ path: 'a', kind: 'symlink', target: '/etc/passwd' }], 'path-absolute'],
    ['an unknown kind', [{ path: 'a', kind: 'dir' } as unknown as ManifestEntry], 'entry-kind'],
  ])('refuses to encode %s', (_name, entries, rule) => {
    expectCodeSync(() => encodeManifest({ entries }), 'invalid_argument', fullRule(rule));
  });

  it('accepts a blob-v1 record of any size and symlinks that climb but stay inside', () => {
    const big = 2 ** 40;
    const m: Manifest = {
      entries: [
        { path: 'a/b/c', kind: 'symlink', target: '../../d/./e' },
        file({ path: 'big', size: big, records: [{ digest: D1, length: big }] }),
      ],
    };
    expect(decodeManifest(encodeManifest(m))).toEqual(m);
  });
});

describe('TFM1 strict decoding', () => {
  it.each<[string, (r: Map<string, CborValue>) => void, string, string]>([
    ['version 2', (r) => r.set('version', 2), 'unsupported', 'version'],
    ['a missing version', (r) => r.delete('version'), 'malformed', 'missing-key'],
    ['an unknown top-level key', (r) => r.set('time', 0), 'malformed', 'unknown-key'],
    ['an unknown entry kind', (r) => entryMaps(r)[0]!.set('kind', 'hardlink'), 'unsupported', 'entry-kind'],
    ['an unknown profile', (r) => entryMaps(r)[0]!.set('profile', 'zip-v1'), 'unsupported', 'profile'],
    ['an unknown entry key', (r) => entryMaps(r)[0]!.set('mtime', 1), 'malformed', 'unknown-key'],
    ['a missing entry key', (r) => entryMaps(r)[0]!.delete('size'), 'malformed', 'missing-key'],
    [
      'a 31-byte digest',
      (r) => ((entryMaps(r)[0]!.get('records') as CborValue[][])[0]![0] = new Uint8Array(31)),
      'malformed',
      'record-digest',
    ],
    [
      'a text digest',
      (r) => ((entryMaps(r)[0]!.get('records') as CborValue[][])[0]![0] = D1),
      'malformed',
      'record-digest',
    ],
    ['a wrong size', (r) => entryMaps(r)[0]!.set('size', 6), 'malformed', 'file-size'],
    ['a negative size', (r) => entryMaps(r)[0]!.set('size', -1), 'malformed', 'size'],
    ['a size past 2^53', (r) => entryMaps(r)[0]!.set('size', 2n ** 60n), 'malformed', 'size'],
    ['a path with ..', (r) => entryMaps(r)[0]!.set('path', '../x'), 'malformed', 'path-dot-segment'],
    ['entries out of order', (r) => entryMaps(r).reverse(), 'malformed', 'entries-order'],
    ['mode 0o777', (r) => entryMaps(r)[0]!.set('mode', 0o777), 'malformed', 'file-mode'],
    ['entries not an array', (r) => r.set('entries', new Map()), 'malformed', 'entries'],
  ])('rejects %s', (_name, edit, code, rule) => {
    expectCodeSync(() => decodeManifest(tamper(sample, edit)), code as ErrorCode, fullRule(rule));
  });

  it('rejects a bad magic, trailing bytes and non-canonical CBOR', () => {
    const good = encodeManifest(sample);
    const badMagic = good.slice();
    badMagic[3] = 0x32;
    expectCodeSync(() => decodeManifest(badMagic), 'malformed', 'manifest.magic');
    expectCodeSync(() => decodeManifest(new Uint8Array([0x54])), 'malformed', 'manifest.magic');
    const trailing = new Uint8Array(good.length + 1);
    trailing.set(good);
    expectCodeSync(() => decodeManifest(trailing), 'malformed', 'cbor.trailing');
    // version written as 18 01 instead of 01
    const long = new Uint8Array([...good.subarray(0, good.length - 1), 0x18, 0x01]);
    expectCodeSync(() => decodeManifest(long), 'malformed', 'cbor.non_shortest');
  });

  it('any mutation of a manifest either decodes to one that re-encodes to the same bytes or throws a TensorFSError', () => {
    const good = encodeManifest(sample);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(good.length - 1), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 0, max: good.length }),
        (edits, cut) => {
          const bytes = good.slice(0, Math.max(cut, 1));
          for (const [at, value] of edits) if (at < bytes.length) bytes[at] = value;
          try {
            const m = decodeManifest(bytes);
            expect(toHex(encodeManifest(m))).toBe(toHex(bytes));
          } catch (err) {
            expect(isTensorFSError(err) && ['malformed', 'unsupported'].includes(err.code)).toBe(true);
          }
        },
      ),
      { numRuns: 3000 * SCALE },
    );
  });
});

describe('TFM1 on arbitrary bytes', () => {
  it('TFM1 + any bytes decodes to a manifest that re-encodes to them, or throws malformed/unsupported', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (tail) => {
        const bytes = new Uint8Array(4 + tail.length);
        bytes.set([0x54, 0x46, 0x4d, 0x31]);
        bytes.set(tail, 4);
        try {
          const m = decodeManifest(bytes);
          expect(toHex(encodeManifest(m))).toBe(toHex(bytes));
        } catch (err) {
          expect(isTensorFSError(err) && ['malformed', 'unsupported'].includes(err.code)).toBe(true);
        }
      }),
      { numRuns: 3000 * SCALE },
    );
  });
});

describe('path rules', () => {
  it.each([
    ['', 'path-empty'],
    ['/abs', 'path-absolute'],
    ['a//b', 'path-empty-segment'],
    ['a/', 'path-empty-segment'],
    ['./a', 'path-dot-segment'],
    ['a/..', 'path-dot-segment'],
    ['a\u0000b', 'path-chars'],
    ['a\nb', 'path-chars'],
    ['a\u007fb', 'path-chars'],
    ['a\\b', 'path-chars'],
    ['a\ud800', 'path-chars'],
    ['x'.repeat(256), 'path-segment-length'],
    [Array.from({ length: 1000 }, () => 'abcd').join('/'), 'path-length'],
  ])('rejects %j (%s)', (path, rule) => {
    expectCodeSync(() => validatePath(path), 'invalid_argument', fullRule(rule));
  });

  it('accepts ordinary repository paths', () => {
    for (const p of [
      'a',
      'model.safetensors',
      'unet/diffusion_pytorch_model.fp16.safetensors',
      '.gitattributes',
      'é/中文 文件',
      '...',
      'a/.b/..c',
    ]) {
      expect(() => validatePath(p)).not.toThrow();
    }
  });

  it('checks symlink targets against the tree root', () => {
    expect(() => validateSymlinkTarget('a/b/link', '../../c')).not.toThrow();
    expectCodeSync(() => validateSymlinkTarget('a/link', '../../c'), 'invalid_argument', 'manifest.symlink_escape');
    expectCodeSync(() => validateSymlinkTarget('link', 'a/../../c'), 'invalid_argument', 'manifest.symlink_escape');
  });
});
