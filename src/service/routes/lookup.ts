import { isExecutionId, MESSAGES } from '../../protocol/index.ts';
import type { Principal } from '../auth.ts';
import type { ServiceContext } from '../context.ts';
import type { ExecutionRecord } from '../executionRecord.ts';
import { HttpError } from '../http/errors.ts';
import type { QueryRecord } from '../savedQueries.ts';

/**
 * The caller's execution: 400 for a malformed id, 404 for an unknown one or another team's (the
 * message says why when the id may be of an execution whose record was forgotten).
 */
export function executionOf(svc: ServiceContext, principal: Principal, id: string | undefined): ExecutionRecord {
  if (id === undefined || !isExecutionId(id)) throw new HttpError(400, MESSAGES.invalidExecutionId(id ?? ''));
  const rec = svc.executions.get(id);
  if (rec === undefined || rec.team !== principal.team) throw new HttpError(404, svc.executions.notFoundMessage(id));
  return rec;
}

const QUERY_ID = /^[1-9][0-9]{0,14}$/;

/**
 * A saved query the caller may see: its own, or another team's non-private one. For `modify`,
 * another team's (visible) query is 403: it can be read and executed, not changed.
 */
export function queryOf(svc: ServiceContext, principal: Principal, idText: string | undefined, mode: 'read' | 'modify'): QueryRecord {
  if (idText === undefined || !QUERY_ID.test(idText)) {
    throw new HttpError(400, `Bad Request: query_id must be a positive integer, got "${idText ?? ''}"`);
  }
  const q = svc.queries.get(Number(idText));
  if (q === undefined || (q.team !== principal.team && q.isPrivate)) throw new HttpError(404, MESSAGES.queryNotFound);
  if (mode === 'modify' && q.team !== principal.team) {
    throw new HttpError(403, `Not allowed: query ${q.id} belongs to team ${q.team}`);
  }
  return q;
}
