import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runJob } from '../../src/jobs/run/runJob.ts';
import { client, dir, job, useJobHarness } from './jobHarness.ts';

// An execution timeout of 5 ms against a query that sums a few hundred million values: every
// execution times out, however fast or loaded the machine (only the margin grows with load).
useJobHarness({ tiers: { medium: { timeout_ms: 5 } } }, 'sluice-backfill-timeout-');

describe('backfill: a chunk that times out', () => {
  it('is halved and run again, down to min_chunk; then the run fails naming the range, charged nothing', async () => {
    const j = job(`  - name: slow
    source: { sql: "select sum(i) as s from range(0, 400000000) t(i) where i % 7 <> {{lo}} - {{hi}}" }
    backfill: { parameters: { from: lo, to: hi }, from: 0, to: 2, chunk: 2, min_chunk: 1, concurrency: 1 }
    outputs: [{ format: csv, path: "\${DIR}/slow" }]
`);
    const before = await client.getUsage();
    const warnings: string[] = [];
    const error = await runJob(j, { client, stateDir: join(dir, 'state'), signal: new AbortController().signal, events: { onWarning: (m) => warnings.push(m) } }).catch((e: unknown) => e);
    const after = await client.getUsage();
    expect(error).toMatchObject({ code: 'BACKFILL_CHUNK_TOO_LARGE' });
    expect((error as Error).message).toMatch(/^job slow: backfill chunk \[[01], [12]\) timed out \(execution \S+\) and cannot be halved above min_chunk 1:/);
    expect(warnings).toEqual(['backfill chunk [0, 2) timed out: halved and run again']);
    // [0, 2), then its halves: at most three executions (the second half is stopped if the first fails first), none charged.
    expect(after.executions - before.executions).toBeGreaterThanOrEqual(2);
    expect(after.executions - before.executions).toBeLessThanOrEqual(3);
    expect(after.credits_used).toBe(before.credits_used);
    expect(existsSync(join(dir, 'slow'))).toBe(false);
  });
});
