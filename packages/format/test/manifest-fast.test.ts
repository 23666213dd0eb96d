/**
 * The TFM1 hot paths (direct encoder, single-pass canonical decoder) checked against the generic
 * canonical CBOR codec: whatever the fast paths write or accept must be exactly what
 * `encodeCbor`/`decodeCbor` say a canonical v1 manifest is.
 */
import {
  type CborValue,
  decodeCbor,
  decodeManifest,
  encodeCbor,
  encodeManifest,
  fromHex,
  isTensorFSError,
  type Manifest,
  type ManifestEntry,
  type ObjectId,
  sortManifestEntries,
  toHex,
} from '@tensorfs/format';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const SCALE = process.env.TENSORFS_SLOW ? 20 : 1;
const MAGIC = '5446 4d31'.replace(' ', '');

/** The manifest as the generic codec's value: the reference for the bytes. */
function reference(m: Manifest): Uint8Array {
  const body = encodeCbor({
    version: 1,
    entries: m.entries.map(
      (e): CborValue =>
        e.kind === 'symlink'
          ? { kind: 'symlink', path: e.path, target: e.target }
          : {
              kind: 'file',
              mode: e.mode,
              path: e.path,
              profile: e.profile,
              records: e.records.map((r) => [fromHex(r.digest.slice(7)), r.length]),
              size: e.size,
            },
    ),
  });
  return fromHex(MAGIC + toHex(body));
}

const segment = fc
  .oneof(
    fc.stringMatching(/^[a-z0-9_.-]{1,12}$/),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 6 }),
    fc.constantFrom('\u{1f600}', '\uff5e', 'é', '\ufeffbom'),
  )
  .filter((s) => s !== '.' && s !== '..' && !/[\u0000-\u001f\u007f\\/]/.test(s));
const path = fc.array(segment, { minLength: 1, maxLength: 3 }).map((s) => s.join('/'));
const digest = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => `sha256:${toHex(b)}` as ObjectId);
const length = fc.oneof(
  fc.integer({ min: 1, max: 30 }),
  fc.integer({ min: 1, max: 64 * 1024 * 1024 }),
  fc.constantFrom(23, 24, 255, 256, 65535, 65536, 64 * 1024 * 1024),
);
const entry = fc.oneof(
  fc.record({
    path,
    kind: fc.constant('file' as const),
    mode: fc.constantFrom(0o644, 0o755),
    profile: fc.constantFrom('safetensors-v1' as const, 'gguf-v1' as const),
    records: fc.array(fc.record({ digest, length }), { maxLength: 30 }),
  }),
  fc.record({
    path,
    kind: fc.constant('file' as const),
    mode: fc.constantFrom(0o644, 0o755),
    profile: fc.constant('blob-v1' as const),
    records: fc.array(
      fc.record({ digest, length: fc.oneof(length, fc.constantFrom(2 ** 32 - 1, 2 ** 32, 2 ** 40 + 3, 2 ** 53 - 1)) }),
      { maxLength: 1 },
    ),
  }),
  fc.record({ path, kind: fc.constant('symlink' as const), target: fc.constant('x') }),
);
/** Valid manifests: unique paths, none below another entry, in byte order. */
const manifest = fc.array(entry, { maxLength: 25 }).map((entries): Manifest => {
  const seen = new Set<string>();
  const kept: ManifestEntry[] = [];
  for (const e of entries) {
    const top = `top-${seen.size}/${e.path}`; // a fresh directory each: nothing lies below another entry
    seen.add(top);
    kept.push(
      e.kind === 'file' ? { ...e, path: top, size: e.records.reduce((n, r) => n + r.length, 0) } : { ...e, path: top },
    );
  }
  return { entries: sortManifestEntries(kept) };
});

