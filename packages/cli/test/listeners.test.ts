/**
 * No `MaxListenersExceededWarning` (issue 11): importing or planning a file of many tensors used to
 * put one abort listener per hashing job on the command's signal, and Node's warning on stderr
 * broke `--json`'s promise of stderr being empty or exactly one JSON object. Runs the built
 * `dist/bin.js` (`pnpm build` first).
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

/**
 * A safetensors file of `big` distinct tensors of 256 KiB (hashed by the worker pool: many jobs
 * at once in one 64 MiB batch) and `small` equal tensors of 16 bytes (hashed inline; one object).
 */
function manyTensors(file: string, big: number, small: number): void {
  const header: Record<string, unknown> = {};
  const sizes = [...Array.from({ length: big }, () => 256 * 1024), ...Array.from({ length: small }, () => 16)];
  let at = 0;
  sizes.forEach((n, i) => {
    header[`t.${i}`] = { dtype: 'U8', shape: [n], data_offsets: [at, at + n] };
    at += n;
  });
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const data = Buffer.alloc(at);
  for (let i = 0; i < big; i++) data.writeUInt32LE(i + 1, i * 256 * 1024);
  writeFileSync(file, Buffer.concat([len, json, data]));
}

function tfs(args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
  if (r.error) throw new Error(`tfs ${args[0]} did not finish: ${r.error.message}`);
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('many tensors, one signal: no listener warning on stderr', () => {
  it('import and plan --json of 5,000 tensors (48 hashed by the worker pool) leave stderr empty', () => {
    const d = tempDir();
    const file = join(d, 'many.safetensors');
    manyTensors(file, 48, 4952);
    const store = join(d, 'store');
    for (const args of [
      ['plan', file, '--json', '--threads', '2'],
      ['import', file, '--store', store, '--name', 'local/again', '--json', '--threads', '2'],
    ]) {
      const r = tfs(args);
      expect(r.code, `${args.join(' ')}: ${r.err}`).toBe(0);
      expect(r.err, args.join(' ')).toBe('');
      JSON.parse(r.out);
    }
    const listed = JSON.parse(tfs(['tensors', 'local/again', '--store', store, '--json']).out);
    expect(listed.tensors).toHaveLength(5000);
  }, 60_000);
});
