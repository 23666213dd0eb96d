import { createHash } from 'node:crypto';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { RefFolder } from '@tensorfs/cas';
import { type ObjectId, isTensorFSError } from '@tensorfs/format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HubOrigin,
  LocalRefsOrigin,
  S3Origin,
  parseS3Url,
  pull,
  push,
  s3ConfigFromEnv,
  serveHub,
} from '../src/index.js';
import {
  bytesOf,
  idOf,
  type Moto,
  S3_KINDS,
  type S3Service,
  SWIFT_ACCESS_KEY,
  SWIFT_UNPRIVILEGED_KEY,
  startMoto,
  startS3,
  tempDir,
} from '@tensorfs/testkit';
import { after, code, folderOf, newStore, storeWith } from './helpers.js';

let moto: Moto;
beforeAll(async () => {
  moto = await startMoto('tfs-test');
}, 60_000);
afterAll(async () => {
  await moto?.stop();
});

let n = 0;
function origin(): S3Origin {
  const o = new S3Origin(`s3://${moto.bucket}/run${++n}/models`, { env: moto.env });
  after(() => o.close());
  return o;
}

describe('S3 origin (moto_server)', () => {
  it('parses s3:// URLs and reads the AWS environment', () => {
    expect(parseS3Url('s3://bucket-1/a/b/')).toEqual({ bucket: 'bucket-1', prefix: 'a/b/' });
    expect(parseS3Url('s3://bucket-1')).toEqual({ bucket: 'bucket-1', prefix: '' });
    expect(() => parseS3Url('s3://B')).toThrow(/s3:\/\/bucket/);
    expect(s3ConfigFromEnv({ AWS_ENDPOINT_URL: 'http://x:1', AWS_REGION: 'eu-west-3' })).toMatchObject({
      endpoint: 'http://x:1',
      region: 'eu-west-3',
      forcePathStyle: true,
    });
  });

  it('push then pull round-trips, sending and fetching only what is missing', async () => {
    const { store: a, id } = await storeWith('team/model');
    const o = origin();
    expect((await push(a, o, 'team/model')).objects).toEqual({ total: 4, sent: 4, present: 0 });
    expect((await push(a, o, 'team/model')).objects.sent).toBe(0);
    expect(await o.getRef('team/model')).toBe(id);
    expect(await o.listRefs()).toEqual([{ name: 'team/model', id }]);
    const b = await newStore();
    const r = await pull(b, o, 'team/model');
    expect(r.objects).toEqual({ total: 4, present: 0, fetched: 4 });
    expect((await b.verify({ data: true })).corrupt).toEqual([]);
  });

  it('moves refs only by conditional writes: create-if-absent and replace-if-unchanged', async () => {
    const { store: a, id } = await storeWith('team/model');
    const o = origin();
    await push(a, o, 'team/model');
    const other = (await a.importPath(folderOf({ 'x.bin': bytesOf(999, 4) }), { name: 'x' })).snapshot;
    await push(a, o, 'x');
    expect(await code(o.setRef('team/model', other, { expected: null }))).toBe('conflict');
    expect(await code(o.setRef('team/model', other, { expected: other }))).toBe('conflict');
    await o.setRef('team/model', other, { expected: id });
    expect(await o.getRef('team/model')).toBe(other);
    // Racing writers from the same starting point: exactly one wins.
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => code(o.setRef('race', i % 2 ? id : other, { expected: null }))),
    );
    expect(results.filter((c) => c === 'ok')).toHaveLength(1);
    expect(results.filter((c) => c === 'conflict')).toHaveLength(5);
  });

  it('two stateless hubs over one bucket serve the same data and serialize ref updates', async () => {
    const { store: a, id } = await storeWith('team/model');
    const token = 'tok-s3-hub-0123456789';
    const tokens = { tokens: [{ token, read: ['*'], write: ['team/*'] }] };
    const prefix = `s3://${moto.bucket}/hubs${++n}`;
    const b1 = new S3Origin(prefix, { env: moto.env });
    const b2 = new S3Origin(prefix, { env: moto.env });
    const h1 = await serveHub(b1, { tokens });
    const h2 = await serveHub(b2, { tokens });
    after(async () => {
      await h1.close();
      await h2.close();
      await b1.close();
      await b2.close();
    });
    const o1 = new HubOrigin(h1.url, { credential: token });
    const o2 = new HubOrigin(h2.url, { credential: token });
    await push(a, o1, 'team/model');
    expect(await o2.getRef('team/model')).toBe(id);
    const c = await newStore();
    expect((await pull(c, o2, 'team/model')).objects.fetched).toBe(4);
    const other = (await a.importPath(folderOf({ 'y.bin': bytesOf(1234, 5) }), { name: 'team/y' })).snapshot;
    await push(a, o1, 'team/y');
    const race = await Promise.all([
      code(o1.setRef('team/model', other, { expected: id })),
      code(o2.setRef('team/model', other, { expected: id })),
      code(o1.setRef('team/model', other, { expected: id })),
      code(o2.setRef('team/model', other, { expected: id })),
    ]);
    expect(race.filter((r) => r === 'ok')).toHaveLength(1);
    expect(race.filter((r) => r === 'conflict')).toHaveLength(3);
    expect(await code(o1.setRef('elsewhere/model', other, undefined))).toBe('denied');
  });

  /** A client on moto whose middleware strips `headers` from every request: a service that ignores them. */
  const ignoring = (headers: string[]) => {
    const client = new S3Client({ ...s3ConfigFromEnv(moto.env) });
    client.middlewareStack.add(
      (next) => async (args) => {
        const req = args.request as { headers?: Record<string, string> };
        if (req.headers) for (const h of headers) delete req.headers[h];
        return next(args);
      },
      { step: 'build', name: 'dropConditions' },
    );
    after(() => client.destroy());
    return client;
  };

  it.each([
    [['if-none-match', 'if-match'], 'If-None-Match: *'],
    [['if-match'], 'If-Match'],
  ])('refuses a push before any upload where the service ignores %j', async (headers, missing) => {
    const where = `ignoring${++n}`;
    const o = new S3Origin(`s3://${moto.bucket}/${where}`, { client: ignoring(headers) });
    const { store: a } = await storeWith('team/model');
    const err = await push(a, o, 'team/model').catch((e) => e);
    expect(isTensorFSError(err) && err.code).toBe('unsupported');
    expect(err.details.rule).toBe('s3.no_conditional_writes');
    expect(err.details.missing).toBe(missing);
    expect(err.message).toContain(`ignores ${missing}`);
    expect(err.message).toContain(`tfs serve --objects s3://${moto.bucket}/${where}/ --refs DIR`);
    expect(await o.getRef('team/model')).toBeNull();
    // Nothing was uploaded: not one object, and the probe cleaned up after itself.
    expect(await keysUnder(moto.env, moto.bucket, `${where}/`)).toEqual([]);
  });
});

