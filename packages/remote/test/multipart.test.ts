import { readdirSync } from 'node:fs';
import { type AddressInfo, type Socket, createConnection, createServer } from 'node:net';
import { ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { type LocalStore, RefFolder } from '@tensorfs/cas';
import { type ObjectId, isTensorFSError } from '@tensorfs/format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HubOrigin,
  LocalRefsOrigin,
  S3Origin,
  StoreOrigin,
  pull,
  push,
  s3ConfigFromEnv,
  serveHub,
} from '../src/index.js';
import { bytesOf, idOf, S3_KINDS, type S3Service, startS3, tempDir } from '@tensorfs/testkit';
import { after, newStore, storeWith } from './helpers.js';

const MiB = 1 << 20;
const TOKEN = 'tok-multipart-0123456789';

/** A TCP proxy to `port` that counts the bytes clients send through it. */
async function countingProxy(port: number): Promise<{ url: string; sent: () => number }> {
  let sent = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection(port, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    client.on('data', (d: Buffer) => {
      sent += d.length;
    });
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  after(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sent: () => sent };
}

/** `store` seen through a wrapper that aborts `ctl` once `limit` bytes have been read from it. */
function abortingAfter(store: LocalStore, limit: number, ctl: AbortController): LocalStore {
  let read = 0;
  return Object.assign(Object.create(store), {
    readObjectRange: async (id: ObjectId, offset: number, length: number) => {
      const b = await store.readObjectRange(id, offset, length);
      read += b.length;
      if (read >= limit) ctl.abort();
      return b;
    },
  });
}

/** A store holding one object of `size` bytes (a blob) as snapshot `team/big`. */
async function bigModel(size: number): Promise<{ store: LocalStore; id: ObjectId; blob: ObjectId; bytes: Uint8Array }> {
  const bytes = bytesOf(size, 77);
  const { store, id } = await storeWith('team/big', { 'model.bin': bytes });
  return { store, id, blob: idOf(bytes), bytes };
}

/** Byte equality without the test runner's element-by-element diff (slow on megabytes). */
function same(a: Uint8Array, b: Uint8Array): boolean {
  return (
    Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.length), Buffer.from(b.buffer, b.byteOffset, b.length)) === 0
  );
}

async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('resumable uploads to the hub (/v1/uploads/)', () => {
  it('an interrupted push resumes: only the missing bytes cross the wire, the hub verifies the whole', async () => {
    const size = 3 * MiB + 12_345;
    const { store: a, blob, bytes } = await bigModel(size);
    const backing = await newStore();
    const uploadsDir = tempDir();
    const hub = await serveHub(new StoreOrigin(backing), {
      tokens: { tokens: [{ token: TOKEN, read: ['*'], write: ['*'] }] },
      uploadsDir,
    });
    after(() => hub.close());
    const proxy = await countingProxy(hub.port);
    const o = new HubOrigin(proxy.url, {
      credential: TOKEN,
      multipart: { thresholdBytes: MiB, partBytes: 256 * 1024 },
      retries: 0,
    });
    after(() => o.close());
    const ctl = new AbortController();
    const err = await caught(
      push(abortingAfter(a, 1_300_000, ctl), o, 'team/big', { signal: ctl.signal, pieceBytes: 64 * 1024 }),
    );
    expect(isTensorFSError(err) && err.code).toBe('cancelled');
    expect(await o.getRef('team/big')).toBeNull();
    expect(await backing.has(blob)).toBe(false);
    const first = proxy.sent();
    // The session holds what arrived; the object is not visible yet.
    expect(readdirSync(uploadsDir).filter((f) => f.endsWith('.upload'))).toHaveLength(1);

    const r = await push(a, o, 'team/big', { pieceBytes: 64 * 1024 });
    const second = proxy.sent() - first;
    expect(r.objects.sent).toBeGreaterThanOrEqual(1);
    // Only what the hub lacked: well under the whole object, and both pushes together about one copy.
    expect(r.bytes.sent).toBeLessThan(size - 1_000_000);
    expect(second).toBeLessThan(size - 1_000_000);
    expect(first + second).toBeLessThan(size + 256 * 1024);
    expect(same(await backing.readObject(blob, { verify: true }), bytes)).toBe(true);
    expect(readdirSync(uploadsDir)).toEqual([]);
    const b = await newStore();
    await pull(b, new HubOrigin(hub.url, { credential: TOKEN }), 'team/big');
    expect((await b.verify({ data: true })).corrupt).toEqual([]);
  });

  it('bytes that do not hash to the id: `corrupt` at completion, the session dropped, nothing visible', async () => {
    const backing = await newStore();
    const hub = await serveHub(new StoreOrigin(backing), {
      tokens: { tokens: [{ token: TOKEN, read: ['*'], write: ['*'] }] },
      uploadsDir: tempDir(),
    });
    after(() => hub.close());
    const o = new HubOrigin(hub.url, {
      credential: TOKEN,
      multipart: { thresholdBytes: 1000, partBytes: 700 },
      retries: 0,
    });
    after(() => o.close());
    const good = bytesOf(2500, 3);
    const bad = good.slice();
    bad[2400]! ^= 1;
    const id = idOf(good);
    const err = await caught(
      o.write(id, bad.length, (s = 0, e = bad.length) =>
        (async function* () {
          yield bad.subarray(s, e);
        })(),
      ),
    );
    expect(isTensorFSError(err) && err.code).toBe('corrupt');
    expect(await o.lacks([id])).toEqual([id]);
    // The right bytes afterwards go through from the start.
    await o.write(id, good.length, (s = 0, e = good.length) =>
      (async function* () {
        yield good.subarray(s, e);
      })(),
    );
    expect(await backing.readObject(id, { verify: true })).toEqual(good);
  });
});

