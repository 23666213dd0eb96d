// CLI start-up: `tfs --version` and `tfs --help` as whole processes against `node -e 0`, interleaved
// (wall and CPU of each child). TENSORFS_BENCH_BEFORE_BIN=<an older dist/bin.js> also runs it.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compare, interleaveProcesses } from './cpu.mjs';

const bin = join(dirname(fileURLToPath(import.meta.url)), '..', 'packages', 'cli', 'dist', 'bin.js');
const cases = {
  node: ['-e', '0'],
  version: [bin, '--version'],
  help: [bin, '--help'],
  inspectHelp: [bin, 'inspect', '--help'],
};
const before = process.env.TENSORFS_BENCH_BEFORE_BIN;
if (before) cases.beforeVersion = [before, '--version'];
const r = interleaveProcesses(cases, { runs: 9 });
compare('tfs --version', r.version, 'node -e 0', r.node);
if (before) compare('  before: tfs --version', r.beforeVersion, 'node -e 0', r.node);
compare('tfs --help', r.help, 'node -e 0', r.node);
compare('tfs inspect --help', r.inspectHelp, 'node -e 0', r.node);
