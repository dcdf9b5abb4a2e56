// Cancel during the first milliseconds of EXECUTING: the abort can land before DuckDB has started
// the statement; the engine must still stop it and free the team's slot (cancel really
// stops the running query). The audit reproduced the race; this guards the fix.
import { describe, expect, it } from 'vitest';
import { startTestService } from '../helpers/service.ts';
import { pollStatus, submitSql, wire } from './wire.ts';

const LONG_SQL = 'SELECT sum(hash(a.i * b.i)) FROM range(200000) a(i), range(200000) b(i)';

describe('cancel really stops the engine', () => {
  it('a cancel right after EXECUTING frees the slot (max_inflight 1)', async () => {
    const local = await startTestService({ sampleRows: 50, maxInflight: 1 });
    const w = local.keys.demo.write;
    const r = local.keys.demo.read;
    try {
      for (let round = 0; round < 15; round++) {
        const id = await submitSql(local.url, w, LONG_SQL);
        await pollStatus(local.url, r, id, (s) => s.state === 'QUERY_STATE_EXECUTING');
        await new Promise((ok) => setTimeout(ok, round % 5));
        await wire(local.url, 'POST', `/v1/execution/${id}/cancel`, { key: w });
        const next = await submitSql(local.url, w, 'SELECT 1');
        const done = await pollStatus(local.url, r, next, (s) => s.is_execution_finished, 3_000);
        expect(done.state).toBe('QUERY_STATE_COMPLETED');
      }
    } finally {
      await local.close();
    }
  }, 120_000);
});
