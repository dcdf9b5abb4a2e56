import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // DuckDB and the local service are real: two cores, so at most two files at once.
    maxWorkers: 2,
    pool: 'forks',
    reporters: ['default', './test/reporters/plainSummary.ts'],
  },
});
