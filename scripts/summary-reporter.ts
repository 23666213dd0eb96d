// Prints one plain closing line, `tests: N passed, N failed, N skipped`, after vitest's own
// report, so a log reader that knows no vitest still sees what ran.
import type { Reporter, RunnerTask, RunnerTestFile } from 'vitest/node';

function count(tasks: readonly RunnerTask[], acc = { passed: 0, failed: 0, skipped: 0 }) {
  for (const t of tasks) {
    if (t.type === 'suite') count(t.tasks, acc);
    else if (t.mode === 'skip' || t.mode === 'todo') acc.skipped++;
    else if (t.result?.state === 'pass') acc.passed++;
    else if (t.result?.state === 'fail') acc.failed++;
  }
  return acc;
}

export default class SummaryReporter implements Reporter {
  onFinished(files: RunnerTestFile[] = [], errors: unknown[] = []): void {
    const c = count(files);
    for (const f of files) if (f.result?.state === 'fail' && f.tasks.length === 0) c.failed++;
    c.failed += errors.length;
    process.stdout.write(`\ntests: ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped\n`);
  }
}
