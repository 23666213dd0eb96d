import { S3Client } from '@aws-sdk/client-s3';
import { isTensorFSError } from '@tensorfs/format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HubOrigin, S3Origin, parseS3Url, pull, push, s3ConfigFromEnv, serveHub } from '../src/index.js';
import { bytesOf, idOf, type Moto, startMoto } from '@tensorfs/testkit';
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
    expect(await code(o.setRef('team/model', other, null))).toBe('conflict');
    expect(await code(o.setRef('team/model', other, other))).toBe('conflict');
    await o.setRef('team/model', other, id);
    expect(await o.getRef('team/model')).toBe(other);
    // Racing writers from the same starting point: exactly one wins.
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => code(o.setRef('race', i % 2 ? id : other, null))),
    );
    expect(results.filter((c) => c === 'ok')).toHaveLength(1);
    expect(results.filter((c) => c === 'conflict')).toHaveLength(5);
  });

  it('refuses an upload whose bytes do not match the id: nothing becomes visible', async () => {
    const o = origin();
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
      code(o1.setRef('team/model', other, id)),
      code(o2.setRef('team/model', other, id)),
      code(o1.setRef('team/model', other, id)),
      code(o2.setRef('team/model', other, id)),
    ]);
    expect(race.filter((r) => r === 'ok')).toHaveLength(1);
    expect(race.filter((r) => r === 'conflict')).toHaveLength(3);
    expect(await code(o1.setRef('elsewhere/model', other, undefined))).toBe('denied');
  });

  it('refuses to move refs where the service ignores conditional writes', async () => {
    // A client whose middleware strips the conditions stands in for a service that ignores them.
    const client = new S3Client({ ...s3ConfigFromEnv(moto.env) });
    client.middlewareStack.add(
      (next) => async (args) => {
        const req = args.request as { headers?: Record<string, string> };
        if (req.headers) {
          delete req.headers['if-none-match'];
          delete req.headers['if-match'];
        }
        return next(args);
      },
      { step: 'build', name: 'dropConditions' },
    );
    after(() => client.destroy());
    const o = new S3Origin(`s3://${moto.bucket}/ignoring${++n}`, { client });
    const { store: a } = await storeWith('team/model');
    const err = await push(a, o, 'team/model').catch((e) => e);
    expect(isTensorFSError(err) && err.code).toBe('unsupported');
    expect(err.details.rule).toBe('s3.no_conditional_writes');
    expect(await o.getRef('team/model')).toBeNull();
  });
});