/** An SDK client on `env` (closed after the test). */
function sdkClient(env: NodeJS.ProcessEnv): S3Client {
  const c = new S3Client(s3ConfigFromEnv(env));
  after(() => c.destroy());
  return c;
}

/** Every key under `prefix` in the bucket. */
async function keysUnder(env: NodeJS.ProcessEnv, bucket: string, prefix: string): Promise<string[]> {
  const r = await sdkClient(env).send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
  return (r.Contents ?? []).map((c) => c.Key ?? '').sort();
}

/** The SHA-256 of what the bucket holds at `key`, as an object id. */
async function storedId(env: NodeJS.ProcessEnv, bucket: string, key: string): Promise<ObjectId> {
  const r = await sdkClient(env).send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const h = createHash('sha256');
  for await (const c of r.Body as AsyncIterable<Uint8Array>) h.update(c);
  return `sha256:${h.digest('hex')}` as ObjectId;
}

/** Node warnings emitted while `fn` runs (the SDK's, a listener leak's). */
async function warningsDuring(fn: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  const on = (w: Error) => seen.push(`${w.name}: ${w.message.split('\n')[0]}`);
  process.on('warning', on);
  try {
    await fn();
    // Warnings are emitted on the next tick.
    await new Promise((r) => setTimeout(r, 50));
  } finally {
    process.off('warning', on);
  }
  return seen;
}

