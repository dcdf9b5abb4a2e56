// docs/local-service.md shows, per case of the shared case file, what each official client does
// with it; this keeps that table equal to what the drivers declare they run.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GO_NA, loadCases, PYTHON_ASYNC_RUNS, PYTHON_SYNC_NA, TS_NA } from './runCases.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');

describe('the official clients matrix in docs/local-service.md', () => {
  it('has one row per case, in order, with each client\'s pass or n/a', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'local-service.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| `([a-z_]+)` \| (.+?) \| (pass|n\/a) \| (pass|n\/a) \| (pass|n\/a) \| (pass|n\/a) \|$/gm)].map((m) => m.slice(1));
    const want = loadCases().map((c) => [
      c.id,
      c.endpoint,
      TS_NA.includes(c.id) ? 'n/a' : 'pass',
      PYTHON_SYNC_NA.includes(c.id) ? 'n/a' : 'pass',
      PYTHON_ASYNC_RUNS.includes(c.id) ? 'pass' : 'n/a',
      GO_NA.includes(c.id) ? 'n/a' : 'pass',
    ]);
    expect(rows).toEqual(want);
  });
});
