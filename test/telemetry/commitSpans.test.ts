import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RecordBatch } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeExport } from '../../src/export/index.ts';
import { PreconditionFailedError } from '../../src/kit/index.ts';
import { startTelemetry, type Telemetry } from '../../src/telemetry/index.ts';
import { numbered, numberedSchema, resolved } from '../connectors/fixtures.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlpReceiver.ts';

// The commit span of an output in this process, where a race can be staged: two exports to one
// place, both written before either commits; the one that loses ends its commit span failed,
// named by the error's code (never its message).

let receiver: OtlpReceiver;
let telemetry: Telemetry;
let dir: string;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  telemetry = (await startTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_METRICS_EXPORTER: 'none' }, 'run'))!;
  dir = await mkdtemp(join(tmpdir(), 'sluice-commit-spans-'));
});
afterAll(async () => {
  await telemetry?.shutdown();
  await receiver?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Holds every racer's batches until all have arrived: both write before either commits. */
function barrier(parties: number): (batches: AsyncIterable<RecordBatch>) => AsyncIterable<RecordBatch> {
  let arrived = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return async function* (batches) {
    if (++arrived === parties) open();
    await opened;
    yield* batches;
  };
}

describe('commit spans', () => {
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
});