describe.each(S3_KINDS)('S3 origin, the same on every service (%s)', (kind) => {
  let s3: S3Service;
  beforeAll(async () => {
    s3 = await startS3(kind, 'tfs-shared');
  }, 120_000);
  afterAll(async () => {
    await s3?.stop();
  });
  let m = 0;
  const url = (what: string) => `s3://${s3.bucket}/${what}${++m}`;

  it('refuses an upload whose bytes do not match the id: nothing becomes visible', async () => {
    const o = new S3Origin(url('corrupt'), { env: s3.env, refsElsewhere: true });
    after(() => o.close());
    const good = bytesOf(5000, 7);
    const id = idOf(good);
    const bad = new Uint8Array(good);
    bad[100] = (bad[100] ?? 0) ^ 1;
    expect(
      await code(
        o.write(id, bad.length, async function* () {
          yield bad;
        }),
      ),
    ).toBe('corrupt');
    expect(await o.lacks([id])).toEqual([id]);
    await o.write(id, good.length, async function* () {
      yield good;
    });
    expect(await o.lacks([id])).toEqual([]);
  });

  it('a hub keeping refs on its own disk: multipart pushes land, pull back byte-exact, chunks/ hash to their ids', async () => {
    const big = bytesOf(11 * (1 << 20) + 17, 31);
    const { store: a, id } = await storeWith('team/big', { 'model.bin': big, 'config.json': bytesOf(300, 2) });
    const where = url('refs-hub');
    const objects = new S3Origin(where, {
      env: s3.env,
      refsElsewhere: true,
      multipart: { thresholdBytes: 6 << 20, partBytes: 5 << 20 },
    });
    const refs = await RefFolder.open(tempDir('tfs-refs-'));
    const token = 'tok-refs-hub-0123456789';
    const hub = await serveHub(new LocalRefsOrigin(objects, refs), {
      tokens: { tokens: [{ token, read: ['*'], write: ['team/*'] }] },
    });
    after(async () => {
      await hub.close();
      await objects.close();
      await refs.close();
    });
    const o = new HubOrigin(hub.url, { credential: token });
    const r = await push(a, o, 'team/big');
    expect(r.objects.sent).toBe(r.objects.total);
    expect(await refs.getRef('team/big')).toBe(id);
    // A second writer from a stale start loses: the local compare-and-swap.
    expect(await code(o.setRef('team/big', id, { expected: null }))).toBe('conflict');
    const b = await newStore();
    await pull(b, o, 'team/big');
    expect((await b.verify({ data: true })).corrupt).toEqual([]);
    const bigId = idOf(big);
    expect(Buffer.compare(Buffer.from(await b.readObject(bigId)), Buffer.from(big))).toBe(0);
    // The bucket holds the objects in the portable layout, and no refs.
    const prefix = where.slice(`s3://${s3.bucket}/`.length);
    const keys = await keysUnder(s3.env, s3.bucket, `${prefix}/`);
    expect(keys.filter((k) => !k.startsWith(`${prefix}/chunks/`))).toEqual([]);
    expect(keys).toHaveLength(r.objects.total);
    expect(await storedId(s3.env, s3.bucket, `${prefix}/chunks/${bigId.slice(7)}`)).toBe(bigId);
  });

  it('a missing bucket is not_found naming it, for a check, a ref read and an object read', async () => {
    const o = new S3Origin('s3://tfs-no-such-bucket/x', { env: s3.env });
    after(() => o.close());
    for (const call of [() => o.check(), () => o.getRef('team/model'), () => o.read(idOf(bytesOf(10, 1)), 0)]) {
      const err = await call().catch((e) => e);
      expect(isTensorFSError(err) && err.code).toBe('not_found');
      expect(err.details.rule).toBe('s3.NoSuchBucket');
      expect(err.message).toContain('bucket tfs-no-such-bucket does not exist');
    }
  });

  it('no SDK warning and no listener pile-up on the caller signal under many concurrent requests', async () => {
    const o = new S3Origin(url('quiet'), { env: s3.env, refsElsewhere: true });
    after(() => o.close());
    const blobs = Array.from({ length: 40 }, (_, i) => bytesOf(1000 + i, 100 + i));
    const ids = blobs.map((b) => idOf(b));
    const ctl = new AbortController();
    const warnings = await warningsDuring(async () => {
      await Promise.all(
        blobs.map((b, i) =>
          o.write(
            ids[i]!,
            b.length,
            async function* () {
              yield b;
            },
            { signal: ctl.signal },
          ),
        ),
      );
      expect(await o.lacks(ids, { signal: ctl.signal })).toEqual([]);
    });
    expect(warnings).toEqual([]);
  });

  it('a checksum that does not match the bytes: what the service does with it', async () => {
    // x-amz-checksum-sha256 of other bytes. AWS refuses such an upload (BadDigest); moto and
    // Swift's s3api (2.30) store it anyway: TensorFS hashes every object itself (docs/remote.md).
    const c = sdkClient(s3.env);
    const wrong = createHash('sha256').update('other bytes').digest('base64');
    const put = c
      .send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'checksum-probe', Body: 'bytes', ChecksumSHA256: wrong }))
      .then(
        () => 'stored',
        (e) => `${e.$metadata?.httpStatusCode} ${e.name}`,
      );
    expect(await put).toBe('stored');
  });
});