describe.each(S3_KINDS)('multipart uploads to S3 (%s)', (kind) => {
  let s3: S3Service;
  beforeAll(async () => {
    s3 = await startS3(kind, 'tfs-multipart');
  }, 120_000);
  afterAll(async () => {
    await s3?.stop();
  });

  const uploadsOf = async (prefix: string) => {
    const c = new S3Client(s3ConfigFromEnv(s3.env));
    const r = await c.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: prefix }));
    c.destroy();
    return r.Uploads ?? [];
  };

  /** `o` with its refs in a local folder (what `tfs serve --objects … --refs DIR` serves). */
  const withLocalRefs = async (o: S3Origin) => {
    const refs = await RefFolder.open(tempDir('tfs-refs-'));
    after(() => refs.close());
    return new LocalRefsOrigin(o, refs);
  };

  it('an interrupted push resumes the upload (ListParts): only the missing parts are sent', async () => {
    const size = 16 * MiB + 4321;
    const { store: a, bytes, blob } = await bigModel(size);
    const port = Number(new URL(s3.env.AWS_ENDPOINT_URL!).port);
    const proxy = await countingProxy(port);
    const env = { ...s3.env, AWS_ENDPOINT_URL: proxy.url };
    const o = new S3Origin(`s3://${s3.bucket}/resume`, {
      env,
      refsElsewhere: true,
      multipart: { thresholdBytes: 8 * MiB, partBytes: 5 * MiB },
    });
    after(() => o.close());
    const target = await withLocalRefs(o);
    const ctl = new AbortController();
    // Two 5 MiB parts go up, the third is being read when the push is interrupted.
    const err = await caught(
      push(abortingAfter(a, 11 * MiB, ctl), target, 'team/big', { signal: ctl.signal, pieceBytes: MiB }),
    );
    expect(isTensorFSError(err) && err.code).toBe('cancelled');
    expect(await o.lacks([blob])).toEqual([blob]);
    expect(await uploadsOf('resume/')).toHaveLength(1);
    const first = proxy.sent();
    expect(first).toBeGreaterThan(10 * MiB);

    const r = await push(a, target, 'team/big', { pieceBytes: MiB });
    const second = proxy.sent() - first;
    // Parts 3 and 4 (6 MiB + 4321 B), plus requests and headers; never the first 10 MiB again.
    expect(second).toBeGreaterThan(6 * MiB);
    expect(second).toBeLessThan(7 * MiB);
    expect(r.bytes.sent).toBeLessThan(7 * MiB);
    expect(await uploadsOf('resume/')).toEqual([]);
    const b = await newStore();
    await pull(b, target, 'team/big');
    expect(same(await b.readObject(blob, { verify: true }), bytes)).toBe(true);
  });

  it('bytes that do not hash to the id abort the upload: `corrupt`, no object, no upload left', async () => {
    const o = new S3Origin(`s3://${s3.bucket}/lying`, {
      env: s3.env,
      refsElsewhere: true,
      multipart: { thresholdBytes: 5 * MiB, partBytes: 5 * MiB },
    });
    after(() => o.close());
    const good = bytesOf(6 * MiB, 8);
    const bad = good.slice();
    bad[6 * MiB - 7]! ^= 1;
    const id = idOf(good);
    const err = await caught(
      o.write(id, bad.length, (s = 0, e = bad.length) =>
        (async function* () {
          yield bad.subarray(s, e);
        })(),
      ),
    );
    expect(isTensorFSError(err) && err.code).toBe('corrupt');
    expect(await o.lacks([id])).toEqual([id]);
    expect(await uploadsOf('lying/')).toEqual([]);
  });

  /** A client on the service recording each completion (with per-part checksums or not), and `tamper` applied to it. */
  const recordingClient = (tamper?: (parts: { ETag?: string }[]) => void) => {
    const seen: string[] = [];
    const client = new S3Client(s3ConfigFromEnv(s3.env));
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'CompleteMultipartUploadCommand') {
          const input = args.input as { MultipartUpload?: { Parts?: { ETag?: string; ChecksumSHA256?: string }[] } };
          const parts = input.MultipartUpload?.Parts ?? [];
          seen.push(parts.every((p) => p.ChecksumSHA256) ? 'with checksums' : 'without');
          tamper?.(parts);
        }
        return next(args);
      },
      { step: 'initialize', name: 'recordCompletions' },
    );
    after(() => client.destroy());
    return { client, seen };
  };
  const blobWriter = (o: S3Origin, bytes: Uint8Array) =>
    o.write(idOf(bytes), bytes.length, (s = 0, e = bytes.length) =>
      (async function* () {
        yield bytes.subarray(s, e);
      })(),
    );

  it('per-part checksums where the service takes them, none where it refuses them, learned once', async () => {
    const { client, seen } = recordingClient();
    const o = new S3Origin(`s3://${s3.bucket}/checksums`, {
      client,
      refsElsewhere: true,
      multipart: { thresholdBytes: 5 * MiB, partBytes: 5 * MiB },
    });
    const one = bytesOf(6 * MiB, 11);
    const two = bytesOf(6 * MiB + 5, 12);
    await blobWriter(o, one);
    await blobWriter(o, two);
    // Swift's s3api answers per-part checksums with 400 MalformedXML: the completion goes again
    // without them, and every later upload to that service goes without them.
    expect(seen).toEqual(
      kind === 'swift' ? ['with checksums', 'without', 'without'] : ['with checksums', 'with checksums'],
    );
    expect(await o.lacks([idOf(one), idOf(two)])).toEqual([]);
    expect(await uploadsOf('checksums/')).toEqual([]);
  });

  it('a completion the service refuses aborts its upload: `unsupported`, never invalid_argument', async () => {
    const { client } = recordingClient((parts) => {
      for (const p of parts) p.ETag = '"00000000000000000000000000000000"';
    });
    const o = new S3Origin(`s3://${s3.bucket}/refused`, {
      client,
      refsElsewhere: true,
      multipart: { thresholdBytes: 5 * MiB, partBytes: 5 * MiB },
    });
    const bytes = bytesOf(6 * MiB, 13);
    const err = await caught(blobWriter(o, bytes));
    expect(isTensorFSError(err) && err.code).toBe('unsupported');
    expect(isTensorFSError(err) && err.details.rule).toBe('s3.InvalidPart');
    expect(await o.lacks([idOf(bytes)])).toEqual([idOf(bytes)]);
    expect(await uploadsOf('refused/')).toEqual([]);
  });
});
