// `tfs cat REF TENSOR > /dev/null` of a 256 MiB tensor (4 objects): CPU time (user + sys) of the
// process, verified (the default: every object hashed before the first byte goes out) and with
// --no-verify, against a Node process that reads and hashes the same object files once (one hash
// pass: the floor of any verified read). One run of each after a warm-up; CPU time, not wall time, since the machine is shared.
import { execFileSync } from 'node:child_process';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalStore } from '@tensorfs/cas';
import { report, writeLayersModel } from './lib.mjs';

const BIN = fileURLToPath(new URL('../packages/cli/dist/bin.js', import.meta.url));
const ROWS = 11584; // one BF16 [11584, 11584] tensor: 268,378,112 bytes, 4 objects
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

/** Median user + sys CPU ms of `argv` run by bash with stdout to /dev/null. */
function cpuMs(argv) {
  const samples = [];
  for (let i = 0; i <= RUNS; i++) {
    const quoted = argv.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
    const out = execFileSync('bash', ['-c', `TIMEFORMAT='%3U %3S'; { time ${quoted} > /dev/null; } 2>&1`], {
      encoding: 'utf8',
    });
    const [user, sys] = out.trim().split('\n').pop().split(' ').map(Number);
    if (i > 0) samples.push((user + sys) * 1000); // the first run warms the page cache
  }
  return samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)];
}

const dir = await fsp.mkdtemp(join(tmpdir(), 'tfs-bench-cat-'));
try {
  const file = join(dir, 'big.safetensors');
  await writeLayersModel(file, 1, ROWS);
  const root = join(dir, 'store');
  const store = await LocalStore.open(root);
  const { snapshot } = await store.importPath(file, { name: 'local/big' });
  const entry = (await store.getManifest(snapshot)).entries[0];
  await store.close();
  await fsp.rm(file);
  const objects = entry.records
    .slice(1) // the header record
    .map((r) => r.digest.slice(7))
    .map((hex) => join(root, 'objects', 'sha256', hex.slice(0, 2), hex.slice(2, 4), hex));
  const cat = [process.execPath, BIN, 'cat', 'local/big', 'model.layers.000.weight', '--store', root];
  const hashOnce =
    "const {createHash}=require('node:crypto');const {readFileSync}=require('node:fs');" +
    "for(const f of process.argv.slice(1))createHash('sha256').update(readFileSync(f)).digest()";
  const floor = cpuMs([process.execPath, '-e', hashOnce, ...objects]);
  const bytes = 2 * ROWS * ROWS;
  report(
    `tfs cat 256 MiB tensor, verified (CPU)`,
    cpuMs(cat),
    'read + hash once',
    floor,
    `${objects.length} objects, ${bytes} B`,
  );
  report(`tfs cat 256 MiB tensor, --no-verify (CPU)`, cpuMs([...cat, '--no-verify']), 'read + hash once', floor);
  const before = process.env.TFS_BEFORE_BIN;
  if (before) {
    const old = [process.execPath, before, ...cat.slice(2)];
    report('tfs cat 256 MiB verified, vs the older build', cpuMs(cat), 'older build', cpuMs(old));
  }
} finally {
  await fsp.rm(dir, { recursive: true, force: true });
}
