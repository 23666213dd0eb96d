/**
 * `tfs cat` to stdout (issue 11): no byte of a tensor goes out before every object its bytes come
 * from has been verified, so a corrupt later object leaves stdout empty instead of 64 MiB written
 * and then an error. The process tests run the built `dist/bin.js` (`pnpm build` first).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { LocalStore } from '@tensorfs/cas';
import { noise, objectFile, sha256Hex, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';
import { run } from '../src/index.js';

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const MiB = 1024 * 1024;
/** One U8 tensor of 64 MiB + 4 KiB: two objects, the second one small. */
const LENGTH = 64 * MiB + 4096;

/** A store holding `w` (two objects) as `local/big`; returns the tensor's bytes and objects. */
async function twoObjectTensor() {
  const header = Buffer.from(JSON.stringify({ w: { dtype: 'U8', shape: [LENGTH], data_offsets: [0, LENGTH] } }));
  const padded = Buffer.concat([header, Buffer.alloc((8 - (header.length % 8)) % 8, 0x20)]);
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(padded.length));
  const data = noise(LENGTH, 11);
  const file = join(tempDir(), 'big.safetensors');
  writeFileSync(file, Buffer.concat([prefix, padded, data]));
  const store = join(tempDir(), 'store');
  const s = await LocalStore.open(store);
  const { snapshot } = await s.importPath(file, { name: 'local/big', threads: 1 });
  const entry = (await s.getManifest(snapshot)).entries[0]!;
  await s.close();
  if (entry.kind !== 'file') throw new Error('expected a file entry');
  const objects = entry.records.slice(1).map((r) => r.digest);
  expect(entry.records.slice(1).map((r) => r.length)).toEqual([64 * MiB, 4096]);
  return { store, data, objects };
}

/** Flips one byte of an object file (the store made it read-only). */
function corrupt(store: string, id: string): void {
  const f = objectFile(store, id);
  const bytes = readFileSync(f);
  const at = bytes.length >> 1;
  bytes.writeUInt8(bytes.readUInt8(at) ^ 0xff, at);
  chmodSync(f, 0o644);
  writeFileSync(f, bytes);
}

/** Runs the built `tfs` with a watchdog; stdout as bytes. */
function cat(store: string, ...extra: string[]) {
  const r = spawnSync(process.execPath, [BIN, 'cat', 'local/big', 'w', '--store', store, ...extra], {
    maxBuffer: 256 * MiB,
    timeout: 60_000,
  });
  if (r.error) throw new Error(`tfs cat ${extra.join(' ')} did not finish: ${r.error.message}`);
  return { code: r.status, out: r.stdout, err: r.stderr.toString('utf8') };
}

describe('tfs cat to stdout verifies every object before the first byte', () => {
  it('a good tensor of two objects comes out whole; a corrupt later object gives 0 bytes and exit 4', async () => {
    const { store, data, objects } = await twoObjectTensor();
    const good = cat(store);
    expect(good.code, good.err).toBe(0);
    expect(good.out.length).toBe(LENGTH);
    expect(sha256Hex(good.out)).toBe(sha256Hex(data));

    corrupt(store, objects[1]!);
    for (const extra of [[], ['--json']]) {
      const r = cat(store, ...extra);
      expect(r.code, `${extra}: ${r.err}`).toBe(4);
      expect(r.out.length, `${extra}: bytes on stdout`).toBe(0);
      // The first read quarantined the object: the second is refused as quarantined.
      if (extra.length) expect(JSON.parse(r.err).error.details).toMatchObject({ digest: objects[1], tensor: 'w' });
      else expect(r.err).toMatch(/^error\[corrupt\]: object does not match its digest/);
    }
  }, 60_000);

  it('an object that changes after the first pass verified it fails loudly (exit 4, details.pass 2)', async () => {
    const { store, data, objects } = await twoObjectTensor();
    const chunks: Buffer[] = [];
    let changed = false;
    const stdout = new Writable({
      write(chunk: Buffer, _enc, done) {
        // The first byte goes out only after the first pass: change the later object now.
        if (!changed) {
          changed = true;
          corrupt(store, objects[1]!);
        }
        chunks.push(chunk);
        done();
      },
    });
    let stderr = '';
    const stderrSink = new Writable({
      write(chunk, _enc, done) {
        stderr += chunk;
        done();
      },
    });
    const code = await run(['cat', 'local/big', 'w', '--store', store, '--json'], {
      stdout,
      stderr: stderrSink,
      env: {},
    });
    expect(code, stderr).toBe(4);
    expect(JSON.parse(stderr).error.details).toMatchObject({ rule: 'store.digest', pass: 2, tensor: 'w' });
    const out = Buffer.concat(chunks);
    expect(out.length).toBe(64 * MiB);
    expect(sha256Hex(out)).toBe(sha256Hex(data.subarray(0, 64 * MiB)));
  }, 60_000);
});
