import type { JobSummary } from '../../jobs/runJob.ts';
import { fmtDuration } from '../progress.ts';

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** The closing lines of `sluice run`: one for the job, one per output. */
export function formatSummary(s: JobSummary): string {
  const how = s.resumed ? ' (resumed)' : s.startedExecution ? '' : ' (stored result)';
  const lines = [
    `${s.job}: ${s.rows.toLocaleString('en-US')} rows, ${s.files} file${s.files === 1 ? '' : 's'}, ${formatBytes(s.bytes)}, ${s.credits} credits in ${fmtDuration(s.durationMs)} (execution ${s.executionId}${how})`,
    ...s.outputs.map((o) => `  ${o.url}  ${o.format}  ${o.rows.toLocaleString('en-US')} rows  ${o.files} file${o.files === 1 ? '' : 's'}  ${formatBytes(o.bytes)}${o.skipped ? '  (already committed)' : ''}`),
  ];
  return `${lines.join('\n')}\n`;
}

/** The summary as one JSON object (`--json`, and the log line in JSON log format). */
export function summaryFields(s: JobSummary): Record<string, unknown> {
  return {
    job: s.job,
    execution_id: s.executionId,
    resumed: s.resumed,
    started_execution: s.startedExecution,
    rows: s.rows,
    files: s.files,
    bytes: s.bytes,
    credits: s.credits,
    duration_ms: Math.round(s.durationMs),
    attempts: s.attempts,
    outputs: s.outputs.map((o) => ({ url: o.url, format: o.format, rows: o.rows, files: o.files, bytes: o.bytes, skipped: o.skipped })),
  };
}
