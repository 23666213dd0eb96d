/**
 * Runs the storage contract's conformance suite (`@tensorfs/format/store/conformance`) against one
 * implementation inside a test: prints the report (naming the implementation and its
 * capabilities) and fails the test with the whole report when a check fails.
 */
import {
  type ConformanceReport,
  type ConformanceSubject,
  formatConformance,
  runConformance,
} from '@tensorfs/format/store/conformance';

/** The report, after printing it; throws (with the report as message) when a check failed. */
export async function expectConformant(subject: ConformanceSubject): Promise<ConformanceReport> {
  const report = await runConformance(subject);
  const text = formatConformance([report]);
  console.log(text);
  if (!report.ok) throw new Error(`${subject.name} breaks the storage contract:\n${text}`);
  return report;
}

/** The outcome of every check by name (for asserting which checks applied). */
export function outcomes(report: ConformanceReport): Record<string, string> {
  return Object.fromEntries(report.results.map((r) => [r.check, r.outcome]));
}
