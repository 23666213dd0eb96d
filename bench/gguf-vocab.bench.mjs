// A 262k-token vocabulary-only GGUF file (about 15 MiB of header, written by gguf-py through
// bench/fixtures/gguf-vocab.py): the in-process parse, and `tfs inspect` / `tfs inspect --json` as
// whole processes. TENSORFS_BENCH_VOCAB=<file> reuses a file already generated (the generator takes
// ~30 s); TENSORFS_BENCH_BEFORE=<ESM bundle of an older @tensorfs/format> also parses with that
// build in the same rounds; TENSORFS_BENCH_BEFORE_BIN=<an older packages/cli/dist/bin.js> also runs
// that build's `tfs inspect` in the same rounds. The peer is `@huggingface/gguf` parsing the same
// header in a whole process of its own (`gguf(file, { allowLocalFile: true })`).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseGgufHeader } from '@tensorfs/format';
import { compare, interleave, interleaveProcesses } from './cpu.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const before = process.env.TENSORFS_BENCH_BEFORE ? await import(process.env.TENSORFS_BENCH_BEFORE) : undefined;
let dir;
let file = process.env.TENSORFS_BENCH_VOCAB;
if (!file || !existsSync(file)) {
  dir = mkdtempSync(join(tmpdir(), 'tfs-bench-vocab-'));
  file = join(dir, 'vocab.gguf');
  const r = spawnSync('python3', [join(here, 'fixtures', 'gguf-vocab.py'), file], { stdio: 'inherit' });
  if (r.status !== 0) {
    console.log('skipped: python3 with gguf-py (pip install gguf) is needed to write the vocabulary file');
    process.exit(0);
  }
}
try {
  const bytes = new Uint8Array(readFileSync(file));
  const cases = { ours: () => parseGgufHeader(bytes) };
  if (before) cases.before = () => before.parseGgufHeader(bytes);
  const r = await interleave(cases, { runs: 9 });
  const baseline = { wall: 1, cpu: 1 }; // absolute figures: the target is in ms
  compare(`parseGgufHeader ${(bytes.length / 1048576).toFixed(1)} MiB vocabulary`, r.ours, 'ms', baseline);
  if (before) compare('  before', r.before, 'ms', baseline);

  // Whole processes, interleaved: tfs inspect, tfs inspect --json (stdout discarded), node -e 0.
  const bin = join(here, '..', 'packages', 'cli', 'dist', 'bin.js');
  const beforeBin = process.env.TENSORFS_BENCH_BEFORE_BIN;
  // The peer: @huggingface/gguf reading the same file's header, as a whole process too.
  const hf = `import { gguf } from '@huggingface/gguf'; await gguf(${JSON.stringify(file)}, { allowLocalFile: true });`;
  const processes = {
    node: ['-e', '0'],
    hf: ['--input-type=module', '-e', hf],
    inspect: [bin, 'inspect', file],
    json: [bin, 'inspect', '--json', file],
  };
  if (beforeBin) {
    processes.beforeInspect = [beforeBin, 'inspect', file];
    processes.beforeJson = [beforeBin, 'inspect', '--json', file];
  }
  const p = interleaveProcesses(processes, { runs: Number(process.env.TENSORFS_BENCH_RUNS ?? 7) });
  compare('tfs inspect (whole process)', p.inspect, 'node -e 0', p.node);
  compare('tfs inspect (whole process)', p.inspect, '@huggingface/gguf', p.hf);
  compare('@huggingface/gguf (whole process)', p.hf, 'node -e 0', p.node);
  if (beforeBin) compare('  before: tfs inspect', p.beforeInspect, 'node -e 0', p.node);
  compare('tfs inspect --json > /dev/null', p.json, 'node -e 0', p.node);
  if (beforeBin) compare('  before: tfs inspect --json', p.beforeJson, 'node -e 0', p.node);
} finally {
  if (dir) rmSync(dir, { recursive: true, force: true });
}
