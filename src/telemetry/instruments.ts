import type { Attributes, Counter, Histogram, Meter } from '@opentelemetry/api';
import type { RunRecord } from '../jobs/run/runHistory.ts';

/**
 * The run metrics, named as the scheduler's /metrics names them (src/scheduler/metrics.ts), so a
 * dashboard reads either: runs, failures, rows, bytes, credits, durations; plus retries (of a run,
 * and of a request to the service), which /metrics does not count.
 */
export interface RunInstruments {
  recorded(record: RunRecord): void;
  retried(job: string | undefined, level: 'run' | 'request', rateLimited: boolean): void;
}

export function runInstruments(meter: Meter): RunInstruments {
  const counter = (name: string, description: string, unit?: string): Counter => meter.createCounter(name, { description, ...(unit ? { unit } : {}) });
  const runs = counter('sluice_job_runs_total', 'Runs finished (succeeded or failed)');
  const failures = counter('sluice_job_failures_total', 'Runs that failed after their retries');
  const rows = counter('sluice_job_rows_total', 'Rows exported');
  const bytes = counter('sluice_job_bytes_total', 'Bytes written to outputs', 'By');
  const credits = counter('sluice_job_credits_total', 'Credits spent by executions');
  const retries = counter('sluice_job_retries_total', 'Retries: of a whole run (level=run), of one request to the service (level=request; rate_limited=true for a 429)');
  const duration: Histogram = meter.createHistogram('sluice_job_duration_seconds', { description: 'Run durations', unit: 's' });
  return {
    recorded(record) {
      const attributes: Attributes = { job: record.job, outcome: record.outcome };
      runs.add(1, attributes);
      if (record.outcome !== 'succeeded') failures.add(1, attributes);
      rows.add(record.rows, attributes);
      bytes.add(record.bytes, attributes);
      credits.add(record.credits, attributes);
      duration.record((Date.parse(record.ended_at) - Date.parse(record.started_at)) / 1000, attributes);
    },
    retried(job, level, rateLimited) {
      retries.add(1, { ...(job === undefined ? {} : { job }), level, rate_limited: rateLimited });
    },
  };
}
