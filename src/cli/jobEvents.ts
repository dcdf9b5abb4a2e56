import type { RunEvents } from '../jobs/run/runJob.ts';
import { describeChange } from '../jobs/drift/drift.ts';
import type { OutputStream } from './io.ts';
import type { Logger } from './log.ts';
import { createProgressBar, type ProgressBar } from './progress.ts';

/**
 * How a run shows itself: log lines for its milestones, and on a terminal a progress bar
 * (rows, pages, MB/s, time left) that log lines print above. `done()` ends the bar.
 */
export function jobEvents(job: string, log: Logger, stderr: OutputStream, showBar: boolean): { events: RunEvents; done(): void } {
  let bar: ProgressBar | undefined;
  const jobLog = log.child({ job });
  const events: RunEvents = {
    onResume: (decision) => {
      bar?.clear();
      if (decision.resume) {
        jobLog.info('an interrupted run of this job exported this execution: resuming it (same job, source and outputs; --fresh starts anew)', { execution_id: decision.executionId, interrupted_run_started_at: decision.startedAt });
      } else {
        jobLog.info(`not resuming the interrupted run's execution: ${decision.reason}`, { execution_id: decision.executionId });
      }
    },
    onExecution: ({ executionId, started, resumed }) => {
      bar?.clear();
      const what = resumed ? 'resuming the execution of an interrupted run' : started ? 'execution started' : 'exporting a stored result';
      jobLog.info(what, { execution_id: executionId });
    },
    onProgress: (p) => {
      if (!showBar) return;
      bar ??= createProgressBar(stderr, job);
      bar.update({ rows: p.rows, totalRows: p.totalRows, pages: p.pages, totalPages: p.totalPages, bytes: p.bytes, elapsedMs: p.elapsedMs, etaMs: p.etaMs });
    },
    onOutput: (o) => {
      bar?.clear();
      // RunEvents has no event of its own for parts kept from a killed run: onOutput carries their count.
      jobLog.info(o.skipped ? 'output already committed by the interrupted run' : 'output committed', {
        url: o.url,
        rows: o.rows,
        files: o.files,
        bytes: o.bytes,
        ...(o.resumedFiles > 0 ? { resumed_files: o.resumedFiles } : {}),
        ...(o.snapshot ? { snapshot: o.snapshot } : {}),
        ...(o.decode === undefined ? {} : { decode: o.decode }),
      });
    },
    onRetry: ({ attempt, error, delayMs }) => {
      bar?.clear();
      jobLog.warn(`run failed, retrying in ${Math.round(delayMs / 1000)} s`, { attempt, error: error instanceof Error ? error.message : String(error) });
    },
    onWarning: (message, fields) => {
      bar?.clear();
      jobLog.warn(message, fields);
    },
    onKept: ({ executionId, state }) => {
      bar?.clear();
      if (executionId === undefined) {
        jobLog.warn('stopped before an execution started: nothing kept; the next run starts one');
        return;
      }
      const running = state === 'QUERY_STATE_PENDING' || state === 'QUERY_STATE_EXECUTING';
      const now = state === undefined ? 'state unknown: the service did not answer' : running ? 'still running: not cancelled' : state === 'QUERY_STATE_COMPLETED' ? 'completed' : state;
      jobLog.warn(
        `stopped: kept execution ${executionId} (${now}) and the parts already written; the next run of this job resumes it without a new execution or a new charge (unless it has expired, failed or the job changed; --fresh starts anew; sluice cancel ${executionId} stops it)`,
        { execution_id: executionId, execution_state: state ?? null },
      );
    },
    onNotification: (n) => {
      // Not delivered: onWarning says so, with the reason.
      if (n.delivered) jobLog.info('notification sent', { event: n.event, attempts: n.attempts });
    },
    onDrift: (drift) => {
      bar?.clear();
      jobLog.warn(`schema drift (${drift.policy}: ${drift.action}): ${drift.changes.map(describeChange).join('; ')}`, { output: drift.url, policy: drift.policy, action: drift.action, changes: drift.changes });
    },
  };
  return {
    events,
    done: () => {
      bar?.done();
      bar = undefined;
    },
  };
}
