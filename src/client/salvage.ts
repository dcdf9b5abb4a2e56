/**
 * When the answer to a submission is cut off mid-body, the status line (200) already proves the
 * service accepted it; what is missing is only the id. If the part that arrived holds the whole id,
 * the answer is rebuilt from it instead of reporting an unknown outcome. Both execute operations
 * answer with the new execution in state PENDING (protocol.md section 3), so that is the state given.
 */

const EXECUTION_ID = /"execution_id"\s*:\s*"(01[0-9A-HJKMNP-TV-Z]{24})"/;
const SQL_ID = /"sql_id"\s*:\s*"([a-z0-9_.]+)"/;
/** The number must be followed by a delimiter, or it may itself be cut short. */
const QUERY_ID = /"query_id"\s*:\s*(\d+)\s*[,}]/;

export function salvageExecuteResponse(partialBody: string): string | undefined {
  const id = EXECUTION_ID.exec(partialBody)?.[1];
  return id === undefined ? undefined : JSON.stringify({ execution_id: id, state: 'QUERY_STATE_PENDING' });
}

/** A refresh answers `{execution_id, sql_id}`; both must have arrived whole. */
export function salvageRefreshResponse(partialBody: string): string | undefined {
  const id = EXECUTION_ID.exec(partialBody)?.[1];
  const sqlId = SQL_ID.exec(partialBody)?.[1];
  return id === undefined || sqlId === undefined ? undefined : JSON.stringify({ execution_id: id, sql_id: sqlId });
}

export function salvageQueryIdResponse(partialBody: string): string | undefined {
  const id = QUERY_ID.exec(partialBody)?.[1];
  return id === undefined ? undefined : JSON.stringify({ query_id: Number(id) });
}