describe('S3 origin on Swift s3api (no conditional writes, real SigV4)', () => {
  let s3: S3Service;
  beforeAll(async () => {
    s3 = await startS3('swift', 'tfs-swift');
  }, 120_000);
  afterAll(async () => {
    await s3?.stop();
  });

  it('a direct push is refused before any upload, naming what is missing and the remedy', async () => {
    const { store: a } = await storeWith('team/model');
    const o = new S3Origin(`s3://${s3.bucket}/direct`, { env: s3.env });
    after(() => o.close());
    const err = await push(a, o, 'team/model').catch((e) => e);
    expect(isTensorFSError(err) && err.code).toBe('unsupported');
    expect(err.details.rule).toBe('s3.no_conditional_writes');
    expect(err.details.missing).toBe('If-None-Match: *');
    expect(err.message).toContain('tfs serve --objects s3://tfs-swift/direct/ --refs DIR');
    expect(await keysUnder(s3.env, s3.bucket, 'direct/')).toEqual([]);
  });

  it('a wrong secret is denied naming the access key id and the service code, never the secret', async () => {
    const env = { ...s3.env, AWS_SECRET_ACCESS_KEY: 'not-the-secret-xyzzy' };
    const o = new S3Origin(`s3://${s3.bucket}/denied`, { env, refsElsewhere: true });
    after(() => o.close());
    const blob = bytesOf(100, 3);
    const calls = [
      () => o.check(),
      () => o.getRef('team/model'),
      () =>
        o.write(idOf(blob), blob.length, async function* () {
          yield blob;
        }),
    ];
    for (const call of calls) {
      const err = await call().catch((e) => e);
      expect(isTensorFSError(err) && err.code).toBe('denied');
      expect(err.details.rule).toBe('s3.SignatureDoesNotMatch');
      expect(err.message).toContain(`access key id ${SWIFT_ACCESS_KEY}`);
      expect(JSON.stringify({ m: err.message, d: err.details })).not.toContain('xyzzy');
    }
    // Swift's tempauth answers an unknown key as a bad signature too (AWS says InvalidAccessKeyId).
    const unknown = new S3Origin(`s3://${s3.bucket}/denied`, { env: { ...s3.env, AWS_ACCESS_KEY_ID: 'nobody:here' } });
    after(() => unknown.close());
    const err = await unknown.check().catch((e) => e);
    expect(isTensorFSError(err) && err.code).toBe('denied');
    expect(err.details.rule).toBe('s3.SignatureDoesNotMatch');
    expect(err.message).toContain('access key id nobody:here');
    // A key that signs right but may not read the bucket.
    const reader = new S3Origin(`s3://${s3.bucket}/denied`, {
      env: { ...s3.env, AWS_ACCESS_KEY_ID: SWIFT_UNPRIVILEGED_KEY },
    });
    after(() => reader.close());
    const e3 = await reader.check().catch((e) => e);
    expect(isTensorFSError(e3) && e3.code).toBe('denied');
    expect(e3.details.rule).toBe('s3.AccessDenied');
    expect(e3.message).toContain(`access key id ${SWIFT_UNPRIVILEGED_KEY}`);
  });
});

describe('S3 configuration', () => {
  it('missing credentials or region are invalid_argument naming what is missing, before any request', async () => {
    const saved = { ...process.env };
    // No AWS settings anywhere the SDK looks (and no instance metadata service).
    for (const k of Object.keys(process.env)) if (k.startsWith('AWS_')) delete process.env[k];
    process.env.AWS_EC2_METADATA_DISABLED = 'true';
    process.env.AWS_SHARED_CREDENTIALS_FILE = '/nonexistent/credentials';
    process.env.AWS_CONFIG_FILE = '/nonexistent/config';
    try {
      const noKeys = new S3Origin('s3://some-bucket/x', { env: { AWS_REGION: 'us-east-1' } });
      const err = await noKeys.getRef('a').catch((e) => e);
      await noKeys.close();
      expect(isTensorFSError(err) && err.code).toBe('invalid_argument');
      expect(err.details.rule).toBe('s3.no_credentials');
      expect(err.message).toContain('AWS_ACCESS_KEY_ID');
      const noRegion = new S3Origin('s3://some-bucket/x', {
        env: { AWS_ACCESS_KEY_ID: 'k', AWS_SECRET_ACCESS_KEY: 's' },
      });
      const e2 = await noRegion.check().catch((e) => e);
      await noRegion.close();
      expect(isTensorFSError(e2) && e2.code).toBe('invalid_argument');
      expect(e2.details.rule).toBe('s3.no_region');
      expect(e2.message).toContain('AWS_REGION');
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });
});
