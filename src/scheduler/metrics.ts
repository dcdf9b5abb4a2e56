/** What one finished run adds to the metrics. */
export interface RunRecord {
  readonly job: string;
  readonly ok: boolean;
  readonly rows: number;
  readonly bytes: number;
  readonly credits: number;
  readonly durationMs: number;
  /** When it ended (seconds since the epoch, for the last-success gauge). */
  readonly endedAt: Date;
}

interface JobMetrics {
  runs: number;
  failures: number;
  skipped: number;
  rows: number;
  bytes: number;
  credits: number;
  durationSum: number;
  durationCount: number;
  lastDuration: number;
  lastSuccess: number;
  running: number;
  notificationsSent: number;
  notificationsFailed: number;
  drifts: number;
}

/**
 * Counters per job, rendered as Prometheus text exposition format 0.0.4. Small on purpose: a
 * handful of series per job, no client library (the format is a few lines of text).
 */
export class Metrics {
  readonly #jobs = new Map<string, JobMetrics>();

  constructor(jobs: readonly string[] = []) {
    for (const job of jobs) this.#get(job);
  }

  started(job: string): void {
    this.#get(job).running += 1;
  }

  skipped(job: string): void {
    this.#get(job).skipped += 1;
  }

  finished(run: RunRecord): void {
    const m = this.#get(run.job);
    m.running = Math.max(0, m.running - 1);
    m.runs += 1;
    if (!run.ok) m.failures += 1;
    m.rows += run.rows;
    m.bytes += run.bytes;
    m.credits += run.credits;
    m.durationSum += run.durationMs / 1000;
    m.durationCount += 1;
    m.lastDuration = run.durationMs / 1000;
    if (run.ok) m.lastSuccess = run.endedAt.getTime() / 1000;
  }

  /** A webhook notification delivered, or given up on after its retries. */
  notified(job: string, delivered: boolean): void {
    const m = this.#get(job);
    if (delivered) m.notificationsSent += 1;
    else m.notificationsFailed += 1;
  }

  /** An output whose committed columns differed from a run's result (whatever its policy did). */
  drifted(job: string): void {
    this.#get(job).drifts += 1;
  }

  snapshot(job: string): Readonly<JobMetrics> {
    return { ...this.#get(job) };
  }

  render(): string {
    const series: [name: string, type: string, help: string, value: (m: JobMetrics) => number][] = [
      ['sluice_job_runs_total', 'counter', 'Runs finished (succeeded or failed)', (m) => m.runs],
      ['sluice_job_failures_total', 'counter', 'Runs that failed after their retries', (m) => m.failures],
      ['sluice_job_skipped_total', 'counter', 'Cron ticks skipped because the previous run was still going', (m) => m.skipped],
      ['sluice_job_rows_total', 'counter', 'Rows exported', (m) => m.rows],
      ['sluice_job_bytes_total', 'counter', 'Bytes written to outputs', (m) => m.bytes],
      ['sluice_job_credits_total', 'counter', 'Credits spent by executions', (m) => m.credits],
      ['sluice_job_notifications_sent_total', 'counter', 'Webhook notifications delivered (a 2xx answer)', (m) => m.notificationsSent],
      ['sluice_job_notifications_failed_total', 'counter', 'Webhook notifications not delivered after their retries (the runs went on)', (m) => m.notificationsFailed],
      ['sluice_job_schema_drift_total', 'counter', "Outputs whose committed columns differed from a run's result (evolved, frozen or failed)", (m) => m.drifts],
      ['sluice_job_running', 'gauge', 'Runs in progress (0 or 1)', (m) => m.running],
      ['sluice_job_last_duration_seconds', 'gauge', 'Duration of the last finished run', (m) => m.lastDuration],
      ['sluice_job_last_success_timestamp_seconds', 'gauge', 'End of the last successful run (0: none yet)', (m) => m.lastSuccess],
    ];
    const lines: string[] = [];
    for (const [name, type, help, value] of series) {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      for (const [job, m] of this.#jobs) lines.push(`${name}{job="${escapeLabel(job)}"} ${value(m)}`);
    }
    const summary = 'sluice_job_duration_seconds';
    lines.push(`# HELP ${summary} Run durations`, `# TYPE ${summary} summary`);
    for (const [job, m] of this.#jobs) {
      lines.push(`${summary}_sum{job="${escapeLabel(job)}"} ${m.durationSum}`, `${summary}_count{job="${escapeLabel(job)}"} ${m.durationCount}`);
    }
    return `${lines.join('\n')}\n`;
  }

  #get(job: string): JobMetrics {
    let m = this.#jobs.get(job);
    if (!m) {
      m = { runs: 0, failures: 0, skipped: 0, rows: 0, bytes: 0, credits: 0, durationSum: 0, durationCount: 0, lastDuration: 0, lastSuccess: 0, running: 0, notificationsSent: 0, notificationsFailed: 0, drifts: 0 };
      this.#jobs.set(job, m);
    }
    return m;
  }
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}