describe('TFM1 fast paths against the generic canonical codec', () => {
  it('encode writes exactly the generic encoding; decode gives the manifest back', () => {
    fc.assert(
      fc.property(manifest, (m) => {
        const bytes = encodeManifest(m);
        expect(toHex(bytes)).toBe(toHex(reference(m)));
        expect(decodeManifest(bytes)).toEqual(m);
      }),
      { numRuns: 300 * SCALE },
    );
  });

  it('every mutation the decoder accepts is canonical CBOR by the generic codec too', () => {
    const good = encodeManifest({
      entries: [
        {
          path: 'a/é',
          kind: 'file',
          mode: 0o755,
          size: 2 ** 32 + 1,
          profile: 'blob-v1',
          records: [{ digest: `sha256:${'0f'.repeat(32)}` as ObjectId, length: 2 ** 32 + 1 }],
        },
        { path: 'b', kind: 'symlink', target: 'a/é' },
        {
          path: 'c',
          kind: 'file',
          mode: 0o644,
          size: 300,
          profile: 'gguf-v1',
          records: [
            { digest: `sha256:${'a1'.repeat(32)}` as ObjectId, length: 24 },
            { digest: `sha256:${'b2'.repeat(32)}` as ObjectId, length: 276 },
          ],
        },
      ],
    });
    let accepted = 0;
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(good.length - 1), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 3 }),
        (edits) => {
          const bytes = good.slice();
          for (const [at, value] of edits) bytes[at] = value;
          let m: Manifest;
          try {
            m = decodeManifest(bytes);
          } catch (err) {
            expect(isTensorFSError(err) && ['malformed', 'unsupported'].includes(err.code)).toBe(true);
            return;
          }
          accepted++;
          const body = bytes.subarray(4);
          const generic = decodeCbor(body) as CborValue;
          expect(toHex(encodeCbor(generic))).toBe(toHex(body));
          expect(toHex(encodeManifest(m))).toBe(toHex(bytes));
        },
      ),
      { numRuns: 3000 * SCALE },
    );
    // Digest bytes and lengths mutate freely, so a good share of mutants must decode.
    expect(accepted).toBeGreaterThan(300);
  });

  it('rejects an id that is not sha256: + lowercase hex with invalid_argument, as before', () => {
    const bad = [
      'sha256:' + 'A'.repeat(64),
      'sha257:' + 'a'.repeat(64),
      'sha256:' + 'a'.repeat(63) + 'ā',
      'sha256:' + 'a'.repeat(63) + '\u00ff',
      'sha256:' + 'a'.repeat(63) + '\ud800',
      'sha256:' + 'a'.repeat(62) + '\u{1f600}',
      'sha256:' + 'a'.repeat(63) + '\u0000',
      'x',
    ];
    for (const d of bad) {
      let rule: unknown;
      try {
        encodeManifest({
          entries: [
            {
              path: 'f',
              kind: 'file',
              mode: 0o644,
              size: 1,
              profile: 'blob-v1',
              records: [{ digest: d as ObjectId, length: 1 }],
            },
          ],
        });
      } catch (err) {
        rule = isTensorFSError(err) ? `${err.code}/${String(err.details.rule)}` : err;
      }
      expect(rule).toBe('invalid_argument/manifest.record_digest');
    }
  });

  it('finds the first entry below another exactly as a naive check does (the stack walk)', () => {
    const seg = fc.constantFrom('a', 'a-b', 'a.c', 'b', 'a0', 'ab', '\u00e9', '\u{1f600}');
    const paths = fc.uniqueArray(
      fc.array(seg, { minLength: 1, maxLength: 4 }).map((x) => x.join('/')),
      { maxLength: 12 },
    );
    fc.assert(
      fc.property(paths, fc.boolean(), (ps, withLink) => {
        const entries = sortManifestEntries(
          ps.map(
            (path, i): ManifestEntry =>
              withLink && i === 0
                ? { path, kind: 'symlink', target: path.includes('/') ? '..' : '.' }
                : { path, kind: 'file', mode: 0o644, size: 0, profile: 'blob-v1', records: [] },
          ),
        );
        const sorted = entries.map((e) => e.path);
        const offender = sorted.find((q) => sorted.some((p) => q.startsWith(`${p}/`)));
        let got: unknown = 'ok';
        try {
          encodeManifest({ entries });
        } catch (err) {
          got = isTensorFSError(err) ? [err.details.rule, err.details.path] : err;
        }
        if (offender === undefined) {
          // Only a symlink rule may still refuse it.
          if (got !== 'ok') expect((got as string[])[0]).toMatch(/^symlink-/);
        } else expect(got).toEqual(['manifest.path_below_entry', offender]);
      }),
      { numRuns: 3000 * SCALE },
    );
  });
});
