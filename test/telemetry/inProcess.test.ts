import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeExport } from '../../src/export/index.ts';
import { ServiceClient } from '../../src/client/index.ts';
import { PreconditionFailedError } from '../../src/kit/index.ts';
import { startService, type ServiceHandle } from '../../src/service/index.ts';
import { startTelemetry, type Telemetry } from '../../src/telemetry/index.ts';
import { numbered, numberedSchema, resolved } from '../connectors/fixtures.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlpReceiver.ts';
import { testSettings, TEST_KEYS } from '../helpers/service.ts';
import { barrier } from '../helpers/barrier.ts';

// Telemetry in this process, where what a CLI run cannot stage can be: a commit race (two exports
// to one place, both written before either commits; the loser's commit span ends failed, named by
// the error's code, never its message), and requests held back by the key's rate governor.

let receiver: OtlpReceiver;
let telemetry: Telemetry;
let dir: string;
let svc: ServiceHandle;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  telemetry = (await startTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_METRICS_EXPORTER: 'none' }, 'run'))!;
  dir = await mkdtemp(join(tmpdir(), 'sluice-telemetry-'));
  // other's key is on the free plan (40 reads a minute); a 429 pauses its bucket for a second.
  const settings = testSettings();
  settings.teams[1]!.plan = { ...settings.teams[1]!.plan, rate_limit: 'free' };
  settings.faults = { ...settings.faults, retry_after_seconds: 1 };
  svc = await startService({ dataDir: join(dir, 'service'), sampleRows: 100, settings });
});
afterAll(async () => {
  await svc?.close();
  await telemetry?.shutdown();
  await receiver?.stop();
  await rm(dir, { recursive: true, force: true });
});


describe('telemetry in one process', () => {
  it('two exports racing to commit at one place: the winner\'s commit span succeeds, the loser\'s ends with PRECONDITION_FAILED', async () => {
    const output = { format: 'csv' as const, path: join(dir, 'raced') };
    await writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e0', totalRowCount: 10 } }, resolved(output));
    const gate = barrier(2);
    const runs = await telemetry.inSpan('race', {}, () =>
      Promise.allSettled(['ea', 'eb'].map((executionId) => writeExport({ schema: numberedSchema, batches: gate(numbered(50, 10)), meta: { executionId, totalRowCount: 50 } }, resolved(output)))),
    );
    expect(runs.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason)).toEqual([expect.any(PreconditionFailedError)]);
    await telemetry.flush();
    await receiver.waitFor((spans) => spans.some((s) => s.name === 'race'));
    const race = receiver.spans().find((s) => s.name === 'race')!;
    const commits = receiver.spans().filter((s) => s.name === 'sluice.output.commit' && s.parentSpanId === race.spanId);
    expect(commits.map((c) => c.attributes['error.type'] ?? 'ok').sort()).toEqual(['PRECONDITION_FAILED', 'ok']);
    for (const commit of commits) expect(commit.attributes).toMatchObject({ 'sluice.commit.protocol': 'manifest', 'sluice.rows': 50, 'sluice.files': 1 });
    // The loser's message names paths; only its code is exported.
    expect(receiver.requests.some((r) => r.body.includes(dir))).toBe(false);
  });

  it('requests held back by the key\'s rate governor are added up on the run\'s span', { timeout: 120_000 }, async () => {
    const client = new ServiceClient({ baseUrl: svc.url, apiKey: TEST_KEYS.other.write, env: {}, retry: { attempts: 10 }, ...telemetry.client });
    try {
      await telemetry.run('paced', undefined, async () => {
        const { execution_id } = await client.executeSql('SELECT 1 AS x');
        // More reads than the plan allows a minute, four at a time: the 429s pause the bucket, and the requests behind them wait.
        let left = 44;
        await Promise.all(Array.from({ length: 4 }, async () => {
          while (left-- > 0) await client.getStatus(execution_id);
        }));
      });
    } finally {
      await client.close();
    }
    expect(client.governor.tooMany('read')).toBeGreaterThan(0);
    await telemetry.flush();
    await receiver.waitFor((spans) => spans.some((s) => s.name === 'sluice.job.run' && s.attributes['sluice.job'] === 'paced'));
    const run = receiver.spans().find((s) => s.name === 'sluice.job.run' && s.attributes['sluice.job'] === 'paced')!;
    expect(Number(run.attributes['sluice.rate_limit.waits'])).toBeGreaterThan(0);
    expect(Number(run.attributes['sluice.rate_limit.wait_ms'])).toBeGreaterThanOrEqual(Number(run.attributes['sluice.rate_limit.waits']));
    // The 429s themselves: a rate-limit wait each, in the run's trace.
    expect(receiver.spans().filter((s) => s.traceId === run.traceId && s.name === 'sluice.rate_limit.wait').length).toBe(client.governor.tooMany('read'));
  });
});
