/**
 * Issue 24.14: one valid safetensors file holding a zero-element `[0, 2^63 − 1]` tensor (legal:
 * safetensors dims are u64, and the tensor has no bytes) gets one answer on every path that needs
 * its dimensions as numbers: `limit_exceeded` (exit 10), the tensor named. It is not the file's
 * fault (not `malformed`) and not the caller's (not `invalid_argument`): 2^53 − 1 is TensorFS's
 * bound on a dimension. Reading it as bytes (import, inspect) works.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tfs } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tfs-dim-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The header is written by hand: 2^63 − 1 does not survive JSON.stringify of a number. */
function file(): string {
  let h =
    '{"w":{"dtype":"F32","shape":[0,9223372036854775807],"data_offsets":[0,0]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}';
  h += ' '.repeat((8 - (h.length % 8)) % 8);
  const n = Buffer.alloc(8);
  n.writeBigUInt64LE(BigInt(h.length));
  const p = join(dir, 'z.safetensors');
  writeFileSync(p, Buffer.concat([n, Buffer.from(h), Buffer.alloc(8)]));
  return p;
}

describe('a dimension past 2^53 − 1', () => {
  it('is limit_exceeded (exit 10) for bind and lanes derive of the file and of its ref, and for convert', async () => {
    const f = file();
    const store = join(dir, 'store');
    const s = ['--store', store];
    const imported = await tfs(['import', f, '--name', 'z', ...s]);
    expect(imported.code, imported.stderr).toBe(0);
    const inspected = await tfs(['inspect', f, '--json']);
    expect(inspected.code, inspected.stderr).toBe(0);
    expect(inspected.stdout).toContain('9223372036854775807');
    const paths: [string[], string][] = [
      [['bind', f, '--lane', 'llama-3-8b'], 'lanes.dimension_limit'],
      [['bind', 'z', '--lane', 'llama-3-8b'], 'lanes.dimension_limit'],
      [['lanes', 'derive', f, '--name', 't'], 'lanes.dimension_limit'],
      [['lanes', 'derive', 'z', '--name', 't'], 'lanes.dimension_limit'],
      [['convert', 'z', '--name', 'zc'], 'cozytensors.dimension_limit'],
    ];
    for (const [argv, rule] of paths) {
      const human = await tfs([...argv, ...s]);
      expect(human.code, `${argv.join(' ')}: ${human.stderr}`).toBe(10);
      expect(human.stderr).toBe(
        'error[limit_exceeded]: w: a dimension (9223372036854775807) exceeds 2^53 − 1, the largest TensorFS addresses\n',
      );
      const j = await tfs([...argv, ...s, '--json']);
      expect(j.code).toBe(10);
      expect(JSON.parse(j.stderr).error).toMatchObject({
        code: 'limit_exceeded',
        details: { rule, tensor: 'w', actual: '9223372036854775807' },
      });
    }
    const refs = await tfs(['ls', '--json', ...s]);
    expect(JSON.parse(refs.stdout).refs.map((r: { name: string }) => r.name)).toEqual(['z']);
  });
});
