import type { JobSummary } from '../../jobs/run/runJob.ts';
import type { ContractWarning } from '../../jobs/contracts/contract.ts';
import { describeChange } from '../../jobs/drift/drift.ts';
import { fmtDuration } from '../progress.ts';
import { ExecutionFailedError } from '../../client/errors.ts';
import { sqlFilePosition } from '../../config/sqlOrigin.ts';

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
  const how = s.resume?.resume ? ` (resumed from the interrupted run of ${s.resume.startedAt})` : s.startedExecution ? '' : ' (stored result)';
  // Only when parts of a killed run were kept does the fetched count differ from the total.
  const fetched = s.fetchedRows === s.rows ? '' : ` (${s.fetchedRows.toLocaleString('en-US')} fetched)`;
  // Said only when the pages came compressed: what crossed the wire, and what it decoded to.
  const pages = s.pageBytes.wire === s.pageBytes.decoded ? '' : `, pages ${formatBytes(s.pageBytes.wire)} on the wire (${formatBytes(s.pageBytes.decoded)} decoded)`;
  const lines = [
    `${s.job}: ${s.rows.toLocaleString('en-US')} rows${fetched}, ${plural(s.files, 'file')}, ${formatBytes(s.bytes)}${pages}, ${s.credits} credits${left(s)} in ${fmtDuration(s.durationMs)} (execution ${s.executionId}${how})`,
    ...(s.cursor === undefined ? [] : [`  cursor ${s.cursor.from ?? '(initial)'} -> ${s.cursor.to ?? '(not all outputs committed)'}`]),
    ...(s.backfill === undefined ? [] : [`  backfill: ${plural(s.backfill.chunks, 'chunk')} read, ${plural(s.backfill.executed, 'execution')} started, ${s.backfill.reused} of a killed run read again, ${plural(s.backfill.splits, 'chunk')} halved`]),
    ...(s.contract?.warnings ?? []).map((w) => `  contract broken (warn): ${w.check}: ${plural(w.count, 'violation')}, first: ${w.first}`),
    ...(s.contract?.quarantined ?? []).map((w) => `  contract broken (quarantine): ${w.check}: ${plural(w.count, 'row')} set aside, first: ${w.first}`),
    ...(s.contract?.quarantine ?? []).map((o) => `  quarantine ${o.url}  ${o.format}  ${o.rows.toLocaleString('en-US')} rows${o.skipped ? '  (already committed)' : ''}`),
    ...(s.drift ?? []).map((d) => `  schema drift (${d.policy}: ${d.action}) ${d.url}: ${d.changes.map(describeChange).join('; ')}`),
    ...s.outputs.map(
      (o) =>
        `  ${o.url}  ${o.format}  ${o.rows.toLocaleString('en-US')} rows  ${plural(o.files, 'file')}  ${formatBytes(o.bytes)}` +
        `${o.snapshot ? `  snapshot ${o.snapshot}` : ''}${o.skipped ? '  (already committed)' : ''}${o.resumedFiles > 0 ? `  (${o.resumedFiles} kept from the interrupted run)` : ''}`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * The fields of the "job finished" log line. JSON logs (collectors) get the whole summary. Text logs
 * are a terminal's: where the summary is printed as text too (`run`), the line names the job only;
 * where it is not (`schedule`), it gives the figures on one line.
 */
export function finishedLogFields(s: JobSummary, format: 'text' | 'json', summaryPrinted: boolean): Record<string, unknown> {
  if (format === 'json') return summaryFields(s);
  if (summaryPrinted) return { job: s.job };
  return { job: s.job, rows: s.rows, files: s.files, bytes: formatBytes(s.bytes), credits: s.credits, duration: fmtDuration(s.durationMs), execution_id: s.executionId };
}

/** The summary as one JSON object (`--json`, and the log line in JSON log format). */
export function summaryFields(s: JobSummary): Record<string, unknown> {
  return {
    job: s.job,
    outcome: 'ok',
    execution_id: s.executionId,
    resumed: s.resumed,
    ...(s.resume === undefined
      ? {}
      : { resume: s.resume.resume ? { execution_id: s.resume.executionId, interrupted_run_started_at: s.resume.startedAt } : { execution_id: s.resume.executionId, not_resumed: s.resume.reason } }),
    started_execution: s.startedExecution,
    rows: s.rows,
    fetched_rows: s.fetchedRows,
    page_bytes: s.pageBytes,
    files: s.files,
    bytes: s.bytes,
    credits: s.credits,
    ...(s.creditsLeft === undefined ? {} : { credits_left: s.creditsLeft }),
    ...(s.cursor === undefined ? {} : { cursor: s.cursor }),
    ...(s.backfill === undefined ? {} : { backfill: s.backfill }),
    ...(s.contract === undefined ? {} : { contract: contractFields(s.contract) }),
    ...(s.drift === undefined ? {} : { drift: s.drift }),
    duration_ms: Math.round(s.durationMs),
    attempts: s.attempts,
    outputs: s.outputs.map((o) => ({
      url: o.url,
      format: o.format,
      rows: o.rows,
      files: o.files,
      bytes: o.bytes,
      skipped: o.skipped,
      resumed_files: o.resumedFiles,
      ...(o.snapshot ? { snapshot: o.snapshot } : {}),
      ...(o.decode === undefined ? {} : { decode: o.decode }),
    })),
  };
}

function left(s: JobSummary): string {
  return s.creditsLeft === undefined ? '' : ` (${s.creditsLeft.toLocaleString('en-US')} left in the cycle)`;
}

/** The summary entry of a job that failed: its name, the exit code its error maps to, and the error. */
export function formatFailure(job: string, error: unknown, exitCode: number, sqlAt?: string): string {
  const [first, ...rest] = messageOf(error).split('\n');
  return `${job}: FAILED (${errorCode(error)}, exit code ${exitCode}): ${sqlAt === undefined ? '' : `${sqlAt}: `}${first}\n${rest.map((line) => `  ${line}\n`).join('')}`;
}

/** Where in the job file an SQL error of this job points (`FILE:LINE:COL`), when it can be told. */
export function sqlErrorAt(source: object, error: unknown): string | undefined {
  return error instanceof ExecutionFailedError ? sqlFilePosition(source, error.line, error.column) : undefined;
}

/** `formatFailure` as one JSON object (`--json`), next to the successful jobs' `summaryFields`. */
export function failureFields(job: string, error: unknown, exitCode: number, sqlAt?: string): Record<string, unknown> {
  return { job, outcome: 'failed', exit_code: exitCode, error: { code: errorCode(error), message: messageOf(error), ...(sqlAt === undefined ? {} : { sql_at: sqlAt }) } };
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A SluiceError's `code`, a Node error's (`ENOENT`), or the class name. */
export function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.name : typeof error;
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function contractFields(contract: NonNullable<JobSummary['contract']>): Record<string, unknown> {
  const broken = (w: ContractWarning) => ({ check: w.check, ...(w.column === undefined ? {} : { column: w.column }), count: w.count, first: w.first });
  return {
    warnings: contract.warnings.map(broken),
    ...(contract.quarantined === undefined ? {} : { quarantined: contract.quarantined.map(broken) }),
    ...(contract.quarantine === undefined ? {} : { quarantine: contract.quarantine.map((o) => ({ url: o.url, format: o.format, rows: o.rows, files: o.files, bytes: o.bytes, skipped: o.skipped })) }),
  };
}
