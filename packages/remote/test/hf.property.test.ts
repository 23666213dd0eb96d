// Property tests of what the hf:// source parses: URLs, Link headers, and whatever JSON a Hub
// answers to the revision and tree routes. Any input gives a result or a TensorFSError.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isTensorFSError } from '@tensorfs/format';
import { acceptedCounter } from '@tensorfs/testkit';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HuggingFaceRepo } from '../src/hf/index.js';
import { parseHfUrl } from '../src/index.js';
import { nextLink } from '../src/hf/index.js';

function expectTensorFSError(err: unknown): void {
  if (!isTensorFSError(err)) throw new Error(`not a TensorFSError: ${String((err as Error)?.stack ?? err)}`);
}

describe('hf:// parsing properties', () => {
  it('parseHfUrl: any string parses to a valid spec or is a TensorFSError', () => {
    const counter = acceptedCounter();
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string().map((s) => `hf://${s}`),
          fc.stringMatching(/^hf:\/\/[a-z.\-_/@]{0,20}$/),
        ),
        (s) => {
          try {
            const spec = parseHfUrl(s);
            expect(spec.repo.split('/').length).toBeLessThanOrEqual(2);
            expect(spec.revision.length).toBeGreaterThan(0);
            expect(s).toBe(
              spec.revision === 'main' && !s.includes('@') ? `hf://${spec.repo}` : `hf://${spec.repo}@${spec.revision}`,
            );
            counter.accept();
          } catch (err) {
            expectTensorFSError(err);
          }
        },
      ),
      { numRuns: 2000 },
    );
    counter.assertFloor(20);
  });

  it('nextLink: any header value gives a URL or nothing, never throws', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string().map((s) => `<${s}>; rel="next"`),
          fc.array(fc.string()).map((a) => a.join(', ')),
        ),
        (h) => {
          const u = nextLink(h, 'http://127.0.0.1:1/api');
          if (u !== undefined) expect(() => new URL(u)).not.toThrow();
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('Hub answers properties', () => {
  let server: Server;
  let endpoint = '';
  let answer: unknown = null;
  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  const entry = fc.record(
    {
      type: fc.oneof(fc.constantFrom('file', 'directory'), fc.string()),
      path: fc.oneof(fc.constantFrom('a', 'b/c.json', '../x', '', 'a//b'), fc.string()),
      size: fc.oneof(fc.nat(), fc.integer(), fc.double()),
      oid: fc.oneof(fc.constant('a'.repeat(40)), fc.string()),
      lfs: fc.oneof(
        fc.constant(undefined),
        fc.record({ oid: fc.constant('b'.repeat(64)), size: fc.nat(10) }),
        fc.anything(),
      ),
    },
    { requiredKeys: [] },
  );

  it('listFiles and resolveRevision: any JSON gives files / a commit, or a TensorFSError', async () => {
    const repo = new HuggingFaceRepo({ repo: 'acme/x', revision: 'main' }, { endpoint, http: { retries: 0 } });
    const counter = acceptedCounter();
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.array(entry, { maxLength: 6 }), fc.jsonValue()), async (value) => {
        answer = value;
        try {
          const files = await repo.listFiles('c'.repeat(40));
          for (const f of files) {
            expect(Number.isSafeInteger(f.size) && f.size >= 0).toBe(true);
            expect(f.oid).toMatch(/^[0-9a-f]{40}$/);
          }
          counter.accept();
        } catch (err) {
          expectTensorFSError(err);
        }
        try {
          expect(await repo.resolveRevision()).toMatch(/^[0-9a-f]{40}$/);
        } catch (err) {
          expectTensorFSError(err);
        }
      }),
      { numRuns: 150 },
    );
    counter.assertFloor(5);
  });
});
