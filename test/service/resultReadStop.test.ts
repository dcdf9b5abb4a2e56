// A page read interrupted by the service's own stop answers 503 (retry once it is started again)
// and is not logged as an internal error.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startTestService } from '../helpers/service.ts';
import { call, runSql } from './api.ts';

afterEach(() => vi.restoreAllMocks());

describe('a service stopped while pages are read', () => {
  it('logs no internal error for the interrupted page reads', async () => {
    const s = await startTestService({ walledTeams: false, sampleRows: 300_000, encodeMinBytes: 1e15 });
    const errors: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void errors.push(args.map(String).join(' ')));
    const id = await runSql(s, 'SELECT * FROM sample.events');
    // Sorted pages: each is a page query over the whole result, still running when the stop comes.
    const reads = Array.from({ length: 200 }, (_, i) =>
      call(s, 'GET', `/v1/execution/${id}/results`, { key: s.keys.demo.read, query: { sort_by: i % 2 === 0 ? 'id desc' : 'name', limit: 1000, offset: i * 1000 } }).then(
        (r) => r.status,
        () => 'gone',
      ),
    );
    // Stop once the first page is served: the others are running or queued behind it (page
    // queries take turns), and more of them than the stop's 2 s grace lets finish on any machine.
    await Promise.race(reads);
    await s.close();
    const answers = await Promise.all(reads);
    spy.mockRestore();
    for (const a of answers) expect([200, 503, 'gone']).toContain(a);
    // The stop came while reads were queued or running (200 sorted pages of 300,000 rows).
    expect(answers.filter((a) => a !== 200).length).toBeGreaterThan(0);
    expect(errors.filter((e) => e.includes('internal error'))).toEqual([]);
  }, 120_000);
});
