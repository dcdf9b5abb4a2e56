import { FAILED_TYPE_EXECUTION_FAILED, holdsResult, isTerminal } from '../protocol/index.ts';
import type { ExecutionError, ExecutionStatusOut, ResultMetadata } from '../protocol/index.ts';
import type { ExecutionRecord } from './executionRecord.ts';
import { formatTimestamp as ts } from './timestamp.ts';

/**
 * The fields that describe an execution on both the status and the results operations, following
 * protocol.md section 2: a field is present when it applies and omitted otherwise (never null).
 * - execution_ended_at: on states the engine finished (COMPLETED*, FAILED, EXPIRED), not on CANCELLED;
 * - expires_at: on states that hold (or held) a result: COMPLETED*, EXPIRED;
 * - execution_cost_credits: once the cost is final (every terminal state).
 */
export function executionFields(rec: ExecutionRecord): ExecutionStatusOut {
  const out: ExecutionStatusOut = {
    execution_id: rec.id,
    query_id: rec.queryId,
    state: rec.state,
    is_execution_finished: isTerminal(rec.state),
    submitted_at: ts(rec.submittedAt),
  };
  if ('expiresAt' in rec) out.expires_at = ts(rec.expiresAt);
  if ('startedAt' in rec && rec.startedAt !== undefined) out.execution_started_at = ts(rec.startedAt);
  if ('endedAt' in rec) out.execution_ended_at = ts(rec.endedAt);
  if (rec.state === 'QUERY_STATE_CANCELLED') out.cancelled_at = ts(rec.cancelledAt);
  if ('costCredits' in rec) out.execution_cost_credits = rec.costCredits;
  if (rec.state === 'QUERY_STATE_FAILED') out.error = errorOf(rec.error);
  return out;
}

function errorOf(e: { message: string; line?: number; column?: number }): ExecutionError {
  const err: ExecutionError = { type: FAILED_TYPE_EXECUTION_FAILED, message: e.message };
  if (e.line !== undefined && e.column !== undefined) err.metadata = { line: e.line, column: e.column };
  return err;
}

/** Timing fields of result_metadata, from the record. */
export function timingOf(rec: ExecutionRecord): Pick<ResultMetadata, 'pending_time_millis' | 'execution_time_millis'> {
  if (!('startedAt' in rec) || rec.startedAt === undefined) return {};
  const out: Pick<ResultMetadata, 'pending_time_millis' | 'execution_time_millis'> = {
    pending_time_millis: Math.max(0, Math.round(rec.startedAt - rec.submittedAt)),
  };
  if ('endedAt' in rec) out.execution_time_millis = Math.max(0, Math.round(rec.endedAt - rec.startedAt));
  return out;
}

export interface TeamLoad {
  maxInflight: number;
  running: number;
  queuePosition: number | undefined;
}

/** The status object (service-interface.md 2.1); its result_metadata describes the whole result. */
export function statusOf(rec: ExecutionRecord, load: TeamLoad): ExecutionStatusOut {
  const out = executionFields(rec);
  if (rec.state === 'QUERY_STATE_PENDING' && load.queuePosition !== undefined) out.queue_position = load.queuePosition;
  out.max_inflight_interactive_executions = load.maxInflight;
  if (load.running >= load.maxInflight) out.max_inflight_interactive_reached = load.running;
  if (holdsResult(rec)) {
    const r = rec.result;
    out.result_metadata = {
      column_names: r.columnNames,
      column_types: r.columnTypes,
      row_count: r.rowCount,
      result_set_bytes: r.bytes,
      total_row_count: r.rowCount,
      total_result_set_bytes: r.bytes,
      datapoint_count: r.rowCount * r.columnNames.length,
      ...timingOf(rec),
    };
  }
  return out;
}
