import { defineConfig } from 'vitest/config';

// Workspace packages resolve to their sources through the `@tensorfs/source` export condition,
// so `pnpm test` tests the edit, not yesterday's dist/ (CLI tests that spawn `tfs` still run dist/).
const conditions = ['@tensorfs/source', 'import', 'node', 'default'];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ['@tensorfs/source'] } },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'scripts/test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './scripts/summary-reporter.ts'],
  },
});
