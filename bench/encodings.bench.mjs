// Decode throughput (MiB of F32 output per second) of @tensorfs/format/encodings against a vectorized
// numpy decode of the same parts (bench/encodings.decode.py), single-threaded, in the same run.
// Both sides' outputs are hashed: "agree" means the float32 bytes are identical.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decode, decodeInto } from '@tensorfs/format/encodings';
import { cases, cpuBest, K, N, numpyBaseline, reportAgainstNumpy } from './encodings-cases.mjs';
import { mibps } from './lib.mjs';

const dir = mkdtempSync(join(tmpdir(), 'tensorfs-bench-enc-'));
const numpy = numpyBaseline(dir);

const outBytes = N * K * 4;
// decodeInto a reused buffer, as numpy's steady state reuses freed memory; `decode` (a fresh 32 MiB
// buffer per call, zeroed by the kernel on first touch) is printed alongside.
const dst = new Uint8Array(outBytes);
for (const c of cases) {
  const ms = await cpuBest(() => decodeInto(c.enc, dst, { dtype: 'F32' }));
  const fresh = await cpuBest(() => decode(c.enc, { dtype: 'F32' }));
  const ours = createHash('sha256').update(dst).digest('hex');
  const np = numpy[c.name];
  const label = `decode ${c.label ?? c.name} ${N}x${K}`;
  const extra = `${mibps(outBytes, ms)} MiB/s (fresh buffer ${mibps(outBytes, fresh)})`;
  reportAgainstNumpy(label, ms, np, outBytes, ours, extra);
}
rmSync(dir, { recursive: true, force: true });
